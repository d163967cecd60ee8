"""Flattened datasets and TRL reward functions: one reward path, no eval leakage."""

from __future__ import annotations

import inspect
import json
from typing import Literal

import gymnasium as gym
import pytest
import toy_env

import affectgym
from affectgym.envs.core import tool
from affectgym.train.environment import environment_factory
from affectgym.train.flatten import make_env, to_dataset, training_order
from affectgym.train.rewards import completion_text, reward_functions

TOY_ID = "affectgym-test/TrainToyMood-v0"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point=toy_env.ToyMoodEnv)

REAL_IDS = ["affectgym/Sarcasm-v0", "affectgym/EmotionStyle-v0", "affectgym/EmpatheticDialogue-v0"]


def registered(env_id: str):
    """Skip marker for an env id that is not registered yet."""
    return pytest.mark.skipif(
        env_id not in affectgym.list_envs(),
        reason=f"{env_id} is not registered in affectgym.envs.registration.BUILTIN_ENVS yet",
    )


def columns(dataset, rows=None):
    """The reward-function keyword arguments TRL builds from dataset rows."""
    rows = range(len(dataset)) if rows is None else rows
    picked = [dataset[i] for i in rows]
    return {name: [row[name] for row in picked] for name in dataset.column_names if name != "prompt"}


def weighted_total(funcs, weights, completions, kwargs):
    values = [f(prompts=None, completions=completions, **kwargs) for f in funcs]
    return [
        sum(w * v[i] for w, v in zip(weights, values, strict=True) if v[i] is not None)
        for i in range(len(completions))
    ]


def interactive_return(env_id, env_kwargs, scenario_id, reply):
    """Sum of step rewards of an episode that calls the flat tools one by one, then answers ``reply``.

    In a multi-turn env (EmpatheticDialogue) the episode starts at the scenario's turn and
    ``reply`` is scored as that turn; the dialogue then goes on, which is not counted.
    """
    env = make_env(env_id, env_kwargs)
    env.reset(options={"scenario_id": scenario_id})
    total = 0.0
    for name, arguments in env.flat_tool_calls(env.scenario):
        call = json.dumps({"name": name, "arguments": arguments})
        _, reward, terminated, truncated, _ = env.step(f"<tool_call>{call}</tool_call>")
        total += reward
        assert not (terminated or truncated)
    _, reward, terminated, _, info = env.step(reply)
    scored = set(env.rubric.weights) <= set(info["reward_components"])
    assert terminated or scored, f"{reply!r} should be a scored answer"
    return total + reward


def answers(env, scenario):
    """Final answers to test with: the reference answer and the canaries that parse as answers."""
    texts = [env.reference_answer(scenario)[0]]
    for text, _ in env.canaries(scenario).values():
        if text and text.strip() and env.parse_final(text)[1] is None:
            texts.append(text)
    return texts


def test_flat_prompt_column_is_exactly_the_env_flat_prompt():
    dataset = to_dataset(TOY_ID, n=4, seed=3)
    env = make_env(TOY_ID, {"split": "train"})
    for row in dataset:
        assert row["prompt"] == env.flat_prompt(env.get_scenario(row["scenario_id"]))
        assert row["env_id"] == TOY_ID and json.loads(row["env_kwargs"]) == {"split": "train"}
        assert row["label"] == env.get_scenario(row["scenario_id"]).label


def test_balanced_interleaving_alternates_classes_and_oversampling_repeats_flagged_items():
    dataset = to_dataset(TOY_ID, n=12, seed=0)
    assert dataset["label"] == ["happy", "sad"] * 6
    from types import SimpleNamespace as S

    items = [S(id=f"x{i}", label="a" if i < 4 else "b", pivot=i in (0, 5)) for i in range(8)]
    order = training_order(items, balance=False, oversample={"pivot": 2}, seed=1)
    assert len(order) == 10 and sum(s.id == "x0" for s in order) == 2 and sum(s.id == "x5" for s in order) == 2


