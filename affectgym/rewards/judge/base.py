"""The judge plumbing written once: batches, memo, disk cache, concurrency, retries, failures as ``Unscored``."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import os
import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import tenacity

from affectgym.rewards.judge.cache import VerdictCache
from affectgym.rewards.judge.config import JudgeConfig
from affectgym.rewards.judge.fencing import fence_response, truncate_reply
from affectgym.rewards.memo import BoundedMemo
from affectgym.rewards.rubric import Unscored
from affectgym.rewards.rules import strip_think
from affectgym.text import replace_lone_surrogates

log = logging.getLogger(__name__)

MEMO_ENTRIES = 8192
"""Outcomes a judge remembers in process (in front of the disk cache)."""

JudgeT = TypeVar("JudgeT", bound="Judge")


class Judge:
    """An LLM judge: one DSPy signature and one scoring function, batched, retried, cached, fail-safe.

    The plumbing every judge of affectgym shares lives here once. A subclass says what it
    asks and how an answer scores:

    * :attr:`name` (for logs), :attr:`version` (part of every cache key: bump it when the
      signature's text or fields change), :attr:`inputs` (the signature's input fields, in
      order), :attr:`reply_field` (the input that holds the untrusted reply),
      :attr:`outputs` (the output fields read);
    * :meth:`signature`: the ``dspy.Signature`` class (built on first use: dspy is heavy);
    * :meth:`verdict`: the scoring function, the outputs (as the LM or the cache gives them)
      to the judge's result; it raises ``ValueError`` for an answer it cannot use.

    :meth:`judge_batch` then does the rest: lone surrogates in the inputs become U+FFFD
    (:mod:`affectgym.text`), the reply loses its ``<think>`` blocks, is cut
    (:func:`truncate_reply`) and fenced (:func:`fence_response`); identical samples are
    judged once; outcomes are memoised in process (a :class:`~affectgym.rewards.memo.BoundedMemo`)
    and verdicts cached on disk by content; the rest are judged concurrently (a bounded
    thread pool), rate limits (429), server errors (5xx), timeouts and transport errors are
    retried with exponential backoff; a sample whose judging finally fails yields an
    :class:`~affectgym.rewards.rubric.Unscored` with the reason (its criteria are left out
    of the reward), is counted in :attr:`failures` and logged. Nothing raises.

    Args:
        lm: Any ``dspy.LM`` (or other ``dspy.BaseLM``, e.g. ``dspy.utils.DummyLM`` in tests).
        config: Concurrency, retries, truncation and cache settings.
        adapter: DSPy adapter; DSPy's default (ChatAdapter) when ``None``.

    Attributes:
        failures: Samples whose judging finally failed (they were given an ``Unscored``).
        calls: LM calls attempted (retries included; memo and cache hits excluded).
    """

    name: ClassVar[str]
    version: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]]
    reply_field: ClassVar[str]
    outputs: ClassVar[tuple[str, ...]]

    def __init__(self, lm: Any, config: JudgeConfig | None = None, *, adapter: Any = None) -> None:
        import dspy

        self.lm = lm
        self.config = config or JudgeConfig()
        self.adapter = adapter
        self.model_id = str(getattr(lm, "model", type(lm).__name__))
        self._program = dspy.Predict(self.signature())
        self._cache = (VerdictCache(self.config.cache_path(), self.config.cache_max_bytes)
                       if self.config.cache else None)
        # Outcomes by cache key; an Unscored marks a sample whose judging failed.
        self._memo: BoundedMemo[str, dict[str, Any] | Unscored] = BoundedMemo(MEMO_ENTRIES)
        self._lock = threading.Lock()
        self.failures = 0
        self.calls = 0

    @classmethod
    def signature(cls) -> type:
        """The ``dspy.Signature`` subclass this judge asks."""
        raise NotImplementedError(f"{cls.__name__} must define signature()")

    def verdict(self, outputs: Mapping[str, Any]) -> Any:
        """The scoring function: the outputs of one sample to the judge's result.

        Raises:
            ValueError: The answer cannot be used (a rating missing or out of range).
        """
        raise NotImplementedError(f"{type(self).__name__} must define verdict()")

    @classmethod
    def from_url(
        cls: type[JudgeT],
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 1024,
        config: JudgeConfig | None = None,
    ) -> JudgeT:
        """A judge served by any OpenAI-compatible endpoint (OpenRouter, vLLM, Ollama...).

        Args:
            base_url: Endpoint base, e.g. ``https://openrouter.ai/api/v1`` or
                ``http://localhost:8000/v1`` (vLLM) or ``http://localhost:11434/v1`` (Ollama).
            model: Model name as the server knows it (``google/gemini-2.0-flash-001``).
            api_key_env: Environment variable holding the key (``OPENROUTER_API_KEY``).
            api_key: The key itself; local servers accept any string (the default ``"local"``).
            temperature: Sampling temperature (0.2 in the reference).
            max_tokens: Completion limit of the judge's answer.
            config: Judge settings; ``config.timeout_s`` becomes the client timeout.

        Returns:
            The judge. DSPy's own retries and cache are off; the judge does both.

        Raises:
            ValueError: ``api_key_env`` names an unset variable.
        """
        import dspy

        config = config or JudgeConfig()
        if api_key_env is not None:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ValueError(
                    f"environment variable {api_key_env!r} (the judge's API key) is not set"
                )
        lm = dspy.LM(
            model if model.startswith("openai/") else f"openai/{model}",
            api_base=base_url.rstrip("/"),
            api_key=api_key or "local",
            temperature=temperature,
            max_tokens=max_tokens,
            cache=False,
            num_retries=0,
            timeout=config.timeout_s,
        )
        return cls(lm, config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_id!r}, failures={self.failures})"

    # -- judging -------------------------------------------------------------------------

    def judge_columns(self, *columns: Sequence[str | None], retry_failed: bool = True) -> list[Any]:
        """:meth:`judge_batch` of samples given column by column, in the order of :attr:`inputs`.

        A sample whose reply (the :attr:`reply_field` column) is ``None`` gives ``None``
        without a call.

        Raises:
            ValueError: Not one column per input field, or columns of different lengths.
        """
        if len(columns) != len(self.inputs) or len({len(column) for column in columns}) > 1:
            lengths = ", ".join(f"{len(column)} {name}" for name, column in zip(self.inputs, columns, strict=False))
            raise ValueError(f"score_batch needs equal lengths, one column per field of {self.inputs}; got {lengths}")
        reply = self.inputs.index(self.reply_field)
        samples = [
            None if row[reply] is None else dict(zip(self.inputs, row, strict=True))
            for row in zip(*columns, strict=True)
        ]
        return self.judge_batch(samples, retry_failed=retry_failed)

    def judge_batch(
        self, samples: Sequence[Mapping[str, str] | None], *, retry_failed: bool = True
    ) -> list[Any]:
        """Judge a batch; never raises for a failing sample.

        Args:
            samples: One ``{input field: text}`` per sample (every field of :attr:`inputs`);
                ``None`` (nothing to judge, e.g. no answer) gives ``None`` without a call.
            retry_failed: Judge again samples whose last judging failed; ``False`` reuses
                that outcome (e.g. for a second score read from the same verdict in a batch).

        Returns:
            One :meth:`verdict` per sample, ``None`` for a ``None`` sample, or an
            :class:`~affectgym.rewards.rubric.Unscored` naming the failure where judging failed
            (now, or earlier and reused).
        """
        prepared: list[dict[str, str] | None] = []
        for sample in samples:
            if sample is None:
                prepared.append(None)
                continue
            # Neither the cache key nor the HTTP request can encode a lone surrogate (half an
            # emoji cut by max_tokens): U+FFFD, as everywhere in affectgym.
            inputs = {name: replace_lone_surrogates(str(sample[name])) for name in self.inputs}
            inputs[self.reply_field] = truncate_reply(
                strip_think(inputs[self.reply_field]),
                self.config.max_reply_words,
                self.config.max_reply_chars,
            )
            prepared.append(inputs)
        keys = [self._key(inputs) if inputs is not None else None for inputs in prepared]
        unique = {key: inputs for key, inputs in zip(keys, prepared, strict=True) if key is not None}
        outcomes: dict[str, dict[str, Any] | Unscored] = {}
        for key in unique:
            if key in self._memo:
                outcome = self._memo.get(key)
                if not isinstance(outcome, Unscored) or not retry_failed:
                    outcomes[key] = outcome
        todo = {key: inputs for key, inputs in unique.items() if key not in outcomes}
        if self._cache is not None and todo:
            cached = self._cached(list(todo))
            outcomes.update(cached)
            self._memo.update(cached.items())
            todo = {key: inputs for key, inputs in todo.items() if key not in cached}
        if todo:
            judged = self._judge_all(todo)
            outcomes.update(judged)
            self._memo.update(judged.items())
        return [
            None if key is None else outcomes[key] if isinstance(outcomes[key], Unscored) else self.verdict(outcomes[key])
            for key in keys
        ]

    def _key(self, inputs: Mapping[str, str]) -> str:
        payload = json.dumps(
            [self.model_id, self.version, *(inputs[name] for name in self.inputs)],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def _cached(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The usable cached outputs of ``keys``; an unreadable row is a miss (judged again, then replaced)."""
        assert self._cache is not None
        stored = self._cache.get_many(keys)
        usable: dict[str, dict[str, Any]] = {}
        damaged: list[str] = []
        for key, text in stored.items():
            try:
                outputs = json.loads(text)
                if not isinstance(outputs, dict):
                    raise ValueError(f"a JSON {type(outputs).__name__}, not an object of ratings")
                self.verdict(outputs)
            except (TypeError, ValueError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                damaged.append(f"{key[:12]}...: {error}")
                continue
            usable[key] = outputs
        if damaged:
            log.warning(
                "judge cache %s: %d unreadable entries, judged again (%s)",
                self._cache.path,
                len(damaged),
                "; ".join(damaged[:3]),
            )
        return usable

    def _judge_all(
        self, todo: Mapping[str, Mapping[str, str]]
    ) -> dict[str, dict[str, Any] | Unscored]:
        """Judge unique samples concurrently; failures are counted here, once per sample."""
        results: dict[str, dict[str, Any] | Unscored] = {}
        config = self.config
        # A sample's budget: every attempt's timeout and every backoff, plus slack for the
        # client's own overheads. Samples start in waves of max_concurrency.
        sample_budget_s = (config.timeout_s + config.max_backoff_s) * (config.max_retries + 1) + 5.0
        waves = -(-len(todo) // config.max_concurrency)
        deadline_s = sample_budget_s * waves
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=min(config.max_concurrency, len(todo)),
            thread_name_prefix=f"{self.name}-judge",
        )
        try:
            futures = {pool.submit(self._judge_one, key, inputs): key for key, inputs in todo.items()}
            done, pending = concurrent.futures.wait(futures, timeout=deadline_s)
            for future in done:
                key = futures[future]
                outputs, error = future.result()
                results[key] = outputs if error is None else self._count_failure(todo[key], error)
            for future in pending:
                future.cancel()
                key = futures[future]
                results[key] = self._count_failure(todo[key], TimeoutError(f"no verdict within {deadline_s:.0f} s"))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return results

    def _judge_one(
        self, key: str, inputs: Mapping[str, str]
    ) -> tuple[dict[str, Any] | None, BaseException | None]:
        """Judge one sample with retries (tenacity): ``(outputs, None)`` or ``(None, the last error)``."""
        fenced = {**inputs, self.reply_field: fence_response(inputs[self.reply_field])}
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.config.max_retries + 1),
            retry=tenacity.retry_if_exception(_is_retryable),
            wait=self._backoff_s,
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            raw = retrying(self._ask, fenced)
        except Exception as error:  # noqa: BLE001 - a judge must never crash training
            return None, error
        normalised = {name: _normalise(raw[name]) for name in self.outputs}
        if self._cache is not None:
            self._cache.put(key, normalised)
        return normalised, None

    def _ask(self, fenced: Mapping[str, str]) -> dict[str, Any]:
        """One call of the LM: the outputs, validated by :meth:`verdict` (which raises on an unusable answer)."""
        import dspy

        with self._lock:
            self.calls += 1
        settings = {"lm": self.lm} if self.adapter is None else {"lm": self.lm, "adapter": self.adapter}
        with dspy.context(**settings):
            prediction = self._program(**fenced)
        raw = {name: prediction[name] for name in self.outputs}
        self.verdict(raw)  # validate before caching
        return raw

    def _backoff_s(self, state: tenacity.RetryCallState) -> float:
        """The wait before the next attempt: ``backoff_s`` doubling each retry, up to ``max_backoff_s``, with up
        to 25% jitter; a provider's ``Retry-After`` when longer (still at most ``max_backoff_s``)."""
        config = self.config
        delay_s = min(config.backoff_s * 2 ** (state.attempt_number - 1), config.max_backoff_s) * (
            1 + 0.25 * random.random()
        )
        error = state.outcome.exception() if state.outcome is not None else None
        hint_s = getattr(error, "retry_after", None)
        if isinstance(hint_s, (int, float)) and hint_s > delay_s:
            delay_s = min(float(hint_s), config.max_backoff_s)
        return delay_s

    def _count_failure(self, inputs: Mapping[str, str], error: BaseException) -> Unscored:
        """Count and log a sample's failed judging; what its criteria report instead of a verdict."""
        with self._lock:
            self.failures += 1
            failures = self.failures
        context = ", ".join(
            f"{name} {inputs[name][:40]!r}" for name in self.inputs if name != self.reply_field
        )
        log.warning(
            "%s judge %s failed on a sample (%s, reply %r...): %s [%d failures so far]",
            self.name,
            self.model_id,
            context,
            inputs[self.reply_field][:60],
            _describe(error),
            failures,
        )
        return Unscored(f"{self.name} judge {self.model_id}: {_describe(error)}")


def _normalise(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        key = value.strip().strip("'\"").lower()
        if key in ("true", "false"):
            return key == "true"
        return key
    return value


def _status(error: BaseException) -> int | None:
    for name in ("status", "status_code", "http_status"):
        value = getattr(error, name, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _log_retry(state: tenacity.RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    wait_s = state.next_action.sleep if state.next_action is not None else 0.0
    log.debug("judge call failed (%s); retry %d in %.2f s", _describe(error) if error else "?", state.attempt_number, wait_s)


def _is_retryable(error: BaseException) -> bool:
    """Rate limits, server errors, timeouts and transport failures are worth retrying."""
    try:
        from dspy.utils.exceptions import is_retryable_lm_error
    except ImportError:  # older dspy
        is_retryable_lm_error = None  # type: ignore[assignment]
    if is_retryable_lm_error is not None and is_retryable_lm_error(error):
        return True
    status = _status(error)
    if status is not None:
        return status == 429 or status >= 500
    return isinstance(error, (TimeoutError, ConnectionError))


def _describe(error: BaseException) -> str:
    status = _status(error)
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    prefix = f"{type(error).__name__}" + (f" (HTTP {status})" if status else "")
    return f"{prefix}: {text[:200]}" if text else prefix
