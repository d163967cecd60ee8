"""The eval runner: results lines, resume after a kill, failures, pass@k, declared summaries, user simulators."""

from __future__ import annotations

import itertools
import json
import math
import threading

import gymnasium as gym
import pytest
from toy_env import ToyMoodEnv, parse_answer

from affectgym.agents.base import Agent, FunctionAgent
from affectgym.agents.registry import register_agent
from affectgym.eval import EvalConfig
from affectgym.eval.results import ResultsWriter, read_results
from affectgym.eval.runner import RunAborted, run_eval, select_scenarios
from affectgym.eval.summary import register_outcome_summary, summarize

READ_NOTE = '<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'
TOY_ID = "affectgym-test/ToyOutcome-v0"


class ToyOutcomeEnv(ToyMoodEnv):
    """The toy env revealing classification facts: prediction, label, correct, confidence, pivot."""

    outcome_summaries = ("classification",)

    def outcome(self, scenario, answer, result):
        return {
            "prediction": answer,
            "label": scenario.label,
            "correct": answer == scenario.label,
            "confidence": 0.8 if answer is not None else None,
            "pivot": scenario.id in ("n02", "n04"),
        }


if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=ToyOutcomeEnv)


def happy_reader(observation, info):
    """Read the note, then always answer happy (right on n01, n03, n05)."""
    if not any(m["role"] == "tool" for m in info["messages"]):
        return READ_NOTE
    return "<answer>happy</answer>"


def config(tmp_path, **overrides):
    settings = {"env_id": TOY_ID, "agent": "happy-reader", "out": tmp_path / "run", "progress": False, "command": "test"}
    return EvalConfig(**{**settings, **overrides})


def keys(records):
    return sorted((r["scenario_id"], r["rollout"]) for r in records)


def test_run_writes_one_line_per_episode_with_transcript_outcome_and_metadata(tmp_path):
    result = run_eval(config(tmp_path, rollouts=2, concurrency=3), agent=FunctionAgent(happy_reader, name="happy-reader"))
    records, bad = read_results(result.out / "results.jsonl")
    assert bad == 0 and len(records) == 12 and len(set(keys(records))) == 12
    record = next(r for r in records if r["scenario_id"] == "n02")
    assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert record["tool_calls"] == ["read_note"] and record["final_text"] == "<answer>happy</answer>"
    outcome = record["outcome"]
    assert (outcome["prediction"], outcome["label"], outcome["correct"], outcome["pivot"]) == ("happy", "sad", False, True)
    assert record["reward"] == pytest.approx(sum(record["step_rewards"])) == pytest.approx(0.2)
    assert record["reward_components"]["correct"] == 0.0 and record["error"] is None
    metadata = json.loads((result.out / "metadata.json").read_text())
    assert metadata["env_id"] == TOY_ID and metadata["status"] == "complete" and metadata["command"] == "test"
    assert "gymnasium" in metadata["versions"] and metadata["finished_at"]
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["classification"]["accuracy"] == pytest.approx(0.5)
    assert summary["classification"]["confusion_matrix"] == [[6, 0], [6, 0]]
    assert summary["classification"]["subsets"]["pivot"]["true"] == {"n": 4, "accuracy": 0.0}
    assert summary["tool_use"]["tool_use_rate"] == 1.0
    assert summary["reward"]["mean"] == pytest.approx(0.6)
    assert summary["pass_at_k"] == {"pass@1": pytest.approx(0.5), "pass@2": pytest.approx(0.5)}