@pytest.mark.parametrize("rows_per_batch", [2, 4])
def test_grouped_rows_keep_both_deliveries_of_a_line_in_one_batch_despite_one_clip_lines(rows_per_batch):
    # v1's train split has lines spoken both ways and lines with one clip: without packing,
    # the first one-clip line shifts every later pair across a batch boundary.
    v1 = {"dataset": "embedded-sarcasm-v1"}
    env = make_env("affectgym/Sarcasm-v0", {"split": "train", **v1})
    sizes = {}
    for scenario in env.scenarios:
        sizes[env.split_group(scenario)] = sizes.get(env.split_group(scenario), 0) + 1
    assert {1, 2} <= set(sizes.values())
    dataset = to_dataset("affectgym/Sarcasm-v0", n=240, env_kwargs=v1, group_rows=True,
                         rows_per_batch=rows_per_batch)
    groups = [env.split_group(env.get_scenario(i)) for i in dataset["scenario_id"]]
    for start in range(0, len(groups), rows_per_batch):
        batch = groups[start:start + rows_per_batch]
        for group in set(batch):
            assert batch.count(group) == sizes[group], (start, batch)  # a line's clips never straddle batches
    pairs = [dataset["label"][i:i + 2] for i in range(0, 240, 2)]
    assert sum(sorted(pair) == ["sarcastic", "sincere"] for pair in pairs) >= 0.9 * len(pairs)


def test_rows_per_batch_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="rows_per_batch must be an integer >= 1, got 0"):
        training_order([object()], group_of=id, rows_per_batch=0)


def test_reward_functions_are_named_after_the_rubric_components_with_its_weights():
    funcs, weights = reward_functions(TOY_ID)
    env = make_env(TOY_ID, {"split": "train"})
    assert [f.__name__ for f in funcs] == list(env.rubric.weights)
    assert weights == list(env.rubric.weights.values())


def test_all_components_of_a_batch_share_one_scoring():
    dataset = to_dataset(TOY_ID, n=6)
    funcs, _ = reward_functions(TOY_ID)
    completions = [[{"role": "assistant", "content": "<answer>happy</answer>"}]] * 6
    for f in funcs:
        f(prompts=dataset["prompt"], completions=completions, **columns(dataset))
    assert funcs[0].scorer.batches_scored == 1 and funcs[0].scorer.calls == len(funcs)
    other = [[{"role": "assistant", "content": "<answer>sad</answer>"}]] * 6
    funcs[0](prompts=dataset["prompt"], completions=other, **columns(dataset))
    assert funcs[0].scorer.batches_scored == 2


def test_plain_text_and_conversational_completions_score_the_same():
    dataset = to_dataset(TOY_ID, n=4)
    funcs, weights = reward_functions(TOY_ID)
    replies = ["<answer>happy</answer>", "<answer>sad</answer>", "no answer", ""]
    plain = weighted_total(funcs, weights, replies, columns(dataset))
    chat = weighted_total(funcs, weights, [[{"role": "assistant", "content": r}] for r in replies], columns(dataset))
    assert plain == chat


def test_completion_text_reads_the_final_answer_after_tool_turns():
    completion = [
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "read_note"}}]},
        {"role": "tool", "name": "read_note", "content": "The sun came out."},
        {"role": "assistant", "content": "<answer>happy</answer>"},
    ]
    assert completion_text(completion) == "<answer>happy</answer>"
    assert completion_text(completion[:2]) is None


@pytest.mark.parametrize("env_id", [TOY_ID, *(pytest.param(i, marks=registered(i)) for i in REAL_IDS)])
def test_flattened_reward_equals_the_interactive_episode_return(env_id):
    env_kwargs = {"split": "train"}
    env = make_env(env_id, env_kwargs)
    funcs, weights = reward_functions(env_id, env_kwargs)
    scenario_ids = env.scenario_ids[:3]
    checked = 0
    for scenario_id in scenario_ids:
        scenario = env.get_scenario(scenario_id)
        for reply in answers(env, scenario):
            kwargs = {"scenario_id": [scenario_id], "env_id": [env_id], "env_kwargs": [json.dumps(env_kwargs)]}
            flat = weighted_total(funcs, weights, [[{"role": "assistant", "content": reply}]], kwargs)[0]
            assert flat == pytest.approx(interactive_return(env_id, env_kwargs, scenario_id, reply), abs=1e-9)
            checked += 1
    assert checked >= len(scenario_ids)


