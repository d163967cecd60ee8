"""``check_env``: Gymnasium's checks plus affectgym's own.

On top of :func:`gymnasium.utils.env_checker.check_env` (spaces, reset/step API, seed
determinism), ``check_env`` fuzzes an affectgym text environment: it must survive agent
messages (the classic bad inputs, the hostile ones of :func:`hostile_actions`, valid tool
calls, tool calls followed by an answer and random Unicode with lone surrogates, drawn by
hypothesis) without raising, with well-formed step rewards (finite, inside ``reward_range``),
observations inside the observation space, every episode ending within its turn limit and its
step rewards summing to its score.

Then it runs the checks of ``affectgym validate`` (:mod:`affectgym.envs.validation`, after
OpenEnv's RFC 008), the same functions: ``reward_well_formed``, ``seed_control``,
``episode_determinism``, ``oracle_max``, ``floor_gap``, ``canary_floor``,
``no_solution_leakage`` (the label flip, label words in ids, the text memoriser of
:mod:`affectgym.envs.leakage` on the env's splits), ``verifier_determinism`` and those an installed
plug-in registers (:func:`~affectgym.envs.validation.registered_checks`). A check that
fails or raises is a problem, except ``oracle_max`` and ``floor_gap``
(:data:`~affectgym.envs.validation.CHECK_ENV_WARNINGS`): they say how the reward's scale is
calibrated, not that the env breaks its contract, so ``check_env`` warns where
``affectgym validate`` fails. A skipped check (no canaries shipped) is a warning.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from affectgym.envs.core import AffectEnv
from affectgym.envs.validation import (
    CHECK_ENV_WARNINGS,
    ERROR,
    FAIL,
    REDTEAM_CHECKS,
    SKIP,
    CheckResult,
    EnvUnderTest,
    agent_view,
    reward_problem,
    run_checks,
)

#: Inputs every env must survive: empty, huge, binary junk, broken JSON, unknown tools,
#: wrong argument types, nested junk. Built once; the 1 MB string is shared.
BAD_ACTIONS: tuple[str, ...] = (
    "",
    "   \n\t ",
    "x" * 1_000_000,
    "\x00\x01\x02\xff\ufffd\ud800",
    bytes(range(256)).decode("latin-1"),
    "<tool_call>",
    "<tool_call>{not json</tool_call>",
    '<tool_call>{"name": 42, "arguments": {}}</tool_call>',
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>["a", 1, null]</tool_call>',
    '{"name": "no_such_tool", "arguments": "{broken"}',
    '{"type": "function", "function": {"name": "no_such_tool", "arguments": {"x": [1, {"y": null}]}}}',
    "{" * 5_000,
    "[" * 5_000 + "]" * 5_000,
    '{"label": "?", "confidence": "very"}',
    "<final>{}</final>",
    "<final>" + "{" * 100 + "</final>",
    "```json\n{\"name\": \"x\"}\n```",
)


#: The tool and label the hostile corpus names when it is not written for an env.
NEUTRAL_TOOL, NEUTRAL_LABEL = "some_tool", "some_label"


def hostile_actions_for(env: Any) -> dict[str, str]:
    """:func:`hostile_actions` of ``env``'s length, naming its first tool and label (neutral names where it has none)."""
    base = getattr(env, "unwrapped", env)
    tool = next(iter(getattr(base, "tools", {}) or {}), NEUTRAL_TOOL)
    label = next(iter(getattr(base, "label_set", ()) or ()), NEUTRAL_LABEL)
    return hostile_actions(base.max_action_chars, tool=tool, label=label)