def test_resume_after_a_kill_finishes_the_missing_episodes_without_duplicates(tmp_path):
    cfg = config(tmp_path, rollouts=3, concurrency=2)
    run_eval(cfg, agent=FunctionAgent(happy_reader))
    path = cfg.out / "results.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    kept = lines[:7]
    path.write_bytes(b"".join(kept) + lines[7][: len(lines[7]) // 2])  # killed mid-write of line 8
    calls = itertools.count()
    counting = FunctionAgent(lambda o, i: (next(calls), happy_reader(o, i))[1])
    result = run_eval(config(tmp_path, rollouts=3, concurrency=2, resume=True), agent=counting)
    records, bad = read_results(path)
    assert bad == 0 and len(records) == 18 and len(set(keys(records))) == 18
    assert result.episodes_played == 11 and next(calls) == 22  # two agent calls per missing episode
    assert path.read_bytes().startswith(b"".join(kept))  # complete lines kept as they were
    metadata = json.loads((cfg.out / "metadata.json").read_text())
    assert [s["resumed_records"] for s in metadata["sessions"]] == [0, 7]


def test_resume_with_episodes_never_started(tmp_path):
    run_eval(config(tmp_path, n=2), agent=FunctionAgent(happy_reader))
    result = run_eval(config(tmp_path, n=5, resume=True), agent=FunctionAgent(happy_reader))
    records, _ = read_results(tmp_path / "run" / "results.jsonl")
    assert result.episodes_played == 3 and keys(records) == sorted((s, 0) for s in select_scenarios([f"n0{i}" for i in range(1, 7)], 5, 0))


def test_a_third_of_agent_calls_failing_is_recorded_and_the_run_completes(tmp_path):
    calls = itertools.count(1)
    lock = threading.Lock()

    def flaky(observation, info):
        with lock:
            index = next(calls)
        if index % 3 == 0:
            raise ConnectionError("model server down")
        return happy_reader(observation, info)

    result = run_eval(config(tmp_path, rollouts=4, concurrency=4), agent=FunctionAgent(flaky))
    records, _ = read_results(result.out / "results.jsonl")
    failed = [r for r in records if r["error"]]
    assert len(records) == 24 and failed
    assert all(r["error"]["type"] == "ConnectionError" and r["reward"] is None for r in failed)
    assert result.summary["errors"]["count"] == len(failed) and result.summary["status"] == "complete"
    assert result.summary["reward"]["n"] == 24 - len(failed)


def test_run_stops_when_more_episodes_fail_than_allowed(tmp_path):
    def down(observation, info):
        raise TimeoutError("no answer in 60 s")

    with pytest.raises(RunAborted, match="TimeoutError") as aborted:
        run_eval(config(tmp_path, rollouts=5, max_fail_fraction=0.2), agent=FunctionAgent(down))
    records, _ = read_results(tmp_path / "run" / "results.jsonl")
    assert 0 < len(records) < 30
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "aborted"
    assert "rerun with --resume --retry-errors" in str(aborted.value)
    with pytest.raises(RunAborted):  # --resume alone keeps the failures: the same abort again
        run_eval(config(tmp_path, rollouts=5, max_fail_fraction=0.2, resume=True), agent=FunctionAgent(down))
    result = run_eval(config(tmp_path, rollouts=5, max_fail_fraction=0.2, resume=True, retry_errors=True),
                      agent=FunctionAgent(happy_reader))  # the advice, once the agent is back
    assert result.summary["status"] == "complete" and result.summary["errors"]["count"] == 0


def test_an_agent_that_stops_early_is_an_error_not_a_crash(tmp_path):
    class Quitter(Agent):
        def play(self, step, observation, info):
            step(READ_NOTE)

    result = run_eval(config(tmp_path, n=2, max_fail_fraction=1.0), agent=Quitter())
    assert result.summary["errors"]["count"] == 2


def test_existing_results_need_resume_and_a_matching_run(tmp_path):
    run_eval(config(tmp_path, n=1), agent=FunctionAgent(happy_reader))
    with pytest.raises(FileExistsError, match="--resume"):
        run_eval(config(tmp_path, n=1), agent=FunctionAgent(happy_reader))
    with pytest.raises(ValueError, match="seed"):
        run_eval(config(tmp_path, n=1, seed=3, resume=True), agent=FunctionAgent(happy_reader))


def test_pass_at_k_matches_the_hand_computed_value():
    # scenario a: 1 of 4 rollouts correct, b: 2 of 4, c: none.
    flags = {"a": [True, False, False, False], "b": [False, True, True, False], "c": [False] * 4}
    records = [
        {"scenario_id": sid, "rollout": i, "outcome": {"correct": ok}, "reward": float(ok), "error": None,
         "timings": {"total_s": 0.0, "agent_s": 0.0, "env_s": 0.0}}
        for sid, values in flags.items()
        for i, ok in enumerate(values)
    ]
    table = summarize(records, rollouts=4)["pass_at_k"]
    # pass@2: a = 1 - C(3,2)/C(4,2) = 1/2, b = 1 - C(2,2)/C(4,2) = 5/6, c = 0
    assert table["pass@2"] == pytest.approx((1 / 2 + 5 / 6 + 0) / 3)
    assert table["pass@1"] == pytest.approx((1 / 4 + 2 / 4 + 0) / 3)
    assert table["pass@4"] == pytest.approx(2 / 3)


def test_pass_at_k_of_a_seeded_sampling_agent_matches_its_records(tmp_path):
    class Coin(Agent):
        def reset(self, seed=None):
            self.label = "happy" if seed % 2 else "sad"

        def act(self, observation, info):
            return f"<answer>{self.label}</answer>"

    result = run_eval(config(tmp_path, rollouts=3, concurrency=2), agent=Coin())
    records, _ = read_results(result.out / "results.jsonl")
    expected = []
    for sid in {r["scenario_id"] for r in records}:
        c = sum(r["outcome"]["correct"] for r in records if r["scenario_id"] == sid)
        expected.append(1 - math.comb(3 - c, 2) / math.comb(3, 2))
    assert result.summary["pass_at_k"]["pass@2"] == pytest.approx(sum(expected) / len(expected))
    assert all(parse_answer(r["final_text"]) == r["outcome"]["prediction"] for r in records)


def test_results_writer_keeps_lines_whole_under_concurrent_writes(tmp_path):
    writer = ResultsWriter(tmp_path / "results.jsonl")

    def write_many(worker):
        for i in range(200):
            writer.write({"scenario_id": f"s{worker}", "rollout": i, "text": "x" * (i * 7)})

    threads = [threading.Thread(target=write_many, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    records, bad = read_results(tmp_path / "results.jsonl")
    assert bad == 0 and len(records) == 800 == writer.lines_written


def test_a_third_of_model_server_calls_failing_over_http(tmp_path):
    from openai_server import OpenAIServer, Reply, ToolCall

    from affectgym.agents.openai_agent import OpenAIAgent

    calls = itertools.count(1)
    lock = threading.Lock()

    def server_policy(request):
        with lock:
            index = next(calls)
        if index % 3 == 0:
            return Reply(status=500)
        if any(m["role"] == "tool" for m in request["messages"]):
            return "<answer>happy</answer>"
        return ToolCall("read_note", {})

    with OpenAIServer(server_policy) as server:
        agent = OpenAIAgent("test-model", base_url=server.url, max_retries=0)
        # two calls per episode: about 5 episodes in 9 hit a failure, so allow up to 90%
        result = run_eval(config(tmp_path, rollouts=3, concurrency=4, max_fail_fraction=0.9), agent=agent)
    records, _ = read_results(result.out / "results.jsonl")
    failed = [r for r in records if r["error"]]
    assert len(records) == 18 and failed and result.summary["status"] == "complete"
    assert {r["error"]["type"] for r in failed} == {"InternalServerError"}
    assert result.summary["errors"]["by_type"] == {"InternalServerError": len(failed)}


def test_sarcasm_env_records_carry_its_classification_outcome(tmp_path):
    import affectgym
    from affectgym.agents.base import tool_call_text

    if "affectgym/Sarcasm-v0" not in affectgym.list_envs():
        pytest.skip("Sarcasm-v0 is not registered")

    def transcript_then_sarcastic(observation, info):
        if len(info["messages"]) == 2:
            return tool_call_text("get_transcript", {})
        return '<final>{"label": "sarcastic", "confidence": 0.7}</final>'

    result = run_eval(
        config(tmp_path, env_id="affectgym/Sarcasm-v0", n=12, concurrency=2),
        agent=FunctionAgent(transcript_then_sarcastic),
    )
    records, _ = read_results(result.out / "results.jsonl")
    outcomes = [r["outcome"] for r in records]
    assert all(o["prediction"] == "sarcastic" and o["confidence"] == 0.7 and isinstance(o["pivot"], bool) for o in outcomes)
    classification = result.summary["classification"]
    assert classification["n"] == 12 and "pivot" in classification["subsets"]
    assert "terminated" not in classification["subsets"]  # only the env's outcome flags are subsets
    assert classification["accuracy"] == pytest.approx(sum(o["label"] == "sarcastic" for o in outcomes) / 12)


def test_a_bad_agent_spec_fails_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="unknown agent spec"):
        run_eval(config(tmp_path, agent="no-such-agent"))
    assert not (tmp_path / "run").exists()


class ToyTargetEnv(ToyMoodEnv):
    """The toy env declaring a built-in and a plug-in summary instead of classification."""

    outcome_summaries = ("reward_by_target", "toy-answered")

    def outcome(self, scenario, answer, result):
        return {"target": scenario.label, "answered": answer is not None}


class ToyUnknownSummaryEnv(ToyMoodEnv):
    outcome_summaries = ("no-such-summary",)


for env_id, entry_point in (("affectgym-test/ToyTarget-v0", ToyTargetEnv), ("affectgym-test/ToyUnknown-v0", ToyUnknownSummaryEnv)):
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point)


def test_the_summary_holds_exactly_the_outcome_summaries_the_env_declares(tmp_path):
    register_outcome_summary("toy-answered", lambda records: {"rate": sum(r["outcome"]["answered"] for r in records) / len(records)})
    result = run_eval(config(tmp_path, env_id="affectgym-test/ToyTarget-v0"), agent=FunctionAgent(happy_reader))
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["outcome_summaries"] == ["reward_by_target", "toy-answered"]
    assert summary["reward_by_target"] == {"happy": pytest.approx(1.0), "sad": pytest.approx(0.2)}
    assert summary["toy-answered"] == {"rate": 1.0}
    assert "classification" not in summary
    metadata = json.loads((result.out / "metadata.json").read_text())
    assert metadata["outcome_summaries"] == ["reward_by_target", "toy-answered"]


def test_an_unknown_outcome_summary_fails_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"\['no-such-summary'\] that do not exist; known: .*classification"):
        run_eval(config(tmp_path, env_id="affectgym-test/ToyUnknown-v0"), agent=FunctionAgent(happy_reader))
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="other than"):
        register_outcome_summary("reward", lambda records: {})