@pytest.mark.parametrize("env_id", [pytest.param(i, marks=registered(i)) for i in REAL_IDS])
def test_no_eval_scenario_enters_a_train_dataset(env_id):
    eval_ids = set(make_env(env_id, {"split": "eval"}).scenario_ids)
    assert eval_ids, f"{env_id} has an empty eval split"
    train_env = make_env(env_id, {"split": "train"})
    flags = {name for name, value in vars(train_env.scenarios[0]).items() if isinstance(value, bool)}
    train = to_dataset(env_id, split="train", n=3 * len(eval_ids) + 7, oversample=dict.fromkeys(flags, 2))
    assert set(train["scenario_id"]) & eval_ids == set()
    assert set(to_dataset(env_id, split="train")["scenario_id"]) & eval_ids == set()


class PeekingToyEnv(toy_env.ToyMoodEnv):
    """The toy env with a tool that takes arguments."""

    @tool
    def peek(self, words: int, style: Literal["plain", "upper"] = "plain") -> str:
        """Read the first words of the note.

        Args:
            words: How many words to read.
            style: How to print them.
        """
        text = " ".join(self.scenario.text.split()[:words])
        return text.upper() if style == "upper" else text


PEEK_ID = "affectgym-test/TrainPeekingToy-v0"
if PEEK_ID not in gym.registry:
    gym.register(id=PEEK_ID, entry_point=PeekingToyEnv)


