"""The environment contract every text environment of affectgym follows.

An :class:`AffectEnv` is a ``gymnasium.Env[str, str]``: the observation is the text the
agent reads next, the action is the agent's whole message. A message is either one or
more tool calls (see :mod:`affectgym.envs.parsing`), or an answer in the env's answer
format. Anything else (empty text, junk, a malformed call, an unknown tool, wrong
arguments, a call over the tool budget) is answered with an observation that says what was
wrong and what is accepted, plus a small penalty; the episode goes on until the turn
limit, where it is truncated and scored as unanswered. ``step`` never raises on an
agent's text, and reads any message up to ``max_action_chars`` in linear time.

A message with tool calls *and* a final answer after them (``<tool_call>...</tool_call>
<final>...</final>``): the tool calls run and their outputs are returned, but the answer
is not read, since it was written before the agent saw those outputs; the message counts
as one invalid action (the penalty, and an error after the outputs that says to answer in
a message of its own), and the episode goes on. Reading the answer would pay for tools
whose outputs the answer never used. Text *before* a tool call is the agent's reasoning
and is never read as an answer.

One reward path: the reward of an episode is ``score(scenario, final_text, trace)``, the
env's rubric applied to the final answer (parsed once into a
:class:`~affectgym.rewards.rubric.Reply`) and the trace of what the agent did. Intermediate
steps carry their own contribution (the penalty of an invalid action, the reward a
multi-step env pays for an answer that does not end the episode) and the terminal step
carries the rest, so the step rewards of an episode sum to its score.

When the LLM judge fails. A rubric criterion scored by an LLM judge
(:mod:`affectgym.rewards.judge`) is :class:`~affectgym.rewards.rubric.Unscored` for a reply
whose judging failed (the server down, an answer that does not parse, a timeout, after the
retries): the reward is then the rubric total without the judge's part, never a score as if
the judge had said 0. The base class reads the failure from the step's
:class:`~affectgym.rewards.rubric.RubricResult`, so users see it: every ``info`` carries
``unscored`` (the step's unscored criteria and why) and ``judge_failures`` (1 when the
judge failed on the step's answer, else 0), and ``info["outcome"]["judge_failures"]`` counts
those of the whole episode (the eval runner records it; 0 for an env without a judge).

The base class owns the episode's bookkeeping: the messages, the trace (both readable as
:attr:`AffectEnv.messages` and :attr:`AffectEnv.trace`), the paid reward, the turn limit,
the tool budget, truncation, judge failures and steps after the end. A subclass implements public hooks
only; no subclass overrides a private method.

An env is composed: its constructor hands ``AffectEnv.__init__`` the ``scenarios`` of the
chosen split (each with a string ``id``) and the ``rubric``, a
:class:`~affectgym.rewards.rubric.Rubric` whose criteria receive ``(scenario, reply, trace)``;
the base calls none of the subclass's methods while it is built, so a subclass sets its
attributes in any order. Every env provides:

* ``system_prompt(scenario)`` and ``first_observation(scenario)``
* ``parse_final(text)`` -> ``(answer, None)`` or ``(None, error message)``
* tools: methods decorated with :func:`~affectgym.envs.tools.tool` that read ``self.scenario``
* for the checker: ``reference_answer(scenario)`` and ``canaries(scenario)``

and may provide:

* ``on_answer(reply)`` -> :class:`Continue` or ``None``: for envs where an answer does not
  end the episode (dialogue turns, state commands); by default every answer is final
* ``scenario_text(scenario)`` and ``split_group(scenario)``: the words a text-only memoriser
  could learn (the checker's leakage test) and the group the split keeps together
* ``start_episode(options)``, ``history_messages(scenario)``, ``episode_info(scenario)``:
  where an episode starts (and any state of its own it starts with), the chat it starts
  after, extra ``info`` keys
* ``step_contribution(entry, trace)``: the reward of a tool call or an invalid message
* ``tool_data(name, arguments)``: the result of the tool call just made as data (numbers by
  name) for programs that play the env (baselines, analysis); the base puts it in the
  trace entry (``"data"``) and in ``info["tool_data"]`` (by tool name)
* ``outcome(scenario, answer, result)``: facts for evaluation records
* ``flat_tool_calls(scenario)``, ``flat_system_prompt(scenario)``, ``flat_prompt(scenario)``:
  the single-shot form
* ``fuzz_actions()`` and ``flip_label(scenario)``: more for the checker
* ``score_bounds()``: the rubric's lowest and highest total (``reward_range`` is derived from it)
* class attributes ``score_range``, ``label_set``, ``done_message`` and ``turn_limit_message``

See ``docs/plugins.md`` for a single-answer and a multi-step example.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import gymnasium as gym

from affectgym.envs.parsing import TOOL_CALL_FORMAT, ToolCall, parse_tool_calls
from affectgym.envs.spaces import TextSpace, clip_text
from affectgym.envs.tools import ToolArgumentError, ToolSpec, tool, tool_specs
from affectgym.rewards.rubric import Criterion, Reply, Rubric, RubricResult

Trace = list[dict[str, Any]]

#: The error of a message that gives a final answer after its tool calls (the answer is not read).
ANSWER_AFTER_TOOL_CALLS = (
    "this message also gives a final answer after its tool calls; it was not read, because it was "
    "written before the tool outputs. Read the outputs, then send the final answer as a message of its own"
)


@dataclasses.dataclass(frozen=True)
class Continue:
    """What :meth:`AffectEnv.on_answer` returns when an answer does not end the episode.

    The base class then records the answer (``entry`` in the trace, the answer and
    ``observation`` in the messages), pays ``reward``, moves to ``scenario`` when one is
    given, and truncates the episode if that was the last turn allowed.

    Attributes:
        observation: The next user message.
        reward: The step's reward: the share of the episode's score this answer earned.
        components: The step's ``info["reward_components"]``.
        entry: The trace entry that records the answer, for the rubric to read back when
            it scores the episode (e.g. ``{"type": "control", "action": [...]}``); by
            default ``{"type": "answer", "text": <the message>}``.
        scenario: The scenario the episode goes on with (e.g. the next dialogue turn);
            ``None`` keeps the current one.
        info: Extra keys of the step's ``info``.
        result: The rubric's score of this answer, when the env scored it: its unscored
            criteria (a judge outage) reach the step's ``info`` and the episode's count.
    """

    observation: str
    reward: float
    components: Mapping[str, float | None] = dataclasses.field(default_factory=dict)
    entry: Mapping[str, Any] | None = None
    scenario: Any = None
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    result: RubricResult | None = None


class AffectEnv(gym.Env[str, str]):
    """Base class of affectgym's text environments (see the module docstring).

    Args:
        scenarios: The scenarios of the split, each with a unique ``str`` ``id``.
        rubric: Scores an episode's final answer and trace.
        split: Which scenarios to serve, e.g. ``"train"``, ``"eval"`` or ``"all"``.
        max_turns: Agent messages allowed before the episode is truncated.
        max_tool_calls: Successful tool calls allowed per episode (``None``: no budget);
            further calls are rejected as invalid.
        invalid_action_penalty: Reward subtracted for each message that is neither a valid
            tool call nor a valid answer (and for steps after the episode ended).
        max_action_chars: Longest message read; longer ones are rejected as invalid.
        max_observation_chars: Longest observation returned; longer tool outputs are cut.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the transcript) or ``"human"``
            (``reset`` and ``step`` print each new message of the transcript to stdout, as
            Gymnasium's human mode renders during ``step``; ``render()`` returns ``None``).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: Range of the rubric total (before invalid-action penalties); subclasses narrow it.
    score_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    #: Labels a hidden gold answer can take; used by the checker's label-flip test.
    label_set: ClassVar[tuple[str, ...]] = ()
    #: The observation after the answer that ends the episode.
    done_message: ClassVar[str] = "Final answer received. The episode is over."
    #: Appended to the last observation when the turn limit ends the episode first.
    turn_limit_message: ClassVar[str] = (
        "Turn limit of {max_turns} reached without a final answer; the episode is over."
    )

    def __init__(
        self,
        *,
        scenarios: Sequence[Any],
        rubric: Rubric,
        split: str = "train",
        max_turns: int = 8,
        max_tool_calls: int | None = None,
        invalid_action_penalty: float = 0.05,
        max_action_chars: int = 32_768,
        max_observation_chars: int = 32_768,
        render_mode: str | None = None,
    ):
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
        if max_tool_calls is not None and (not isinstance(max_tool_calls, int) or max_tool_calls < 0):
            raise ValueError(f"max_tool_calls must be None or an integer >= 0, got {max_tool_calls!r}")
        if not (isinstance(invalid_action_penalty, (int, float)) and 0 <= invalid_action_penalty < math.inf):
            raise ValueError(
                f"invalid_action_penalty must be a finite number >= 0, got {invalid_action_penalty!r}"
            )
        if render_mode not in (None, *self.metadata["render_modes"]):
            modes = ", ".join(repr(mode) for mode in self.metadata["render_modes"])
            raise ValueError(f"render_mode must be None or one of {modes}, got {render_mode!r}")
        self.split = split
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.invalid_action_penalty = float(invalid_action_penalty)
        self.max_action_chars = int(max_action_chars)
        self.render_mode = render_mode
        self.observation_space = TextSpace(max_length=max_observation_chars)
        self.action_space = TextSpace(max_length=max_action_chars)
        self.scenarios: list[Any] = list(scenarios)
        if not self.scenarios:
            raise ValueError(f"{type(self).__name__}: split {split!r} has no scenarios")
        self._by_id = {s.id: s for s in self.scenarios}
        if len(self._by_id) != len(self.scenarios):
            raise ValueError(f"{type(self).__name__}: scenario ids must be unique")
        self.rubric = self._with_invalid_penalty(rubric)
        self.scenario: Any = None
        # The episode's chat: each message is built once and never changed, so every step's
        # info shares the dicts instead of copying the whole chat (quadratic in the turns).
        self._messages: list[dict[str, Any]] = []
        self._tools_info: list[dict[str, Any]] = []  # info["tools"]: parsed once an episode
        self._tool_data: dict[str, Any] = {}  # info["tool_data"]: each tool's last data, copied once from the trace
        self._trace: Trace = []
        self._turn = 0
        self._paid = 0.0
        self._done = True
        self._judge_failures = 0  # the episode's steps whose answer the judge failed on
        self._messages_printed = 0  # render_mode="human": messages already on stdout

    # ----------------------------------------------------------------- subclass API
    def system_prompt(self, scenario: Any) -> str:
        """The system message: the task, the answer format and the tools (never the label)."""
        raise NotImplementedError

    def first_observation(self, scenario: Any) -> str:
        """The first user message of an episode."""
        raise NotImplementedError

    def parse_final(self, text: str) -> tuple[Any, str | None]:
        """Read a final answer: ``(answer, None)``, or ``(None, what was wrong + what is accepted)``."""
        raise NotImplementedError

    def score_bounds(self) -> tuple[float, float]:
        """The lowest and highest total the rubric gives an answer, before invalid-action penalties
        (default: :attr:`score_range`); an env whose rubric can go below 0 or above 1 derives them from it."""
        return self.score_range

    @property
    def reward_range(self) -> tuple[float, float]:
        """Reachable step rewards, derived from :meth:`score_bounds`: from below 0 by the invalid-action
        penalty (a step that pays nothing pays 0) to the highest total."""
        low, high = self.score_bounds()
        return (min(low, 0.0) - self.invalid_action_penalty, high)

    def on_answer(self, reply: Reply) -> Continue | None:
        """What a valid answer does: ``None`` ends the episode, a :class:`Continue` goes on.

        Called for every message that :meth:`parse_final` accepts, before it is recorded;
        ``self.scenario`` and :attr:`trace` show the episode so far. With ``None`` (the
        default: every answer is final) the base scores the episode,
        ``score(scenario, reply.text, trace)``, and pays what the earlier steps did not.
        A multi-step env returns :class:`Continue` for the answers that do not end it, and
        its rubric counts what those steps paid (from the entries they left in the trace),
        so that the step rewards still sum to the score.

        Args:
            reply: The message and the answer :meth:`parse_final` read from it.
        """
        return None

    def start_episode(self, options: Mapping[str, Any]) -> Any:
        """The scenario an episode starts on, from validated reset options.

        Called once by every ``reset``, after seeding and before the first observation,
        so an env with state of its own per episode (a simulation) also sets it up here.
        By default ``options["scenario"]``, else the scenario of ``options["scenario_id"]``,
        else one drawn with ``self.np_random``.
        """
        if "scenario" in options:
            scenario = options["scenario"]
            if not isinstance(getattr(scenario, "id", None), str):
                shown = clip_text(repr(scenario), 60)
                hint = f"; to pick one by its id, pass options={{'scenario_id': {shown}}}" if isinstance(scenario, str) else ""
                raise ValueError(
                    f"options['scenario'] must be a scenario object with a str id (like those in env.scenarios), "
                    f"got {type(scenario).__name__} {shown}{hint}"
                )
            return scenario
        if "scenario_id" in options:
            return self.get_scenario(options["scenario_id"])
        return self.scenarios[int(self.np_random.integers(len(self.scenarios)))]

    def history_messages(self, scenario: Any) -> list[dict[str, Any]]:
        """Chat messages an episode on ``scenario`` starts after (between the system message and the first observation); none by default."""
        return []

    def episode_info(self, scenario: Any) -> dict[str, Any]:
        """Extra ``info`` keys about the current scenario, in every step's ``info``; none by default."""
        return {}

    def step_contribution(self, entry: Mapping[str, Any], trace: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Named reward of a non-final step (its share of the rubric), e.g. an invalid action's penalty."""
        if entry["type"] == "invalid":
            return {"invalid_actions": -self.invalid_action_penalty}
        return {}

    def tool_data(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The result of the call of tool ``name`` just made, as JSON-ready data; ``None`` (the default)
        when the tool's text is all there is. Programs read it instead of parsing the text."""
        return None

    def outcome(self, scenario: Any, answer: Any, result: RubricResult) -> dict[str, Any]:
        """Facts for evaluation records, revealed in ``info["outcome"]`` once the episode is over.

        Classification envs return ``prediction``, ``label``, ``correct`` and ``confidence``
        (plus any subset flags such as ``pivot``); the eval runner computes its metrics
        from these. ``answer`` is the parsed final answer, ``None`` when unanswered. The base
        class adds ``judge_failures`` (the episode's failed LLM-judge verdicts).
        """
        return {}

    #: How evaluation summarises the outcomes of this env's episodes: names of summaries of
    #: :mod:`affectgym.eval.summary` (``"classification"``, ``"reward_by_target"``,
    #: ``"dialogue"``, or one a plug-in registers), each written to ``summary.json`` under its
    #: name. Names rather than functions, because envs never import the eval layer above them.
    outcome_summaries: ClassVar[tuple[str, ...]] = ()

    def reference_answer(self, scenario: Any) -> tuple[str, Trace]:
        """A good final answer and trace for ``scenario``; canaries must score below it."""
        raise NotImplementedError

    def canaries(self, scenario: Any) -> dict[str, tuple[str | None, Trace]]:
        """Reward-hacking attempts (name -> final text, trace) that must score below the reference."""
        return {}

    def bare_answer(self, scenario: Any) -> tuple[str, Trace] | None:
        """The answer format filled in with nothing of the work shown: the gold answer alone,
        no reasoning and no tool call (``None``, the default: the env has no such form).

        The red team (:mod:`affectgym.redteam`) edits it as well as the reference: an edit
        that lifts it to the reference's score bought what the skill is paid for.
        """
        return None

    def other_target(self, scenario: Any) -> Any:
        """``scenario`` asking for another answer (the default: :meth:`flip_label`), or ``None``.

        ``validate``'s ``reward_pays_skill`` scores the reference of this scenario on the true one:
        a reward that pays the skill must pay it less.
        """
        return self.flip_label(scenario)

    #: Arguments of the env, besides ``split``, that change which scenario falls in which split (an
    #: eval fraction, a grouping). Training refuses them (:func:`~affectgym.envs.registration.split_shaping_arguments`):
    #: a run must never train on a scenario of the registered validation or eval split.
    split_arguments: ClassVar[tuple[str, ...]] = ()

    #: Canaries that must score below the reference on this share of the scenarios rather than on
    #: every one (name -> share in (0, 1]); a scorer that reads meaning through a model gets a margin
    #: here, named and measured, never a silent pass. Every other canary must lose everywhere.
    canary_min_share: ClassVar[Mapping[str, float]] = {}

    def fuzz_actions(self) -> list[str]:
        """Well-formed actions the checker mixes into its fuzzing (e.g. valid tool calls)."""
        return [f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>' for name in self.tools]

    def flat_tool_calls(self, scenario: Any) -> list[tuple[str, dict[str, Any]]]:
        """Tool calls whose outputs :meth:`flat_prompt` pre-renders: by default every tool without required arguments."""
        return [
            (name, {})
            for name, spec in self.tools.items()
            if not spec.schema["function"]["parameters"]["required"]
        ]

    def flat_system_prompt(self, scenario: Any) -> str:
        """System message of the single-shot form; by default the interactive one."""
        return self.system_prompt(scenario)

    def flat_observation(self, scenario: Any) -> str:
        """Text before the pre-rendered tool outputs in the single-shot form; by default the first observation."""
        return self.first_observation(scenario)

    # ----------------------------------------------------------------- public contract
    @property
    def tools(self) -> dict[str, ToolSpec]:
        """The tools this env declares, by name."""
        return tool_specs(self)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools."""
        return [spec.schema for spec in self.tools.values()]

    def tool_call_instruction(self) -> str:
        """The sentence of the system prompt that asks for tool calls as text (``""`` without tools).

        ``info["tool_call_instruction"]`` repeats it, so an agent that sends the tools natively
        (OpenAI ``tools``) can put its own sentence in its place.

        >>> import affectgym
        >>> affectgym.make("affectgym/Sarcasm-v0").unwrapped.tool_call_instruction()
        'Call a tool as <tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>'
        """
        if not self.tools:
            return ""
        return f'Call a tool as <tool_call>{{"name": "{next(iter(self.tools))}", "arguments": {{}}}}</tool_call>'

    @property
    def trace(self) -> tuple[dict[str, Any], ...]:
        """What the agent did so far in this episode (copies of the entries; see ``docs/plugins.md``)."""
        return tuple(dict(entry) for entry in self._trace)

    @property
    def messages(self) -> tuple[dict[str, Any], ...]:
        """The chat of this episode so far, OpenAI style (copies)."""
        return tuple(_copy_message(m) for m in self._messages)

    @property
    def scenario_ids(self) -> list[str]:
        """Ids of the scenarios of this split, in order."""
        return [s.id for s in self.scenarios]

    def get_scenario(self, scenario_id: str) -> Any:
        """The scenario with this id.

        Raises:
            KeyError: No scenario of this split has that id.
        """
        try:
            return self._by_id[scenario_id]
        except KeyError:
            sample = ", ".join(self.scenario_ids[:5])
            raise KeyError(
                f"no scenario {scenario_id!r} in split {self.split!r} of {type(self).__name__} "
                f"({len(self.scenarios)} scenarios, e.g. {sample})"
            ) from None

    def parse_reply(self, text: str | None) -> Reply:
        """``text`` read once with :meth:`parse_final`, as the criteria receive it.

        ``None`` (unanswered) gives ``Reply(None)``; a text that does not parse keeps its
        text with ``answer=None``, and so does a tool call of an env with tools: as in
        :meth:`step`, a message that calls a tool is not a final answer (a flattened
        completion cannot smuggle its answer into a tool call's arguments).
        """
        if text is None:
            return Reply(None)
        if self.tools and parse_tool_calls(text).found:
            return Reply(text, None)
        answer, problem = self.parse_final(text)
        return Reply(text, answer if problem is None else None)

    def score(self, scenario: Any, final_text: str | None, trace: Sequence[Mapping[str, Any]]) -> RubricResult:
        """Score a final answer (``None`` = unanswered) given what the agent did. Pure."""
        return self.rubric.score(scenario, self.parse_reply(final_text), trace)

    def score_batch(
        self,
        scenarios: Sequence[Any],
        final_texts: Sequence[str | None],
        traces: Sequence[Sequence[Mapping[str, Any]]],
    ) -> list[RubricResult]:
        """:meth:`score` for a batch; expensive criteria see the whole batch at once."""
        return self.rubric.score_batch(scenarios, [self.parse_reply(t) for t in final_texts], traces)

    def flat_prompt(self, scenario: Any) -> list[dict[str, str]]:
        """Single-shot messages: system + user with every flat tool's output pre-rendered."""
        sections = [text for text in [self.flat_observation(scenario)] if text]
        with self._viewing(scenario):
            for name, arguments in self.flat_tool_calls(scenario):
                sections.append(f"[{name}]\n{getattr(self, name)(**arguments)}")
        return [
            {"role": "system", "content": self.flat_system_prompt(scenario)},
            {"role": "user", "content": "\n\n".join(sections)},
        ]

    def flat_trace(self, scenario: Any) -> Trace:
        """The trace equivalent to :meth:`flat_prompt` (its tool calls, each made once)."""
        trace: Trace = []
        with self._viewing(scenario):
            for name, arguments in self.flat_tool_calls(scenario):
                output = getattr(self, name)(**arguments)
                trace.append({"type": "tool_call", "name": name, "arguments": arguments, "output": output, "ok": True})
        return trace

    def scenario_text(self, scenario: Any) -> str | None:
        """The words of ``scenario`` a text-only reader could memorise (for the leakage check).

        ``None`` (the default) skips the check; label envs return the text an agent reads
        without the modality under test (for a speech clip: the context and the line).
        """
        return None

    def split_group(self, scenario: Any) -> str:
        """The split group of ``scenario`` (scenarios of a group always share a split); default its id."""
        return scenario.id

    def flip_label(self, scenario: Any) -> Any:
        """``scenario`` with a different gold label, or ``None`` when the env hides no label."""
        if not self.label_set or not hasattr(scenario, "label"):
            return None
        other = next(label for label in self.label_set if label != scenario.label)
        return dataclasses.replace(scenario, label=other)

    # ----------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: Seeds ``self.np_random``; the same seed picks the same scenario.
            options: ``{"scenario_id": id}`` picks a scenario by id (a ``str``);
                ``{"scenario": obj}`` runs a scenario object directly (used by training
                adapters).

        Returns:
            The first observation and ``info`` with ``messages``, ``tools``, ``scenario_id``,
            ``split``, ``reward_components`` (empty) and ``judge_failures`` (0). Every step's
            ``info`` of the episode shares its message dicts, tool schemas and tool data (built
            once, never changed by the env): read them, and copy one before changing it.

        Raises:
            ValueError: ``options`` is not a dict, has other keys, or holds a value of the
                wrong type; the env stays usable (the next ``step`` asks for a reset).
            KeyError: No scenario of this split has that ``scenario_id``.
        """
        super().reset(seed=seed)
        # Between episodes until the new one is set up: a reset that raises leaves no
        # half-started episode, and the next step asks for a reset.
        self._done = True
        scenario = self.start_episode(self._reset_options(options))
        self.scenario = scenario
        self._trace = []
        self._tool_data = {}
        self._tools_info = json.loads(self._tools_json)
        self._turn = 0
        self._paid = 0.0
        self._judge_failures = 0
        self._done = False
        observation = self._clip(self.first_observation(scenario))
        self._messages = [
            {"role": "system", "content": self.system_prompt(scenario)},
            *(dict(m) for m in self.history_messages(scenario)),
            {"role": "user", "content": observation},
        ]
        self._messages_printed = 0
        if self.render_mode == "human":
            self.render()
        return observation, self._info({})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Read one agent message and answer it (see the module docstring). Never raises on ``action``.

        ``info["unscored"]`` names the criteria left unscored on this step's answer and why,
        ``info["judge_failures"]`` is 1 when the LLM judge failed on it, and once the episode
        is over ``info["outcome"]["judge_failures"]`` counts those of the episode.
        """
        result = self._after_end() if self._done else self._step_action(action)
        if self.render_mode == "human":
            self.render()
        return result

    def render(self) -> str | None:
        """With ``render_mode="ansi"``, the episode's transcript as text; with ``"human"``, print its new messages."""
        if self.render_mode == "human":
            new = self._messages[self._messages_printed:]
            self._messages_printed = len(self._messages)
            if new:
                print(_transcript(new), flush=True)
            return None
        if self.render_mode != "ansi":
            return None
        return _transcript(self._messages)

    # ----------------------------------------------------------------- internals
    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._turn += 1
        problem = self._check_action(action)
        if problem is None:
            parsed = parse_tool_calls(action)
            if parsed.found and self.tools:
                errors = list(parsed.errors)
                if parsed.after.strip() and self.parse_final(parsed.after)[1] is None:
                    errors.append(ANSWER_AFTER_TOOL_CALLS)
                return self._run_tools(action, parsed.calls, errors)
            answer, problem = self.parse_final(action)
            if problem is None:
                return self._answer(Reply(action, answer))
        return self._reject(action, problem)

    def _reset_options(self, options: Any) -> dict[str, Any]:
        accepted = "accepted: {'scenario_id': <id, a str>} or {'scenario': <scenario object>}"
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise ValueError(f"reset options must be a dict, got {type(options).__name__}; {accepted}")
        unknown = sorted(map(str, set(options) - {"scenario_id", "scenario"}))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; {accepted}")
        scenario_id = options.get("scenario_id")
        if "scenario_id" in options and not isinstance(scenario_id, str):
            raise ValueError(
                f"options['scenario_id'] must be a scenario id (a str), got {type(scenario_id).__name__} "
                f"{clip_text(repr(scenario_id), 60)}; ids are in env.scenario_ids, e.g. {self.scenario_ids[0]!r}"
            )
        return dict(options)

    def _info(
        self, components: Mapping[str, float | None], scored: RubricResult | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "messages": list(self._messages),
            "tools": self._tools_info,
            "tool_call_instruction": self._tool_call_text,
            "scenario_id": self.scenario.id,
            "split": self.split,
            "turn": self._turn,
            "max_turns": self.max_turns,
            "reward_components": dict(components),
            "tool_data": copy.deepcopy(self._tool_data),  # a few tools' numbers: each step's own copy, as Gymnasium asks
            "unscored": dict(scored.unscored) if scored is not None else {},
            "judge_failures": _judge_failed(scored),
            **self.episode_info(self.scenario),
            **extra,
        }

    def _check_action(self, action: Any) -> str | None:
        if not isinstance(action, str):
            return f"the action must be text (str), got {type(action).__name__}; send your message as a string"
        if len(action) > self.max_action_chars:
            return f"the message is {len(action):,} characters long; at most {self.max_action_chars:,} are read"
        if not action.strip():
            return f"the message is empty; {self._accepted()}"
        return None

    def _accepted(self) -> str:
        if self.tools:
            names = ", ".join(self.tools)
            return f"accepted: a tool call {TOOL_CALL_FORMAT} (tools: {names}) or a final answer"
        return "accepted: a final answer"

    def _run_tools(self, action: str, calls: list[ToolCall], errors: list[str]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._messages.append(
            {
                "role": "assistant",
                "content": action,
                "tool_calls": [
                    {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": _json(c.arguments)}}
                    for c in calls
                ],
            }
        )
        outputs = []
        failed = list(errors)
        for call in calls:
            output, ok = self._call_tool(call)
            entry = {"type": "tool_call", "name": call.name, "arguments": call.arguments, "output": output, "ok": ok}
            data = self.tool_data(call.name, call.arguments) if ok else None
            if data is not None:
                entry["data"] = data
                self._tool_data[call.name] = data
            self._trace.append(entry)
            self._messages.append({"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": output})
            outputs.append(f"[{call.name}]\n{output}" if len(calls) > 1 else output)
            if not ok:
                failed.append(output)
        components: dict[str, float] = {}
        # Each call is priced on the trace up to itself, as if it had come in a message of its own.
        for end in range(len(self._trace) - len(calls) + 1, len(self._trace) + 1):
            _add(components, self.step_contribution(self._trace[end - 1], self._trace[:end]))
        if failed:
            entry = {"type": "invalid", "error": "; ".join(failed)}
            self._trace.append(entry)
            _add(components, self.step_contribution(entry, self._trace))
            if errors:
                outputs.append("Error: " + "; ".join(errors))
                self._messages.append({"role": "user", "content": "Error: " + "; ".join(errors)})
        observation = self._clip("\n\n".join(outputs))
        return self._intermediate(observation, components)

    def _call_tool(self, call: ToolCall) -> tuple[str, bool]:
        spec = self.tools.get(call.name)
        if spec is None:
            return f"Error: unknown tool {call.name!r}; available tools: {', '.join(self.tools)}", False
        if self.max_tool_calls is not None and successful_tool_calls(self._trace) >= self.max_tool_calls:
            return f"Error: the tool budget of {self.max_tool_calls} calls is spent; give your final answer now", False
        try:
            arguments = spec.validate(call.arguments)
        except ToolArgumentError as exc:
            return f"Error: {exc}", False
        return str(getattr(self, call.name)(**arguments)), True

    def _reject(self, action: Any, problem: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        shown = action if isinstance(action, str) else repr(action)
        self._messages.append({"role": "assistant", "content": clip_text(shown, 2_000)})
        observation = self._clip(f"Error: {problem}")
        self._messages.append({"role": "user", "content": observation})
        entry = {"type": "invalid", "error": problem}
        self._trace.append(entry)
        return self._intermediate(observation, self.step_contribution(entry, self._trace))

    def _intermediate(
        self,
        observation: str,
        components: Mapping[str, float | None],
        reward: float | None = None,
        extra: Mapping[str, Any] | None = None,
        scored: RubricResult | None = None,
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A step that does not end the episode, unless it used the last turn; ``reward`` defaults to the components' sum."""
        self._judge_failures += _judge_failed(scored)
        if self._turn >= self.max_turns:
            return self._finish(None, observation=observation)
        paid = float(sum(v for v in components.values() if v is not None)) if reward is None else float(reward)
        self._paid += paid
        return observation, paid, False, False, self._info(components, scored, **dict(extra or {}))

    def _answer(self, reply: Reply) -> tuple[str, float, bool, bool, dict[str, Any]]:
        going_on = self.on_answer(reply)
        if going_on is None:
            return self._finish(reply)
        self._messages.append({"role": "assistant", "content": reply.text})
        self._trace.append(dict(going_on.entry) if going_on.entry is not None else {"type": "answer", "text": reply.text})
        if going_on.scenario is not None:
            self.scenario = going_on.scenario
        observation = self._clip(going_on.observation)
        self._messages.append({"role": "user", "content": observation})
        return self._intermediate(observation, going_on.components, going_on.reward, going_on.info, going_on.result)

    def _finish(self, reply: Reply | None, observation: str | None = None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        truncated = reply is None
        if reply is not None:
            self._messages.append({"role": "assistant", "content": reply.text})
            self._trace.append({"type": "final", "text": reply.text})
            observation = self._clip(self.done_message)
        else:
            notice = self.turn_limit_message.format(max_turns=self.max_turns)
            observation = self._clip(f"{observation}\n\n{notice}")
            reply = Reply(None)
        result = self.rubric.score(self.scenario, reply, self._trace)
        reward = result.total - self._paid
        self._paid = result.total
        self._done = True
        self._judge_failures += _judge_failed(result)
        info = self._info(
            result.components,
            result,
            episode_reward=result.total,
            final_answer=reply.answer,
            truncated_unanswered=truncated,
            outcome={
                **self.outcome(self.scenario, reply.answer, result),
                "judge_failures": self._judge_failures,
            },
        )
        return observation, float(reward), not truncated, truncated, info

    def _after_end(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        message = "Error: the episode is over; call reset() to start a new one. Nothing was done."
        info = self._info({"invalid_actions": -self.invalid_action_penalty}) if self.scenario else {"reward_components": {}}
        return message, -self.invalid_action_penalty, True, False, info

    def _clip(self, text: str) -> str:
        return clip_text(text, self.observation_space.max_length)

    @contextmanager
    def _viewing(self, scenario: Any) -> Iterator[None]:
        saved = self.scenario
        self.scenario = scenario
        try:
            yield
        finally:
            self.scenario = saved

    @functools.cached_property
    def _tools_json(self) -> str:
        return json.dumps(self.tool_schemas)

    @functools.cached_property
    def _tool_call_text(self) -> str:
        return self.tool_call_instruction()

    def _with_invalid_penalty(self, rubric: Rubric) -> Rubric:
        if self.invalid_action_penalty == 0 or any(c.name == "invalid_actions" for c in rubric.criteria):
            return rubric
        criterion = Criterion("invalid_actions", count_invalid_actions, weight=-self.invalid_action_penalty)
        return dataclasses.replace(rubric, criteria=(*rubric.criteria, criterion))


def count_invalid_actions(scenario: Any, reply: Reply, trace: Sequence[Mapping[str, Any]]) -> float:
    """Number of invalid messages in the trace (each costs the env's ``invalid_action_penalty``).

    >>> count_invalid_actions(None, Reply("x"), [{"type": "invalid"}, {"type": "tool_call"}, {"type": "invalid"}])
    2.0
    """
    return float(sum(1 for entry in trace if entry.get("type") == "invalid"))


def successful_tool_calls(trace: Sequence[Mapping[str, Any]]) -> int:
    """Tool calls in the trace that ran (the ones the tool budget counts).

    >>> successful_tool_calls([{"type": "tool_call", "ok": True}, {"type": "tool_call", "ok": False}, {"type": "invalid"}])
    1
    """
    return sum(1 for entry in trace if entry.get("type") == "tool_call" and entry.get("ok"))


def _judge_failed(result: RubricResult | None) -> int:
    """1 when the LLM judge failed on the answer ``result`` scores (its criteria went unscored), else 0."""
    return int(result is not None and "judge" in result.failed_scorers)


def _transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """Messages as the readable transcript both render modes show: a ``[ROLE (name)]`` head, then the text and calls."""
    lines = []
    for message in messages:
        head = message["role"].upper()
        if message.get("name"):
            head += f" ({message['name']})"
        body = message.get("content") or ""
        for call in message.get("tool_calls", []):
            body += f"\n-> {call['function']['name']}({call['function']['arguments']})"
        lines.append(f"[{head}]\n{body.strip()}")
    return "\n\n".join(lines) + "\n"


def _copy_message(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of a chat message that shares no mutable object with the original."""
    copied = dict(message)
    if "tool_calls" in copied:
        copied["tool_calls"] = [{**call, "function": dict(call["function"])} for call in copied["tool_calls"]]
    return copied


def _add(total: dict[str, float], part: Mapping[str, float]) -> None:
    for name, value in part.items():
        total[name] = total.get(name, 0.0) + value


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(repr(value))


__all__ = [
    "ANSWER_AFTER_TOOL_CALLS",
    "AffectEnv",
    "Continue", "Reply", "TextSpace", "Trace", "count_invalid_actions", "successful_tool_calls", "tool"]