@functools.lru_cache(maxsize=32)
def hostile_actions(max_chars: int = 32_768, *, tool: str = NEUTRAL_TOOL, label: str = NEUTRAL_LABEL) -> dict[str, str]:
    """Pathological agent messages of at most ``max_chars`` characters, by name.

    Every env must answer each of them within its usual time (linear-time parsing) and
    without raising: integers longer than Python converts, nesting deeper than the JSON
    reader allows, repetitions that make backtracking regexes quadratic (runs of spaces,
    braces, opening tags without their closing tag) or exponential (a run of intensifiers,
    "I am really really ... x", before no feeling word), lone surrogates, and a tool call
    and a final answer in one message. The repetitions fill ``max_chars``: the longest message
    an env reads is the one that has to be fast.

    The corpus names no env's vocabulary: tool calls name ``tool`` and answers ``label``
    (:func:`hostile_actions_for` passes an env's own, so the attacks reach its argument
    checks and answer parser).

    Args:
        max_chars: The env's ``max_action_chars``.
        tool: The tool the calls name.
        label: The label the answers give.

    Returns:
        ``{case name: message}``.

    >>> actions = hostile_actions(1_000)
    >>> len(actions["open_braces"]), max(len(a) for a in actions.values())
    (1000, 1000)
    >>> hostile_actions(200, tool="read_note", label="happy")["nan_answer"]
    '<final>{"label": "happy", "confidence": NaN}</final>'
    """
    name, label_json = json.dumps(tool), json.dumps(label)
    answer = json.dumps({"label": label, "confidence": 0.5})
    call = f'<tool_call>{{"name": {name}, "arguments": {{}}}}</tool_call>'

    def fill(unit: str, head: str = "", tail: str = "") -> str:
        return head + unit * max(1, (max_chars - len(head) - len(tail)) // len(unit)) + tail

    half = max_chars // 2
    digits = max(1, min(5_000, max_chars - 100))  # 5,000 is beyond Python's 4,300-digit int(str) limit
    big = "9" * digits
    depth = max(1, min(3_000, half - 50))
    cases = {
        "big_integer_tool_argument": '<tool_call>{"name": ' + name + ', "arguments": {"x": ' + big + "}}</tool_call>",
        "big_integer_answer": '<final>{"label": ' + label_json + ', "confidence": ' + "1" * digits + "}</final>",
        "big_integer_bare_call": '{"name": ' + name + ', "arguments": {"x": -' + big + "}}",
        "big_integer_object": '{"anger": ' + big + "}",
        "big_integer_arguments_string": '{"name": ' + name + ', "arguments": "{\\"x\\": ' + big + '}"}',
        "huge_exponent": '{"label": ' + label_json + ', "confidence": 1e999999}',
        "nan_answer": '<final>{"label": ' + label_json + ', "confidence": NaN}</final>',
        "nan_tool_argument": '<tool_call>{"name": ' + name + ', "arguments": {"x": NaN, "y": -Infinity}}</tool_call>',
        "digits": fill("9"),
        "deep_list_in_object": '{"anger": ' + "[" * depth + "]" * depth + "}",
        "deep_objects": '{"a": ' * (max_chars // 7) + "1" + "}" * (max_chars // 7),
        "deep_tool_arguments": '<tool_call>{"name": ' + name + ', "arguments": ' + "[" * depth + "]" * depth + "}</tool_call>",
        "deep_answer": "<final>" + "[" * depth + "]" * depth + "</final>",
        "deep_arguments_string": '{"name": ' + name + ', "arguments": "' + "[" * depth + '"}',
        "open_braces": fill("{"),
        "open_brackets": fill("["),
        "close_braces": fill("}"),
        "balanced_brackets": "[" * half + "]" * half,
        "balanced_braces_around_answer": "{" * (half // 2) + answer + "}" * (half // 2),
        "spaces_between_words": fill(" ", "x", "x"),
        "spaces_in_fence": fill(" ", "```json", "x```"),
        "spaces_after_i": fill(" ", "I", "x"),
        "spaces_after_makes_me": fill(" ", "makes me", "x"),
        "intensifiers_without_feeling": fill("really ", "I am ", "x"),
        "newlines": fill("\n", tail="x"),
        "final_tags_then_answer": fill("<final>", tail=answer),
        "final_tags_closed_once": fill("<final>", tail=answer + "</final>"),
        "closing_final_tags": fill("</final>", head=answer),
        "tool_call_tags": fill("<tool_call>"),
        "tool_call_tags_then_call": fill("<tool_call>", tail=call),
        "closing_tool_call_tags": fill("</tool_call>"),
        "many_tool_calls": fill(call),
        "think_tags": fill("<think>"),
        "fences": fill("```"),
        "json_fences": fill("```json\n"),
        "open_parentheses": fill("("),
        "tag_with_spaces": fill(" ", "(a", "b"),
        "asterisks_before_tag": fill("*", tail="(JOY) x"),
        "tags": fill("(JOY) "),
        "dots": fill(".", tail="x"),
        "dashes": fill(" -"),
        "question_marks": fill("?"),
        "tagged_reply_ending_in_dots": fill(".", "(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) ", "x?"),
        "quotes": fill('"'),
        "backslashes": fill("\\"),
        "empty_objects": fill("{}"),
        "answers": fill(answer),
        "open_keys": fill('{"'),
        "open_string_values": fill('{"a": "'),
        "unterminated_string": fill("x", '{"label": "'),
        "lone_surrogate": "\ud800",
        "lone_surrogates": fill("\udfff"),
        "surrogate_in_answer": '<final>{"label": "\ud800", "confidence": 0.5}</final>',
        "surrogate_in_tool_name": '<tool_call>{"name": "\ud800", "arguments": {"\udc00": 1}}</tool_call>',
        "tool_call_and_answer": call + "\n<final>" + answer + "</final>",
        "answer_and_tool_call": "<final>" + answer + "</final>\n" + call,
        "bare_call_and_answer": '{"name": ' + name + ', "arguments": {}} ' + answer,
        "escaped_quotes": fill('\\"', '{"a": "'),
    }
    return {case: action for case, action in cases.items() if len(action) <= max_chars}


class EnvCheckError(AssertionError):
    """An environment failed :func:`check_env`; the message lists every problem found."""


@dataclass
class CheckReport:
    """What :func:`check_env` ran and found.

    Attributes:
        env_name: The env's class name (and id when made through ``gym.make``).
        fuzzed_actions: Agent messages sent by the fuzzer.
        fuzzed_episodes: Episodes the fuzzer ran.
        label_flip_scenarios: Scenarios whose label was flipped (0 when the env hides none).
        canaries_checked: (scenario, canary) pairs scored against the floor and the reference answer.
        leakage: The text memoriser's result on the env's splits, or why it was skipped.
        results: The checks of ``affectgym validate``, one
            :class:`~affectgym.envs.validation.CheckResult` each.
        problems: Every failure, one line each.
        warnings: What passed without proving anything (e.g. no canaries to score), the
            calibration checks' failures and the warnings of Gymnasium's own checker, one line
            each; they do not fail the check.
    """

    env_name: str
    fuzzed_actions: int = 0
    fuzzed_episodes: int = 0
    label_flip_scenarios: int = 0
    canaries_checked: int = 0
    leakage: str = "not run"
    results: list[CheckResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        status = "OK" if not self.problems else f"{len(self.problems)} problem(s)"
        if self.warnings:
            status += f", {len(self.warnings)} warning(s)"
        lines = [
            f"check_env({self.env_name}): {status}",
            f"  fuzz: {self.fuzzed_actions} actions in {self.fuzzed_episodes} episodes",
            f"  label flip: {self.label_flip_scenarios} scenarios",
            f"  canaries: {self.canaries_checked} checked",
            f"  leakage: {self.leakage}",
            "  checks: " + ", ".join(f"{result.name} {result.status}" for result in self.results),
        ]
        lines += [f"  - {p}" for p in self.problems]
        lines += [f"  ! {w}" for w in self.warnings]
        return "\n".join(lines)


def check_env(
    env: gym.Env,
    *,
    fuzz_actions: int = 2_000,
    max_scenarios: int = 50,
    seed: int = 0,
    raise_on_problem: bool = True,
) -> CheckReport:
    """Check an environment against Gymnasium's API and affectgym's contract.

    Args:
        env: The environment (wrapped or not; checks run on ``env.unwrapped``).
        fuzz_actions: How many fuzzed agent messages to send (at least; text envs only).
        max_scenarios: How many scenarios the per-scenario checks visit.
        seed: Seed of the checks; the same seed runs the same checks.
        raise_on_problem: Raise :class:`EnvCheckError` when a problem is found.

    Returns:
        A :class:`CheckReport`.
    """
    base = env.unwrapped
    name = type(base).__name__ + (f" [{env.spec.id}]" if env.spec else "")
    report = CheckReport(env_name=name)
    _run(report, "gymnasium check_env", lambda: _gymnasium_checks(base, report))
    if isinstance(base, AffectEnv):
        _run(report, "fuzz", lambda: _fuzz(base, report, fuzz_actions, seed))
    report.results = run_checks(EnvUnderTest(env, max_scenarios=max_scenarios, seed=seed), skip=REDTEAM_CHECKS)
    for result in report.results:
        lines = [f"{line} ({result.name})" for line in result.evidence]
        if result.status in (FAIL, ERROR) and result.check_id not in CHECK_ENV_WARNINGS:
            report.problems += lines
        elif result.status in (FAIL, ERROR, SKIP):
            report.warnings += lines
        if result.check_id == "semantic.no_solution_leakage":
            report.label_flip_scenarios = result.measured.get("label_flip_scenarios", 0)
            report.leakage = result.measured.get("memoriser", report.leakage)
        if result.check_id == "semantic.canary_floor":
            report.canaries_checked = result.measured.get("canaries_checked", 0)
    if report.problems and raise_on_problem:
        raise EnvCheckError(str(report))
    return report


def _run(report: CheckReport, what: str, check: Callable[[], None]) -> None:
    try:
        check()
    except Exception as exc:  # the checker reports every failure instead of stopping at one
        report.problems.append(f"{what}: {type(exc).__name__}: {exc}"[:2_000])


def _gymnasium_checks(env: gym.Env, report: CheckReport) -> None:
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    # Its render check renders in "human" mode, which prints the episode (a whole system prompt):
    # the report holds the findings, so that print is dropped.
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        gymnasium_check_env(env, skip_render_check=env.spec is None)
    for warning in caught:
        line = f"gymnasium check_env: {str(warning.message).strip()}"
        if line not in report.warnings:
            report.warnings.append(line)


def _fuzz(env: AffectEnv, report: CheckReport, n_actions: int, seed: int) -> None:
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
    except ImportError as exc:
        raise RuntimeError("the fuzz check needs hypothesis: pip install 'affectgym[dev]'") from exc

    tool_names = [*env.tools, "no_such_tool"]
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
        max_leaves=6,
    )
    random_calls = st.builds(
        lambda name, args, tagged: (
            f'<tool_call>{{"name": "{name}", "arguments": {_dumps(args)}}}</tool_call>'
            if tagged
            else f'{{"name": "{name}", "arguments": {_dumps(args)}}}'
        ),
        st.sampled_from(tool_names),
        st.dictionaries(st.text(max_size=10), json_values, max_size=3),
        st.booleans(),
    )
    well_formed = env.fuzz_actions() or ["<noop>"]
    calls = [a for a in well_formed if "<tool_call>" in a] or [hostile_actions_for(env)["tool_call_and_answer"]]
    answers = _reference_answers(env) or well_formed
    mixed = st.builds(
        lambda call, answer, call_first: f"{call}\n{answer}" if call_first else f"{answer}\n{call}",
        st.sampled_from(calls),
        st.sampled_from(answers),
        st.booleans(),
    )
    surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    actions = st.one_of(
        st.sampled_from(BAD_ACTIONS),
        st.sampled_from(tuple(hostile_actions_for(env).values())),
        st.sampled_from(well_formed),
        st.text(max_size=200),
        st.text(st.characters() | surrogates, max_size=50),
        st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
        random_calls,
        mixed,
    )
    episode_length = env.max_turns + 2
    examples = max(1, math.ceil(n_actions / episode_length))
    ids = env.scenario_ids

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=True,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.integers(0, len(ids) - 1), st.lists(actions, min_size=episode_length, max_size=episode_length))
    def episode(index: int, messages: list[str]) -> None:
        env.reset(seed=seed + index, options={"scenario_id": ids[index]})
        returned = 0.0
        ended_at = None
        for turn, message in enumerate(messages, start=1):
            observation, reward, terminated, truncated, info = env.step(message)
            report.fuzzed_actions += 1
            assert env.observation_space.contains(observation), f"observation outside the space after {message[:60]!r}"
            problem = reward_problem(reward, env.reward_range)
            assert problem is None, f"{problem} after {message[:60]!r}"
            assert "reward_components" in info, "info lacks reward_components"
            if ended_at is None:
                returned += reward
                if terminated or truncated:
                    ended_at = turn
                    assert math.isclose(returned, info["episode_reward"], abs_tol=1e-9), (
                        f"step rewards sum to {returned}, the episode's score is {info['episode_reward']}"
                    )
            else:
                assert terminated or truncated, "a step after the end did not report the episode as over"
        assert ended_at is not None and ended_at <= env.max_turns, (
            f"episode did not end within max_turns={env.max_turns}"
        )
        report.fuzzed_episodes += 1

    episode()


def _reference_answers(env: AffectEnv) -> list[str]:
    """A few good final answers of the env (none when it defines no ``reference_answer``)."""
    try:
        return [env.reference_answer(scenario)[0] for scenario in env.scenarios[:3]]
    except NotImplementedError:
        return []


def _dumps(value: Any) -> str:
    return json.dumps(value)


__all__ = ["BAD_ACTIONS", "CheckReport", "EnvCheckError", "agent_view", "check_env", "hostile_actions"]
