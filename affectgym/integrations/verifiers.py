"""An affectgym env as a verifiers environment: ``load_environment(env_id, **env_kwargs)``.

The environment is verifiers' multi-turn environment (``vf.MultiTurnEnv``, the classic
API that ``vf-eval`` and prime-rl load), for every affectgym env: tool calls, retries after
an invalid message and dialogue turns all take turns, so even a single-answer env is
multi-turn. The env does the work, through its public contract only:

* dataset: one row per scenario of the split (``prompt`` = the chat ``reset`` opens with,
  ``info`` = the scenario id, split and seed), ``eval_dataset`` the same for ``eval_split``;
  no gold label is in a row;
* tools: the env's tool schemas, given to the model as verifiers tools; a reply's tool calls
  go to the env as one ``step`` (its ``<tool_call>`` text, as
  :func:`~affectgym.agents.openai_agent.action_from_message` writes it for any
  OpenAI-compatible agent), and the env's tool outputs come back as the ``tool`` messages
  of those calls; a reply without tool calls is a message for the env to read (an answer,
  or something it rejects, as it would in process);
* turns: the env's own (its turn limit truncates; verifiers' limit is off), and the rollout
  ends when the env's episode ends;
* rubric: calls the env's own ``score(scenario, final_text, trace)`` on the episode the
  rollout played (one reward path: what the env pays in process, up to float rounding of
  the step sum), weight 1 as ``episode_reward``, and logs each rubric component as a
  metric of its own (weight 0). A rollout verifiers stopped early (an error, a timeout) is
  scored as unanswered, as the env scores a truncated episode.

Each rollout plays its own env instance, taken from a pool (one per split) when the
rollout starts and returned once it is scored. ``state["affectgym_outcome"]`` and
``state["affectgym_step_rewards"]`` hold the env's outcome and step rewards (``vf-eval -C
affectgym_outcome,affectgym_step_rewards`` saves them).

With vf-eval, name the env with ``env`` (vf-eval passes an ``env_id`` of its own)::

    vf-eval affectgym.integrations.verifiers -a '{"env": "affectgym/Sarcasm-v0"}' -m MODEL -b URL

Needs ``pip install 'affectgym[verifiers]'``; verifiers is imported when an environment is loaded.
"""

from __future__ import annotations

import functools
import math
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from affectgym.agents.openai_agent import action_from_message
from affectgym.eval.runner import episode_seed
from affectgym.integrations.openenv.app import check_text_env

#: The env id ``load_environment`` serves when none is given.
DEFAULT_ENV_ID = "affectgym/Sarcasm-v0"
#: State keys of the rollout's env, the env's outcome and its step rewards.
ENV_KEY, OUTCOME_KEY, STEP_REWARDS_KEY = "affectgym_env", "affectgym_outcome", "affectgym_step_rewards"
RESULT_KEY = "affectgym_result"


class EnvPool:
    """Env instances of one id, kwargs and split, reused across rollouts (making one is slow).

    Args:
        env_id: A registered env id.
        env_kwargs: Keyword arguments of ``affectgym.make`` (``split`` included).
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def take(self) -> Any:
        """An env no running rollout holds (a new one when every env is busy)."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        import affectgym

        return affectgym.make(self.env_id, **self.env_kwargs)

    def give_back(self, env: Any) -> None:
        """Return an env for the next rollout."""
        with self._lock:
            self._idle.append(env)


def scenario_rows(env: Any, seed: int = 0) -> dict[str, list[Any]]:
    """The dataset columns of ``env``'s split: ``prompt`` (the opening chat) and ``info``, one row per scenario.

    ``info`` holds ``scenario_id``, ``split`` and ``seed`` (the seed of the episode, as
    :func:`~affectgym.eval.runner.episode_seed` gives rollout 0 of an ``affectgym eval``).
    """
    base = env.unwrapped
    rows: dict[str, list[Any]] = {"prompt": [], "info": []}
    for scenario_id in base.scenario_ids:
        episode = episode_seed(seed, scenario_id, 0)
        _, info = env.reset(seed=episode, options={"scenario_id": scenario_id})
        rows["prompt"].append([{"role": m["role"], "content": m["content"]} for m in info["messages"]])
        rows["info"].append({"scenario_id": scenario_id, "split": base.split, "seed": episode})
    return rows


def message_action(message: Any) -> str:
    """The env action of a verifiers assistant message: its text, then its tool calls as ``<tool_call>`` text.

    >>> class Call:
    ...     name, arguments = "get_transcript", "{}"
    >>> class Message:
    ...     content, tool_calls = "Let me read it.", [Call()]
    >>> message_action(Message())
    'Let me read it.\\n<tool_call>{"name": "get_transcript", "arguments": {}}</tool_call>'
    """
    content = message.content
    if isinstance(content, list):  # content parts: the text ones are the message
        content = "".join(getattr(part, "text", None) or (part.get("text", "") if isinstance(part, Mapping) else "") for part in content)
    calls = [{"function": {"name": call.name, "arguments": call.arguments}} for call in message.tool_calls or []]
    return action_from_message(content, calls)


