"""The LLM-free baselines by name, as ``affectgym eval --agent NAME`` builds them.

They act through the same reset/step contract as any agent, so their numbers are directly
comparable with a model's. The labelled-speech envs' (``majority``, ``random``,
``prosody-rule``, ``probe``, ``probe-text``, ``probe-prosody``, ``feature-probe``) are in
:mod:`affectgym.agents.label_baselines`; those of the envs without labels (``style-lexicon``,
``dialogue-template``, ``controller``) in :mod:`affectgym.agents.text_baselines`; ``protocol``
is the label-blind protocol demonstrator of :mod:`affectgym.agents.protocol` (the env's flat
tool calls, then a random answer). ``random`` and ``controller`` also play the numeric
EmotionState-v0, as the policies of :mod:`affectgym.agents.policies`.

``baseline`` picks the one an env recommends (its ``recommended_baseline`` class attribute),
so ``affectgym eval ENV --agent baseline`` works for every built-in env.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from affectgym.agents.base import Agent
from affectgym.agents.label_baselines import (
    MajorityAgent,
    ProbeAgent,
    ProsodyRuleAgent,
    RandomAgent,
)
from affectgym.agents.policies import ControllerPolicy, RandomPolicy
from affectgym.agents.protocol import ProtocolAgent
from affectgym.agents.registry import agent_env_problem, make_agent, register_agent
from affectgym.agents.text_baselines import (
    DialogueTemplateAgent,
    StateControllerAgent,
    StyleLexiconAgent,
)
from affectgym.envs.spaces import env_kind


# ----------------------------------------------------------------------------- registration
class ByEnvKindAgent(Agent):
    """What a name that builds one agent class per env kind (``random``, ``controller``) declares.

    :func:`~affectgym.agents.registry.check_agent_supports` reads a registered name's class
    before anything is built. Such a name registers a subclass of this one: :attr:`by_kind`
    maps each env kind to the class its factory builds, and :meth:`env_problem` is that
    class's. It is never built itself.
    """

    env_kinds = ("text", "numeric")
    #: The class built for each env kind (:func:`~affectgym.envs.spaces.env_kind`).
    by_kind: ClassVar[Mapping[str, type[Agent]]] = {}

    @classmethod
    def class_for(cls, env: Any) -> type[Agent] | None:
        """The class built for ``env``'s kind, or None for a kind it does not play."""
        return cls.by_kind.get(env_kind(env))

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """The problem of the class built for ``env``."""
        chosen = cls.class_for(env)
        return f"it plays {' or '.join(cls.by_kind)} envs" if chosen is None else chosen.env_problem(env)


class RandomByEnvKind(ByEnvKindAgent):
    """``random``: :class:`RandomAgent` (a random label) on text envs, :class:`~affectgym.agents.policies.RandomPolicy` on numeric ones."""

    by_kind = {"text": RandomAgent, "numeric": RandomPolicy}


class ControllerByEnvKind(ByEnvKindAgent):
    """``controller``: :class:`StateControllerAgent` on text envs, :class:`~affectgym.agents.policies.ControllerPolicy` on numeric ones."""

    by_kind = {"text": StateControllerAgent, "numeric": ControllerPolicy}


class RecommendedBaseline(Agent):
    """What ``baseline`` declares: the agent the env recommends (its ``recommended_baseline``).

    Never built itself: its factory builds the recommended agent, and :meth:`env_problem` is
    that agent's, so :func:`~affectgym.agents.registry.check_agent_supports` checks it.
    """

    env_kinds = ("text", "numeric")

    @classmethod
    def env_problem(cls, env: Any) -> str | None:
        """No recommendation, or the recommended agent's problem."""
        name = getattr(env, "recommended_baseline", None)
        if name is None:
            return "the env recommends no baseline (its class sets no recommended_baseline)"
        return agent_env_problem(name, env)


def _make_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
    import affectgym

    return affectgym.make(env_id, **dict(env_kwargs))


def _random(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    env = _make_env(env_id, env_kwargs)
    try:
        if RandomByEnvKind.class_for(env) is RandomPolicy:
            return RandomPolicy(env.action_space, **kwargs)
    finally:
        env.close()
    return RandomAgent(env_id, env_kwargs, **kwargs)


def _controller(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    env = _make_env(env_id, env_kwargs)
    chosen = ControllerByEnvKind.class_for(env)
    env.close()
    if chosen is None:
        raise ValueError(f"the 'controller' agent plays text and numeric envs, and {env_id} is neither (env_kind 'other')")
    return chosen(**kwargs)


def recommended_baseline(env_id: str) -> str | None:
    """The agent name the env behind ``env_id`` recommends (its ``recommended_baseline``), or None.

    >>> recommended_baseline("affectgym/EmotionStyle-v0")
    'style-lexicon'
    """
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import affectgym  # noqa: F401  (registers the built-in envs and plugins)

    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return getattr(creator, "recommended_baseline", None)


def _recommended(env_id: str, env_kwargs: Mapping[str, Any], **kwargs: Any) -> Agent:
    name = recommended_baseline(env_id)
    if name is None:
        raise ValueError(
            f"{env_id} recommends no baseline (its class sets no recommended_baseline); "
            "name an agent instead, e.g. --agent majority for a labelling env"
        )
    return make_agent(name, env_id=env_id, env_kwargs=dict(env_kwargs), **kwargs)


def _baseline_factory(build: Any, name: str) -> Any:
    def factory(env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> Agent:
        if env_id is None:
            raise ValueError(f"the {name!r} baseline fits itself on an env: pass env_id (affectgym eval does)")
        return build(env_id, dict(env_kwargs or {}), **kwargs)

    return factory


_BASELINES: dict[str, tuple[type[Agent], Any]] = {
    "baseline": (RecommendedBaseline, _recommended),
    "majority": (MajorityAgent, lambda env_id, env_kwargs, **kw: MajorityAgent(env_id, env_kwargs)),
    "random": (RandomByEnvKind, _random),
    "controller": (ControllerByEnvKind, _controller),
    "style-lexicon": (StyleLexiconAgent, lambda env_id, env_kwargs, **kw: StyleLexiconAgent()),
    "dialogue-template": (DialogueTemplateAgent, lambda env_id, env_kwargs, **kw: DialogueTemplateAgent()),
    "prosody-rule": (ProsodyRuleAgent, lambda env_id, env_kwargs, **kw: ProsodyRuleAgent(env_id, env_kwargs)),
    "probe": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, kw.get("features", "both"), env_kwargs)),
    "probe-text": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, "text", env_kwargs)),
    "probe-prosody": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, "prosody", env_kwargs)),
    "feature-probe": (ProbeAgent, lambda env_id, env_kwargs, **kw: ProbeAgent(env_id, "tools", env_kwargs)),
    "protocol": (ProtocolAgent, lambda env_id, env_kwargs, **kw: ProtocolAgent(env_id, env_kwargs, **kw)),
}
for _name, (_class, _build) in _BASELINES.items():
    register_agent(_name, _baseline_factory(_build, _name), agent_class=_class)


__all__ = ["ByEnvKindAgent", "ControllerByEnvKind", "RandomByEnvKind", "RecommendedBaseline", "recommended_baseline"]
