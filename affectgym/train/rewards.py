"""TRL reward functions that score through the environment's own rubric.

:func:`reward_functions` returns one TRL reward function per rubric component (the
function's ``__name__`` is the component name, so TRL logs ``rewards/<component>/mean``)
and the rubric's weights for ``GRPOConfig.reward_weights``; the weighted sum of the
components is the rubric total, the same number an interactive episode earns.

Every function of one batch shares one scoring: the first one called rebuilds the
scenarios from the row columns (``env_id``, ``env_kwargs``, ``scenario_id``), calls
``env.score_batch(scenarios, replies, traces)`` once per env, and caches the results keyed
by the batch's completions; the others read the cache. Expensive scorers (a classifier, a
judge) therefore run once per batch, not once per component.

Two kinds of batch are scored:

* flattened (no ``environments`` argument): the trace is ``env.flat_trace(scenario)`` (the
  tool calls the flat prompt pre-rendered) followed by the final answer;
* multi-turn (TRL passes ``environments``, the :mod:`affectgym.train.environment` adapters
  of the rollouts): the trace is what the policy actually did in its episode, followed by
  the final answer (the last assistant message that is not a tool call). The results are
  handed back to the adapters, whose ``get_reward()`` returns the episode total.

A component that does not apply to a sample is ``None``, which TRL skips.

A sample whose LLM judging failed (the judge server down, after its retries) gets ``None``
from *every* reward function, and from the adapter's ``get_reward()`` in multi-turn runs:
TRL 1.16 turns ``None`` into NaN and adds the weighted functions with ``nansum``, so a
``None`` judge alone would leave the rest of the reward standing, as if the judge had
answered 0. With every function ``None``, TRL treats the completion as unscorable: it is
left out of its group's baseline and the reward statistics, and its advantage is 0 (TRL
warns "All reward functions returned None" for such a row). Each batch's count of such
samples is logged through TRL's ``log_metric`` as ``judge/failures`` (for envs with a judge),
and the judge logs a warning per failed sample (see :mod:`affectgym.rewards.judge`).

With ``rollouts_dir``, every scored sample is also appended as one JSON line to
``<rollouts_dir>/rank<N>.jsonl``, ``N`` the process index of accelerate's ``PartialState``
(0 in a one-process run; each process of an ``accelerate launch`` run scores its own shard
of the batch and writes its own file). A line holds ``step`` (the optimizer step the
rollout trains, 1 for the first as in TRL's ``log_history``; ``None`` outside a trainer),
``process_index``, ``env_id``, ``scenario_id``, ``reply`` (the final answer, ``None`` when
there is none), ``reward`` (the rubric total; ``None`` when the judging failed) and
``components``. ``affectgym train`` writes them to ``<output_dir>/rollouts/``; its run
folder holds one run (:mod:`affectgym.train.run_dir`), and a resumed run appends the steps
after its checkpoint.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from affectgym.train.environment import record_final_answer
from affectgym.train.flatten import kwargs_json, shared_env

logger = logging.getLogger(__name__)

RewardFn = Callable[..., list[float | None]]
#: Flat traces kept per scorer (one per scenario; a trace holds the rendered tool outputs).
FLAT_TRACE_CACHE_ENTRIES = 4096


def completion_text(completion: Any) -> str | None:
    """The final answer in a TRL completion; ``None`` when there is none.

    A completion is plain text, or a list of messages (conversational; in multi-turn runs
    assistant tool calls and tool results alternate). The final answer is the content of
    the last message when it is an assistant message without tool calls.

    >>> completion_text("<answer>happy</answer>")
    '<answer>happy</answer>'
    >>> completion_text([{"role": "assistant", "content": "hi"}])
    'hi'
    >>> completion_text([{"role": "assistant", "content": "", "tool_calls": [{}]}, {"role": "tool", "content": "x"}])
    """
    if completion is None or isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if not isinstance(completion, Sequence) or not completion:
        return None
    last = completion[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return content if isinstance(content, str) else None


def component_names(env_id: str, env_kwargs: Mapping[str, Any] | str | None = None) -> dict[str, float]:
    """The env's rubric weights by component name (caps and gates included, weight 1)."""
    return dict(shared_env(env_id, _with_split(env_kwargs)).rubric.weights)