def reply_messages(call_ids: list[str], observation: str, new_messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chat messages that answer a model reply, from what the env added to its chat for it.

    Each of the reply's tool calls gets a ``tool`` message: the env's output for it, in
    order, or the env's observation when the env ran no call for it (a malformed call, a
    call in a message it rejected); errors the env adds after the outputs follow as a user
    message. A reply without tool calls gets the observation as a user message.

    >>> reply_messages(["c1"], "out", [{"role": "assistant"}, {"role": "tool", "content": "out"}])
    [{'role': 'tool', 'tool_call_id': 'c1', 'content': 'out'}]
    >>> reply_messages([], "Error: no answer", [{"role": "assistant"}, {"role": "user", "content": "Error: no answer"}])
    [{'role': 'user', 'content': 'Error: no answer'}]
    """
    if not call_ids:
        return [{"role": "user", "content": observation}]
    outputs = [str(m.get("content") or "") for m in new_messages if m.get("role") == "tool"]
    answers = [
        {"role": "tool", "tool_call_id": call_id, "content": outputs[i] if i < len(outputs) else observation}
        for i, call_id in enumerate(call_ids)
    ]
    if len(outputs) >= len(call_ids):
        answers += [{"role": "user", "content": str(m.get("content") or "")} for m in new_messages if m.get("role") == "user"]
    return answers


def episode_result(env: Any) -> Any:
    """The env's own score of the episode ``env`` played (or is playing): a ``RubricResult``.

    The final text is the answer that ended the episode (the trace's ``final`` entry);
    an episode without one (truncated, or stopped by verifiers) is scored as unanswered.
    """
    base = env.unwrapped
    trace = base.trace
    final_text = trace[-1]["text"] if trace and trace[-1].get("type") == "final" else None
    return base.score(base.scenario, final_text, trace)


@functools.cache
def _classes() -> dict[str, type]:
    import verifiers as vf

    class AffectRubric(vf.Rubric):
        """The env's own ``score`` as the reward (``episode_reward``), each component as a metric."""

        def __init__(self, component_names: list[str], pools: Mapping[str, EnvPool]):
            super().__init__()
            self.pools = pools
            self.add_reward_func(self.episode_reward, weight=1.0)
            for name in component_names:
                self.add_metric(_component_metric(name), weight=0.0)

        async def episode_reward(self, state: Any) -> float:
            """The env's score of the rollout's episode."""
            return float(_result(state).total)

        @vf.cleanup
        async def return_env(self, state: Any) -> None:
            """Give the rollout's env back to its pool, once the rollout is scored."""
            env = state.pop(ENV_KEY, None)
            if env is not None:
                self.pools[env.unwrapped.split].give_back(env)

    class AffectGymEnv(vf.MultiTurnEnv):
        """An affectgym env as a verifiers multi-turn environment (see the module docstring)."""

        def __init__(self, pools: Mapping[str, EnvPool], **kwargs: Any):
            super().__init__(max_turns=-1, **kwargs)
            self.pools = pools

        async def setup_state(self, state: Any) -> Any:
            """Start the rollout's episode on a pooled env: the scenario and seed of its row."""
            info = state["info"]
            env = self.pools[info["split"]].take()
            env.reset(seed=info["seed"], options={"scenario_id": info["scenario_id"]})
            state[ENV_KEY] = env
            state[STEP_REWARDS_KEY] = []
            state[OUTCOME_KEY] = {}
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            """Step the env with the model's last reply; end the rollout when the episode ends."""
            env = state[ENV_KEY]
            reply = messages[-1]
            before = len(env.unwrapped.messages)
            observation, reward, terminated, truncated, info = env.step(message_action(reply))
            state[STEP_REWARDS_KEY].append(float(reward))
            answer = reply_messages([call.id for call in reply.tool_calls or []], observation, info["messages"][before:])
            if terminated or truncated:
                state[OUTCOME_KEY] = info.get("outcome") or {}
                # The episode is over: its tool results stay, the env's closing words ("the
                # episode is over") would be a synthetic user turn at the transcript's end.
                state["final_env_response"] = [m for m in answer if m["role"] != "user"]
            return answer

    for cls in (AffectRubric, AffectGymEnv):
        cls.__qualname__ = cls.__name__
    return {"AffectRubric": AffectRubric, "AffectGymEnv": AffectGymEnv}


def _result(state: Any) -> Any:
    # Scored once per rollout: the reward and every component metric read the same result.
    if RESULT_KEY not in state:
        state[RESULT_KEY] = episode_result(state[ENV_KEY])
    return state[RESULT_KEY]


def _component_metric(name: str) -> Any:
    async def metric(state: Any) -> float:
        value = _result(state).components.get(name)
        return math.nan if value is None else float(value)  # None: the judge failed on this rollout

    metric.__name__ = name
    return metric


def load_environment(
    env_id: str | None = None, *, env: str | None = None, eval_split: str = "eval", **env_kwargs: Any
) -> Any:
    """An affectgym env as a verifiers environment (see the module docstring).

    Args:
        env_id: A registered env id (built-in or from a plug-in); default ``affectgym/Sarcasm-v0``.
        env: The same, under the name vf-eval's ``-a/--env-args`` can pass (it gives
            ``load_environment`` an ``env_id`` of its own).
        eval_split: The split of ``eval_dataset`` (built when first asked for).
        env_kwargs: Keyword arguments of ``affectgym.make``; ``split`` (default ``"train"``)
            is the split of ``dataset``.

    Returns:
        A ``vf.MultiTurnEnv``: ``dataset`` and ``eval_dataset`` of scenarios, the env's tools,
        the env's rubric. Its logger (verifiers' own, shown by ``vf-eval``) says which split
        each dataset is, and the process's SIGINT and SIGTERM handlers are as they were
        (:func:`process_signal_handlers_kept`).

    Raises:
        ValueError: Both ``env_id`` and ``env``, an unknown env id, or an env that is not a text env.
        ImportError: verifiers is not installed (``pip install 'affectgym[verifiers]'``).

    >>> vf_env = load_environment("affectgym/Sarcasm-v0", split="eval")  # doctest: +SKIP
    >>> vf_env.evaluate_sync(client, model="my-model", num_examples=4)  # doctest: +SKIP
    """
    from affectgym.integrations import require

    require("verifiers", "verifiers")
    if env_id is not None and env is not None:
        raise ValueError(f"name the env once: env_id={env_id!r} or env={env!r}, not both")
    env_id = env_id or env or DEFAULT_ENV_ID
    import datasets
    import gymnasium as gym

    import affectgym

    if env_id not in gym.registry:
        raise ValueError(f"unknown env id {env_id!r}; registered affectgym envs: {', '.join(affectgym.list_envs())}")
    kind_probe = affectgym.make(env_id, **env_kwargs)  # as given: a numeric env may take no split at all
    check_text_env(kind_probe, env_id)
    kind_probe.close()
    split = env_kwargs.pop("split", "train")
    pools = {name: EnvPool(env_id, {**env_kwargs, "split": name}) for name in dict.fromkeys((split, eval_split))}
    probe = pools[split].take()
    rows = scenario_rows(probe)
    base = probe.unwrapped
    components = [criterion.name for criterion in base.rubric.criteria]
    tools = [
        {"name": f["name"], "description": f.get("description", ""), "parameters": f["parameters"]}
        for f in (schema["function"] for schema in base.tool_schemas)
    ]
    pools[split].give_back(probe)

    def eval_rows() -> Any:
        shown = pools[eval_split].take()
        try:
            return datasets.Dataset.from_dict(scenario_rows(shown))
        finally:
            pools[eval_split].give_back(shown)

    classes = _classes()
    with process_signal_handlers_kept():
        vf_env = classes["AffectGymEnv"](
            pools,
            dataset=datasets.Dataset.from_dict(rows),
            eval_dataset=eval_rows,
            rubric=classes["AffectRubric"](components, pools),
            tool_defs=tools or None,
        )
    vf_env.logger.info(
        "%s: dataset is split %r (%d scenarios), eval_dataset is split %r", env_id, split, len(rows["prompt"]), eval_split
    )
    return vf_env


@contextmanager
def process_signal_handlers_kept() -> Iterator[None]:
    """Put back the SIGINT and SIGTERM handlers that the block replaced.

    verifiers' classic ``Environment`` installs process-wide handlers when it is built (its
    teardown, then ``exit(143)`` on SIGTERM): in a test run or a trainer that loads the env,
    a SIGTERM would then end as that env's exit instead of the host's own handling. Its
    teardown still runs at exit (``atexit``). Outside the main thread no handler can change,
    and nothing is put back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept: dict[signal.Signals, Callable[..., Any] | int | None] = {
        sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in kept.items():
            # None: a handler installed outside Python, which getsignal cannot hand back
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def __getattr__(name: str) -> Any:
    # The verifiers classes are built on first use: verifiers loads only when it is needed.
    if name in ("AffectGymEnv", "AffectRubric"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# AffectGymEnv and AffectRubric resolve through the module __getattr__ above.
__all__ = [  # noqa: F822
    "DEFAULT_ENV_ID",
    "AffectGymEnv",
    "AffectRubric",
    "EnvPool",
    "episode_result",
    "load_environment",
    "message_action",
    "reply_messages",
    "scenario_rows",
]
