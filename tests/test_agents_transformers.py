"""TransformersAgent: chat template with tools, batched generation, tool-call round trip."""

from __future__ import annotations

import threading

import pytest
from tiny_models import teach_tiny_lm, tiny_causal_lm
from toy_env import ToyMoodEnv

from affectgym.agents.base import Agent
from affectgym.agents.transformers_agent import GenerationBatcher, TransformersAgent

READ_NOTE = '<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'


@pytest.fixture(scope="module")
def taught_model(tmp_path_factory):
    """A tiny model taught to call read_note first and to answer happy after the tool output."""
    env = ToyMoodEnv()
    _, info = env.reset(options={"scenario_id": "n01"})
    first = info["messages"]
    _, _, _, _, info = env.step(READ_NOTE)
    after_tool = info["messages"]
    directory = tiny_causal_lm(tmp_path_factory.mktemp("tiny"))
    return teach_tiny_lm(directory, [(first, READ_NOTE), (after_tool, "<answer>happy</answer>")], tools=info["tools"])


def test_loading_the_model_prints_no_library_progress_bar(taught_model, capfd):
    capfd.readouterr()
    TransformersAgent(str(taught_model), max_new_tokens=4).close()
    assert "Loading weights" not in capfd.readouterr().err


def test_prompt_renders_the_env_tools_and_the_raw_tool_call_turn(taught_model):
    agent = TransformersAgent(str(taught_model), max_new_tokens=4)
    env = ToyMoodEnv()
    _, info = env.reset(options={"scenario_id": "n02"})
    _, _, _, _, info = env.step(READ_NOTE)
    prompt = agent.prompt(info)
    assert '"name": "read_note"' in prompt and "<tools>" in prompt
    assert prompt.count("<tool_call>{") == 1  # the raw turn, not rendered twice
    assert "<tool_response>\nThe train left without me again.\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    agent.close()


def test_tiny_model_calls_the_tool_then_answers_through_the_env(taught_model):
    agent = TransformersAgent(str(taught_model), max_new_tokens=40)
    env = ToyMoodEnv()
    observation, info = env.reset(options={"scenario_id": "n01"})
    actions = []
    done = False
    while not done:
        action = agent.act(observation, info)
        actions.append(action)
        observation, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    agent.close()
    assert actions == [READ_NOTE, "<answer>happy</answer>"]
    assert terminated and info["episode_reward"] == pytest.approx(1.0)


def test_concurrent_requests_without_the_prefix_cache_share_one_generate_call(taught_model):
    agent = TransformersAgent(str(taught_model), max_new_tokens=40, max_batch_size=4, batch_wait_s=0.5, prefix_cache=0)
    env = ToyMoodEnv()
    _, info = env.reset(options={"scenario_id": "n03"})
    replies: list[str] = []
    workers = [threading.Thread(target=lambda: replies.append(agent.for_worker().act("", info))) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    agent.close()
    assert replies == [READ_NOTE] * 4
    assert agent.batcher.batch_sizes == [4]


def test_tokens_generated_counts_every_workers_reply_up_to_its_end_of_turn(taught_model):
    agent = TransformersAgent(str(taught_model), max_new_tokens=40)
    env = ToyMoodEnv()
    _, info = env.reset(options={"scenario_id": "n03"})
    assert agent.tokens_generated() == 0
    replies = [agent.for_worker().act("", info) for _ in range(2)]
    agent.close()
    reply_tokens = len(agent.tokenizer(READ_NOTE, add_special_tokens=False)["input_ids"]) + 1  # and <|im_end|>
    assert replies == [READ_NOTE] * 2 and agent.tokens_generated() == 2 * reply_tokens


def test_left_padded_batch_gives_the_same_replies_as_one_at_a_time(taught_model):
    agent = TransformersAgent(str(taught_model), max_new_tokens=40, prefix_cache=0)
    env = ToyMoodEnv()
    _, first = env.reset(options={"scenario_id": "n01"})
    _, _, _, _, second = env.step(READ_NOTE)
    prompts = [agent.prompt(first), agent.prompt(second)]
    assert agent.generate_batch(prompts) == [agent.generate_batch([p])[0] for p in prompts]
    agent.close()


def test_lora_adapter_is_applied(taught_model, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(taught_model)
    peft_model = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    plain = TransformersAgent(str(taught_model), max_new_tokens=3)
    adapted = TransformersAgent(str(taught_model), adapter=str(tmp_path / "adapter"), max_new_tokens=3)
    weight = "model.layers.0.self_attn.q_proj.weight"
    assert not plain.model.state_dict()[weight].equal(adapted.model.state_dict()[weight])
    assert adapted.describe()["adapter"] == str(tmp_path / "adapter")
    plain.close()
    adapted.close()


def test_batcher_hands_a_generation_error_to_the_caller():
    def broken(prompts):
        raise RuntimeError("out of memory")

    batcher = GenerationBatcher(broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        batcher.submit("x")
    batcher.close()


def test_agent_base_play_loops_until_the_episode_ends():
    class Reader(Agent):
        def act(self, observation, info):
            return READ_NOTE if len(info["messages"]) == 2 else "<answer>sad</answer>"

    env = ToyMoodEnv()
    observation, info = env.reset(options={"scenario_id": "n02"})
    Reader().play(env.step, observation, info)
    assert env.unwrapped._done
