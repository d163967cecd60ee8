"""The evaluation runner: play an agent on an env's scenarios and write what happened.

``run_eval(EvalConfig(...))`` (or ``affectgym eval ENV_ID --agent SPEC``) plays ``rollouts``
episodes of each of the first ``n`` scenarios of a split (in a stable, seeded order),
``concurrency`` at a time (threads, one env instance and one agent copy per worker; with
``env_url``, one session of an env served by ``affectgym serve`` per worker, spread over
replicas when it lists several), and
writes to ``out`` (:mod:`affectgym.eval.results`):

* ``results.jsonl``: one line per episode (scenario id, rollout, seed, the whole message
  transcript with tool calls and outputs, final answer, reward, its components, per-step
  rewards, timings, error), with the env's ``info["outcome"]`` under ``"outcome"``
  (``prediction``, ``label``, ``correct``, ``confidence``, ``pivot``... for classification
  envs) and ``judge_failures``: the LLM judge's failed verdicts in the episode, as the env's
  steps report them in ``info["judge_failures"]`` (its reward then lacks the judge's part;
  see :mod:`affectgym.envs.core`). Lines are only ever
  written whole (:class:`~affectgym.eval.results.ResultsWriter`), so after a crash or
  Ctrl-C ``resume=True`` keeps every complete line, drops a half-written last one and
  plays only the missing (scenario, rollout) episodes.
* ``metadata.json``: env id, kwargs and URL, agent spec and settings, the scorers the env
  reports (its ``scorers``, e.g. which emotion classifier ran), the weight of each reward
  component (an AffectEnv's ``rubric.weights``; a rule's is negative), package versions, seed,
  start and end times, host and the exact command.
* ``summary.json``: mean reward with its 95% interval, each reward component, pass@k when
  rollouts > 1, tool use, timings, errors and judge failures, and the summaries the env
  declares in its ``outcome_summaries`` (:mod:`affectgym.eval.summary`): the runner names no env.

One run writes a folder at a time: the run holds an OS lock on ``out``
(:func:`~affectgym.eval.results.lock_run_folder`) from before it reads what is there until
its summary is written, and a second run (fresh or ``resume``) into the same folder fails
at once with :class:`~affectgym.eval.results.RunFolderLocked`, naming the holder's pid.

An exception inside an episode (a model server down, a timeout) is recorded in that
episode's line and counted; the run stops only when more than ``max_fail_fraction`` of
the episodes fail (or the first ten all fail). With ``env_url``, an episode whose session is
lost (:class:`~affectgym.integrations.openenv.client.SessionLost`: the replica died, or closed
the session) is played again from its start on a new session, of the next replica that
answers, up to :data:`SESSION_ATTEMPTS` times or once a replica, whichever is more; only the
episode's last playing is written, so every episode is recorded once; its line's
``lost_sessions`` counts the playings lost before it (0 for every local episode).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from affectgym.agents.base import Agent, chat_function
from affectgym.eval.config import EvalConfig
from affectgym.eval.progress import EvalProgress
from affectgym.eval.results import (
    METADATA_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    ResultsWriter,
    lock_run_folder,
    read_results,
    records_to_resume,
    write_json,
)
from affectgym.eval.resume import check_resumable, check_same_scoring, scoring_of
from affectgym.eval.run_metadata import run_metadata, utc_now
from affectgym.eval.summary import check_outcome_summaries, print_summary, summarize
from affectgym.integrations.openenv.client import SessionLost

EpisodeKey = tuple[str, int]
logger = logging.getLogger(__name__)


class RunAborted(RuntimeError):
    """More episodes failed than the run allows; what was done is on disk (``--resume --retry-errors`` continues)."""


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
        The record written to ``results.jsonl``, with the env's ``info["outcome"]`` under
        ``"outcome"`` (empty when the episode failed), the judge's failures of its steps
        (the sum of their ``info["judge_failures"]``) under ``"judge_failures"`` and the
        agent's :meth:`~affectgym.agents.base.Agent.episode_log` under ``"agent_log"``.
    """
    started = time.perf_counter()
    state: dict[str, Any] = {"done": False, "terminated": False, "truncated": False, "info": None}
    step_rewards: list[float] = []
    env_s = 0.0
    judge_failures = 0
    error = None

    def step(action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        nonlocal env_s, judge_failures
        if state["done"]:
            raise RuntimeError("the agent stepped after the episode ended")
        tick = time.perf_counter()
        result = env.step(action)
        env_s += time.perf_counter() - tick
        _, reward, terminated, truncated, info = result
        # The env counts its judge's failures (AffectEnv, every step); the runner only adds them up.
        judge_failures += int(info.get("judge_failures") or 0)
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
    return {
        "scenario_id": scenario_id,
        "rollout": rollout,
        "seed": seed,
        "reward": math.fsum(step_rewards) if error is None else None,
        # A numeric env's last step reports the episode's means beside that step's own components.
        "reward_components": dict(info.get("episode_reward_components") or info.get("reward_components") or {}) if error is None else {},
        "step_rewards": step_rewards,
        "terminated": state["terminated"],
        "truncated": state["truncated"],
        "turns": len(step_rewards),
        "final_answer": info.get("final_answer") if error is None else None,
        "final_text": _final_text(messages) if state["terminated"] else None,
        "tool_calls": [c["function"]["name"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []],
        "timings": {"total_s": total_s, "env_s": env_s, "agent_s": max(total_s - env_s, 0.0)},
        "error": error,
        "judge_failures": judge_failures,
        "outcome": dict(info.get("outcome") or {}) if error is None else {},
        "messages": messages,
        "agent_log": agent.episode_log(),
    }


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
        env_factory: Builds one env instance; default ``affectgym.make(env_id, split=..., **env_kwargs)``,
            or a session of the served env when ``config.env_url`` is set.
        fsync: Force every results line to disk.
        console: A ``rich.console.Console`` for the progress bar and table; ``None`` prints
            to stdout when ``config.progress`` is set and stays quiet otherwise.

    Returns:
        The :class:`RunResult`.

    Raises:
        RunFolderLocked: Another run is writing ``out``.
        FileExistsError: ``out`` already holds results and ``resume`` is not set.
        ValueError: ``resume`` is set but ``out`` holds a run of another env, agent, split or
            seed; the env lists an unknown outcome summary; ``user_simulator`` with ``env_factory``;
            the env served at ``env_url`` has another id or split.
        ConnectionError: Nothing serves an env at ``env_url``.
        RunAborted: Too many episodes failed; what was done is on disk. A resumed run that keeps
            its failed episodes (no ``retry_errors``) fails before playing when they already do.
    """
    out = Path(config.out)
    with ExitStack() as cleanup:  # a bad env id or agent spec fails here, before anything is written
        # Held until the summary is written, and taken before reading what is there: a second
        # writer would duplicate or lose episodes (the lock leaves no folder behind on failure).
        cleanup.enter_context(lock_run_folder(out))
        previous_metadata = check_resumable(config, out)
        envs = _EnvPool(_env_factory(config, env_factory, cleanup))
        cleanup.callback(envs.close)
        agent = _open_agent(config, agent, cleanup, envs.probe)
        outcome_summaries = tuple(getattr(envs.probe.unwrapped, "outcome_summaries", ()))
        check_outcome_summaries(outcome_summaries, config.env_id)
        env_kwargs, reward_weights = scoring_of(config, envs.probe)
        check_same_scoring(previous_metadata, env_kwargs, reward_weights, out)

        kept = records_to_resume(out / RESULTS_FILE, retry_errors=config.retry_errors)
        planned = _planned_episodes(config, envs.probe)
        done = {(r["scenario_id"], r["rollout"]) for r in kept}
        todo = [key for key in planned if key not in done]
        limit = _FailureLimit(config.max_fail_fraction, len(planned), len(todo), sum(1 for r in kept if r.get("error")))
        if limit.exceeded(0, 0):  # --resume alone keeps the failed episodes: the first one played would stop the run
            raise RunAborted(
                f"the run in {out} stopped on errors: {limit.earlier_failures} of its {len(planned)} episodes failed, "
                f"more than max_fail_fraction {config.max_fail_fraction} allows (first error: {_first_error(kept)}); "
                "--resume alone keeps them, so it would stop again at its first episode: once the cause is fixed, "
                "rerun with --resume --retry-errors to play them again (or raise --max-fail-fraction to keep them)"
            )
        metadata = run_metadata(config, agent, previous_metadata, outcome_summaries, len(planned), len(kept),
                             scorers=getattr(envs.probe.unwrapped, "scorers", None), reward_weights=reward_weights,
                             env_kwargs=env_kwargs)
        write_json(out / METADATA_FILE, metadata)

        writer = ResultsWriter(out / RESULTS_FILE, fsync=fsync)
        progress = EvalProgress(config.progress, console, total=len(planned), done=len(kept),
                             rewards=[r["reward"] for r in kept if r.get("reward") is not None],
                             tokens_generated=agent.tokens_generated)
        session = _Session(limit=limit)
        try:
            with progress:
                _play_all(todo, _episode_player(envs, agent, writer, config.seed, _session_attempts(config)), config.concurrency, session, progress)
        finally:
            session.elapsed_s = time.perf_counter() - session.started
            writer.close()
            summary, records = _write_summary(config, out, metadata, planned, outcome_summaries, session)
    if config.progress or console is not None:
        print_summary(summary, console=console, title=f"{config.env_id} - {agent.name}")
    if session.status == "aborted":
        failed = sum(1 for r in records if r.get("error"))
        raise RunAborted(
            f"{failed} of the {len(records)} episodes in {out / RESULTS_FILE} failed "
            f"(max_fail_fraction {config.max_fail_fraction}); first error: {_first_error(records)}; "
            "once the cause is fixed, rerun with --resume --retry-errors to play the failed and the missing "
            "episodes (--resume alone keeps the failed ones as they are)"
        )
    return RunResult(out=out, summary=summary, episodes_played=session.finished, elapsed_s=session.elapsed_s)


# --------------------------------------------------------------------------- its parts
@dataclasses.dataclass
class _FailureLimit:
    """When a run stops: more than ``max_fraction`` of the planned episodes failed (earlier
    sessions' included), or every one of the first ten episodes of this session failed
    (with more to play), which means the agent or its server is down, not flaky."""

    max_fraction: float
    planned: int
    todo: int
    earlier_failures: int

    def exceeded(self, finished: int, failures: int) -> bool:
        if failures + self.earlier_failures > self.max_fraction * self.planned:
            return True
        all_failing = 0 < finished == failures and finished >= min(10, self.todo) and self.todo > finished
        return self.max_fraction < 1 and all_failing


@dataclasses.dataclass
class _Session:
    """What this call of :func:`run_eval` did so far."""

    limit: _FailureLimit
    finished: int = 0
    failures: int = 0
    status: str = "complete"
    started: float = dataclasses.field(default_factory=time.perf_counter)
    elapsed_s: float = 0.0

    def count(self, record: Mapping[str, Any]) -> None:
        self.finished += 1
        self.failures += record["error"] is not None
        if self.limit.exceeded(self.finished, self.failures):
            self.status = "aborted"


class _EnvPool:
    """One env per worker thread: the probe env (built at once, it fails early), then new ones (or replacements)."""

    def __init__(self, factory: Callable[[], Any]):
        self._factory = factory
        self.probe = factory()
        self._idle = [self.probe]
        self._all = [self.probe]
        self._lock = threading.Lock()

    def take(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            env = self._factory()
            self._all.append(env)
            return env

    def replace(self, lost: Any) -> Any:
        """A new env in place of ``lost`` (a served env whose session is gone), which is then closed.

        Raises:
            ConnectionError: No new env could be made; ``lost`` stays in its place.
        """
        with self._lock:
            env = self._factory()
            self._all[self._all.index(lost)] = env
        lost.close()
        return env

    def close(self) -> None:
        for env in self._all:
            env.close()


def _env_factory(config: EvalConfig, env_factory: Callable[[], Any] | None, cleanup: ExitStack) -> Callable[[], Any]:
    """The given factory, a session of the served env, or ``affectgym.make`` with the config's env (and its user simulator)."""
    if env_factory is not None:
        if config.user_simulator is not None:
            raise ValueError(
                f"user_simulator={config.user_simulator!r} is applied by the default env factory; "
                "with env_factory=, pass the simulator to your env yourself"
            )
        return env_factory
    if config.env_url is not None:
        return _served_env_factory(config)
    user_agent = None
    if config.user_simulator is not None:
        from affectgym.agents.registry import make_agent

        user_agent = make_agent(config.user_simulator)
        cleanup.callback(user_agent.close)

    def make() -> Any:
        import affectgym

        kwargs = dict(config.env_kwargs)
        if user_agent is not None:
            kwargs["user_simulator"] = chat_function(user_agent.for_worker())
        return affectgym.make(config.env_id, split=config.split, **kwargs)

    return make


#: How long an episode waits for a session of a full server (``--max-sessions`` below ``-c``) before it fails.
SERVED_CAPACITY_WAIT_S = 120.0
#: Playings of an episode whose session is lost, at least (one a replica when there are more).
SESSION_ATTEMPTS = 2


def _served_env_factory(config: EvalConfig) -> Callable[[], Any]:
    """Sessions of the env served at ``config.env_url`` (replicas in turn), checked to be the config's env id and split.

    A server with fewer session slots than the run's concurrency makes the extra workers wait
    for a free slot, backing off, for up to :data:`SERVED_CAPACITY_WAIT_S` an episode.

    A replica that does not answer is skipped for the next one. The pool calls the factory
    under its lock, so the turn order needs none of its own.
    """
    from affectgym.integrations.openenv.client import RemoteEnv

    urls = [config.env_url] if isinstance(config.env_url, str) else list(config.env_url)
    replicas = cycle(urls)

    def connect() -> Any:
        """A session of the next replica that answers (each tried once), checked against the run's env."""
        for attempt in range(len(urls)):
            url = next(replicas)
            try:
                env = RemoteEnv(url, capacity_wait_s=SERVED_CAPACITY_WAIT_S)
                break
            except ConnectionError:
                if attempt == len(urls) - 1:
                    raise
        clashes = [
            f"{name} {served!r} (this run: {wanted!r})"
            for name, served, wanted in (("id", env.env_id, config.env_id), ("split", env.split, config.split))
            if served != wanted
        ]
        if clashes:
            env.close()
            raise ValueError(
                f"the env served at {url} has {' and '.join(clashes)}; serve the run's env "
                f"(affectgym serve {config.env_id} --split {config.split}) or evaluate the served one"
            )
        return env

    return connect


def _session_attempts(config: EvalConfig) -> int:
    """Playings of an episode whose session is lost: one for a local env, else one a replica and at least two."""
    if config.env_url is None:
        return 1
    return max(SESSION_ATTEMPTS, 1 if isinstance(config.env_url, str) else len(config.env_url))


def _open_agent(config: EvalConfig, agent: Agent | None, cleanup: ExitStack, probe_env: Any) -> Agent:
    """The given agent, or the one ``config.agent`` names, checked against the env first (closed when the run ends)."""
    if agent is not None:
        return agent
    from affectgym.agents.registry import check_agent_supports, make_agent

    check_agent_supports(config.agent, probe_env, config.env_id)

    built = make_agent(config.agent, env_id=config.env_id, env_kwargs=config.env_kwargs, **config.agent_kwargs)
    cleanup.callback(built.close)
    return built


def _planned_episodes(config: EvalConfig, probe_env: Any) -> list[EpisodeKey]:
    chosen = select_scenarios(list(probe_env.unwrapped.scenario_ids), config.n, config.seed)
    return [(scenario_id, rollout) for scenario_id in chosen for rollout in range(config.rollouts)]


def _episode_player(envs: _EnvPool, agent: Agent, writer: ResultsWriter, seed: int,
                    attempts: int = 1) -> Callable[[str, int], dict[str, Any]]:
    """Plays one episode on an idle (env, agent copy) seat, and queues its line.

    A seat serves one episode at a time: at most one per worker thread is ever made. An
    episode whose served session is lost is played again, up to ``attempts`` times in all, on
    a new session in place of the lost one.
    """
    idle: list[tuple[Any, Agent]] = []
    lock = threading.Lock()

    def play(scenario_id: str, rollout: int) -> dict[str, Any]:
        with lock:
            seat = idle.pop() if idle else None
        if seat is None:
            seat = envs.take(), agent.for_worker()
        env, worker_agent = seat
        try:
            for attempt in range(1, attempts + 1):
                record = play_episode(env, worker_agent, scenario_id, rollout, episode_seed(seed, scenario_id, rollout))
                if (record["error"] or {}).get("type") != SessionLost.__name__ or attempt == attempts:
                    break
                logger.warning("episode %s (rollout %d) lost its session (%s); playing it again on a new one",
                               scenario_id, rollout, record["error"]["message"][:200])
                try:
                    env = envs.replace(env)
                except ConnectionError:  # no replica answers: the episode keeps its error
                    break
                seat = env, worker_agent
            record["lost_sessions"] = attempt - 1
            release = getattr(env, "release_session", None)
            if release is not None:  # a served env's slot goes back between episodes, for workers waiting for one
                release()
        finally:
            with lock:
                idle.append(seat)
        writer.write(record)
        return record

    return play


def _play_all(
    todo: Iterable[EpisodeKey], play: Callable[[str, int], dict[str, Any]], concurrency: int,
    session: _Session, progress: EvalProgress,
) -> None:
    """Play ``todo`` on ``concurrency`` threads until done, aborted or interrupted.

    Only a bounded window of episodes (twice the concurrency) is submitted at a time, so an
    abort or Ctrl-C stops the run quickly and cancels what has not started.
    """
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="affectgym-eval") as pool:
        queue = iter(todo)
        pending: set[Future[dict[str, Any]]] = {pool.submit(play, *key) for key in islice(queue, concurrency * 2)}
        try:
            while pending and session.status != "aborted":
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    session.count(record)
                    progress.advance(record)
                    if session.status != "aborted":
                        pending |= {pool.submit(play, *key) for key in islice(queue, 1)}
        except KeyboardInterrupt:
            session.status = "interrupted"
            raise
        finally:
            for future in pending:
                future.cancel()


def _write_summary(
    config: EvalConfig, out: Path, metadata: dict[str, Any], planned: Sequence[EpisodeKey],
    outcome_summaries: Sequence[str], session: _Session,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write ``summary.json`` over the planned episodes on disk and close the session in the metadata."""
    records, _ = read_results(out / RESULTS_FILE)
    planned_keys = set(planned)
    summary = summarize(
        [r for r in records if (r["scenario_id"], r["rollout"]) in planned_keys], config.rollouts, outcome_summaries
    )
    summary.update(
        status=session.status, planned_episodes=len(planned), episodes_this_session=session.finished,
        elapsed_s_this_session=session.elapsed_s,
        episodes_per_s_this_session=session.finished / session.elapsed_s if session.elapsed_s > 0 else None,
    )
    write_json(out / SUMMARY_FILE, summary)
    metadata.update(finished_at=utc_now(), status=session.status)
    metadata["sessions"][-1].update(finished_at=metadata["finished_at"], episodes=session.finished, status=session.status)
    write_json(out / METADATA_FILE, metadata)
    return summary, records


def _first_error(records: Sequence[Mapping[str, Any]]) -> str:
    for record in records:
        if record.get("error"):
            return f"{record['error']['type']}: {record['error']['message'][:200]}"
    return "none"


__all__ = [
    "EvalConfig",
    "RunAborted",
    "RunResult",
    "episode_seed",
    "play_episode",
    "run_eval",
    "select_scenarios",
]
