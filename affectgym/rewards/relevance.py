"""How much what the user said makes a sentence more likely: a language model's pointwise mutual information.

A sentence that listens is one a reader expects more after the user's words than without them.
:class:`ConditionalRelevance` measures that with a small causal language model: the mean
log-probability per token of the sentence after ``Human: <what the user said>`` minus the same
after a neutral opening (``Human: Hello.``), in nats per token. A content-free sentence ("What
happened after that?") is about as likely either way (near 0); one that takes up the user's
situation, in their words or in others ("Ten rejections" for "rejected by the tenth publisher",
"forty-two kilometres" for "marathon"), gains. The model reads meaning that a count of shared
words misses. It runs offline (a local folder or a model alias such as ``smollm2-135m``,
:mod:`affectgym.models`), in float32 without sampling, so a score is deterministic; scores are
memoised by content (:class:`~affectgym.rewards.memo.BoundedMemo`).

>>> def toy(context, continuation):  # log-probability per token: the novel is likelier after the novel
...     return -1.0 if "novel" in context and "novel" in continuation else -2.0
>>> relevance = ConditionalRelevance(toy)
>>> relevance.scores(["My novel got rejected."] * 2, ["Your novel will find a home.", "What happened after that?"])
[1.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from affectgym.models import shared_causal_lm
from affectgym.rewards.memo import BoundedMemo

__all__ = ["NEUTRAL_OPENING", "ConditionalRelevance", "LogProbFn", "dialogue_context"]

#: ``fn(context, continuation) -> mean log-probability per token of continuation after context``.
LogProbFn = Callable[[str, str], float]
#: What the user says in the reference context: an opening that tells nothing of a situation.
NEUTRAL_OPENING = "Hello."
#: Tokens read of a context (its last) and of a sentence (its first): what the user said lately, and a
#: sentence's opening, decide whether it takes the user up; a 30,000-character reply costs no more.
MAX_CONTEXT_TOKENS = 256
MAX_SENTENCE_TOKENS = 64


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
        max_entries: Scores kept in the memo.

    Raises:
        ValueError: ``model`` is neither a non-empty name or path nor a callable.
    """

    def __init__(self, model: str | Path | LogProbFn, *, max_entries: int = 8192) -> None:
        if callable(model):
            self._log_prob: LogProbFn | None = model
            self.model = getattr(model, "__name__", "callable")
        elif isinstance(model, (str, Path)) and str(model).strip():
            self._log_prob = None
            self.model = str(model)
        else:
            raise ValueError(f"relevance model must be a model alias such as 'smollm2-135m', a local model folder, "
                             f"or a callable (context, continuation) -> log-probability per token; got {model!r}")
        self._memo: BoundedMemo[tuple[str, str], float] = BoundedMemo(max_entries)

    def __repr__(self) -> str:
        return f"ConditionalRelevance({self.model!r})"

    def scores(self, user_texts: Sequence[str], sentences: Sequence[str]) -> list[float]:
        """PMI per token of each sentence with its user text (nats; 0 for an empty sentence).

        Args:
            user_texts: What the user said, one per sentence (tags and speaker names removed).
            sentences: The sentences to read.

        Raises:
            ValueError: ``user_texts`` and ``sentences`` differ in length.
        """
        if len(user_texts) != len(sentences):
            raise ValueError(f"{len(user_texts)} user texts for {len(sentences)} sentences; give one per sentence")
        said = [" ".join(sentence.split()) for sentence in sentences]
        read = [(dialogue_context(" ".join(user.split())), sentence) for user, sentence in zip(user_texts, said, strict=True)]
        neutral = [(dialogue_context(NEUTRAL_OPENING), sentence) for sentence in said]
        log_probs = self._memo.get_many([*read, *neutral], self._log_probs)
        return [after - before if sentence else 0.0
                for sentence, after, before in zip(said, log_probs[:len(read)], log_probs[len(read):], strict=True)]

    def _log_probs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Mean log-probability per token of each ``(context, continuation)``'s continuation (0 when empty)."""
        if self._log_prob is not None:
            return [self._log_prob(context, text) if text else 0.0 for context, text in pairs]
        import torch

        tokenizer, model = self._model()
        encoded = [(tokenizer(context, add_special_tokens=False)["input_ids"][-MAX_CONTEXT_TOKENS:],
                    tokenizer(" " + text, add_special_tokens=False)["input_ids"][:MAX_SENTENCE_TOKENS] if text else [])
                   for context, text in pairs]
        results = []
        for context, text in encoded:  # one sequence a pass: a score must not depend on what it was batched with
            if not text:
                results.append(0.0)
                continue
            ids = torch.tensor([context + text])
            with torch.no_grad():
                log_probs = model(input_ids=ids).logits[0, :-1].log_softmax(-1)
            results.append(float(log_probs.gather(1, ids[0, 1:, None])[len(context) - 1:, 0].mean()))
        return results

    def _model(self) -> tuple[Any, Any]:
        """The tokenizer and model, loaded on the first call and shared with every scorer of the same model."""
        return shared_causal_lm(str(self.model))
