"""Emotion classifier scorer: how much a reply sounds like each of the seven emotions.

:class:`EmotionClassifier` turns replies into probability distributions over
:data:`~affectgym.emotions.EMOTIONS` with one of four backends:

``"transformers"`` (default)
    A sequence-classification model, by default
    ``j-hartmann/emotion-english-distilroberta-base`` (any hub id or local directory works;
    its label names come from ``config.id2label``). A whole batch is scored in one call:
    texts are sorted by token length and cut into buckets of ``batch_size`` so that little
    padding is computed, under ``torch.inference_mode``. The model is loaded once per process
    and shared by every instance (a module-level cache keyed by model, device and precision).
``"nade"``
    The offline ``nade`` package (fastText emoji predictions + LightGBM regressors, MIT),
    which rates Plutchik's eight emotions on ``[0, 1]``. See :func:`plutchik_to_basic` for
    the mapping onto the seven labels.
``"probe"``
    Offline too: a linear probe on SmolLM2-135M-Instruct's hidden states, fitted on the
    project's own replies that show an emotion without naming it
    (:mod:`affectgym.rewards.emotion_probe`); it reads all seven labels.
a callable
    Any ``fn(texts: list[str]) -> list[dict[label, probability]]``; label spellings are
    mapped with :func:`~affectgym.emotions.canonical_emotion`, unknown labels are
    dropped and the rest renormalised.

Every backend scores the visible reply only: ``<think>...</think>`` is removed first. With
``aggregate="sentences"`` each sentence of the reply (:func:`split_sentences`) is scored alone
and the reply's distribution is the mean of theirs: on the EmotionStyle demonstrations and
paraphrase sets this lowers the spread of P(target) over paraphrases of one reply
(``benchmarks/bench_style_demos.py``).
Envs score through a :class:`MemoisedClassifier`, which remembers each text's distribution
in a bounded memo, so a text is classified once.

>>> def constant(texts):
...     return [{"happiness": 3.0, "sad": 1.0} for _ in texts]
>>> classifier = EmotionClassifier(constant)
>>> classifier.scores(["<think>plan</think>Yay!"])[0]["joy"]
0.75
>>> classifier.target_probability(["Yay!", "Oh no."], ["joy", "SADNESS"])
[0.75, 0.25]
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.emotions import EMOTIONS, canonical_emotion
from affectgym.hub import pretrained_problem
from affectgym.models import load_pretrained, shared_model
from affectgym.rewards.memo import BoundedMemo
from affectgym.rewards.rules import strip_think

__all__ = [
    "AGGREGATES",
    "DEFAULT_EMOTION_MODEL",
    "MEMO_ENTRIES",
    "PRECISIONS",
    "EmotionClassifier",
    "MemoisedClassifier",
    "default_precision",
    "check_neutral_weight",
    "plutchik_to_basic",
    "split_sentences",
]

log = logging.getLogger(__name__)

DEFAULT_EMOTION_MODEL = "j-hartmann/emotion-english-distilroberta-base"
"""The reference encoder (7 classes; about 66% accuracy on its balanced evaluation set)."""

PRECISIONS = ("fp32", "bf16", "int8-dynamic")
"""Precisions of the transformers backend. ``int8-dynamic`` quantises the linear layers'
weights to int8 (activations quantised on the fly); CPU only."""

MEMO_ENTRIES = 8192
"""Distributions a :class:`MemoisedClassifier` keeps by default."""

AGGREGATES = ("text", "sentences")
"""How a reply is read: ``"text"``, whole (the default); ``"sentences"``, each sentence alone, then averaged."""

# A sentence ends at . ! ? or … (with any closing quotes or brackets) before white space, or at a line break.
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'’”)\]]))\s+|\s*\n\s*")

ScoreFn = Callable[[list[str]], Sequence[Mapping[str, float]]]


def default_precision(device: str) -> str:
    """Precision used when ``precision="auto"``, chosen by measurement per device.

    On a CPU with native bf16 instructions (AVX512-BF16; 2 threads, 256 replies of about
    120 tokens, distilroberta shape, ``benchmarks/bench_rewards.py``, a shared machine), bf16
    ran 1.9-3.3x faster than fp32 at batch 32 and 6.3-8.7x faster than fp32 one reply at a
    time. Agreement with fp32 depends on how confident the model is: within 0.002 on every
    target probability for a random model at RoBERTa's initialisation (near-uniform outputs),
    up to 0.026 once its head was scaled to confident logits (std 6.5). int8-dynamic was as
    fast or up to 1.3x faster than bf16 but further off (0.003 and 0.14), so it is opt-in.
    Check with the real model before relying on small reward differences;
    ``precision="fp32"`` stays available. On CUDA, bf16.
    Elsewhere (no bf16 instructions, MPS) fp32.

    Args:
        device: A torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).

    Returns:
        One of :data:`PRECISIONS`.
    """
    if device.startswith("cuda"):
        return "bf16"
    if device == "cpu" and _cpu_has_bf16():
        return "bf16"
    return "fp32"


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def plutchik_to_basic(intensities: Mapping[str, float], neutral_weight: float = 1.0) -> dict[str, float]:
    """Map Plutchik intensities (``nade``'s eight, each in ``[0, 1]``) onto the seven labels.

    - anger, disgust, fear, joy, sadness and surprise keep their intensity as a weight.
    - **neutral** is the absence of any clear emotion: its weight is
      ``neutral_weight * (1 - max)`` of those six intensities, so a flat text is neutral and
      a strongly rated one is not. At ``neutral_weight=1`` an emotion must be rated above
      0.5 to outrank neutral, which ``nade`` rarely does: on the 189 emotional sentences of
      the embedded dialogue corpus' reference replies it put neutral on top for 90%
      (``benchmarks/bench_classifier_calibration.py`` measures the weights).
    - **trust** and **anticipation** are dropped. Neither has a counterpart among Ekman's
      basic emotions, and folding them into joy would reward the polite, helpful register
      of an assistant (which ``nade`` rates high on trust) as joy; a text that only carries
      them therefore scores as neutral.

    The weights are then normalised to sum to 1.

    Args:
        intensities: ``{plutchik label: intensity}``; missing labels count as 0.
        neutral_weight: Scales neutral's weight, in ``(0, 1]``.

    Returns:
        ``{label: probability}`` over :data:`~affectgym.emotions.EMOTIONS`.

    >>> p = plutchik_to_basic({"joy": 0.9, "surprise": 0.1, "trust": 0.8})
    >>> round(p["joy"], 3), round(p["neutral"], 3), round(sum(p.values()), 6)
    (0.818, 0.091, 1.0)
    >>> plutchik_to_basic({})["neutral"]
    1.0
    >>> mild = {"sadness": 0.3}
    >>> max(plutchik_to_basic(mild), key=plutchik_to_basic(mild).get), max(
    ...     plutchik_to_basic(mild, 0.35), key=plutchik_to_basic(mild, 0.35).get)
    ('neutral', 'sadness')
    """
    check_neutral_weight(neutral_weight)
    weights = {
        label: min(max(float(intensities.get(label, 0.0)), 0.0), 1.0)
        for label in EMOTIONS
        if label != "neutral"
    }
    weights["neutral"] = neutral_weight * (1.0 - max(weights.values()))
    total = sum(weights.values())  # >= neutral_weight * (1 - max) + max > 0
    return {label: weights[label] / total for label in EMOTIONS}


def _to_seven(distribution: Mapping[str, float], source: str) -> dict[str, float]:
    """Sum a distribution's labels into the seven, drop unknown ones, renormalise."""
    mass = dict.fromkeys(EMOTIONS, 0.0)
    for name, value in distribution.items():
        label = canonical_emotion(str(name))
        if label is None:
            continue
        value = float(value)
        if not value >= 0.0:  # also rejects NaN
            raise ValueError(f"{source} returned probability {value!r} for {name!r}; expected >= 0")
        mass[label] += value
    total = sum(mass.values())
    if total <= 0.0:
        return {label: float(label == "neutral") for label in EMOTIONS}
    return {label: value / total for label, value in mass.items()}


def split_sentences(text: str) -> list[str]:
    """The sentences of a text: split after ``.``, ``!``, ``?`` or ``…`` before white space, and at line breaks.

    A text with no break is one sentence; an empty text has none.

    >>> split_sentences("Wait, what? Since when... No way!\\nTell me.")
    ['Wait, what?', 'Since when...', 'No way!', 'Tell me.']
    >>> split_sentences('She said "Stop!" Then it was 3.5 km away'), split_sentences("  ")
    (['She said "Stop!"', 'Then it was 3.5 km away'], [])
    """
    return [piece.strip() for piece in _SENTENCE_BREAK.split(text) if piece and piece.strip()]


def check_neutral_weight(neutral_weight: float) -> None:
    """Refuse a ``neutral_weight`` outside ``(0, 1]``, naming it.

    >>> check_neutral_weight(0.0)
    Traceback (most recent call last):
    ...
    ValueError: neutral_weight must be a number in (0, 1], got 0.0
    """
    if isinstance(neutral_weight, bool) or not isinstance(neutral_weight, (int, float)) \
            or not 0.0 < neutral_weight <= 1.0:
        raise ValueError(f"neutral_weight must be a number in (0, 1], got {neutral_weight!r}")


class EmotionClassifier:
    """Scores replies against the seven emotion labels.

    Args:
        backend: ``"transformers"``, ``"nade"``, or a callable
            ``fn(list[str]) -> list[dict[label, probability]]``.
        model: Hub id or local directory of a sequence-classification model
            (transformers backend only).
        device: Torch device (``"cpu"``, ``"cuda"``, ``"cuda:0"``...).
        precision: ``"auto"`` (see :func:`default_precision`), or one of :data:`PRECISIONS`.
        batch_size: Texts per forward pass.
        max_length: Token limit per text; default the model's own limit (512 for
            distilroberta). Longer texts are truncated.
        neutral_weight: ``nade`` backend only: how much neutral weighs against the six
            emotions (see :func:`plutchik_to_basic`), in ``(0, 1]``.
        aggregate: One of :data:`AGGREGATES`: score each reply whole (``"text"``), or each of
            its sentences alone and take the mean of their distributions (``"sentences"``;
            every backend; the sentences of a whole batch go to the backend in one call).

    Raises:
        ValueError: An unknown backend, precision or aggregate, or a model whose labels do
            not name any of the seven emotions.

    Examples:
        >>> def by_mark(texts):
        ...     return [{"surprise": 1.0} if text.endswith("?") else {"neutral": 1.0} for text in texts]
        >>> EmotionClassifier(by_mark, aggregate="sentences").scores(["Since when? It is late."])[0]["surprise"]
        0.5
    """

    def __init__(
        self,
        backend: str | ScoreFn = "transformers",
        *,
        model: str | Path = DEFAULT_EMOTION_MODEL,
        device: str = "cpu",
        precision: str = "auto",
        batch_size: int = 32,
        max_length: int | None = None,
        neutral_weight: float = 1.0,
        aggregate: str = "text",
    ) -> None:
        check_neutral_weight(neutral_weight)
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}; use one of {AGGREGATES}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if callable(backend):
            self.backend = "callable"
            self._fn: ScoreFn | None = backend
        elif backend in ("transformers", "nade", "probe"):
            self.backend = backend
            self._fn = None
        else:
            raise ValueError(
                f"unknown emotion classifier backend {backend!r}; use 'transformers', 'nade', 'probe' "
                "or a callable list[str] -> list[dict[label, prob]]"
            )
        if precision != "auto" and precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; use 'auto' or one of {PRECISIONS}")
        self.model = str(model)
        self.device = device
        self.precision = default_precision(device) if precision == "auto" else precision
        if self.precision == "int8-dynamic" and device != "cpu":
            raise ValueError(
                f"precision 'int8-dynamic' runs on device 'cpu' only, got device {device!r}"
            )
        self.batch_size = batch_size
        self.max_length = max_length
        self.neutral_weight = float(neutral_weight)
        self.aggregate = aggregate

    labels: tuple[str, ...] = EMOTIONS
    """The seven labels every distribution is over."""

    def __repr__(self) -> str:
        aggregate = "" if self.aggregate == "text" else f", aggregate={self.aggregate!r}"
        if self.backend == "transformers":
            return (f"EmotionClassifier('transformers', model={self.model!r}, device={self.device!r}, "
                    f"precision={self.precision!r}{aggregate})")
        if self.backend == "nade" and self.neutral_weight != 1.0:
            return f"EmotionClassifier('nade', neutral_weight={self.neutral_weight!r}{aggregate})"
        return f"EmotionClassifier({self.backend!r}{aggregate})"

    def scores(self, texts: Sequence[str | None]) -> list[dict[str, float]]:
        """Probability of each of the seven labels for each text.

        Args:
            texts: Replies; ``<think>`` blocks are removed, ``None`` counts as empty.

        Returns:
            One ``{label: probability}`` per text (the seven labels, summing to 1), in order.
        """
        visible = [strip_think(text) for text in texts]
        if not visible:
            return []
        if self.aggregate == "sentences":
            return self._sentence_means(visible)
        return self._scores_visible(visible)

    def _sentence_means(self, texts: list[str]) -> list[dict[str, float]]:
        """Each text's mean over its sentences' distributions (a text without one is scored as it is)."""
        pieces = [split_sentences(text) or [text] for text in texts]
        found = iter(self._scores_visible([sentence for sentences in pieces for sentence in sentences]))
        means = []
        for sentences in pieces:
            distributions = [next(found) for _ in sentences]
            means.append({label: sum(d[label] for d in distributions) / len(distributions) for label in EMOTIONS})
        return means

    def _scores_visible(self, visible: list[str]) -> list[dict[str, float]]:
        """The backend's distribution of each text (``<think>`` already removed)."""
        if self.backend == "transformers":
            return self._scores_transformers(visible)
        if self.backend == "nade":
            return self._scores_nade(visible)
        if self.backend == "probe":
            return self._scores_probe(visible)
        assert self._fn is not None
        raw = list(self._fn(visible))
        if len(raw) != len(visible):
            raise ValueError(
                f"the scoring callable returned {len(raw)} results for {len(visible)} texts"
            )
        return [_to_seven(dist, "the scoring callable") for dist in raw]

    def target_probability(
        self, texts: Sequence[str | None], targets: Sequence[str]
    ) -> list[float]:
        """Probability of each text's target label.

        Args:
            texts: Replies.
            targets: One target per text, any spelling :func:`canonical_emotion` knows.

        Returns:
            ``P(target | text)`` per text.

        Raises:
            ValueError: Lengths differ, or a target is not one of the seven labels (open
                vocabulary targets such as ``"condescending"`` are for the judge; filter
                them with :func:`~affectgym.emotions.is_basic_emotion`).
        """
        if len(texts) != len(targets):
            raise ValueError(
                f"target_probability needs one target per text, got {len(texts)} texts and {len(targets)} targets"
            )
        labels = []
        for target in targets:
            label = canonical_emotion(target)
            if label is None:
                raise ValueError(
                    f"target emotion {target!r} is not one of the classifier's labels {EMOTIONS}"
                )
            labels.append(label)
        return [dist[label] for dist, label in zip(self.scores(texts), labels, strict=True)]

    # -- transformers --------------------------------------------------------------------

    def _loaded(self) -> tuple[Any, Any, list[str | None], int]:
        key = (self.model, self.device, self.precision)
        return shared_model(("classifier", *key), lambda: _load_transformers(*key))

    def _scores_transformers(self, texts: list[str]) -> list[dict[str, float]]:
        import torch

        tokenizer, model, column_labels, model_limit = self._loaded()
        limit = min(self.max_length or model_limit, model_limit)
        encoded = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        results: list[dict[str, float] | None] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                bucket = order[start : start + self.batch_size]
                batch = tokenizer.pad(
                    {"input_ids": [encoded[i] for i in bucket]}, return_tensors="pt"
                )
                batch = {name: tensor.to(self.device) for name, tensor in batch.items()}
                logits = model(**batch).logits.float()
                probabilities = torch.softmax(logits, dim=-1).cpu().tolist()
                for index, row in zip(bucket, probabilities, strict=True):
                    results[index] = _columns_to_seven(row, column_labels)
        return [r for r in results if r is not None]

    # -- nade ----------------------------------------------------------------------------

    def _scores_nade(self, texts: list[str]) -> list[dict[str, float]]:
        nade = shared_model(("nade", "socialmedia_en"), _load_nade)
        # fastText predicts one line at a time; nade lower-cases and respaces itself.
        lines = [" ".join(text.split()) for text in texts]
        columns = nade.predict(lines)
        plutchik = {label: values.to_pylist() for label, values in columns.items()}
        return [
            plutchik_to_basic({label: column[i] for label, column in plutchik.items()}, self.neutral_weight)
            for i in range(len(lines))
        ]


    def _scores_probe(self, texts: list[str]) -> list[dict[str, float]]:
        from affectgym.rewards.emotion_probe import ProbeHead, probe_features

        head = shared_model(("emotion-probe-head",), ProbeHead.load)
        rows = head.probabilities(probe_features(texts))
        return [_to_seven(dict(zip(head.labels, map(float, row), strict=True)), "the emotion probe") for row in rows]


