"""Build an env's scorers from its arguments: the emotion classifier and the LLM judge.

Envs take their scorers in the forms a user writes (``classifier="auto"``, a model id, a
``dspy`` LM, a judge URL...). :func:`make_classifier` and :func:`make_judge` turn those into
an :class:`~affectgym.rewards.classifier.EmotionClassifier` and a
:class:`~affectgym.rewards.judge.Judge`, the same way for every env. Choices that depend on
the machine (``"auto"`` falls back to the offline probe, then ``nade``) are said in the log once per
process (:func:`log_once`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from affectgym.hub import HUB_PROBE_TIMEOUT_S, hub_offline_reason, pretrained_problem
from affectgym.rewards.classifier import DEFAULT_EMOTION_MODEL, EmotionClassifier
from affectgym.rewards.judge import EmotionJudge, Judge, JudgeConfig

__all__ = ["log_once", "make_classifier", "make_judge"]

log = logging.getLogger(__name__)

_ANNOUNCED: set[str] = set()
_PROBE_FALLBACK = (
    "classifier 'auto' uses the offline emotion probe on SmolLM2-135M, not the transformer model %s (%s); its "
    "scores differ. Pass classifier='probe' to choose it, or classifier='transformers' once the model can be loaded"
)
_NADE_FALLBACK = (
    "classifier 'auto' uses nade, the offline emotion lexicon: neither the transformer model %s nor the offline "
    "probe could be loaded (%s). Pass classifier='nade' to choose it"
)


def log_once(key: str, message: str, *args: Any, logger: logging.Logger = log, level: int = logging.INFO) -> None:
    """Log ``message`` (at ``level``, INFO by default) the first time ``key`` is seen in this process.

    Args:
        key: What the message is about (e.g. ``"auto-nade"``); later calls with it are silent.
        message: A ``%``-style log message.
        *args: Its arguments.
        logger: Where it goes; this module's logger by default.
        level: The log level.
    """
    if key not in _ANNOUNCED:
        _ANNOUNCED.add(key)
        logger.log(level, message, *args)


def _hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (False when HF_HUB_OFFLINE is set)."""
    return hub_offline_reason(timeout_s) is None


def _model_available(model: str) -> bool:
    """Whether ``model`` is a local directory, sits in the hub cache, or the hub is reachable."""
    return pretrained_problem(model) is None


def make_classifier(
    classifier: str | EmotionClassifier | Callable[[list[str]], Any] = "auto",
    *,
    device: str = "cpu",
    options: Mapping[str, Any] | None = None,
) -> EmotionClassifier:
    """Build an env's emotion classifier from its ``classifier=`` argument.

    Args:
        classifier: ``"auto"`` (the transformer model when it can be loaded, else the offline
            ``"probe"``, else ``nade``),
            ``"transformers"`` (the reference model), ``"nade"`` or ``"probe"`` (offline), a hub id or local
            directory of a sequence-classification model, an :class:`EmotionClassifier`, or a
            callable ``list[str] -> list[dict[label, prob]]``.
        device: Torch device of a transformer model.
        options: Further keyword arguments of :class:`EmotionClassifier` (``precision``,
            ``batch_size``, ``max_length`` for a transformer model; ``neutral_weight`` for ``nade``).

    Returns:
        The classifier; ``"auto"`` says in the log, once, which backend it chose.

    Raises:
        ValueError: ``classifier`` is none of the accepted forms.

    >>> make_classifier("nade").backend
    'nade'
    """
    options = dict(options or {})
    if isinstance(classifier, EmotionClassifier):
        return classifier
    if callable(classifier):
        return EmotionClassifier(classifier)
    if not isinstance(classifier, str) or not classifier.strip():
        raise ValueError(
            f"classifier must be 'auto', 'transformers', 'nade', 'probe', a model id or path, an EmotionClassifier "
            f"or a callable; got {classifier!r}"
        )
    if classifier in ("nade", "probe"):
        return EmotionClassifier(classifier, **options)
    if classifier == "auto":
        return _automatic_classifier(device, options)
    model = DEFAULT_EMOTION_MODEL if classifier == "transformers" else classifier
    return EmotionClassifier("transformers", model=model, device=device, **options)


def _automatic_classifier(device: str, options: Mapping[str, Any]) -> EmotionClassifier:
    """``classifier="auto"``: the transformer model when it loads, else the offline probe, else ``nade``."""
    reason = "it is neither cached nor reachable on the hub"
    if _model_available(DEFAULT_EMOTION_MODEL):
        candidate = EmotionClassifier("transformers", model=DEFAULT_EMOTION_MODEL, device=device, **options)
        try:
            candidate.scores(["warming up"])
        except (OSError, ValueError, ImportError) as exc:
            reason = str(exc).splitlines()[0]
        else:
            log_once("auto-transformers", "classifier 'auto' uses %s", DEFAULT_EMOTION_MODEL)
            return candidate
    candidate = EmotionClassifier("probe", **options)
    try:
        candidate.scores(["warming up"])
    except (OSError, ValueError, ImportError) as exc:
        log_once("auto-nade", _NADE_FALLBACK, DEFAULT_EMOTION_MODEL, str(exc).splitlines()[0], level=logging.WARNING)
        return EmotionClassifier("nade", **options)
    log_once("auto-probe", _PROBE_FALLBACK, DEFAULT_EMOTION_MODEL, reason, level=logging.WARNING)
    return candidate


def make_judge(
    judge: Any = None,
    *,
    judge_class: type[Judge] = EmotionJudge,
    judge_url: str | None = None,
    judge_model: str | None = None,
    judge_api_key_env: str | None = None,
    judge_config: JudgeConfig | None = None,
) -> Judge | None:
    """Build an env's judge: ``None``, a judge, a ``dspy`` LM, or a URL and model.

    Args:
        judge: A ``judge_class`` instance, any ``dspy.BaseLM`` (wrapped in one), or ``None``.
        judge_class: The judge the env scores with: :class:`~affectgym.rewards.judge.EmotionJudge`
            or :class:`~affectgym.rewards.judge.EmpathyJudge`.
        judge_url: Base URL of an OpenAI-compatible server (with ``judge_model``).
        judge_model: Model name on that server.
        judge_api_key_env: Environment variable holding the server's key.
        judge_config: Settings of a judge built here.

    Returns:
        The judge, or ``None`` when none is configured.

    Raises:
        ValueError: ``judge_url`` without ``judge_model`` (or the reverse), both a judge and
            a URL, or a judge of another class than ``judge_class``.

    >>> make_judge() is None
    True
    """
    if (judge_url is None) != (judge_model is None):
        raise ValueError(f"judge_url and judge_model go together; got judge_url={judge_url!r}, judge_model={judge_model!r}")
    if judge_url is not None:
        if judge is not None:
            raise ValueError("pass either judge=... or judge_url=/judge_model=, not both")
        return judge_class.from_url(judge_url, str(judge_model), api_key_env=judge_api_key_env, config=judge_config)
    if judge is None or isinstance(judge, judge_class):
        return judge
    if isinstance(judge, Judge):
        raise ValueError(
            f"judge is a {type(judge).__name__}, but this env scores with a {judge_class.__name__}; "
            f"pass a {judge_class.__name__}, a dspy LM or None"
        )
    return judge_class(judge, judge_config)