def test_environment_adapter_tools_carry_the_env_tool_schemas():
    from transformers.utils import get_json_schema

    adapter = environment_factory(PEEK_ID)()
    env = make_env(PEEK_ID)
    for name, spec in env.tools.items():
        declared = spec.schema["function"]
        extracted = get_json_schema(getattr(adapter, name))["function"]
        assert extracted["name"] == declared["name"] and extracted["description"] == declared["description"]
        assert extracted["parameters"].get("required", []) == declared["parameters"]["required"]
        for param, prop in declared["parameters"]["properties"].items():
            assert extracted["parameters"]["properties"][param]["type"] == prop["type"]
            assert extracted["parameters"]["properties"][param]["description"] == prop["description"]
            assert extracted["parameters"]["properties"][param].get("enum") == prop.get("enum")
    public = [n for n, _ in inspect.getmembers(type(adapter), predicate=inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == sorted([*env.tools, "reset", "get_reward"])  # TRL makes every other one a tool
    assert adapter.reset(scenario_id="n02", prompt=[]) is None
    assert adapter.read_note() == "The train left without me again."
    assert adapter.peek(words=2, style="upper") == "THE TRAIN"
    assert [e["name"] for e in adapter.trace] == ["read_note", "peek"]


@pytest.mark.parametrize("env_id", [TOY_ID, *(pytest.param(i, marks=registered(i)) for i in REAL_IDS)])
def test_adapter_episode_scores_like_the_interactive_env(env_id):
    """Multi-turn path: tools through the adapter, the final answer through the reward functions."""
    env_kwargs = {"split": "train"}
    env = make_env(env_id, env_kwargs)
    scenario_id = env.scenario_ids[0]
    reply = env.reference_answer(env.get_scenario(scenario_id))[0]
    adapter = environment_factory(env_id, env_kwargs)()
    adapter.reset(scenario_id=scenario_id)
    for name, arguments in env.flat_tool_calls(env.get_scenario(scenario_id)):
        getattr(adapter, name)(**arguments)
    funcs, weights = reward_functions(env_id, env_kwargs)
    kwargs = {"scenario_id": [scenario_id], "env_id": [env_id], "env_kwargs": [json.dumps(env_kwargs)]}
    completion = [[{"role": "assistant", "content": reply}]]
    components = weighted_total(funcs, weights, completion, {**kwargs, "environments": [adapter]})[0]
    expected = interactive_return(env_id, env_kwargs, scenario_id, reply)
    assert adapter.get_reward() == pytest.approx(expected, abs=1e-9)
    assert components == pytest.approx(expected, abs=1e-9)
    assert sum(adapter.step_rewards) == pytest.approx(expected, abs=1e-9)


def test_adapter_with_an_invalid_tool_argument_pays_the_env_penalty():
    adapter = environment_factory(TOY_ID)()
    adapter.reset(scenario_id="n01")
    output = adapter._call_tool("read_note", {"x": 1})
    assert output.startswith("Error")
    assert adapter.step_rewards == [pytest.approx(-0.05)]


SINGLE_ANSWER_IDS = [i for i in REAL_IDS if i != "affectgym/EmpatheticDialogue-v0"]


@pytest.mark.parametrize("env_id", [TOY_ID, *(pytest.param(i, marks=registered(i)) for i in SINGLE_ANSWER_IDS)])
def test_flat_episode_wrapper_shows_the_flat_prompt_and_returns_the_episode_score(env_id):
    from affectgym.train.flatten import flat_episode_env

    env = flat_episode_env(affectgym.make(env_id, split="train"))
    base = env.unwrapped
    scenario_id = base.scenario_ids[0]
    observation, info = env.reset(seed=0, options={"scenario_id": scenario_id})
    assert info["messages"] == base.flat_prompt(base.get_scenario(scenario_id)) and info["tools"] == []
    reply = base.reference_answer(base.get_scenario(scenario_id))[0]
    _, reward, terminated, _, info = env.step(reply)
    assert terminated
    assert reward == pytest.approx(interactive_return(env_id, {"split": "train"}, scenario_id, reply), abs=1e-9)
    assert info["messages"][-1] == {"role": "assistant", "content": reply}


def test_a_sample_whose_judging_failed_gets_no_reward_from_any_function_and_the_batch_logs_the_count():
    """TRL 1.16 sums the reward functions with nansum: a None judge alone would score the sample as if the judge said 0."""
    import functools

    from judge_answers import format_judge_reply
    from openai_server import OpenAIServer, Reply, last_user_text

    from affectgym.envs.emotion_style import EmotionStyleEnv
    from affectgym.rewards.judge import JudgeConfig

    def judge_server(request):
        return Reply(status=500) if "JUDGE-DOWN" in last_user_text(request) else format_judge_reply()

    with OpenAIServer(judge_server) as server:
        env_id = f"affectgym-test/StyleJudgeDown{server.url.rsplit(':', 1)[1].split('/')[0]}-v0"
        gym.register(id=env_id, entry_point=functools.partial(
            EmotionStyleEnv, classifier=lambda texts: [{"anger": 1.0} for _ in texts], judge_url=server.url,
            judge_model="judge-model", judge_config=JudgeConfig(cache=False, max_retries=0),
        ))
        env = make_env(env_id, {"split": "train"})
        scenario_id = next(s.id for s in env.scenarios if s.emotion == "anger")
        funcs, weights = reward_functions(env_id)
        replies = ["Red. Again. The job interview panel kept me waiting for an hour.",
                   "Red. Again. JUDGE-DOWN. The job interview panel kept me waiting for an hour.",
                   "Move it, now! The job interview panel kept me waiting for an hour."]
        logged = []
        kwargs = {"scenario_id": [scenario_id] * 3, "log_metric": lambda name, value: logged.append((name, value))}
        values = {f.__name__: f(prompts=None, completions=replies, **kwargs) for f in funcs}
        assert all(column[1] is None for column in values.values()), values
        assert values["judge"][0] == values["judge"][2] == 1.0 and values["emotion"][0] == 1.0
        assert logged.count(("judge/failures", 1.0)) == 1  # one scoring per batch, shared by every function

        adapters = [environment_factory(env_id)() for _ in replies]
        for adapter in adapters:
            adapter.reset(scenario_id=scenario_id)
        completions = [[{"role": "assistant", "content": reply}] for reply in replies]
        funcs[0](prompts=None, completions=completions, environments=adapters, scenario_id=[scenario_id] * 3)
        assert adapters[1].get_reward() is None and adapters[1].judge_failed
        flat_totals = weighted_total(funcs, weights, replies, {"scenario_id": [scenario_id] * 3})
        assert adapters[0].get_reward() == pytest.approx(flat_totals[0]) and adapters[2].get_reward() == pytest.approx(flat_totals[2])