class BatchScorer:
    """Scores a batch once for all the component functions of :func:`reward_functions`.

    Args:
        env_id: Env id used when a row has no ``env_id`` column.
        env_kwargs: Env keyword arguments used when a row has no ``env_kwargs`` column.
        rollouts_dir: Folder of this process's ``rank<N>.jsonl`` of scored rollouts (see
            the module docstring); ``None`` writes none.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | str | None = None,
                 rollouts_dir: str | Path | None = None):
        self.env_id = env_id
        self.env_kwargs = kwargs_json(_with_split(env_kwargs))
        self.rollouts_dir = None if rollouts_dir is None else Path(rollouts_dir)
        self._rollouts_path: Path | None = None
        self._process_index = 0
        self._key: tuple[Any, ...] | None = None
        self._results: list[dict[str, float | None]] = []
        self._flat_traces: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        #: Batches scored so far (the cache hit rate is ``1 - batches_scored / calls``).
        self.batches_scored = 0
        self.calls = 0

    def components(
        self,
        completions: Sequence[Any],
        scenario_id: Sequence[str] | None = None,
        env_id: Sequence[str] | None = None,
        env_kwargs: Sequence[str] | None = None,
        environments: Sequence[Any] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        trainer_state: Any = None,
        **unread: Any,
    ) -> list[dict[str, float | None]]:
        """The rubric components of every sample of the batch (scored at most once), from TRL's reward call.

        Args:
            completions: TRL completions (text or messages).
            scenario_id: Column of the rows (required without ``environments``).
            env_id: Column of the rows; defaults to the scorer's env.
            env_kwargs: Column of the rows (JSON); defaults to the scorer's kwargs.
            environments: The rollouts' environments in multi-turn runs; read only when they
                are all affectgym adapters (:mod:`affectgym.train.environment`).
            log_metric: TRL's metric logger; receives the episodes' step-reward sums and
                the batch's count of samples whose judging failed.
            trainer_state: TRL's ``TrainerState`` (its ``global_step`` numbers the rollouts).
            unread: The rest of TRL's call (``completion_ids``, the dataset's other columns).

        Returns:
            One ``{component: value}`` per sample; every value ``None`` for a sample whose
            judging failed (see the module docstring).
        """
        self.calls += 1
        environments = _adapters(environments)
        count = len(completions)
        texts = [completion_text(c) for c in completions]
        env_ids = list(env_id) if env_id is not None else [self.env_id] * count
        kwargs = [kwargs_json(k) for k in env_kwargs] if env_kwargs is not None else [self.env_kwargs] * count
        if environments is not None:
            episodes = [(id(e), getattr(e, "episode_index", None)) for e in environments]
            ids: list[Any] = [getattr(e, "scenario_id", None) for e in environments]
        else:
            if scenario_id is None:
                raise ValueError(
                    "affectgym reward functions need the dataset column 'scenario_id' "
                    "(build the dataset with affectgym.train.flatten.to_dataset)"
                )
            episodes = [None] * count
            ids = list(scenario_id)
        key = tuple(zip(env_ids, kwargs, ids, texts, episodes, strict=True))
        if key != self._key:
            self._results, totals = self._score(env_ids, kwargs, ids, texts, environments, log_metric)
            self._key = key
            self.batches_scored += 1
            if self.rollouts_dir is not None:
                step = None if trainer_state is None else int(trainer_state.global_step) + 1
                self._write_rollouts(step, env_ids, ids, texts, self._results, totals)
        return self._results

    def _write_rollouts(self, step, env_ids, ids, texts, results, totals) -> None:
        """Append the batch's scored samples to this process's ``rank<N>.jsonl``."""
        if self._rollouts_path is None:
            from accelerate import PartialState

            self.rollouts_dir.mkdir(parents=True, exist_ok=True)
            self._process_index = PartialState().process_index
            self._rollouts_path = self.rollouts_dir / f"rank{self._process_index}.jsonl"
        with self._rollouts_path.open("a", encoding="utf-8") as handle:
            for env_id, scenario_id, reply, components, total in zip(env_ids, ids, texts, results, totals, strict=True):
                row = {
                    "step": step, "process_index": self._process_index, "env_id": env_id, "scenario_id": scenario_id,
                    "reply": reply, "reward": total, "components": components,
                }
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    def _flat_trace(self, env: Any, env_id: str, env_kwargs: str, scenario: Any) -> list[dict[str, Any]]:
        """``env.flat_trace(scenario)``, computed once per scenario (it re-renders every tool output)."""
        key = (env_id, env_kwargs, scenario.id)
        if key not in self._flat_traces:
            if len(self._flat_traces) >= FLAT_TRACE_CACHE_ENTRIES:
                self._flat_traces.clear()
            self._flat_traces[key] = env.flat_trace(scenario)
        return [dict(entry) for entry in self._flat_traces[key]]

    def _score(self, env_ids, kwargs, ids, texts, environments, log_metric):
        """``(components, totals)`` of every sample; a total is ``None`` when the judging failed."""
        results: list[dict[str, float | None] | None] = [None] * len(texts)
        totals: list[float | None] = [None] * len(texts)
        judge_failures: int | None = None  # None: no env of this batch has a judge
        groups: dict[tuple[str, str], list[int]] = {}
        for i, pair in enumerate(zip(env_ids, kwargs, strict=True)):
            groups.setdefault(pair, []).append(i)
        for (group_env_id, group_kwargs), indices in groups.items():
            env = shared_env(group_env_id, group_kwargs)
            if environments is None:
                scenarios = [env.get_scenario(ids[i]) for i in indices]
                traces = [self._flat_trace(env, group_env_id, group_kwargs, s) for s in scenarios]
            else:
                scenarios = [environments[i].scenario for i in indices]
                traces = [list(environments[i].trace) for i in indices]
            replies = [texts[i] for i in indices]
            todo = [
                j for j, i in enumerate(indices)
                if environments is None or environments[i].result is None
            ]
            for j in todo:
                if replies[j] is not None:
                    traces[j] = [*traces[j], {"type": "final", "text": replies[j]}]
            scored = env.score_batch([scenarios[j] for j in todo], [replies[j] for j in todo], [traces[j] for j in todo])
            if "judge" in env.rubric.scorers:
                judge_failures = (judge_failures or 0) + sum("judge" in result.failed_scorers for result in scored)
            for j, result in zip(todo, scored, strict=True):
                i = indices[j]
                if environments is not None:
                    record_final_answer(environments[i], replies[j], result)
                results[i] = dict.fromkeys(result.components) if result.unscored else dict(result.components)
                totals[i] = None if result.unscored else float(result.total)
            if environments is not None:
                for j, i in enumerate(indices):
                    if j not in todo:
                        results[i] = dict(environments[i].result.components)
                        totals[i] = float(environments[i].result.total)
        if environments is not None and log_metric is not None and environments:
            step_sums = [sum(e.step_rewards) for e in environments]
            tool_calls = [sum(1 for entry in e.trace if entry.get("type") == "tool_call") for e in environments]
            log_metric("env/step_reward_sum", sum(step_sums) / len(step_sums))
            log_metric("env/tool_calls", sum(tool_calls) / len(tool_calls))
        if log_metric is not None and judge_failures is not None:
            log_metric("judge/failures", float(judge_failures))
        return [r if r is not None else {} for r in results], totals


def reward_functions(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    rollouts_dir: str | Path | None = None,
) -> tuple[list[RewardFn], list[float]]:
    """One TRL reward function per rubric component, and the rubric's weights.

    Args:
        env_id: A registered id, e.g. ``"affectgym/Sarcasm-v0"``.
        env_kwargs: Env keyword arguments (``split`` defaults to ``"train"``); rows of a
            dataset from :func:`~affectgym.train.flatten.to_dataset` carry their own.
        rollouts_dir: Write every scored sample to ``<rollouts_dir>/rank<N>.jsonl``, one
            file per process (see the module docstring); ``None`` writes none.

    Returns:
        ``(funcs, weights)``: pass ``reward_funcs=funcs`` to ``GRPOTrainer`` and
        ``reward_weights=weights`` to ``GRPOConfig``.
    """
    scorer = BatchScorer(env_id, env_kwargs, rollouts_dir)
    weights = component_names(env_id, env_kwargs)
    funcs = [_component_function(scorer, name) for name in weights]
    return funcs, [float(w) for w in weights.values()]


def _component_function(scorer: BatchScorer, name: str) -> RewardFn:
    def reward(
        prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **batch: Any
    ) -> list[float | None]:
        if completions is None:
            raise ValueError(f"reward function {name!r} needs completions=, the TRL completions of the batch")
        return [r.get(name) for r in scorer.components(completions, **batch)]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = f"Rubric component {name!r} of {scorer.env_id}, scored by the env's score_batch."
    reward.scorer = scorer  # type: ignore[attr-defined]
    return reward


def _adapters(environments: Sequence[Any] | None) -> Sequence[Any] | None:
    """The environments when they are affectgym adapters; other environments are ignored."""
    if environments is None or not all(getattr(e, "is_affectgym_adapter", False) for e in environments):
        return None
    return environments


def _with_split(env_kwargs: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs or "{}")
    return {"split": "train", **dict(env_kwargs or {})}


__all__ = ["BatchScorer", "completion_text", "component_names", "reward_functions"]