def test_the_runner_and_the_summaries_name_no_env():
    import ast
    import inspect

    import affectgym
    from affectgym.eval import runner, summary

    sources = {module.__name__: inspect.getsource(module) for module in (runner, summary)}
    names = {env_id.split("/", 1)[-1].rsplit("-v", 1)[0] for env_id in affectgym.list_envs()}
    assert names, "no env is registered"
    for module, source in sources.items():
        assert not [name for name in names if name in source], module
        imported = [
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        ]
        assert not [name for name in imported if name and name.startswith("affectgym.envs")], module


def constant_classifier(texts):
    return [{"neutral": 0.6, "joy": 0.2, "sadness": 0.2} for _ in texts]


def test_an_agent_spec_plays_the_user_of_an_env_with_a_user_simulator(tmp_path):
    import affectgym

    dialogue_id = "affectgym/EmpatheticDialogue-v0"
    if dialogue_id not in affectgym.list_envs():
        pytest.skip(f"{dialogue_id} is not registered")
    register_agent("test-dialogue-user", lambda **kw: FunctionAgent(lambda o, i: "Well, it went fine.", name="user"))
    reply = "(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) What comes next for you?"
    result = run_eval(
        config(tmp_path, env_id=dialogue_id, user_simulator="test-dialogue-user", env_kwargs={"classifier": constant_classifier}),
        agent=FunctionAgent(lambda o, i: reply),
    )
    records, _ = read_results(result.out / "results.jsonl")
    simulated = []
    for record in records:
        messages = record["messages"]
        first_reply = next(i for i, m in enumerate(messages) if m["role"] == "assistant" and m["content"] == reply)
        simulated += [m["content"] for m in messages[first_reply:] if m["role"] == "user"]
    assert simulated and all(line.split(") ", 1)[1].startswith("Well, it went fine.\n") for line in simulated)
    assert json.loads((result.out / "metadata.json").read_text())["user_simulator"] == "test-dialogue-user"
    assert result.summary["dialogue"]["turns"] > len(records)  # the simulated turns were played and summarised
    with pytest.raises(ValueError, match="default env factory"):
        run_eval(config(tmp_path / "other", user_simulator="test-dialogue-user"), agent=FunctionAgent(happy_reader),
                 env_factory=lambda: gym.make(TOY_ID))


