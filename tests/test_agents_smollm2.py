"""The embedded SmolLM2-135M-Instruct: GGUF -> fp32 safetensors once, then offline loads (slow)."""

from __future__ import annotations

import pytest
from toy_env import ToyMoodEnv

pytest.importorskip("gguf")


@pytest.mark.slow
def test_smollm2_alias_converts_once_loads_offline_and_replies(monkeypatch):
    from affectgym.agents.registry import make_agent
    from affectgym.cache_root import cache_root
    from affectgym.models import smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    agent = make_agent("smollm2-135m", max_new_tokens=24)
    folder = cache_root() / "models" / "smollm2-135m"
    assert (folder / "model.safetensors").is_file() and "quantization_config" not in (folder / "config.json").read_text()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".smollm2")]  # no staging left
    env = ToyMoodEnv()
    observation, info = env.reset(options={"scenario_id": "n01"})
    prompt = agent.prompt(info)
    assert "<tools>" in prompt and "read_note" in prompt and "<|im_start|>assistant\n" in prompt
    reply = agent.act(observation, info)
    assert isinstance(reply, str) and reply.strip()
    agent.close()
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    again = make_agent("smollm2-135m", max_new_tokens=4)  # loads from the cache, no second conversion
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    again.close()
