"""How much what the user said makes a sentence more likely: a language model's pointwise mutual information.

A sentence that listens is one a reader expects more after the user's words than without them.
:class:`ConditionalRelevance` measures that with a small causal language model: the mean
log-probability per token of the sentence after ``Human: <what the user said>`` minus its mean
after the *contrasts*, what another user might have said (by default a neutral opening, ``Human:
Hello.``), in nats per token. A content-free sentence ("What happened after that?") is about as
likely either way (near 0); one that takes up the user's
situation, in their words or in others ("Ten rejections" for "rejected by the tenth publisher",
"forty-two kilometres" for "marathon"), gains. The model reads meaning that a count of shared
words misses. Words can be left out of the reading (``ignored``): their tokens are still read,
as context, but their gains are not counted, so a sentence earns nothing for repeating them.
It runs offline (a local folder or a model alias such as ``smollm2-135m``,
:mod:`affectgym.models`), in float32 without sampling, so a score is deterministic; scores are
memoised by content (:class:`~affectgym.rewards.memo.BoundedMemo`).

>>> def toy(context, continuation):  # one token a word: "novel" is likelier after the novel
...     return [(word, -1.0 if word.strip("!") == "novel" and "novel" in context else -2.0) for word in continuation.split()]
>>> relevance = ConditionalRelevance(toy)
>>> relevance.scores(["My novel got rejected."] * 2, ["A novel!", "What happened after that?"])
[0.5, 0.0]
>>> relevance.scores(["My novel got rejected."], ["A novel!"], ignored=[{"novel"}])
[0.0]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from affectgym.models import shared_causal_lm
from affectgym.rewards.memo import BoundedMemo

__all__ = ["NEUTRAL_OPENING", "ConditionalRelevance", "LogProbFn", "dialogue_context"]

#: ``fn(context, continuation) -> [(token text, log-probability), ...]``: each token of the continuation
#: after the context, in order (the texts, spaces aside, spell the continuation).
LogProbFn = Callable[[str, str], Sequence[tuple[str, float]]]
#: A token's log-probabilities and where it sits in the sentence: ``((start, end, log-prob), ...)``.
TokenLogProbs = tuple[tuple[int, int, float], ...]
#: What the user says in the reference context: an opening that tells nothing of a situation.
NEUTRAL_OPENING = "Hello."
#: Tokens read of a context (its last) and of a sentence (its first): what the user said lately, and a
#: sentence's opening, decide whether it takes the user up; a 30,000-character reply costs no more.
MAX_CONTEXT_TOKENS = 256
MAX_SENTENCE_TOKENS = 64
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def dialogue_context(user_text: str) -> str:
    """The text a sentence is read after: the user's words as a chat line, then the chatbot's turn.

    >>> dialogue_context("My novel got rejected.")
    'Human: My novel got rejected.\\nChatbot:'
    """
    return f"Human: {user_text}\nChatbot:"


class ConditionalRelevance:
    """Pointwise mutual information, per token, between what the user said and a sentence.

    Args:
        model: A model alias (``"smollm2-135m"``), a local causal language model folder (what
            ``from_pretrained`` loads; loaded on the first score), or a callable
            :data:`LogProbFn` (tests, or another scorer).
        contrasts: What the user is compared with: lines another user might have said. A
            sentence's log-probability after them (their mean) is what it must beat. The neutral
            opening alone by default. Other users' stories make a sentence that suits any story
            ("What wonderful news!", "What happened after that?") gain nothing.
        max_entries: Scores kept in the memo.

    Raises:
        ValueError: ``model`` is neither a non-empty name or path nor a callable, or
            ``contrasts`` is empty or holds an empty line.
    """

    def __init__(
        self, model: str | Path | LogProbFn, *, contrasts: Sequence[str] = (NEUTRAL_OPENING,), max_entries: int = 8192
    ) -> None:
        if callable(model):
            self._log_prob: LogProbFn | None = model
            self.model = getattr(model, "__name__", "callable")
        elif isinstance(model, (str, Path)) and str(model).strip():
            self._log_prob = None
            self.model = str(model)
        else:
            raise ValueError(f"relevance model must be a model alias such as 'smollm2-135m', a local model folder, "
                             f"or a callable (context, continuation) -> [(token text, log-probability), ...]; got {model!r}")
        if isinstance(contrasts, str) or not contrasts or not all(isinstance(c, str) and c.strip() for c in contrasts):
            raise ValueError(f"contrasts must be a non-empty sequence of non-empty lines another user might say, got {contrasts!r}")
        self.contrasts = tuple(" ".join(c.split()) for c in contrasts)
        self._memo: BoundedMemo[tuple[str, str], TokenLogProbs] = BoundedMemo(max_entries)

    def __repr__(self) -> str:
        if self.contrasts == (NEUTRAL_OPENING,):
            return f"ConditionalRelevance({self.model!r})"
        return f"ConditionalRelevance({self.model!r}, contrasts={list(self.contrasts)!r})"

    def scores(
        self, user_texts: Sequence[str], sentences: Sequence[str], *, ignored: Sequence[Collection[str]] | None = None
    ) -> list[float]:
        """PMI per token of each sentence with its user text (nats; 0 for an empty sentence).

        Args:
            user_texts: What the user said, one per sentence (tags and speaker names removed).
            sentences: The sentences to read.
            ignored: Per sentence, words (lower case) whose tokens are left out of its mean: read
                as context, not counted. A sentence with nothing else left scores 0.

        Raises:
            ValueError: ``user_texts``, ``sentences`` or ``ignored`` differ in length.
        """
        if len(user_texts) != len(sentences):
            raise ValueError(f"{len(user_texts)} user texts for {len(sentences)} sentences; give one per sentence")
        if ignored is not None and len(ignored) != len(sentences):
            raise ValueError(f"{len(ignored)} ignored word sets for {len(sentences)} sentences; give one per sentence")
        said = [" ".join(sentence.split()) for sentence in sentences]
        read = [(dialogue_context(" ".join(user.split())), sentence) for user, sentence in zip(user_texts, said, strict=True)]
        contrasted = [(dialogue_context(line), sentence) for line in self.contrasts for sentence in said]
        tokens = self._memo.get_many([*read, *contrasted], self._log_probs)
        before = [tokens[len(read) * (1 + k):len(read) * (2 + k)] for k in range(len(self.contrasts))]
        skipped = ignored if ignored is not None else [()] * len(said)
        return [_mean_gain(tokens[i], [b[i] for b in before], _ignored_spans(sentence, words))
                for i, (sentence, words) in enumerate(zip(said, skipped, strict=True))]

    def _log_probs(self, pairs: Sequence[tuple[str, str]]) -> list[TokenLogProbs]:
        """Each ``(context, continuation)``'s continuation tokens: where each sits, and its log-probability."""
        if self._log_prob is not None:
            return [_located(text, self._log_prob(context, text)) if text else () for context, text in pairs]
        import torch

        tokenizer, model = self._model()
        results = []
        for context, text in pairs:  # one sequence a pass: a score must not depend on what it was batched with
            if not text:
                results.append(())
                continue
            context_ids = tokenizer(context, add_special_tokens=False)["input_ids"][-MAX_CONTEXT_TOKENS:]
            encoded = tokenizer(" " + text, add_special_tokens=False, return_offsets_mapping=True)
            text_ids = encoded["input_ids"][:MAX_SENTENCE_TOKENS]
            ids = torch.tensor([context_ids + text_ids])
            with torch.no_grad():
                log_probs = model(input_ids=ids).logits[0, :-1].log_softmax(-1)
            values = log_probs.gather(1, ids[0, 1:, None])[len(context_ids) - 1:, 0].tolist()
            spans = encoded["offset_mapping"][:MAX_SENTENCE_TOKENS]
            results.append(tuple((start - 1, end - 1, value) for (start, end), value in zip(spans, values, strict=True)))
        return results

    def _model(self) -> tuple[Any, Any]:
        """The tokenizer and model, loaded on the first call and shared with every scorer of the same model."""
        return shared_causal_lm(str(self.model))


def _located(text: str, tokens: Sequence[tuple[str, float]]) -> TokenLogProbs:
    """A callable's ``(token text, log-prob)`` pairs placed in ``text``, each found after the one before."""
    located, position = [], 0
    for piece, value in tokens:
        start = text.find(piece.strip(), position)
        start = position if start < 0 else start
        position = start + len(piece.strip())
        located.append((start, position, float(value)))
    return tuple(located)


def _ignored_spans(sentence: str, words: Collection[str]) -> list[tuple[int, int]]:
    """Where the ``words`` (lower case) stand in ``sentence``, as whole words."""
    return [m.span() for m in _WORD.finditer(sentence) if m.group().lower() in words] if words else []


def _mean_gain(after: TokenLogProbs, before: Sequence[TokenLogProbs], ignored: Sequence[tuple[int, int]]) -> float:
    """Mean log-probability gain, over each contrast's mean, of the tokens outside ``ignored`` spans (0 when none is left)."""
    gains = [a[2] - sum(b[2] for b in others) / len(others) for a, *others in zip(after, *before, strict=True)
             if not any(a[0] < end and a[1] > start for start, end in ignored)]
    return sum(gains) / len(gains) if gains else 0.0