class MemoisedClassifier:
    """An :class:`EmotionClassifier` whose distributions are remembered by text.

    The memo is a :class:`~affectgym.rewards.memo.BoundedMemo` (least recently used texts
    are forgotten first); a batch's unknown texts go to the classifier in one call, each once.

    Args:
        classifier: The classifier.
        max_entries: Texts remembered.

    >>> calls = []
    >>> memo = MemoisedClassifier(EmotionClassifier(lambda texts: calls.append(len(texts)) or [{"joy": 1.0}] * len(texts)))
    >>> [d["joy"] for d in memo.scores(["Yay!", "Yay!", "Hooray!"])], memo.scores(["Yay!"])[0]["joy"], calls
    ([1.0, 1.0, 1.0], 1.0, [2])
    """

    def __init__(self, classifier: EmotionClassifier, max_entries: int = MEMO_ENTRIES) -> None:
        self.classifier = classifier
        self._memo: BoundedMemo[str, dict[str, float]] = BoundedMemo(max_entries)

    def __repr__(self) -> str:
        return f"MemoisedClassifier({self.classifier!r}, {self._memo!r})"

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """:meth:`EmotionClassifier.scores` of each text, each text classified once.

        Args:
            texts: The texts.

        Returns:
            One ``{label: probability}`` per text, in order.
        """
        return self._memo.get_many(list(texts), self.classifier.scores)


