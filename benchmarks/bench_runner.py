"""Throughput of the eval runner, as ratios measured in one run (not a timed test).

- overhead: a stub agent that answers instantly (one tool call, then a final answer), so
  the numbers are the runner's own cost: episodes per second with the results file written
  line by line (flush + fsync), on the toy env and on Sarcasm-v0 (embedded clips; the stub
  reads the transcript, which needs no audio), against the bare env loop with no runner.
- concurrency: OpenAIAgent against the local OpenAI-compatible test server answering after
  a fixed latency (100 ms by default); episodes per second at concurrency 16 against 1.

Usage: ``python benchmarks/bench_runner.py [--only overhead|concurrency] [--episodes 2000] [--latency-s 0.1]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # toy_env, openai_server

import gymnasium as gym

TOY_ID = "affectgym-bench/ToyMood-v0"
SARCASM_ID = "affectgym/Sarcasm-v0"


def _stub(tool: str, answer: str):
    from affectgym.agents.base import FunctionAgent, tool_call_text

    call = tool_call_text(tool, {})

    def act(observation, info):
        return call if len(info["messages"]) == 2 else answer

    return FunctionAgent(act, name="stub")


def _bare_loop(env_id: str, env_kwargs: dict, agent, episodes: int) -> float:
    """Episodes per second of a plain reset/act/step loop (no records, no file)."""
    import affectgym

    env = affectgym.make(env_id, **env_kwargs)
    ids = env.unwrapped.scenario_ids
    started = time.perf_counter()
    for index in range(episodes):
        observation, info = env.reset(seed=index, options={"scenario_id": ids[index % len(ids)]})
        agent.play(env.step, observation, info)
    return episodes / (time.perf_counter() - started)


def _runner(env_id: str, env_kwargs: dict, agent, scenarios: int, rollouts: int, concurrency: int, fsync: bool = True) -> float:
    from affectgym.eval import EvalConfig, run_eval

    with tempfile.TemporaryDirectory() as tmp:
        config = EvalConfig(
            env_id=env_id, agent="stub", out=Path(tmp) / "run", n=scenarios, rollouts=rollouts,
            concurrency=concurrency, split=env_kwargs.pop("split", "all"), env_kwargs=env_kwargs, progress=False,
        )
        result = run_eval(config, agent=agent, fsync=fsync)
    return result.episodes_played / result.elapsed_s


def bench_overhead(episodes: int) -> None:
    """Stub agent: runner throughput with the results file, against the bare loop."""
    from toy_env import NOTES, ToyMoodEnv

    import affectgym

    if TOY_ID not in gym.registry:
        gym.register(id=TOY_ID, entry_point=ToyMoodEnv)
    cases = [(TOY_ID, {}, _stub("read_note", "<answer>happy</answer>"), len(NOTES))]
    if SARCASM_ID in affectgym.list_envs():
        env = affectgym.make(SARCASM_ID, split="all")
        cases.append((SARCASM_ID, {"split": "all"}, _stub("get_transcript", '<final>{"label": "sarcastic", "confidence": 0.6}</final>'),
                      len(env.unwrapped.scenario_ids)))
        env.close()
    else:
        print(f"  ({SARCASM_ID} is not registered yet: toy env only)")
    print(f"{'env':<28} {'bare loop ep/s':>15} {'runner c=1 ep/s':>16} {'c=4 ep/s':>10} {'c=1 no fsync':>13} {'runner/bare':>12}")
    for env_id, kwargs, agent, scenario_count in cases:
        rollouts = max(1, episodes // scenario_count)
        bare = _bare_loop(env_id, {**kwargs}, agent, min(episodes, 2000))
        one = _runner(env_id, {**kwargs}, agent, scenario_count, rollouts, 1)
        four = _runner(env_id, {**kwargs}, agent, scenario_count, rollouts, 4)
        nosync = _runner(env_id, {**kwargs}, agent, scenario_count, rollouts, 1, fsync=False)
        print(f"{env_id:<28} {bare:>15.0f} {one:>16.0f} {four:>10.0f} {nosync:>13.0f} {one / bare:>12.2f}")
    print("  target: >= 500 episodes/s through the runner with the results file (c=1 column)")


def bench_concurrency(latency_s: float) -> None:
    """OpenAIAgent against the local server with a fixed latency: concurrency 16 against 1."""
    from openai_server import OpenAIServer, ToolCall
    from toy_env import ToyMoodEnv

    from affectgym.agents.openai_agent import OpenAIAgent

    if TOY_ID not in gym.registry:
        gym.register(id=TOY_ID, entry_point=ToyMoodEnv)

    def policy(request):
        if any(m["role"] == "tool" for m in request["messages"]):
            return "<answer>happy</answer>"
        return ToolCall("read_note", {})

    rates = {}
    with OpenAIServer(policy, latency_s=latency_s) as server:
        for concurrency, rollouts in ((1, 2), (16, 16)):
            agent = OpenAIAgent("test-model", base_url=server.url, max_concurrency=concurrency, max_retries=0)
            rates[concurrency] = _runner(TOY_ID, {}, agent, 6, rollouts, concurrency)
            agent.close()
        in_flight = server.max_in_flight
    ratio = rates[16] / rates[1]
    print(f"server latency {latency_s * 1000:.0f} ms, 2 calls per episode")
    print(f"  concurrency 1:  {rates[1]:6.2f} episodes/s")
    print(f"  concurrency 16: {rates[16]:6.2f} episodes/s  (max requests in flight {in_flight})")
    print(f"  ratio 16 vs 1:  {ratio:6.1f}x   (target >= 12x)")


def main() -> None:
    """Run the benchmarks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["overhead", "concurrency"], default=None)
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per overhead measurement")
    parser.add_argument("--latency-s", type=float, default=0.1, help="server latency of the concurrency benchmark")
    args = parser.parse_args()
    if args.only in (None, "overhead"):
        print("== runner overhead (stub agent)")
        bench_overhead(args.episodes)
    if args.only in (None, "concurrency"):
        print("== concurrency against a slow model server")
        bench_concurrency(args.latency_s)


if __name__ == "__main__":
    main()
