"""Worst-case step time of every registered text env over the hostile-action corpus.

The corpus is :func:`affectgym.envs.checker.hostile_actions` (the one ``check_env``
fuzzes with), sized to each env's ``max_action_chars``: huge integers, deep nesting,
repetitions that make backtracking parsers quadratic, lone surrogates, a tool call and an
answer in one message. Each case is stepped on a fresh episode; the time of a case is the
median of ``--repeats`` steps. The goal is a worst case of at most 50 ms per step.

Usage: ``python benchmarks/bench_hostile_actions.py [--repeats 3] [--env ID] [--show 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

GOAL_MS = 50.0  # longest step allowed on any action up to max_action_chars


def python_loop_ms() -> float:
    """Time of a 1,000,000-iteration Python loop: how loaded the machine is (~30 ms when idle)."""
    start = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return (time.perf_counter() - start) * 1_000


def time_case(env, action: str, repeats: int) -> tuple[float, str | None]:
    """Median wall time of ``env.step(action)`` on a fresh episode, in ms, and the exception it raised, if any."""
    times = []
    for _ in range(repeats):
        env.reset(seed=0)
        start = time.perf_counter()
        try:
            env.step(action)
        except Exception as exc:  # a raising step is what this benchmark reports
            return (time.perf_counter() - start) * 1_000, f"{type(exc).__name__}: {str(exc)[:60]}"
        times.append((time.perf_counter() - start) * 1_000)
    return statistics.median(times), None


def bench_env(env_id: str, repeats: int, show: int) -> None:
    import gymnasium as gym

    from affectgym.envs.checker import hostile_actions_for

    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    # Warm up the scorers (a classifier loads on its first reply) before anything is timed.
    env.step(env.reference_answer(env.scenario)[0])
    cases = hostile_actions_for(env)
    timed = []
    raised = []
    for name, action in cases.items():
        elapsed_ms, error = time_case(env, action, repeats)
        timed.append((elapsed_ms, name))
        if error:
            raised.append(f"{name} ({error})")
    timed.sort(reverse=True)
    worst_ms, worst_case = timed[0]
    slowest = ", ".join(f"{name} {ms:.1f}" for ms, name in timed[:show])
    verdict = "ok" if worst_ms <= GOAL_MS and not raised else "over goal" if not raised else "RAISES"
    print(f"| {env_id} | {len(cases)} | {worst_ms:.1f} | {worst_case} | {verdict} | {slowest} |", flush=True)
    for line in raised:
        print(f"|   raises: {line} |", flush=True)
    env.close()


def main() -> None:
    import affectgym  # noqa: F401  (registers the envs)
    from affectgym.envs.core import AffectEnv
    from affectgym.envs.registration import affectgym_env_ids

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="steps per case; the median counts")
    parser.add_argument("--env", action="append", help="only this env id (repeatable)")
    parser.add_argument("--show", type=int, default=3, help="slowest cases listed per env")
    args = parser.parse_args()
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    text_envs = []
    for env_id in args.env or affectgym_env_ids():
        entry_point = gym.spec(env_id).entry_point
        creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        if isinstance(creator, type) and issubclass(creator, AffectEnv):
            text_envs.append(env_id)
    print(f"Worst step time over the hostile-action corpus (median of {args.repeats}; goal <= {GOAL_MS:.0f} ms)")
    print(f"machine load: a 1M-iteration Python loop takes {python_loop_ms():.0f} ms now")
    print(f"| env | cases | worst ms | worst case | verdict | slowest {args.show} (ms) |")
    print("|---|---|---|---|---|---|")
    for env_id in text_envs:
        bench_env(env_id, args.repeats, args.show)


if __name__ == "__main__":
    main()
