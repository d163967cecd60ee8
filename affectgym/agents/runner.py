"""The evaluation runner: play an agent on an env's scenarios and write what happened.

``run_eval(EvalConfig(...))`` (or ``affectgym eval ENV_ID --agent SPEC``) plays ``rollouts``
episodes of each of the first ``n`` scenarios of a split (in a stable, seeded order),
``concurrency`` at a time (threads, one env instance and one agent copy per worker), and
writes to ``out``:

* ``results.jsonl``: one line per episode (scenario id, rollout, seed, the whole message
  transcript with tool calls and outputs, final answer, reward, its components, per-step
  rewards, timings, error), with the env's ``info["outcome"]`` copied to the top level
  (``prediction``, ``label``, ``correct``, ``confidence``, ``pivot``... for classification
  envs). Lines are only ever written whole (group commit: one write, flush and fsync for
  the lines queued meanwhile, by one writer thread), so after a crash or Ctrl-C
  ``resume=True`` keeps every complete line, drops a half-written last one and plays only
  the missing (scenario, rollout) episodes.
* ``metadata.json``: env id and kwargs, agent spec and settings, package versions, seed,
  start and end times, host and the exact command.
* ``summary.json``: mean reward with its 95% interval, each reward component, the env's
  classification metrics (:mod:`affectgym.envs.metrics`), pass@k when rollouts > 1, tool use,
  timings and errors.

An exception inside an episode (a model server down, a timeout) is recorded in that
episode's line and counted; the run stops only when more than ``max_fail_fraction`` of
the episodes fail (or the first ten all fail).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import shlex
import socket
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from affectgym.agents.base import Agent

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"
SUMMARY_FILE = "summary.json"
#: Packages whose versions go into metadata.json (when installed).
VERSIONED_PACKAGES = (
    "affectgym", "gymnasium", "numpy", "torch", "transformers", "peft", "trl", "openai", "httpx", "dspy", "scikit-learn",
)
#: Record keys the runner owns; an outcome key with one of these names is stored as ``outcome_<key>``.
RESERVED_KEYS = frozenset(
    {
        "scenario_id", "rollout", "seed", "messages", "final_text", "final_answer", "reward", "reward_components",
        "step_rewards", "terminated", "truncated", "turns", "tool_calls", "timings", "error", "agent", "env_id",
        "outcome_keys",
    }
)


class RunAborted(RuntimeError):
    """More episodes failed than the run allows; what was done is on disk (``--resume`` continues)."""


@dataclasses.dataclass
class EvalConfig:
    """What to evaluate and where to write it (the fields of ``affectgym eval``).

    Attributes:
        env_id: A registered env id (``affectgym list``).
        agent: An agent spec for :func:`~affectgym.agents.registry.make_agent`.
        out: Output folder.
        n: Scenarios to play (the first ``n`` of the split in the seeded order); all if ``None``.
        rollouts: Episodes per scenario.
        concurrency: Episodes played at the same time.
        split: Split passed to the env.
        seed: Seeds the scenario order and each episode's seed.
        resume: Continue a run in ``out``; otherwise ``out`` must not hold results yet.
        env_kwargs: Extra keyword arguments of ``affectgym.make``.
        agent_kwargs: Keyword arguments of ``make_agent``.
        max_fail_fraction: The run stops once more than this fraction of its episodes fail.
        retry_errors: With ``resume``, play again the episodes recorded with an error.
        progress: Show a progress bar.
        command: The command line recorded in metadata (default ``sys.argv``).
    """

    env_id: str
    agent: str
    out: Path | str
    n: int | None = None
    rollouts: int = 1
    concurrency: int = 1
    split: str = "eval"
    seed: int = 0
    resume: bool = False
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    agent_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    max_fail_fraction: float = 0.5
    retry_errors: bool = False
    progress: bool = True
    command: str | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be a positive number of scenarios or None (all), got {self.n}")
        if self.rollouts < 1:
            raise ValueError(f"rollouts must be >= 1, got {self.rollouts}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if not 0 <= self.max_fail_fraction <= 1:
            raise ValueError(f"max_fail_fraction must be in [0, 1], got {self.max_fail_fraction}")


@dataclasses.dataclass
class RunResult:
    """What :func:`run_eval` did.

    Attributes:
        out: The output folder.
        summary: The contents of ``summary.json``.
        episodes_played: Episodes played in this call (not counting resumed ones).
        elapsed_s: Wall time of this call's episodes.
    """

    out: Path
    summary: dict[str, Any]
    episodes_played: int
    elapsed_s: float


# --------------------------------------------------------------------------- selection and seeds
def select_scenarios(scenario_ids: Sequence[str], n: int | None, seed: int) -> list[str]:
    """The first ``n`` ids in an order that depends only on the seed and each id.

    Adding scenarios to a split never reorders the others, so ``-n 50`` stays a prefix of ``-n 100``.

    >>> select_scenarios(["a", "b", "c", "d"], 2, seed=0) == select_scenarios(["d", "c", "b", "a"], 2, seed=0)
    True
    """
    ordered = sorted(scenario_ids, key=lambda sid: hashlib.sha256(f"{seed}:{sid}".encode()).hexdigest())
    return ordered if n is None else ordered[:n]


def episode_seed(seed: int, scenario_id: str, rollout: int) -> int:
    """The seed of one episode: a stable function of the run seed, the scenario and the rollout.

    >>> episode_seed(0, "n01", 0) == episode_seed(0, "n01", 0) != episode_seed(0, "n01", 1)
    True
    """
    digest = hashlib.sha256(f"{seed}:{scenario_id}:{rollout}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


# --------------------------------------------------------------------------- results file
class ResultsWriter:
    """Appends JSON lines from many threads; only whole lines ever reach the file.

    A background thread takes every line queued since its last write and appends them in
    one ``write``, then flushes and fsyncs (group commit: one fsync covers all the lines
    that arrived while the previous one ran, so workers never wait for the disk). A crash
    can lose the lines still queued, or cut the last write short; :func:`read_results`
    drops a cut line and a resumed run replays the episodes that are missing.

    Args:
        path: The ``results.jsonl`` file (created if missing).
        fsync: Force each write to disk (the default; off only to measure the runner itself).

    Raises:
        OSError: From :meth:`write` or :meth:`close`, when an earlier write failed (disk full...).
    """

    def __init__(self, path: Path, fsync: bool = True):
        self.path = path
        self.fsync = fsync
        self.lines_written = 0
        self._file = open(path, "ab")  # noqa: SIM115 - closed in close()
        self._pending: list[bytes] = []
        self._closing = False
        self._error: OSError | None = None
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._drain, name="affectgym-results", daemon=True)
        self._thread.start()

    def write(self, record: Mapping[str, Any]) -> None:
        """Queue one record as a line (encoded here, so a bad record fails in its own episode)."""
        data = (json.dumps(record, ensure_ascii=False, default=_json_default) + "\n").encode()
        with self._condition:
            if self._error is not None:
                raise self._error
            self._pending.append(data)
            self._condition.notify_all()

    def close(self) -> None:
        """Write every queued line, then close the file."""
        with self._condition:
            self._closing = True
            self._condition.notify_all()
        self._thread.join()
        self._file.close()
        if self._error is not None:
            raise self._error

    def _drain(self) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closing:
                    self._condition.wait()
                if not self._pending:
                    return
                batch, self._pending = self._pending, []
            try:
                self._file.write(b"".join(batch))
                self._file.flush()
                if self.fsync:
                    os.fsync(self._file.fileno())
            except OSError as exc:
                with self._condition:
                    self._error = exc
                return
            self.lines_written += len(batch)


def read_results(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Complete records of a results file, and how many lines were not (half-written, corrupt).

    Args:
        path: A ``results.jsonl``; a missing file has no records.

    Returns:
        ``(records, bad_lines)``.
    """
    if not path.exists():
        return [], 0
    records, bad = [], 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                bad += 1  # the last write was cut short
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                bad += 1
                continue
            if isinstance(record, dict) and "scenario_id" in record and "rollout" in record:
                records.append(record)
            else:
                bad += 1
    return records, bad


