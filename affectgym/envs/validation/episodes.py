"""How the checks play an env: a scripted episode, and everything an agent sees of a scenario."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from affectgym.envs.core import AffectEnv
from affectgym.envs.validation.report import _plain
from affectgym.envs.validation.subject import EnvUnderTest


def agent_view(env: AffectEnv, scenario: Any) -> list[Any]:
    """Everything an agent can see of ``scenario``: observations, messages, tools, tool outputs, flat prompt."""
    view: list[Any] = []
    observation, info = env.reset(options={"scenario": scenario})
    view.append((observation, _visible(info)))
    for name, arguments in env.flat_tool_calls(scenario):
        observation, _, _, _, info = env.step(tool_call_text(name, arguments))
        view.append((observation, _visible(info)))
    view.append(env.flat_prompt(scenario))
    return view


def tool_call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call as an agent writes it.

    >>> tool_call_text("read_note", {})
    '<tool_call>{"name": "read_note", "arguments": {}}</tool_call>'
    """
    return f"<tool_call>{json.dumps({'name': name, 'arguments': dict(arguments)})}</tool_call>"


def scripted_episode(subject: EnvUnderTest, seed: int, index: int) -> list[tuple[Any, ...]]:
    """One episode from ``reset(seed=seed)`` on scenario ``index`` (text envs) played by a fixed script:
    ``(observation, reward, terminated, truncated, info)`` per step, the reset first (reward 0).

    A text env plays its oracle (each turn's reference: its tool calls, then its final text; the
    env's ``fuzz_actions()`` without one); a numeric env plays actions of its action space
    sampled from ``seed``.
    """
    base = subject.base
    if not subject.text:
        options = {"scenario_id": base.scenario_ids[0]} if getattr(base, "scenario_ids", None) else None
        observation, info = base.reset(seed=seed, options=options)
        base.action_space.seed(seed)
        steps: list[tuple[Any, ...]] = [(_plain(observation), 0.0, False, False, _plain(info))]
        for _ in range(100_000):
            observation, reward, terminated, truncated, info = base.step(base.action_space.sample())
            steps.append((_plain(observation), reward, terminated, truncated, _plain(info)))
            if terminated or truncated:
                break
        return steps
    scenario = subject.scenarios[index % len(subject.scenarios)]
    observation, info = base.reset(seed=seed, options={"scenario_id": scenario.id})
    steps = [(observation, 0.0, False, False, _plain(_visible(info)))]
    pending: list[str] = []
    for _ in range(base.max_turns):
        if not pending:
            pending = _script(base, base.scenario)
        observation, reward, terminated, truncated, info = base.step(pending.pop(0))
        steps.append((observation, reward, terminated, truncated, _plain(info)))
        if terminated or truncated:
            break
    return steps


def _script(base: AffectEnv, scenario: Any) -> list[str]:
    try:
        text, trace = base.reference_answer(scenario)
    except NotImplementedError:
        return list(base.fuzz_actions()) or [""]
    calls = [tool_call_text(e["name"], e.get("arguments", {})) for e in trace if e.get("type") == "tool_call"]
    return [*calls, text if text is not None else ""]


def _visible(info: Mapping[str, Any]) -> dict[str, Any]:
    hidden_after_answer = {"reward_components", "episode_reward", "final_answer", "truncated_unanswered", "outcome"}
    return {k: v for k, v in info.items() if k not in hidden_after_answer}