def test_a_reply_with_a_lone_surrogate_is_stored_replaced_and_flagged_and_resume_keeps_it(tmp_path):
    half_an_emoji = "<answer>happy</answer> \ud83d"  # max_tokens cut a surrogate pair in two
    agent = FunctionAgent(lambda o, i: half_an_emoji if i["scenario_id"] == "n03" else "<answer>happy</answer>")
    result = run_eval(config(tmp_path), agent=agent)
    records, bad = read_results(result.out / "results.jsonl")
    assert bad == 0 and len(records) == 6 and result.summary["status"] == "complete"
    (cut,) = [r for r in records if r.get("replaced_lone_surrogates")]
    assert cut["scenario_id"] == "n03" and cut["final_text"] == "<answer>happy</answer> \ufffd"
    assert cut["replaced_lone_surrogates"] == 2  # the final text and its message in the transcript
    assert cut["error"] is None and cut["outcome"]["prediction"] == "happy"
    again = run_eval(config(tmp_path, resume=True), agent=agent)
    assert again.episodes_played == 0 and len(read_results(result.out / "results.jsonl")[0]) == 6


def test_a_judge_answering_http_500_is_counted_in_each_record_the_summary_and_the_printed_table(tmp_path):
    import io

    from judge_answers import format_judge_reply
    from openai_server import OpenAIServer
    from rich.console import Console

    import affectgym
    from affectgym.rewards.judge import JudgeConfig

    style_id = "affectgym/EmotionStyle-v0"
    if style_id not in affectgym.list_envs():
        pytest.skip(f"{style_id} is not registered")
    judge_config = JudgeConfig(cache=False, max_retries=1, timeout_s=10, backoff_s=0.001, max_backoff_s=0.01)
    reply = FunctionAgent(lambda o, i: "Red. Again. Of course it is.", name="fixed-reply")

    def run(server, folder):
        console = Console(file=io.StringIO(), width=200)

        def make():
            return affectgym.make(style_id, split="eval", classifier=constant_classifier, judge_url=server.url,
                                  judge_model="judge-model", judge_config=judge_config)

        result = run_eval(config(tmp_path / folder, env_id=style_id, agent="fixed-reply", n=3), agent=reply,
                          env_factory=make, console=console)
        return result, read_results(result.out / "results.jsonl")[0], console.file.getvalue()

    with OpenAIServer(fail_first=10**6, fail_status=500) as down:
        result, records, printed = run(down, "down")
    assert down.calls == 6  # each of the 3 replies: one call and one retry
    assert [(r["error"], r["judge_failures"], r["reward_components"]["judge"]) for r in records] == [(None, 1, None)] * 3
    assert result.summary["errors"]["count"] == 0
    assert result.summary["judge_failures"] == {"count": 3, "episodes": 3, "rate": 1.0}
    assert json.loads((result.out / "summary.json").read_text())["judge_failures"]["count"] == 3
    assert "judge failures" in printed and "3 in 3 episodes" in printed

    with OpenAIServer(default_reply=format_judge_reply()) as up:
        result, records, printed = run(up, "up")
    assert [r["judge_failures"] for r in records] == [0] * 3 and all(r["reward_components"]["judge"] == 1.0 for r in records)
    assert result.summary["judge_failures"] == {"count": 0, "episodes": 0, "rate": 0.0} and "judge failures" not in printed
