"""A tiny emotion classifier for tests and benchmarks: built from a config, no hub access.

:func:`save_random_emotion_model` writes a randomly initialised RoBERTa sequence classifier
over the seven :data:`~affectgym.emotions.EMOTIONS` and a word-level tokenizer trained on the
fly, so ``EmotionClassifier(model=directory)`` exercises the same code path as the real model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from affectgym.emotions import EMOTIONS


def save_random_emotion_model(
    directory: str | Path,
    *,
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    intermediate_size: int = 64,
    vocab_size: int = 2000,
    max_position_embeddings: int = 130,
    initializer_range: float = 0.2,
    corpus: Sequence[str] = (),
    seed: int = 0,
) -> Path:
    """Save a randomly initialised RoBERTa emotion classifier and a word-level tokenizer.

    For tests and benchmarks without hub access: the directory loads with
    ``EmotionClassifier(model=directory)`` through the same code path as the real model
    (``config.id2label`` holds the seven labels). The defaults are tiny; pass
    ``hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072,
    vocab_size=50265, max_position_embeddings=514`` for the distilroberta shape.

    Args:
        directory: Where to write (created if missing).
        hidden_size: Model width.
        num_hidden_layers: Transformer layers.
        num_attention_heads: Attention heads.
        intermediate_size: Feed-forward width.
        vocab_size: Embedding rows (the tokenizer's vocabulary is at most this).
        max_position_embeddings: Position table size (RoBERTa uses two for padding).
        initializer_range: Standard deviation of the random weights; larger than RoBERTa's
            0.02 so that different texts get visibly different distributions.
        corpus: Texts to train the tokenizer on; a small built-in corpus when empty.
        seed: Seed for the weights.

    Returns:
        The directory.
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = list(corpus) or _TOKENIZER_CORPUS
    tokenizer.train_from_iterator(
        texts, trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=specials)
    )
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[(t, tokenizer.token_to_id(t)) for t in ("<s>", "</s>")],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=max_position_embeddings - 2,
    )
    fast.save_pretrained(directory)
    config = RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        initializer_range=initializer_range,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        num_labels=len(EMOTIONS),
        id2label=dict(enumerate(EMOTIONS)),
        label2id={label: i for i, label in enumerate(EMOTIONS)},
    )
    torch.manual_seed(seed)
    RobertaForSequenceClassification(config).save_pretrained(directory)
    return directory


_TOKENIZER_CORPUS = [
    "why is this traffic light taking so long to change",
    "i cannot believe you did that again after everything",
    "the food smelled rotten and the table was sticky",
    "something moved in the dark hallway behind the door",
    "we won the game and everyone cheered in the street",
    "the report is due on friday at noon",
    "she left last winter and the house is quiet now",
    "wait what you mean the meeting already happened",
    "explain how photosynthesis works in simple terms",
    "write a short story about a lighthouse keeper",
]
