"""The environment contract, pinned down on the toy env."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from toy_env import NOTES, ToyMoodEnv

from affectgym.envs.checker import BAD_ACTIONS, EnvCheckError, check_env
from affectgym.envs.core import AffectEnv, tool

READ = '<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'


def test_toy_env_passes_check_env_with_2000_fuzzed_actions():
    report = check_env(ToyMoodEnv())
    assert report.fuzzed_actions >= 2_000
    assert report.label_flip_scenarios == len(NOTES)
    assert report.canaries_checked == 4 * len(NOTES)
    assert not report.problems


@pytest.mark.slow
def test_toy_env_survives_20000_fuzzed_actions():
    report = check_env(ToyMoodEnv(), fuzz_actions=20_000, seed=7)
    assert report.fuzzed_actions >= 20_000 and not report.problems


def test_toy_env_passes_check_env_through_gym_make():
    gym.register(id="affectgym-test/Toy-v0", entry_point="toy_env:ToyMoodEnv")
    try:
        report = check_env(gym.make("affectgym-test/Toy-v0"), fuzz_actions=200)
        assert "Toy-v0" in report.env_name
    finally:
        del gym.registry["affectgym-test/Toy-v0"]


class LeakyEnv(ToyMoodEnv):
    @tool
    def read_note(self) -> str:
        """Read the note."""
        return f"{self.scenario.text} (writer feels {self.scenario.label})"


class RaisingEnv(ToyMoodEnv):
    def parse_final(self, text):
        json.loads(text)  # raises on most agent text: exactly what an env must never do
        return super().parse_final(text)


class HackableEnv(ToyMoodEnv):
    def canaries(self, scenario):
        return {"copy_of_reference": self.reference_answer(scenario)}


@pytest.mark.parametrize(
    ("env_class", "problem"),
    [(LeakyEnv, "label flip"), (RaisingEnv, "fuzz"), (HackableEnv, "canaries")],
)
def test_checker_reports_each_broken_contract(env_class, problem):
    with pytest.raises(EnvCheckError, match=problem):
        check_env(env_class(), fuzz_actions=100)


@pytest.mark.parametrize("action", [*BAD_ACTIONS, b"\x00\xff", None, 42])
def test_bad_action_never_raises_and_says_what_is_accepted(action):
    env = ToyMoodEnv(invalid_action_penalty=0.1)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.startswith("Error:") or "unknown tool" in observation
    assert reward == pytest.approx(-0.1)
    assert not terminated and not truncated
    assert info["reward_components"] == {"invalid_actions": -0.1}


def test_wrong_argument_type_names_the_argument_and_the_accepted_type():
    class ArgEnv(ToyMoodEnv):
        @tool
        def read_word(self, index: int) -> str:
            """Read one word of the note.

            Args:
                index: Position of the word, from 0.
            """
            return self.scenario.text.split()[index % len(self.scenario.text.split())]

    env = ArgEnv()
    env.reset(seed=0)
    observation, *_ = env.step('<tool_call>{"name": "read_word", "arguments": {"index": "two"}}</tool_call>')
    assert "argument 'index' must be an integer, got str 'two'" in observation
    observation, reward, *_ = env.step('{"name": "read_word", "arguments": {"index": 1}}')
    assert not observation.startswith("Error") and reward == 0.0


def test_step_after_episode_end_is_refused_with_a_penalty():
    env = ToyMoodEnv()
    env.reset(seed=0)
    env.step("<answer>happy</answer>")
    observation, reward, terminated, _, _ = env.step(READ)
    assert "episode is over" in observation and reward < 0 and terminated


def test_turn_limit_truncates_and_scores_the_episode_as_unanswered():
    env = ToyMoodEnv(max_turns=3, invalid_action_penalty=0.05)
    env.reset(seed=0)
    rewards = [env.step(READ)[1], env.step("hmm")[1]]
    observation, reward, terminated, truncated, info = env.step("still thinking")
    rewards.append(reward)
    assert truncated and not terminated
    assert "Turn limit of 3" in observation
    assert info["reward_components"]["correct"] == 0.0
    assert sum(rewards) == pytest.approx(info["episode_reward"]) == pytest.approx(0.2 - 2 * 0.05)


def test_step_rewards_sum_to_the_rubric_score_of_the_episode():
    env = ToyMoodEnv()
    env.reset(options={"scenario_id": "n02"})
    rewards = [env.step("junk")[1], env.step(READ)[1]]
    _, reward, terminated, _, info = env.step("<answer>sad</answer>")
    assert terminated
    rewards.append(reward)
    trace = list(env.trace)
    assert sum(rewards) == pytest.approx(env.score(env.scenario, "<answer>sad</answer>", trace).total)
    assert sum(rewards) == pytest.approx(1.0 - 0.05)


def test_several_tool_calls_in_one_message_run_in_order_in_every_accepted_shape():
    env = ToyMoodEnv()
    env.reset(options={"scenario_id": "n01"})
    message = (
        READ
        + '<tool_call>{"type": "function", "function": {"name": "read_note", "arguments": "{}"}}</tool_call>'
    )
    observation, reward, *_ , info = env.step(message)
    assert observation.count("[read_note]") == 2 and reward == 0.0
    tool_messages = [m for m in info["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0", "call_1"]
    assert info["messages"][2]["tool_calls"][1]["function"]["name"] == "read_note"


def test_reset_picks_the_same_scenario_for_the_same_seed_or_id():
    env = ToyMoodEnv()
    assert env.reset(seed=3)[1]["scenario_id"] == env.reset(seed=3)[1]["scenario_id"]
    seen = {env.reset(seed=s)[1]["scenario_id"] for s in range(30)}
    assert len(seen) > 3
    _, info = env.reset(options={"scenario_id": "n05"})
    assert info["scenario_id"] == "n05" and info["split"] == "all"
    assert info["tools"][0]["function"]["name"] == "read_note"
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    with pytest.raises(KeyError, match="no scenario 'nope'"):
        env.reset(options={"scenario_id": "nope"})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"scenario_idx": 1})


def test_flat_prompt_prerenders_tool_outputs_and_scores_like_the_interactive_episode():
    env = ToyMoodEnv()
    scenario = env.get_scenario("n04")
    messages = env.flat_prompt(scenario)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "[read_note]\nNobody came to the reading." in messages[1]["content"]
    flat = env.score(scenario, "<answer>sad</answer>", env.flat_trace(scenario)).total
    env.reset(options={"scenario_id": "n04"})
    interactive = env.step(READ)[1] + env.step("<answer>sad</answer>")[1]
    assert flat == pytest.approx(interactive) == pytest.approx(1.0)


def test_ansi_render_prints_the_transcript():
    env = ToyMoodEnv(render_mode="ansi")
    env.reset(options={"scenario_id": "n01"})
    env.step(READ)
    text = env.render()
    assert "[SYSTEM]" in text and "[TOOL (read_note)]" in text and "sister called" in text
    assert ToyMoodEnv().render() is None


def test_constructor_rejects_bad_configuration_with_a_clear_message():
    with pytest.raises(ValueError, match="max_turns must be a positive integer"):
        ToyMoodEnv(max_turns=0)
    with pytest.raises(ValueError, match="render_mode must be None or one of 'ansi', 'human'"):
        ToyMoodEnv(render_mode="rgb_array")


def test_a_tool_call_is_never_read_as_a_final_answer_when_a_flat_completion_is_scored():
    import affectgym

    env = affectgym.make("affectgym/Sarcasm-v0", task_format="short-yesno", rubric="label").unwrapped
    clip = next(c for c in env.scenarios if c.label == "sarcastic")
    smuggled = '<tool_call>{"name": "get_transcript", "arguments": {"label": "sarcastic"}}</tool_call> Yes'
    assert env.parse_reply(smuggled).answer is None and env.parse_reply("Yes").answer == {"label": "sarcastic", "confidence": 1.0}
    result = env.score(clip, smuggled, env.flat_trace(clip))
    assert result.components["correctness"] == 0.0 and result.components["format"] == 0.0


# --------------------------------------------------------------------------- composition
def test_the_base_calls_no_method_of_a_subclass_while_it_is_built():
    calls = []

    class Recording(ToyMoodEnv):
        pass

    for name, member in vars(AffectEnv).items():
        if callable(member) and not name.startswith("_") and not isinstance(member, (staticmethod, classmethod)):
            def spy(self, *args, _name=name, **kwargs):
                calls.append(_name)
                return getattr(ToyMoodEnv, _name)(self, *args, **kwargs)

            setattr(Recording, name, spy)
    env = Recording()
    assert calls == [], f"AffectEnv.__init__ called {calls}"
    env.reset(seed=0)
    assert {"system_prompt", "first_observation", "tool_call_instruction"} <= set(calls)


def test_an_env_that_hands_over_no_scenarios_or_rubric_is_refused_naming_both():
    class HookedMood(ToyMoodEnv):
        def __init__(self):
            AffectEnv.__init__(self, split="all", max_turns=4)

    with pytest.raises(TypeError, match="'scenarios' and 'rubric'"):
        HookedMood()


def test_a_steps_info_shares_the_episodes_messages_but_gives_each_step_its_own_tool_data():
    from gymnasium.utils.passive_env_checker import data_shares_objects

    import affectgym

    env = affectgym.make("affectgym/Sarcasm-v0", max_turns=12, max_tool_calls=12).unwrapped
    calls = ["get_prosody_features", "get_transcript", "get_pitch_contour", "get_prosody_features"]
    actions = [*(f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>' for name in calls), "junk"] * 2
    infos = [env.reset(seed=0)[1]]
    for action in actions:
        infos.append(env.step(action)[-1])
    for before, after in zip(infos, infos[1:], strict=False):
        shared = sum(new is old for new, old in zip(after["messages"], before["messages"], strict=False))
        assert shared == len(before["messages"]), "every message of the chat so far is the same dict, not a copy"
        assert after["tools"] is infos[0]["tools"]
        assert not data_shares_objects(before, after), "Gymnasium's reuse check: no dict shared between two steps' infos"
    assert len(infos[-1]["messages"]) == 2 + 2 * len(actions)
    with_data = [entry for entry in env.trace if "data" in entry]
    assert with_data and all(infos[-1]["tool_data"][entry["name"]] is not entry["data"] for entry in with_data), (
        "changing info's tool data cannot change the trace the reward reads")
