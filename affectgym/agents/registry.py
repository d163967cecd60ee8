"""Make an agent from a short spec string, as ``affectgym eval --agent SPEC`` does.

Accepted specs:

* a registered name: ``register_agent(name, factory)`` (the sarcasm baselines register
  ``majority``, ``random``, ``prosody-rule``, ``probe``...), or a model alias of
  :mod:`affectgym.models` such as ``smollm2-135m`` (a :class:`TransformersAgent`);
* ``hf:<folder or hub id>``: a :class:`TransformersAgent`;
* ``openai:<model>@<base_url>`` (``@<base_url>`` optional: ``$OPENAI_BASE_URL`` or OpenAI's):
  an :class:`OpenAIAgent`;
* ``dspy:<model>@<base_url>``: a :class:`DSPyAgent` over an OpenAI-compatible endpoint, or
  ``dspy:<litellm model>`` (e.g. ``dspy:openrouter/meta-llama/llama-3.1-8b-instruct``);
* ``sb3:<path/model.zip>``: a Stable-Baselines3 model for a numeric env
  (:class:`~affectgym.agents.policies.SB3Policy`), e.g. ``sb3:runs/es/model.zip``.

``baseline`` is the LLM-free agent the env recommends (``recommended_baseline`` of its class).

Packages can add names through the entry-point group ``affectgym.agents`` (an entry point
names a callable that calls :func:`register_agent`).

>>> register_agent("always-sad", lambda **kw: FunctionAgent(lambda o, i: "<answer>sad</answer>", name="always-sad"))
>>> make_agent("always-sad").act("", {})
'<answer>sad</answer>'
>>> parse_endpoint_spec("Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1")
('Qwen/Qwen2.5-7B-Instruct', 'http://127.0.0.1:8000/v1')
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from importlib import metadata
from typing import Any

from affectgym.agents.base import Agent, FunctionAgent

logger = logging.getLogger(__name__)

PLUGIN_GROUP = "affectgym.agents"
#: Modules imported once before a lookup, so that their ``register_agent`` calls have run.
BUILTIN_AGENT_MODULES = ("affectgym.agents.baselines",)

AgentFactory = Callable[..., Agent]
_REGISTRY: dict[str, AgentFactory] = {}
_CLASSES: dict[str, type[Agent]] = {}
_loaded = False

#: How :func:`check_agent_supports` says what an env kind is.
ENV_KIND_WORDS = {
    "text": "text observations and actions",
    "numeric": "Box observations and actions",
}

ACCEPTED_FORMS = (
    "a registered name ({names}), "
    "hf:<local folder or hub id>, "
    "openai:<model>@<base_url>, "
    "dspy:<model>@<base_url> or dspy:<litellm model>, "
    "sb3:<path/model.zip> (numeric envs)"
)


def register_agent(name: str, factory: AgentFactory, *, agent_class: type[Agent] | None = None) -> None:
    """Register ``factory(env_id=, env_kwargs=, **kwargs) -> Agent`` under ``name`` (replacing any earlier one).

    Args:
        name: The spec that selects it, e.g. ``"majority"``; no ``:`` allowed.
        factory: Builds the agent; receives ``env_id`` and ``env_kwargs`` (the env the agent
            will play, or ``None``) and the keyword arguments given to :func:`make_agent`.
        agent_class: The class the factory builds, whose ``env_kinds`` and ``env_problem``
            :func:`check_agent_supports` reads before the agent is built; default ``factory``
            itself when it is an :class:`Agent` subclass. Without one, nothing is checked.
    """
    if not name or ":" in name:
        raise ValueError(f"agent names must be non-empty and contain no ':', got {name!r}")
    _REGISTRY[name] = factory
    if agent_class is None and isinstance(factory, type) and issubclass(factory, Agent):
        agent_class = factory
    if agent_class is None:
        _CLASSES.pop(name, None)
    else:
        _CLASSES[name] = agent_class


def registered_agents() -> list[str]:
    """Names :func:`make_agent` accepts (registered agents and model aliases), sorted."""
    from affectgym.models import model_aliases

    _load_builtin()
    return sorted(set(_REGISTRY) | set(model_aliases()))


def make_agent(
    spec: str, *, env_id: str | None = None, env_kwargs: dict[str, Any] | None = None, **kwargs: Any
) -> Agent:
    """Build the agent that ``spec`` names (see the module docstring for the forms).

    Args:
        spec: The agent spec.
        env_id: The env the agent will play; registered factories receive it (baselines fit
            themselves on that env's train split), model-backed agents ignore it.
        env_kwargs: The env's keyword arguments, passed along with ``env_id``.
        kwargs: Passed to the agent's constructor or factory (e.g. ``adapter=``,
            ``temperature=``, ``max_concurrency=``).

    Raises:
        ValueError: The spec matches no accepted form; the message lists them.
    """
    from affectgym.models import model_aliases

    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}; accepted: {_accepted()}")
    spec = spec.strip()
    _load_builtin()
    if spec in _REGISTRY:
        return _REGISTRY[spec](env_id=env_id, env_kwargs=env_kwargs, **kwargs)
    if spec in model_aliases():
        from affectgym.agents.transformers_agent import TransformersAgent

        return TransformersAgent(spec, **kwargs)
    kind, _, rest = spec.partition(":")
    if rest:
        if kind == "hf":
            from affectgym.agents.transformers_agent import TransformersAgent

            return TransformersAgent(rest, **kwargs)
        if kind == "openai":
            from affectgym.agents.openai_agent import OpenAIAgent

            model, base_url = parse_endpoint_spec(rest)
            return OpenAIAgent(model, base_url=base_url, **kwargs)
        if kind == "dspy":
            from affectgym.agents.dspy_agent import DSPyAgent

            model, base_url = parse_endpoint_spec(rest)
            return DSPyAgent(model, base_url=base_url, **kwargs)
        if kind == "sb3":
            from affectgym.agents.policies import SB3Policy

            return SB3Policy(rest, **kwargs)
    raise ValueError(f"unknown agent spec {spec!r}; accepted: {_accepted()}")


def agent_class(spec: str) -> type[Agent] | None:
    """The class ``spec`` builds, known without building it (``None`` when not declared).

    >>> agent_class("openai:gpt-4o-mini").__name__, agent_class("hf:./my-model").__name__
    ('OpenAIAgent', 'TransformersAgent')
    """
    from affectgym.models import model_aliases

    spec = spec.strip()
    _load_builtin()
    if spec in _REGISTRY:
        return _CLASSES.get(spec)
    kind, _, rest = spec.partition(":")
    if spec in model_aliases() or (kind == "hf" and rest):
        from affectgym.agents.transformers_agent import TransformersAgent

        return TransformersAgent
    if kind == "openai" and rest:
        from affectgym.agents.openai_agent import OpenAIAgent

        return OpenAIAgent
    if kind == "dspy" and rest:
        from affectgym.agents.dspy_agent import DSPyAgent

        return DSPyAgent
    if kind == "sb3" and rest:
        from affectgym.agents.policies import SB3Policy

        return SB3Policy
    return None


def agent_env_problem(spec: str, env: Any) -> str | None:
    """Why the agent ``spec`` names cannot play ``env``, or ``None`` (also when its class is not declared).

    Reads the class's ``env_kinds`` against :func:`~affectgym.envs.spaces.env_kind`, then
    its ``env_problem(env)``; nothing is built or played.
    """
    from affectgym.envs.spaces import env_kind

    cls = agent_class(spec)
    if cls is None:
        return None
    kind = env_kind(env)
    if kind not in cls.env_kinds:
        return f"it plays {' or '.join(cls.env_kinds)} envs and this env is {kind} ({ENV_KIND_WORDS.get(kind, 'neither text nor Box spaces')})"
    return cls.env_problem(env.unwrapped)


def check_agent_supports(spec: str, env: Any, env_id: str | None = None) -> None:
    """Fail at once, in one line, when the agent ``spec`` names cannot play ``env``.

    Args:
        spec: An agent spec for :func:`make_agent`.
        env: The env it would play (an instance, wrapped or not).
        env_id: Its id in the message; default ``env.spec.id``.

    Raises:
        ValueError: Names the agent, what it needs and the agents that can play the env.
    """
    problem = agent_env_problem(spec, env)
    if problem is None:
        return
    env_id = env_id or (env.spec.id if env.spec else type(env.unwrapped).__name__)
    able = [name for name in registered_agents() if agent_class(name) is not None and agent_env_problem(name, env) is None]
    if agent_env_problem("hf:model", env) is None:
        able.append("hf:<model>, openai:<model>@<base_url>, dspy:<model>@<base_url>")
    if agent_env_problem("sb3:model.zip", env) is None:
        able.append("sb3:<path/model.zip>")
    raise ValueError(
        f"agent {spec!r} cannot play {env_id}: {problem}; agents that can: {', '.join(able) or 'none registered'}"
    )


def parse_endpoint_spec(text: str) -> tuple[str, str | None]:
    """Split ``<model>@<base_url>`` (the URL part is optional; model names may contain ``@``).

    Raises:
        ValueError: The model part is empty.
    """
    model, base_url = text, None
    at = text.rfind("@")
    if at != -1 and text[at + 1:].startswith(("http://", "https://")):
        model, base_url = text[:at], text[at + 1:]
    if not model:
        raise ValueError(f"agent spec {text!r} names no model; write <model>@<base_url>, e.g. gpt-4o-mini@https://api.openai.com/v1")
    return model, base_url


def _accepted() -> str:
    return ACCEPTED_FORMS.format(names=", ".join(registered_agents()) or "none yet")


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_AGENT_MODULES:
        if importlib.util.find_spec(module) is None:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:  # its agents are missing from the list; the rest still work
            logger.warning("agents of %s are unavailable: %s", module, exc)
    for entry_point in metadata.entry_points(group=PLUGIN_GROUP):
        try:
            entry_point.load()()
        except Exception as exc:  # a broken plugin is reported, not fatal
            logger.warning("affectgym agent plugin %r failed to load: %s", entry_point.name, exc)


__all__ = [
    "FunctionAgent",
    "agent_class",
    "agent_env_problem",
    "check_agent_supports",
    "make_agent",
    "parse_endpoint_spec",
    "register_agent",
    "registered_agents",
]
