"""Multi-turn GRPO: an affectgym env as TRL's ``environment_factory``.

:func:`environment_factory` builds a class that satisfies TRL 1.16's contract:

* ``__init__()`` takes no argument (it makes its own env from the id and kwargs it was built with);
* ``reset(**row)`` receives a dataset row (from :func:`~affectgym.train.flatten.to_dataset`
  with ``prompt_form="interactive"``), starts the episode of its ``scenario_id`` and returns
  ``None``: the row's prompt already holds the opening messages;
* one public method per env tool, generated from ``env.tools``: same name, signature, type
  hints and a Google-style docstring, so TRL's (transformers') schema extraction gives the
  policy the tool schemas the env declares. A call is sent to the env as one ``step`` (a
  ``<tool_call>`` message), so argument validation, the turn limit, invalid-action
  penalties and the trace are the env's own;
* ``get_reward()``: the episode's rubric total.

What TRL's tool loop gives, and what it does not (TRL 1.16):

* TRL generates, parses tool calls with the tokenizer's response schema, calls the
  methods, appends the tool results (masked out of the loss) and generates again, up to
  ``max_tool_calling_iterations``. The final answer is the last assistant message without
  a tool call.
* ``get_reward()`` is called with no argument, once per rollout, after the ``reward_funcs``;
  the final answer never reaches the environment through TRL. So the final answer is
  scored by the reward functions of :func:`affectgym.train.rewards.reward_functions`,
  which receive TRL's ``environments`` argument, read each adapter's trace, score every
  rollout with ``env.score_batch`` in one call and hand the result back to the adapter
  (:func:`record_final_answer`: a function, not a method, since TRL exposes every public
  method of the adapter as a tool). Use
  them together: the components at weight 0 (logged as
  ``rewards/<component>/mean``) and ``get_reward`` (weight 1, logged as
  ``rewards/rubric_total/mean``) carry the total. :func:`affectgym.train.grpo.train` does this.
* There are no per-step rewards in GRPO: one scalar per rollout. The env's step rewards
  (e.g. an invalid tool call's penalty) are part of that total, and their per-episode sum
  is logged as ``env/step_reward_sum`` (with ``env/tool_calls``).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Mapping
from typing import Any

from affectgym.train.flatten import kwargs_json, make_env, shared_env

logger = logging.getLogger(__name__)

#: The class name TRL logs ``get_reward`` under, ``rewards/rubric_total/mean``: the env rubric's total of each episode.
ADAPTER_CLASS_NAME = "rubric_total"


class EnvironmentAdapter:
    """Base of the generated adapter classes: one env episode per TRL rollout.

    Attributes:
        env_id: The env id.
        env_kwargs: The env keyword arguments (JSON).
        scenario_id: Id of the current episode's scenario.
        episode_index: Counts resets (part of the reward cache key).
        step_rewards: Reward of every env step of the episode (tool calls, then the final answer).
        result: The episode's :class:`~affectgym.rewards.rubric.RubricResult` once finished.
        judge_failed: Whether the LLM judging of the final answer failed (``get_reward()`` is
            then ``None``, as for any criterion left unscored: see :mod:`affectgym.train.rewards`).
    """

    env_id: str = ""
    env_kwargs: str = "{}"
    is_affectgym_adapter = True

    def __init__(self) -> None:
        self._env = make_env(self.env_id, json.loads(self.env_kwargs))
        self.scenario_id: str | None = None
        self.episode_index = 0
        self.step_rewards: list[float] = []
        self.final_text: str | None = None
        self.result: Any = None
        self.judge_failed = False
        self._warned = False

    def reset(self, **row: Any) -> str | None:
        """Start the episode of the row's ``scenario_id``; the prompt already holds the opening.

        Args:
            **row: A dataset row; ``scenario_id`` is required.

        Returns:
            ``None`` (nothing is appended to the row's prompt).
        """
        scenario_id = row.get("scenario_id")
        if scenario_id is None:
            raise ValueError(
                f"{self.env_id}: reset() needs the row column 'scenario_id'; build the dataset with "
                "affectgym.train.flatten.to_dataset(..., prompt_form='interactive')"
            )
        scenario = self._env.get_scenario(scenario_id)
        self._env.reset(options={"scenario": scenario})
        self.scenario_id = scenario_id
        self.episode_index += 1
        self.step_rewards = []
        self.final_text = None
        self.result = None
        self.judge_failed = False
        return None

    @property
    def scenario(self) -> Any:
        """The scenario of the current episode."""
        return self._env.scenario

    @property
    def trace(self) -> list[dict[str, Any]]:
        """What the policy did so far (the env's trace: tool calls, invalid actions)."""
        return list(self._env.trace)

    @property
    def done(self) -> bool:
        """Whether the env ended the episode (a final answer, or the turn limit in the tool loop)."""
        return self.result is not None

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self.scenario_id is None:
            raise RuntimeError(f"{self.env_id}: tool {name!r} called before reset()")
        if self.result is not None:
            return "Error: the episode is over (turn limit reached); nothing was done. Give your final answer."
        action = "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"
        observation, reward, terminated, truncated, info = self._env.step(action)
        self.step_rewards.append(float(reward))
        if terminated or truncated:
            from affectgym.rewards.rubric import RubricResult

            self.result = RubricResult(
                total=float(info.get("episode_reward", 0.0)), components=dict(info["reward_components"]),
                unscored=dict(info.get("unscored") or {}),
            )
        return observation

    def get_reward(self) -> float | None:
        """The episode's rubric total (see the module docstring for who scores the final answer).

        ``None`` when the judging of the final answer failed, so that TRL leaves the rollout
        out rather than rewarding it without the judge's part.
        """
        if self.result is None:
            if not self._warned:
                logger.warning(
                    "%s: get_reward() before the final answer was scored; pass the affectgym reward functions "
                    "(affectgym.train.rewards.reward_functions) to GRPOTrainer with this environment_factory. "
                    "Scoring the episode as unanswered.",
                    self.env_id,
                )
                self._warned = True
            record_final_answer(self, None, self._env.score(self._env.scenario, None, self._env.trace))
        return None if self.result.unscored else float(self.result.total)


def record_final_answer(adapter: EnvironmentAdapter, final_text: str | None, result: Any) -> None:
    """Hand an adapter its episode's final answer and score (the affectgym reward functions call this).

    Args:
        adapter: The rollout's environment.
        final_text: The last assistant message, ``None`` when the rollout ended on a tool call.
        result: ``env.score(scenario, final_text, trace)`` for this episode; where a
            criterion went unscored (the LLM judge failed) the rollout gets no reward.
    """
    adapter.final_text = final_text
    adapter.result = result
    adapter.judge_failed = "judge" in result.failed_scorers
    adapter.step_rewards.append(float(result.total) - sum(adapter.step_rewards))


def environment_factory(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> type[EnvironmentAdapter]:
    """A TRL ``environment_factory`` class for an affectgym env (see the module docstring).

    Args:
        env_id: A registered id, e.g. ``"affectgym/Sarcasm-v0"``.
        env_kwargs: Env keyword arguments (``split`` defaults to ``"train"``).

    Returns:
        A class with a no-argument ``__init__``, ``reset(**row)``, one method per env tool
        and ``get_reward()``. Pass the class itself: ``GRPOTrainer(environment_factory=cls)``.
    """
    kwargs = {"split": "train", **dict(env_kwargs or {})}
    probe = shared_env(env_id, kwargs)  # the process's scoring env: its tools, without building another
    namespace: dict[str, Any] = {
        "env_id": env_id,
        "env_kwargs": kwargs_json(kwargs),
        "__doc__": f"TRL environment for {env_id}: one episode per rollout, tools {', '.join(probe.tools) or 'none'}.",
        "__module__": __name__,
    }
    reserved = {"reset", "get_reward", "scenario", "trace", "done"}
    for name, spec in probe.tools.items():
        if name in reserved or name.startswith("_"):
            raise ValueError(f"{env_id}: tool name {name!r} clashes with the adapter's own methods {sorted(reserved)}")
        namespace[name] = tool_method(spec)
    cls = type(ADAPTER_CLASS_NAME, (EnvironmentAdapter,), namespace)
    cls.__qualname__ = ADAPTER_CLASS_NAME
    return cls


def tool_method(spec: Any) -> Any:
    """A method that forwards a call to the env tool ``spec`` describes, with its signature and docs.

    Args:
        spec: An :class:`affectgym.envs.tools.ToolSpec`.

    Returns:
        A function ``(self, **arguments) -> str`` whose ``__signature__``, ``__annotations__``
        and docstring reproduce the tool's, for transformers' ``get_json_schema``.
    """
    name = spec.name
    function_schema = spec.schema["function"]
    properties = function_schema["parameters"]["properties"]

    def method(self: EnvironmentAdapter, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    lines = [function_schema["description"]]
    if properties:
        lines += ["", "Args:"]
        for param in spec.signature.parameters:
            description = properties[param].get("description") or param.replace("_", " ")
            lines.append(f"    {param}: {' '.join(description.split())}")
    lines += ["", "Returns:", "    The tool's output, as text."]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [
        p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) if p.kind is not inspect.Parameter.KEYWORD_ONLY else p
        for p in spec.signature.parameters.values()
    ]
    method.__name__ = name
    method.__qualname__ = f"{ADAPTER_CLASS_NAME}.{name}"
    method.__doc__ = "\n".join(lines)
    method.__signature__ = inspect.Signature([self_param, *params], return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**spec.hints, "return": str}
    return method


__all__ = ["ADAPTER_CLASS_NAME", "EnvironmentAdapter", "environment_factory", "record_final_answer", "tool_method"]
