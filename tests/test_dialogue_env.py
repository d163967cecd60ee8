"""affectgym/EmpatheticDialogue-v0: per-turn rewards, episodes, resets, flattening, judge, checker."""

from __future__ import annotations

import gymnasium as gym
import pytest

from affectgym.data.dialogues import Dialogue, DialogueTurn
from affectgym.envs.checker import check_env
from affectgym.envs.dialogue import DialogueEnv
from affectgym.eval.dialogue_metrics import dialogue_summary, turn_metrics
from affectgym.rewards.judge import EmpathyJudge, JudgeConfig

ENV_ID = "affectgym/EmpatheticDialogue-v0"


def constant_classifier(texts):
    """A fast stand-in for the emotion classifier: every sentence reads as mostly neutral."""
    return [{"neutral": 0.6, "joy": 0.2, "sadness": 0.2} for _ in texts]


@pytest.fixture(scope="module")
def env():
    return DialogueEnv(split="all", classifier=constant_classifier)


def test_env_passes_check_env_offline_with_the_nade_classifier():
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="affectgym.envs.dialogue:DialogueEnv")
    report = check_env(gym.make(ENV_ID, split="eval"), max_scenarios=30)
    assert report.fuzzed_actions >= 2_000 and report.canaries_checked >= 30 * 5


def test_step_rewards_are_the_per_turn_scores_and_sum_to_the_return(env):
    dialogue = env.all_dialogues[2]  # four user turns
    observation, info = env.reset(options={"scenario_id": dialogue.id})
    assert info["scenario_id"] == dialogue.turns[0].id and dialogue.turns[0].user_line in observation
    replies = [
        dialogue.turns[0].reference,
        "",  # invalid: empty
        "sure, whatever you say",  # a scored turn with a low structure score
        dialogue.turns[2].reference.lower(),
        dialogue.turns[3].reference,
    ]
    rewards, turn_scores = [], []
    for reply in replies:
        turn_id = info["scenario_id"]
        observation, reward, terminated, truncated, info = env.step(reply)
        rewards.append(reward)
        if reply:
            expected = env.score(env.get_scenario(turn_id), reply, []).total
            assert reward == pytest.approx(expected)
            turn_scores.append(expected)
    assert terminated and not truncated
    assert rewards[1] == pytest.approx(-env.invalid_action_penalty)
    assert rewards[2] < 0.5 and info["outcome"]["dialogue_turns"][1]["parse_error"].startswith("no emotion tags")
    assert sum(rewards) == pytest.approx(info["episode_reward"])
    assert sum(turn_scores) - env.invalid_action_penalty == pytest.approx(info["episode_reward"])


def test_completion_bonus_and_truncation_penalty_end_the_episode():
    env = DialogueEnv(split="all", classifier=constant_classifier, completion_bonus=0.5, truncation_penalty=0.3, max_turns=2)
    dialogue = env.all_dialogues[2]
    env.reset(options={"scenario_id": dialogue.turns[2].id})
    _, first, *_ = env.step(dialogue.turns[2].reference)
    _, last, terminated, _, info = env.step(dialogue.turns[3].reference)
    assert terminated and info["reward_components"]["completion_bonus"] == 0.5
    assert first + last == pytest.approx(info["episode_reward"])
    env.reset(options={"scenario_id": dialogue.id})
    env.step("")
    _, reward, terminated, truncated, info = env.step("")
    assert truncated and not terminated and info["truncated_unanswered"]
    assert reward == pytest.approx(-0.05 - 0.3) and info["episode_reward"] == pytest.approx(-0.4)


