"""The supervised warm start: demonstrations from eval results and references, assistant-only loss."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tiny_models import tiny_causal_lm

import affectgym
from affectgym.agents.base import raw_text_messages
from affectgym.agents.protocol import protocol_tool_message
from affectgym.eval import EvalConfig, run_eval
from affectgym.train.config import TrainConfig
from affectgym.train.demos import DemonstrationError, assistant_token_mask, episode_demonstrations
from affectgym.train.sft import train_sft

ENV_ID = "affectgym/Sarcasm-v0"
FORM = {"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label", "max_turns": 3}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    run_eval(EvalConfig(env_id=ENV_ID, agent="protocol", out=out, split="train", n=8, env_kwargs=FORM, progress=False))
    return out


def protocol_episode() -> tuple[list[dict], list[dict]]:
    env = affectgym.make(ENV_ID, split="train", **FORM)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(protocol_tool_message(env.unwrapped, env.unwrapped.scenario))
    _, _, _, _, info = env.step("Yes")
    return raw_text_messages(info["messages"]), info["tools"]


def smollm2_tokenizer():
    pytest.importorskip("gguf")
    from transformers import AutoTokenizer

    from affectgym.models import resolve_model

    try:
        return AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    except (FileNotFoundError, ImportError) as exc:
        pytest.skip(str(exc))


def test_assistant_only_mask_on_the_smollm2_tokenizer_covers_each_assistant_turn_and_its_end():
    tokenizer = smollm2_tokenizer()
    messages, tools = protocol_episode()
    ids, mask = assistant_token_mask(tokenizer, messages, tools)
    trained = tokenizer.decode([token for token, keep in zip(ids, mask, strict=True) if keep])
    calls = next(m["content"] for m in messages if m["role"] == "assistant")
    assert trained == calls + "<|im_end|>" + "Yes" + "<|im_end|>"
    # masked: the system prompt with the tool schemas, the observation and both tool results
    masked = tokenizer.decode([token for token, keep in zip(ids, mask, strict=True) if not keep])
    assert "get_prosody_features" in masked and "<tool_response>" in masked and "Delivery vs" in masked
    # the tokens before the answer are the prompt the agent's answer turn is generated from
    prompt = tokenizer.apply_chat_template(messages[:-1], tools=tools, add_generation_prompt=True, tokenize=True,
                                           return_dict=True)["input_ids"]
    assert ids[: len(prompt)] == list(prompt) and mask[len(prompt) - 1] == 0 and mask[len(prompt)] == 1


def test_chat_prompt_form_is_the_agents_answer_turn_token_for_token(tiny_model):
    from transformers import AutoTokenizer

    from affectgym.models import CHATML_TOOL_TEMPLATE
    from affectgym.train.flatten import to_dataset
    from affectgym.train.grpo import chat_text_prompts

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = CHATML_TOOL_TEMPLATE
    dataset = to_dataset(ENV_ID, "train", n=2, env_kwargs=FORM, prompt_form="chat")
    row = dataset[0]
    env = affectgym.make(ENV_ID, split="train", **FORM)
    _, info = env.reset(options={"scenario_id": row["scenario_id"]})
    _, _, _, _, info = env.step(protocol_tool_message(env.unwrapped, env.unwrapped.scenario))
    agent_prompt = tokenizer.apply_chat_template(raw_text_messages(info["messages"]), tools=info["tools"],
                                                 add_generation_prompt=True, tokenize=False)
    assert chat_text_prompts(dataset, tokenizer)[0]["prompt"] == agent_prompt
    assert json.loads(row["tools"]) == info["tools"]


def test_sft_on_protocol_demos_then_affectgym_eval_with_the_adapter_reports_the_runs_own_accuracy(tiny_model, demos, tmp_path):
    config = TrainConfig(
        env_id=ENV_ID, algo="sft", model=str(tiny_model), demos=[str(demos)], max_steps=2, batch_size=2,
        learning_rate=1e-3, lora_r=4, eval_episodes=3, eval_max_new_tokens=12, env_kwargs=FORM,
        output_dir=str(tmp_path / "sft"),
    )
    summary = train_sft(config)
    run = tmp_path / "sft"
    assert summary["demonstrations"]["kept"] == 8 and summary["steps"] == 2
    for name in ("config.yaml", "log_history.json", "demonstrations.jsonl", "figures/sft_loss.png", "adapter/adapter_config.json"):
        assert (run / name).is_file(), name
    comparison = json.loads((run / "eval" / "comparison.json").read_text())
    assert comparison["decoding"] == {"greedy": True, "max_new_tokens": 12, "multi_step": True}
    trained = json.loads((run / "eval" / "trained" / "summary.json").read_text())
    out = tmp_path / "cli"
    command = [
        sys.executable, "-m", "affectgym.cli", "eval", ENV_ID, "--agent", f"hf:{tiny_model}", "--adapter",
        str(run / "adapter"), "--split", "eval", "-n", "3", "-t", "12", "--seed", "0", "-c", "8",
        "--env-kwargs", json.dumps(FORM), "--out", str(out), "--no-progress",
    ]
    subprocess.run(command, check=True, capture_output=True, text=True)
    from_train = [sys.executable, "-m", "affectgym.cli", "eval", "--from-train", str(run), "-c", "8", "--no-progress"]
    subprocess.run(from_train, check=True, capture_output=True, text=True)
    for replay in (out, run / "eval-replay"):  # the recorded command, and the run's own options read back
        replayed = json.loads((replay / "summary.json").read_text())
        assert replayed["classification"]["accuracy"] == trained["classification"]["accuracy"]
        assert replayed["reward"]["mean"] == pytest.approx(trained["reward"]["mean"])
        assert replayed["tool_use"] == trained["tool_use"]


def test_sft_learns_the_references_of_the_dialogue_env(tiny_model, tmp_path):
    config = TrainConfig(
        env_id="affectgym/EmpatheticDialogue-v0", algo="sft", model=str(tiny_model), references=True, max_steps=1,
        batch_size=2, lora_r=4, eval_episodes=0, output_dir=str(tmp_path / "refs"),
    )
    summary = train_sft(config)
    rows = [json.loads(line) for line in (tmp_path / "refs" / "demonstrations.jsonl").read_text().splitlines()]
    assert summary["demonstrations"]["references"] == len(rows) > 0
    assert rows[0]["messages"][-1]["role"] == "assistant" and rows[0]["messages"][-1]["content"].startswith("(")


def test_demonstrations_of_a_held_out_split_are_refused(tmp_path):
    out = tmp_path / "eval-demos"
    run_eval(EvalConfig(env_id=ENV_ID, agent="protocol", out=out, split="eval", n=2, env_kwargs=FORM, progress=False))
    with pytest.raises(DemonstrationError, match="must come from the train split"):
        episode_demonstrations([out], ENV_ID)
    with pytest.raises(DemonstrationError, match="no results.jsonl"):
        episode_demonstrations([tmp_path / "nowhere"], ENV_ID)


def test_demonstrations_filter_by_reward_and_correctness(demos):
    everything, counts = episode_demonstrations([demos], ENV_ID)
    correct, correct_counts = episode_demonstrations([demos], ENV_ID, correct_only=True)
    assert counts["kept"] == 8 and correct_counts["kept"] + correct_counts["incorrect"] == 8
    rewarded, reward_counts = episode_demonstrations([demos], ENV_ID, min_reward=0.5)
    assert reward_counts["kept"] == correct_counts["kept"]  # right answers earn 0.75, wrong ones -0.65


def test_sft_config_needs_demonstrations_and_refuses_grpo_options():
    with pytest.raises(ValueError, match="needs demonstrations"):
        TrainConfig(env_id=ENV_ID, algo="sft")
    with pytest.raises(ValueError, match="--num-generations"):
        TrainConfig(env_id=ENV_ID, algo="sft", references=True, num_generations=8)


def test_transfer_recipes_keep_training_the_warm_start_adapter_flat_and_multi_turn(tiny_model, demos, tmp_path):
    from affectgym.train.grpo import train
    from affectgym.train.recipes import (
        sarcasm_chat_grpo_config,
        sarcasm_multiturn_grpo_config,
        sarcasm_protocol_sft_config,
    )

    small = {"model": str(tiny_model), "max_steps": 1}
    sft = train_sft(sarcasm_protocol_sft_config(tmp_path / "sft", [str(demos)], **small))
    flat = train(sarcasm_chat_grpo_config(tmp_path / "flat", sft["adapter_dir"], num_generations=4, batch_size=8,
                                          eval_every_steps=1, **small))
    curve = [json.loads(line) for line in (tmp_path / "flat" / "heldout.jsonl").read_text().splitlines()]
    assert [row["step"] for row in curve] == [0, 1] and len(curve[-1]["replies"]) == curve[-1]["episodes"]
    multiturn = train(sarcasm_multiturn_grpo_config(tmp_path / "multiturn", sft["adapter_dir"], **small))
    for summary in (flat, multiturn):
        adapter = json.loads((tmp_path / summary["output_dir"] / "adapter" / "adapter_config.json").read_text())
        assert adapter["r"] == 16 and adapter["layers_to_transform"] == [0, 1]  # the warm start's own adapter


def test_grpo_with_a_kl_term_from_a_warm_start_is_anchored_to_the_warm_start_not_the_base_model(tiny_model, demos, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from affectgym.train.grpo import train
    from affectgym.train.recipes import sarcasm_chat_grpo_config, sarcasm_protocol_sft_config

    # A warm start far from the base model (large steps), so a base-model reference would show.
    sft = train_sft(sarcasm_protocol_sft_config(tmp_path / "sft", [str(demos)], model=str(tiny_model), max_steps=3,
                                                learning_rate=0.05, lora_dropout=0.0))
    warm = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(tiny_model)), sft["adapter_dir"]).eval()
    tokens = torch.arange(1, 17).unsqueeze(0)
    with torch.no_grad(), warm.disable_adapter():
        base_logits = warm(tokens).logits
    with torch.no_grad():
        assert (warm(tokens).logits - base_logits).abs().max() > 0.1

    train(sarcasm_chat_grpo_config(tmp_path / "grpo", sft["adapter_dir"], model=str(tiny_model), max_steps=1,
                                   num_generations=4, batch_size=8, beta=0.1, lora_dropout=0.0, eval_episodes=0))
    history = json.loads((tmp_path / "grpo" / "log_history.json").read_text(encoding="utf-8"))
    # With the base model as the reference this first step's KL is 0.033 (measured by forcing TRL to disable the adapters).
    assert next(row["kl"] for row in history if "kl" in row) == pytest.approx(0.0, abs=1e-6)