def _columns_to_seven(
    row: Sequence[float], column_labels: Sequence[str | None]
) -> dict[str, float]:
    mass = dict.fromkeys(EMOTIONS, 0.0)
    for probability, label in zip(row, column_labels, strict=True):
        if label is not None:
            mass[label] += probability
    total = sum(mass.values())
    if total <= 0.0:
        return {label: float(label == "neutral") for label in EMOTIONS}
    return {label: value / total for label, value in mass.items()}


def _load_transformers(
    model_name: str, device: str, precision: str
) -> tuple[Any, Any, list[str | None], int]:
    """Load tokenizer and model once; map the model's columns onto the seven labels."""
    advice = (
        "Without hub access, pass model=<local directory of a sequence-classification model> or use "
        "backend='nade' (offline)"
    )
    # Checked before from_pretrained, which retries an unreachable hub for most of a minute.
    problem = pretrained_problem(model_name)
    if problem is not None:
        raise OSError(f"could not load the emotion classifier: {problem}. {advice}")
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_name)
        model = load_pretrained(AutoModelForSequenceClassification.from_pretrained, model_name)
    except OSError as error:
        raise OSError(f"could not load the emotion classifier {model_name!r} ({error}). {advice}") from error
    id2label = model.config.id2label
    column_labels = [canonical_emotion(str(id2label[i])) for i in range(model.config.num_labels)]
    if not any(column_labels):
        raise ValueError(
            f"model {model_name!r} has labels {list(id2label.values())}, none of which is one "
            f"of the seven emotions {EMOTIONS}; use an emotion classification model"
        )
    unknown = [str(id2label[i]) for i, label in enumerate(column_labels) if label is None]
    if unknown:
        log.info("emotion classifier %s: ignoring labels %s outside the seven", model_name, unknown)
    model.eval()
    if precision == "bf16":
        model = model.to(dtype=torch.bfloat16)
    elif precision == "int8-dynamic":
        from torch.ao.quantization import quantize_dynamic

        with warnings.catch_warnings():
            # torch deprecates the quantized-tensor API in favour of torchao; it still works.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings(
                "ignore", message=".*quantize.*deprecated", category=UserWarning
            )
            model = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    model = model.to(device)
    return tokenizer, model, column_labels, _model_token_limit(tokenizer, model.config)


def _model_token_limit(tokenizer: Any, config: Any) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    positions = getattr(config, "max_position_embeddings", None)
    if positions is not None and "roberta" in str(getattr(config, "model_type", "")):
        positions -= 2  # RoBERTa numbers positions from padding_idx + 1
    candidates = [n for n in (limit, positions) if isinstance(n, int) and 0 < n < 1_000_000]
    return min(candidates) if candidates else 512


def _load_nade() -> Any:
    try:
        from nade import Nade
    except ImportError as error:
        raise ImportError("the 'nade' backend needs the nade package: pip install nade") from error
    with warnings.catch_warnings():
        # nade announces that it unpacks its LightGBM models (into its own package
        # folder, once, on first use).
        warnings.filterwarnings("ignore", message="unpack .* model")
        return Nade()