def _rewrite_results(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        for record in records:
            handle.write((json.dumps(record, ensure_ascii=False, default=_json_default) + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _write_json(path: Path, payload: Mapping[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=_json_default) + "\n")
    os.replace(temporary, path)


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


# --------------------------------------------------------------------------- one episode
def play_episode(env: Any, agent: Agent, scenario_id: str, rollout: int, seed: int) -> dict[str, Any]:
    """Play one episode and return its record; never raises on the agent's failures.

    Args:
        env: An affectgym env (wrapped or not).
        agent: The worker's agent.
        scenario_id: Scenario to play.
        rollout: Rollout index (recorded).
        seed: Seed of ``env.reset`` and ``agent.reset``.

    Returns:
        The record written to ``results.jsonl``.
    """
    started = time.perf_counter()
    state: dict[str, Any] = {"done": False, "terminated": False, "truncated": False, "info": None}
    step_rewards: list[float] = []
    env_s = 0.0
    error = None

    def step(action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        nonlocal env_s
        if state["done"]:
            raise RuntimeError("the agent stepped after the episode ended")
        tick = time.perf_counter()
        result = env.step(action)
        env_s += time.perf_counter() - tick
        _, reward, terminated, truncated, info = result
        step_rewards.append(float(reward))
        state.update(info=info, terminated=terminated, truncated=truncated, done=terminated or truncated)
        return result

    try:
        agent.reset(seed)
        tick = time.perf_counter()
        observation, info = env.reset(seed=seed, options={"scenario_id": scenario_id})
        env_s += time.perf_counter() - tick
        state["info"] = info
        agent.play(step, observation, info)
        if not state["done"]:
            raise RuntimeError("the agent stopped before the episode ended (no final answer and turns left)")
    except Exception as exc:  # recorded in the episode's line and counted; the run goes on
        error = {
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "traceback": "".join(traceback.format_exception(exc)[-3:])[-4000:],
        }
    total_s = time.perf_counter() - started
    info = state["info"] or {}
    messages = info.get("messages", [])
    record: dict[str, Any] = {
        "scenario_id": scenario_id,
        "rollout": rollout,
        "seed": seed,
        "reward": math.fsum(step_rewards) if error is None else None,
        "reward_components": dict(info.get("reward_components") or {}) if error is None else {},
        "step_rewards": step_rewards,
        "terminated": state["terminated"],
        "truncated": state["truncated"],
        "turns": len(step_rewards),
        "final_answer": info.get("final_answer") if error is None else None,
        "final_text": _final_text(messages) if state["terminated"] else None,
        "tool_calls": [c["function"]["name"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []],
        "timings": {"total_s": total_s, "env_s": env_s, "agent_s": max(total_s - env_s, 0.0)},
        "error": error,
        "messages": messages,
    }
    outcome_keys = []
    for key, value in (info.get("outcome") or {}).items() if error is None else ():
        name = f"outcome_{key}" if key in RESERVED_KEYS else key
        record[name] = value
        outcome_keys.append(name)
    record["outcome_keys"] = outcome_keys
    return record


def outcome_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """The env's outcome fields of a record (what the classification metrics read).

    >>> outcome_view({"scenario_id": "a", "terminated": True, "label": "x", "outcome_keys": ["label"]})
    {'label': 'x'}
    """
    keys = record.get("outcome_keys")
    if keys is None:  # a record written by hand or by another tool: everything the runner does not own
        return {k: v for k, v in record.items() if k not in RESERVED_KEYS and k != "outcome_keys"}
    return {k: record[k] for k in keys if k in record}


def _final_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return message.get("content")
    return None


# --------------------------------------------------------------------------- the run
def run_eval(
    config: EvalConfig,
    *,
    agent: Agent | None = None,
    env_factory: Callable[[], Any] | None = None,
    fsync: bool = True,
    console: Any = None,
) -> RunResult:
    """Run (or resume) an evaluation; see the module docstring.

    Args:
        config: What to run.
        agent: An agent object to use instead of building ``config.agent`` (the spec is
            still recorded as its name).
        env_factory: Builds one env instance; default ``affectgym.make(env_id, split=..., **env_kwargs)``.
        fsync: Force every results line to disk.
        console: A ``rich.console.Console`` for the progress bar and table; ``None`` prints
            to stdout when ``config.progress`` is set and stays quiet otherwise.

    Returns:
        The :class:`RunResult`.

    Raises:
        FileExistsError: ``out`` already holds results and ``resume`` is not set.
        ValueError: ``resume`` is set but ``out`` holds a run of another env, agent, split or seed.
        RunAborted: Too many episodes failed; what was done is on disk.
    """
    out = Path(config.out)
    results_path = out / RESULTS_FILE
    if env_factory is None:
        env_factory = _default_env_factory(config)
    previous_metadata = _check_resumable(config, out, results_path)
    probe_env = env_factory()  # a bad env id or agent spec fails before anything is written
    built_agent = agent is None
    if agent is None:
        from affectgym.agents.registry import make_agent

        try:
            agent = make_agent(
                config.agent, env_id=config.env_id, env_kwargs=config.env_kwargs, **config.agent_kwargs
            )
        except Exception:
            probe_env.close()
            raise
    out.mkdir(parents=True, exist_ok=True)
    records, bad_lines = read_results(results_path)
    kept, seen = [], set()
    for record in records:
        key = (record["scenario_id"], record["rollout"])
        if key in seen or (config.retry_errors and record.get("error")):
            continue
        seen.add(key)
        kept.append(record)
    if bad_lines or len(kept) != len(records):
        _rewrite_results(results_path, kept)

    scenario_ids = list(probe_env.unwrapped.scenario_ids)
    chosen = select_scenarios(scenario_ids, config.n, config.seed)
    planned = [(sid, r) for sid in chosen for r in range(config.rollouts)]
    todo = [(sid, r) for sid, r in planned if (sid, r) not in seen]

    metadata = _metadata(config, agent, previous_metadata, planned_episodes=len(planned), resumed_records=len(kept))
    _write_json(out / METADATA_FILE, metadata)

    writer = ResultsWriter(results_path, fsync=fsync)
    progress = _Progress(config.progress, console, total=len(planned), done=len(kept), rewards=[r["reward"] for r in kept if r.get("reward") is not None])
    workers = threading.local()
    idle_envs: list[Any] = [probe_env]  # one env per worker: the probe env, then new ones
    all_envs: list[Any] = [probe_env]
    envs_lock = threading.Lock()
    failures = 0
    finished = 0
    status = "complete"
    started = time.perf_counter()

    def work(scenario_id: str, rollout: int) -> dict[str, Any]:
        if not hasattr(workers, "env"):
            with envs_lock:
                if idle_envs:
                    workers.env = idle_envs.pop()
                else:
                    workers.env = env_factory()
                    all_envs.append(workers.env)
            workers.agent = agent.for_worker()
        record = play_episode(workers.env, workers.agent, scenario_id, rollout, episode_seed(config.seed, scenario_id, rollout))
        writer.write(record)
        return record

    try:
        with progress, ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="affectgym-eval") as pool:
            pending: set[Future[dict[str, Any]]] = set()
            queue = iter(todo)
            try:
                for item in queue:  # keep a bounded window of futures so an abort stops quickly
                    pending.add(pool.submit(work, *item))
                    if len(pending) >= config.concurrency * 2:
                        break
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        record = future.result()
                        finished += 1
                        failures += record["error"] is not None
                        progress.advance(record)
                        for item in queue:
                            pending.add(pool.submit(work, *item))
                            break
                    total_failures = failures + sum(1 for r in kept if r.get("error"))
                    if total_failures > config.max_fail_fraction * len(planned) or (
                        config.max_fail_fraction < 1 and finished >= min(10, len(todo)) and failures == finished and finished > 0 and len(todo) > finished
                    ):
                        status = "aborted"
                        break
            except KeyboardInterrupt:
                status = "interrupted"
                raise
            finally:
                for future in pending:
                    future.cancel()
    finally:
        elapsed_s = time.perf_counter() - started
        writer.close()
        for env in all_envs:
            env.close()
        if built_agent:
            agent.close()
        all_records, _ = read_results(results_path)
        planned_keys = set(planned)
        summary = summarize([r for r in all_records if (r["scenario_id"], r["rollout"]) in planned_keys], config.rollouts)
        summary.update(status=status, planned_episodes=len(planned), episodes_this_session=finished,
                       elapsed_s_this_session=elapsed_s,
                       episodes_per_s_this_session=finished / elapsed_s if elapsed_s > 0 else None)
        _write_json(out / SUMMARY_FILE, summary)
        metadata.update(finished_at=_now(), status=status)
        metadata["sessions"][-1].update(finished_at=metadata["finished_at"], episodes=finished, status=status)
        _write_json(out / METADATA_FILE, metadata)
    if config.progress or console is not None:
        print_summary(summary, console=console, title=f"{config.env_id} - {agent.name}")
    if status == "aborted":
        raise RunAborted(
            f"{failures} of {finished} episodes failed in this session (max_fail_fraction {config.max_fail_fraction}); "
            f"first error: {_first_error(all_records)}; the {len(all_records)} episodes done are in {results_path}, "
            "rerun with --resume to continue"
        )
    return RunResult(out=out, summary=summary, episodes_played=finished, elapsed_s=elapsed_s)


def _default_env_factory(config: EvalConfig) -> Callable[[], Any]:
    def make() -> Any:
        import affectgym

        return affectgym.make(config.env_id, split=config.split, **config.env_kwargs)

    return make


def _check_resumable(config: EvalConfig, out: Path, results_path: Path) -> dict[str, Any] | None:
    metadata_path = out / METADATA_FILE
    has_results = results_path.exists() and results_path.stat().st_size > 0
    if not config.resume:
        if has_results:
            raise FileExistsError(f"{results_path} already holds results; pass --resume to finish that run, or choose another --out")
        return None
    if not metadata_path.exists():
        return None
    previous = json.loads(metadata_path.read_text())
    mine = {"env_id": config.env_id, "agent_spec": config.agent, "split": config.split, "seed": config.seed, "env_kwargs": config.env_kwargs}
    clashes = [f"{key}: recorded {previous.get(key)!r}, now {value!r}" for key, value in mine.items() if key in previous and previous[key] != value]
    if clashes:
        raise ValueError(f"cannot resume the run in {out}: it differs in " + "; ".join(clashes))
    return previous


def _metadata(config: EvalConfig, agent: Agent, previous: Mapping[str, Any] | None, planned_episodes: int, resumed_records: int) -> dict[str, Any]:
    from importlib import metadata as importlib_metadata

    versions = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            continue
    session = {
        "started_at": _now(),
        "command": config.command if config.command is not None else shlex.join(sys.argv),
        "resumed_records": resumed_records,
        "concurrency": config.concurrency,
        "host": socket.gethostname(),
    }
    sessions = list((previous or {}).get("sessions", [])) + [session]
    return {
        "env_id": config.env_id,
        "env_kwargs": config.env_kwargs,
        "split": config.split,
        "agent_spec": config.agent,
        "agent": agent.describe(),
        "agent_kwargs": config.agent_kwargs,
        "seed": config.seed,
        "n": config.n,
        "rollouts": config.rollouts,
        "planned_episodes": planned_episodes,
        "max_fail_fraction": config.max_fail_fraction,
        "started_at": (previous or {}).get("started_at", session["started_at"]),
        "finished_at": None,
        "status": "running",
        "host": session["host"],
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions,
        "command": session["command"],
        "sessions": sessions,
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _first_error(records: Sequence[Mapping[str, Any]]) -> str:
    for record in records:
        if record.get("error"):
            return f"{record['error']['type']}: {record['error']['message'][:200]}"
    return "none"


# --------------------------------------------------------------------------- summary
def summarize(records: Sequence[Mapping[str, Any]], rollouts: int = 1) -> dict[str, Any]:
    """The numbers of ``summary.json`` from episode records.

    Args:
        records: Records of ``results.jsonl``.
        rollouts: Rollouts per scenario (pass@k is reported when > 1).

    Returns:
        ``episodes``, ``errors`` (count, rate, by type), ``reward`` (mean, ci95, n),
        ``reward_components`` (mean of each), ``classification`` (see
        :func:`~affectgym.envs.metrics.classification_metrics`), ``pass_at_k``, ``tool_use``,
        ``turns_mean`` and ``timings``.
    """
    from affectgym.envs.metrics import (
        classification_metrics,
        mean_ci95,
        pass_at_k_table,
        tool_use_stats,
    )

    ok = [r for r in records if not r.get("error")]
    errors = [r for r in records if r.get("error")]
    rewards = [float(r["reward"]) for r in ok if r.get("reward") is not None]
    mean, half = mean_ci95(rewards)
    components: dict[str, list[float]] = defaultdict(list)
    for record in ok:
        for name, value in (record.get("reward_components") or {}).items():
            if value is not None:
                components[name].append(float(value))
    summary: dict[str, Any] = {
        "episodes": len(records),
        "scenarios": len({r["scenario_id"] for r in records}),
        "errors": {
            "count": len(errors),
            "rate": len(errors) / len(records) if records else 0.0,
            "by_type": dict(Counter(r["error"]["type"] for r in errors)),
        },
        "reward": {"mean": mean, "ci95": half, "n": len(rewards)},
        "reward_components": {name: math.fsum(v) / len(v) for name, v in sorted(components.items())},
        "classification": classification_metrics([outcome_view(r) for r in ok]),
        "tool_use": tool_use_stats([r.get("tool_calls") or [] for r in ok]),
        "turns_mean": math.fsum(r.get("turns", 0) for r in ok) / len(ok) if ok else None,
        "truncated_rate": sum(bool(r.get("truncated")) for r in ok) / len(ok) if ok else None,
        "timings": {
            key: math.fsum(r["timings"][key] for r in records) / len(records) if records else None
            for key in ("total_s", "agent_s", "env_s")
        },
    }
    if rollouts > 1:
        by_scenario: dict[str, list[bool]] = defaultdict(list)
        for record in records:
            by_scenario[record["scenario_id"]].append(_success(record))
        complete = {sid: v for sid, v in by_scenario.items() if len(v) >= rollouts}
        summary["pass_at_k"] = pass_at_k_table(complete)
    per_target = _reward_by(ok, "target")
    if per_target:
        summary["reward_by_target"] = per_target
    if any("dialogue_turns" in r for r in ok):
        from affectgym.envs.dialogue_metrics import dialogue_summary

        summary["dialogue"] = dialogue_summary(ok)
    return summary


def _reward_by(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, float]:
    """Mean reward per value of an outcome field (e.g. EmotionStyle's target emotion)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.get(key) is not None and record.get("reward") is not None:
            groups[str(record[key])].append(float(record["reward"]))
    return {name: math.fsum(values) / len(values) for name, values in sorted(groups.items())}


def _success(record: Mapping[str, Any], threshold: float = 0.5) -> bool:
    """An episode succeeded: its outcome says ``correct``, or (no such flag) its reward >= ``threshold``."""
    if record.get("error"):
        return False
    if record.get("correct") is not None:
        return bool(record["correct"])
    return record.get("reward") is not None and float(record["reward"]) >= threshold


def print_summary(summary: Mapping[str, Any], console: Any = None, title: str = "evaluation") -> None:
    """Print the summary as a rich table.

    Args:
        summary: The contents of ``summary.json``.
        console: A ``rich.console.Console``; default: stdout.
        title: Table title.
    """
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    reward = summary["reward"]
    table.add_row("episodes", f"{summary['episodes']} ({summary['scenarios']} scenarios)")
    table.add_row("mean reward ± 95% CI", f"{_fmt(reward['mean'])} ± {_fmt(reward['ci95'])}")
    for name, value in summary["reward_components"].items():
        table.add_row(f"  {name}", _fmt(value))
    classification = summary.get("classification") or {}
    for key in ("accuracy", "macro_f1", "weighted_precision", "weighted_recall", "weighted_f1", "ece", "brier", "unanswered_rate"):
        if classification.get(key) is not None:
            table.add_row(key, _fmt(classification[key]))
    for flag, sides in (classification.get("subsets") or {}).items():
        for side, values in sides.items():
            table.add_row(f"accuracy | {flag}={side}", f"{_fmt(values['accuracy'])} (n={values['n']})")
    for name, value in (summary.get("pass_at_k") or {}).items():
        table.add_row(name, _fmt(value))
    tool_use = summary["tool_use"]
    table.add_row("tool-use rate", _fmt(tool_use["tool_use_rate"]))
    table.add_row("tool calls / episode", _fmt(tool_use["mean_tool_calls"]))
    errors = summary["errors"]
    by_type = ", ".join(f"{k}: {v}" for k, v in errors["by_type"].items())
    table.add_row("errors", f"{errors['count']}" + (f" ({by_type})" if by_type else ""))
    if summary["timings"]["total_s"] is not None:
        table.add_row("seconds / episode", _fmt(summary["timings"]["total_s"]))
    for target, value in (summary.get("reward_by_target") or {}).items():
        table.add_row(f"reward | target={target}", _fmt(value))
    for name, value in (summary.get("dialogue") or {}).items():
        table.add_row(f"dialogue {name}", _fmt(value))
    console.print(table)
    if classification.get("confusion_matrix"):
        matrix = Table(title="confusion matrix (rows: label, columns: prediction)")
        matrix.add_column("")
        for label in classification["predicted_labels"]:
            matrix.add_column(label, justify="right")
        for label, row in zip(classification["labels"], classification["confusion_matrix"], strict=True):
            matrix.add_row(label, *map(str, row))
        console.print(matrix)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


class _Progress:
    """A rich progress bar with the running mean reward (or nothing when disabled)."""

    def __init__(self, enabled: bool, console: Any, total: int, done: int, rewards: list[float]):
        self.enabled = enabled
        self.rewards = list(rewards)
        self.errors = 0
        self._bar: Any = None
        if enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                TimeRemainingColumn(), console=console, refresh_per_second=4,
            )
            self._task = self._bar.add_task(self._describe(), total=total, completed=done)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, record: Mapping[str, Any]) -> None:
        if record.get("reward") is not None:
            self.rewards.append(float(record["reward"]))
        self.errors += record.get("error") is not None
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=self._describe())

    def _describe(self) -> str:
        mean = math.fsum(self.rewards) / len(self.rewards) if self.rewards else math.nan
        return f"mean reward {_fmt(mean)}  errors {self.errors}"


__all__ = [
    "EvalConfig",
    "ResultsWriter",
    "RunAborted",
    "RunResult",
    "episode_seed",
    "outcome_view",
    "play_episode",
    "print_summary",
    "read_results",
    "run_eval",
    "select_scenarios",
    "summarize",
]
