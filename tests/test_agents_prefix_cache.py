"""A local agent reads each turn's new tokens only: prompts extend each other, and the cache changes no reply."""

from __future__ import annotations

import threading

import pytest
from tiny_models import tiny_causal_lm

import affectgym
from affectgym.agents.base import raw_text_messages
from affectgym.agents.prefix_cache import PrefixCache, common_prefix_length
from affectgym.agents.transformers_agent import TransformersAgent

TEXT_ENVS = [env_id for env_id in affectgym.list_envs() if env_id != "affectgym/EmotionState-v0"]  # the numeric one has no chat
REPLIES = ("Let me think about this first.", '<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>', "Hmm.")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny"), architecture="llama")


@pytest.fixture(scope="module", params=["tiny ChatML", "SmolLM2-135M"])
def tokenizer(request, tiny_model):
    from transformers import AutoTokenizer

    if request.param == "tiny ChatML":
        return AutoTokenizer.from_pretrained(tiny_model)
    from affectgym.models import resolve_model

    try:
        return AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    except FileNotFoundError as missing:
        pytest.skip(f"the embedded SmolLM2 is not installed: {missing}")


def prompt_ids(tokenizer, info) -> list[int]:
    tools = list(info.get("tools") or []) or None
    rendered = tokenizer.apply_chat_template(raw_text_messages(info["messages"]), tools=tools, add_generation_prompt=True,
                                             tokenize=True)
    return rendered["input_ids"]


@pytest.mark.parametrize("env_id", TEXT_ENVS)
def test_each_turns_prompt_starts_with_the_previous_prompt_its_reply_and_end_of_turn(env_id, tokenizer):
    env = affectgym.make(env_id, classifier="nade") if "EmotionStyle" in env_id else affectgym.make(env_id)
    _, info = env.reset(seed=0)
    previous, turns = prompt_ids(tokenizer, info), 0
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for reply in REPLIES:
        _, _, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            break
        current = prompt_ids(tokenizer, info)
        played = previous + tokenizer(reply, add_special_tokens=False)["input_ids"] + [end_of_turn]
        assert current[:len(played)] == played
        previous, turns = current, turns + 1
    assert turns >= 1 or env_id == "affectgym/EmotionStyle-v0"  # one message ends an EmotionStyle episode


def play(agent: TransformersAgent, env_id: str, seeds: range, max_turns: int = 4) -> list[list[str]]:
    """Each episode's actions, played one episode at a time."""
    episodes = []
    for seed in seeds:
        env = affectgym.make(env_id, split="eval", max_turns=max_turns)
        observation, info = env.reset(seed=seed)
        actions, done = [], False
        while not done:
            actions.append(agent.act(observation, info))
            observation, _, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        episodes.append(actions)
    return episodes


def test_greedy_replies_are_the_same_with_and_without_the_prefix_cache_on_ten_episodes(tiny_model):
    cached = TransformersAgent(str(tiny_model), max_new_tokens=12)
    uncached = TransformersAgent(str(tiny_model), max_new_tokens=12, prefix_cache=0)
    with_cache = play(cached, "affectgym/Sarcasm-v0", range(10))
    assert with_cache == play(uncached, "affectgym/Sarcasm-v0", range(10))
    assert sum(len(actions) for actions in with_cache) >= 30  # multi-turn: most episodes reach the turn limit
    stats = cached.prefix_cache
    assert stats.reused_tokens > 3 * stats.prefilled_tokens  # most prompt tokens came from a cache
    cached.close()
    uncached.close()


def test_concurrent_episodes_through_the_batcher_reply_as_one_at_a_time(tiny_model):
    agent = TransformersAgent(str(tiny_model), max_new_tokens=12, max_batch_size=4, batch_wait_s=0.2)
    alone = TransformersAgent(str(tiny_model), max_new_tokens=12)
    together: dict[int, list[str]] = {}
    workers = [threading.Thread(target=lambda seed=seed: together.update(
        {seed: play(agent.for_worker(), "affectgym/Sarcasm-v0", range(seed, seed + 1))[0]})) for seed in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [together[seed] for seed in range(4)] == play(alone, "affectgym/Sarcasm-v0", range(4))
    assert max(agent.batcher.batch_sizes) > 1
    agent.close()
    alone.close()


def caches_of(model, tokenizer, texts):
    """``(ids, cache)`` of each text: a real DynamicCache of the tiny model's forward pass."""
    import torch
    from transformers import DynamicCache

    pairs = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        cache = DynamicCache(config=model.config)
        with torch.inference_mode():
            model(input_ids=torch.tensor([ids]), cache=cache)
        pairs.append((ids, cache))
    return pairs


def test_a_prompt_extending_an_entry_takes_it_whole_and_one_sharing_a_part_gets_a_cropped_copy(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    [(ids, cache)] = caches_of(model, tokenizer, ["The train left without me again. Nobody came"])
    prefix = PrefixCache(max_entries=2)
    prefix.put(ids, cache)
    sharing = ids[:5] + [ids[5] + 1, 7, 8]
    copied = prefix.take(sharing)
    assert copied is not cache and copied.get_seq_length() == 5 and len(prefix.entries) == 1
    assert cache.get_seq_length() == len(ids)  # the entry is left whole for its owner
    assert prefix.take(ids + [3, 4]) is cache and not prefix.entries
    assert prefix.take([9, 9, 9]) is None
    assert (prefix.reused_tokens, prefix.prefilled_tokens) == (5 + len(ids), 3 + 2 + 3)


def test_the_least_recently_used_cache_is_dropped_past_max_entries(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    prefix = PrefixCache(max_entries=2)
    pairs = caches_of(model, tokenizer, ["Hello, how are you today?", "The sun came out", "I found the letter."])
    for ids, cache in pairs:
        prefix.put(ids, cache)
    assert [list(key) for key in prefix.entries] == [pairs[1][0], pairs[2][0]]


def test_a_prompt_of_one_token_or_a_cache_covering_it_all_still_leaves_one_token_to_read(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    [(ids, cache)] = caches_of(model, tokenizer, ["Hello, how are you today?"])
    prefix = PrefixCache()
    prefix.put(ids, cache)
    taken = prefix.take(ids)  # the same prompt again: all but its last token come from the cache
    assert taken.get_seq_length() == len(ids) - 1 and common_prefix_length(ids, ids) == len(ids)


@pytest.mark.parametrize("bad", [-1, 2.5, True])
def test_a_bad_prefix_cache_size_is_refused_naming_what_is_accepted(tiny_model, bad):
    with pytest.raises(ValueError, match="prefix_cache must be a whole number of caches >= 0"):
        TransformersAgent(str(tiny_model), prefix_cache=bad)