def test_resetting_on_a_turn_id_prefills_the_history_with_the_reference_replies(env):
    turn = env.all_dialogues[0].turns[2]
    observation, info = env.reset(options={"scenario_id": turn.id})
    roles = [m["role"] for m in info["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert info["messages"][2]["content"] == env.all_dialogues[0].turns[0].reference
    assert info["required_tags"] == list(turn.required_tags) and info["turn_index"] == 2
    *_, terminated, _, info = env.step(turn.reference)
    assert terminated and info["outcome"]["turns_answered"] == 1


def test_seeded_reset_starts_a_dialogue_at_its_first_turn(env):
    _, info = env.reset(seed=3)
    assert info["scenario_id"].endswith("/t0") and env.reset(seed=3)[1]["scenario_id"] == info["scenario_id"]


def test_scenarios_are_turns_and_flat_prompt_renders_the_history(env):
    turn = env.all_dialogues[0].turns[1]
    assert turn in env.scenarios and len(env.scenarios) == sum(len(d.turns) for d in env.all_dialogues)
    system, user = env.flat_prompt(turn)
    assert system["role"] == "system" and "open-ended" in system["content"]
    assert "Conversation so far:\nHuman: (FEAR)" in user["content"]
    assert user["content"].endswith(f"Sentence 2 must carry {turn.target_emotion}.")
    assert env.flat_trace(turn) == []


def test_outcome_carries_what_the_reference_metrics_need_and_dialogue_summary_aggregates_them(env):
    dialogue = env.all_dialogues[1]
    env.reset(options={"scenario_id": dialogue.id})
    for turn in dialogue.turns:
        *_, info = env.step(turn.reference)
    turns = info["outcome"]["dialogue_turns"]
    assert [t["reply"] for t in turns] == [t["reference"] for t in turns] == [t.reference for t in dialogue.turns]
    assert [turn_metrics(t["reply"], t["reference"], t["required_tags"])["bleu4"] for t in turns] == [100.0] * len(dialogue.turns)
    summary = dialogue_summary([{"outcome": info["outcome"]}])
    assert summary["turns"] == len(dialogue.turns) and summary["rougeL"] == pytest.approx(100.0)
    assert summary["bleu4"] == 100.0
    assert summary["tag_accuracy"] == 1.0 and summary["corpus_bleu4"] == pytest.approx(100.0)
    runner_record = {"scenario_id": dialogue.turns[0].id, "turns": len(dialogue.turns), "outcome": info["outcome"]}
    assert dialogue_summary([runner_record]) == summary


def test_a_callable_user_simulator_plays_the_later_turns_with_the_dialogues_emotion_arc():
    seen = []

    def user_simulator(messages):
        seen.append(messages)
        return "(HAPPINESS) Honestly I am not sure what to think."

    env = DialogueEnv(split="all", classifier=constant_classifier, user_simulator=user_simulator)
    dialogue = env.all_dialogues[0]
    env.reset(options={"scenario_id": dialogue.id})
    observation, *_, info = env.step(dialogue.turns[0].reference)
    [(message,)] = seen  # called once, with a one-message chat
    emotion = dialogue.turns[1].user_emotion
    assert message["role"] == "user" and f"sound {emotion.lower()}," in message["content"]
    transcript = message["content"].split("\n\n", 1)[1]
    assert transcript == f"Human: {dialogue.turns[0].user_line}\nChatbot: {dialogue.turns[0].reference}"  # one exchange so far
    assert observation.startswith(f"({emotion}) Honestly I am not sure")
    assert info["scenario_id"].endswith("/sim")


def test_the_scripted_user_follows_the_reference_whatever_the_agent_asked_and_the_docstring_says_so(env):
    dialogue = env.all_dialogues[0]
    env.reset(options={"scenario_id": dialogue.id})
    observation, *_ = env.step("(NEUTRAL) Never mind that. (NEUTRAL) Let us talk about cars. (NEUTRAL) Which car do you drive?")
    assert observation.startswith(dialogue.turns[1].user_line)
    doc = " ".join(DialogueEnv.__doc__.split())
    assert "follows the reference conversation" in doc and "user_simulator=" in doc and "chat_function" in doc


def test_a_user_simulator_that_is_not_callable_is_rejected_with_the_accepted_forms():
    with pytest.raises(ValueError, match="callable messages -> str.*--user-simulator SPEC"):
        DialogueEnv(classifier=constant_classifier, user_simulator="some-agent")


def test_custom_scenario_objects_run_as_one_turn_or_a_whole_dialogue(env):
    turn = DialogueTurn("x/t0", "x", 0, 1, "FEAR", "A storm is coming.", "SURPRISE")
    _, info = env.reset(options={"scenario": turn})
    *_, terminated, _, info = env.step("(FEAR) Eek. (SURPRISE) Whoa. (NEUTRAL) Where are you?")
    assert terminated
    _, info = env.reset(options={"scenario": Dialogue("x", (turn,))})
    assert info["scenario_id"] == "x/t0"
    with pytest.raises(ValueError, match="DialogueTurn or a Dialogue"):
        env.reset(options={"scenario": "x"})


def test_unknown_reward_weight_is_rejected_and_weights_override():
    with pytest.raises(ValueError, match="unknown reward weights"):
        DialogueEnv(classifier=constant_classifier, reward_weights={"bleu": 1.0})
    env = DialogueEnv(classifier=constant_classifier, reward_weights={"length": 0.0})
    assert env.rubric.weights["length"] == 0.0


def test_a_per_turn_rubric_of_ones_own_scores_every_turn_and_keeps_the_episode_terms():
    from affectgym.envs.dialogue_criteria import open_question
    from affectgym.rewards.rubric import Criterion, Rubric

    asks = Rubric([Criterion("open_question", open_question)])
    env = DialogueEnv(split="all", classifier=constant_classifier, rubric=asks, completion_bonus=0.5)
    assert [c.name for c in env.rubric.criteria] == ["open_question", "earlier_turns", "invalid_actions",
                                                     "completion_bonus", "truncation_penalty"]
    env.reset(seed=0)
    _, reward, *_ = env.step("(NEUTRAL) Fine. (NEUTRAL) Sure. (NEUTRAL) What happened next?")
    assert reward == 1.0
    with pytest.raises(ValueError, match="rubric must be None .* or a Rubric"):
        DialogueEnv(classifier=constant_classifier, rubric="short")


@pytest.mark.filterwarnings("ignore:Implementing custom LMs:DeprecationWarning")
def test_the_empathy_judge_adds_a_component_and_never_raises():
    dspy = pytest.importorskip("dspy")
    from dspy.utils import DummyLM

    lm = DummyLM([{"empathy": "9", "chatbot_emotion": "5", "question": "1"}] * 4)
    env = DialogueEnv(split="all", classifier=constant_classifier, judge=lm, judge_weight=0.3)
    turn = env.scenarios[0]
    result = env.score(turn, turn.reference, [])
    assert result.components["empathy"] == pytest.approx(0.5)
    assert env.reward_range[1] == pytest.approx(1.3)

    class BrokenLM(DummyLM):
        def forward(self, prompt=None, messages=None, **kwargs):  # noqa: D102 - DummyLM's signature
            raise RuntimeError("judge server down")

    judge = EmpathyJudge(BrokenLM([{}]), JudgeConfig(cache=False))
    env = DialogueEnv(split="all", classifier=constant_classifier, judge=judge)
    assert env.score(turn, turn.reference, []).components["empathy"] is None and judge.failures == 1
    assert dspy is not None


def test_each_step_reports_its_judge_failures_and_the_outcome_those_of_the_episode():
    pytest.importorskip("dspy")
    from dspy.utils import DummyLM

    judge = EmpathyJudge(DummyLM({"never matches": {}}), JudgeConfig(cache=False, max_retries=0))
    env = DialogueEnv(split="all", classifier=constant_classifier, judge=judge)
    dialogue = env.all_dialogues[2]  # four user turns
    _, info = env.reset(options={"scenario_id": dialogue.id})
    assert info["judge_failures"] == 0
    per_step = []
    for reply in [dialogue.turns[0].reference, "", *(turn.reference for turn in dialogue.turns[1:])]:
        _, _, terminated, _, info = env.step(reply)
        per_step.append(info["judge_failures"])
    assert terminated and per_step == [1, 0, 1, 1, 1]  # the empty message is invalid, never judged
    assert info["outcome"]["judge_failures"] == 4 == judge.failures
