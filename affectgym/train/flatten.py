"""Training datasets from an environment's scenarios, one row per scenario.

A row carries the ``prompt`` the policy reads, in conversational form, and the columns the
reward functions of :mod:`affectgym.train.rewards` need to rebuild the scenario and score a
reply through the env's own rubric: ``scenario_id``, ``env_id`` and ``env_kwargs`` (JSON,
``split`` included), plus ``label`` and any boolean subset flag (e.g. ``pivot``) where the
scenarios have them. The prompt is either

* ``"flat"``: exactly ``env.flat_prompt(scenario)``, every tool output pre-rendered, for
  single-shot GRPO; or
* ``"chat"``: the conversation an agent has after making the flat tool calls itself (GEM's
  ``concat_chat``): system prompt, first observation, the assistant's message of
  ``<tool_call>`` blocks (:func:`~affectgym.agents.protocol.protocol_tool_message`) and one
  tool message per result, played through the env's own ``reset``/``step``, with the env's
  tool schemas in a ``tools`` column (JSON). Rendered by the policy's chat template with those
  tools, it is token for token the prompt of the agent's answer turn in a multi-step
  episode, so the answer learned flat is the answer the agent gives interactively;
* ``"interactive"``: the episode's opening messages (system prompt and first observation),
  for multi-turn GRPO where the policy calls the tools itself
  (:mod:`affectgym.train.environment`).

Rows are interleaved class by class (``balance``: every class appears equally often, the
smaller ones cycled) and flagged subsets can be repeated (``oversample={"pivot": 2}``).
Only the scenarios of the requested split are ever read, so a train dataset cannot contain
an eval scenario.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

#: Accepted values of ``prompt_form``.
PROMPT_FORMS = ("flat", "chat", "interactive")


def make_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """A fresh, unwrapped environment (the object with ``score``, ``flat_prompt``, ``tools``).

    Args:
        env_id: A registered id, e.g. ``"affectgym/Sarcasm-v0"``.
        env_kwargs: Keyword arguments of the env (``split`` included).

    Returns:
        The env without Gymnasium's wrappers.
    """
    import gymnasium as gym

    import affectgym  # noqa: F401  (registers the built-in ids)

    if env_id not in gym.registry:
        known = ", ".join(sorted(k for k in gym.registry if k.startswith("affectgym/"))) or "none"
        raise ValueError(f"unknown environment id {env_id!r}; affectgym ids registered: {known}")
    return gym.make(env_id, **dict(env_kwargs or {})).unwrapped


@lru_cache(maxsize=32)
def _cached_env(env_id: str, env_kwargs_json: str) -> Any:
    return make_env(env_id, json.loads(env_kwargs_json))


def shared_env(env_id: str, env_kwargs: Mapping[str, Any] | str | None = None) -> Any:
    """The env for ``(env_id, env_kwargs)``, made once per process and reused.

    Used to look scenarios up and to score; never stepped, so sharing it is safe.

    Args:
        env_id: A registered id.
        env_kwargs: Keyword arguments, as a mapping or as the JSON of a dataset row.
    """
    return _cached_env(env_id, kwargs_json(env_kwargs))


def kwargs_json(env_kwargs: Mapping[str, Any] | str | None) -> str:
    """Canonical JSON of env keyword arguments (sorted keys), the form datasets carry.

    >>> kwargs_json({"split": "train", "max_turns": 4})
    '{"max_turns": 4, "split": "train"}'
    >>> kwargs_json('{"split": "eval"}')
    '{"split": "eval"}'
    """
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs or "{}")
    try:
        return json.dumps(dict(env_kwargs or {}), sort_keys=True)
    except TypeError as exc:
        raise ValueError(
            f"env_kwargs must be JSON-serialisable (str, numbers, bools, lists, dicts), got {env_kwargs!r}: {exc}"
        ) from None


def scenario_columns(scenario: Any) -> dict[str, Any]:
    """Columns a scenario contributes besides its id: ``label`` and boolean subset flags.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Clip:
    ...     id: str
    ...     label: str
    ...     pivot: bool
    ...     transcript: str
    >>> scenario_columns(Clip("c1", "sarcastic", True, "Oh great."))
    {'label': 'sarcastic', 'pivot': True}
    """
    columns: dict[str, Any] = {}
    label = getattr(scenario, "label", None)
    if isinstance(label, (str, int)) and not isinstance(label, bool):
        columns["label"] = label
    if dataclasses.is_dataclass(scenario):
        for item in dataclasses.fields(scenario):
            value = getattr(scenario, item.name)
            if isinstance(value, bool):
                columns[item.name] = value
    return columns


def check_oversample_flags(scenarios: list[Any], oversample: Mapping[str, int] | None) -> None:
    """Refuse ``oversample`` flags that are no boolean attribute of any of ``scenarios``, naming the flags they have.

    >>> from types import SimpleNamespace as S
    >>> check_oversample_flags([S(id="a", pivot=True)], {"pivot": 2})
    >>> check_oversample_flags([S(id="a", pivot=True)], {"nosuchflag": 3})
    Traceback (most recent call last):
    ValueError: oversample flag(s) ['nosuchflag'] are not boolean flags of these scenarios; flags: pivot
    """
    flags = {name for scenario in scenarios for name, value in vars(scenario).items() if isinstance(value, bool)}
    unknown = sorted(set(oversample or {}) - flags)
    if unknown:
        raise ValueError(
            f"oversample flag(s) {unknown} are not boolean flags of these scenarios; flags: {', '.join(sorted(flags)) or 'none'}"
        )


def training_order(
    scenarios: list[Any],
    *,
    n: int | None = None,
    seed: int = 0,
    balance: bool = True,
    oversample: Mapping[str, int] | None = None,
    group_of: Callable[[Any], str] | None = None,
    rows_per_batch: int = 1,
) -> list[Any]:
    """The order in which scenarios become rows.

    Args:
        scenarios: The scenarios of one split.
        n: Number of rows; ``None`` = one pass (after oversampling and balancing).
        seed: Seed of the shuffles.
        balance: Interleave classes (by ``scenario.label``) round-robin, cycling the smaller
            ones so every class appears equally often.
        oversample: ``{flag: k}`` repeats each scenario whose boolean ``flag`` is true ``k`` times.
        group_of: Scenario -> split group: rows then come group by group (the groups in a
            shuffled cycle, each group's scenarios next to each other, by label), so that a
            batch taken in order holds, say, both deliveries of a line; ``balance`` is then
            left to the groups themselves.
        rows_per_batch: With ``group_of``, the rows of one batch taken in order: every run of
            ``rows_per_batch`` rows is made of whole groups (a larger group is cut into
            batch-sized pieces), so no group straddles two batches. Groups smaller than a batch
            share one, preferring a batch that lacks their labels: two one-clip groups of
            opposite labels pair up. Without it one odd-sized group shifts every later pair
            across a batch boundary.

    Returns:
        Scenarios, repeated as needed.

    >>> from types import SimpleNamespace as S
    >>> items = [S(id=f"a{i}", label="a", pivot=i == 0) for i in range(3)] + [S(id="b0", label="b", pivot=False)]
    >>> [s.label for s in training_order(items, seed=1)]
    ['a', 'b', 'a', 'b', 'a', 'b']
    >>> sum(s.pivot for s in training_order(items, balance=False, oversample={"pivot": 3}))
    3
    >>> pairs = [S(id=f"{line}{label}", label=label, line=line) for line in "xy" for label in "ab"]
    >>> [s.id for s in training_order(pairs, seed=0, group_of=lambda s: s.line)]
    ['xa', 'xb', 'ya', 'yb']
    >>> odd = [S(id="za", label="a", line="z"), *pairs, S(id="wb", label="b", line="w")]
    >>> [s.id for s in training_order(odd, seed=0, group_of=lambda s: s.line, rows_per_batch=2)]
    ['ya', 'yb', 'xa', 'xb', 'za', 'wb']
    """
    if not isinstance(rows_per_batch, int) or rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be an integer >= 1, got {rows_per_batch!r}")
    check_oversample_flags(scenarios, oversample)
    rng = random.Random(seed)
    pool: list[Any] = []
    for scenario in scenarios:
        repeats = 1
        for flag, factor in (oversample or {}).items():
            if not isinstance(factor, int) or factor < 1:
                raise ValueError(f"oversample[{flag!r}] must be an integer >= 1, got {factor!r}")
            if getattr(scenario, flag, False) is True:
                repeats *= factor
        pool += [scenario] * repeats
    if not pool:
        raise ValueError("no scenarios to order")
    if group_of is not None:
        members: dict[str, list[Any]] = {}
        for scenario in pool:
            members.setdefault(group_of(scenario), []).append(scenario)
        groups = [sorted(group, key=lambda s: str(getattr(s, "label", ""))) for group in members.values()]
        stream = _packed(_cycled(groups, rng), rows_per_batch)
        return [next(stream) for _ in range(len(pool) if n is None else n)]
    labels = [getattr(s, "label", None) for s in pool]
    if not balance or any(label is None for label in labels) or len(set(labels)) < 2:
        order = _cycled(pool, rng)
        total = len(pool) if n is None else n
        return [next(order) for _ in range(total)]
    by_label: dict[Any, list[Any]] = {}
    for scenario, label in zip(pool, labels, strict=True):
        by_label.setdefault(label, []).append(scenario)
    classes = sorted(by_label, key=str)
    streams = [_cycled(by_label[label], rng) for label in classes]
    total = len(classes) * max(map(len, by_label.values())) if n is None else n
    return [next(streams[i % len(streams)]) for i in range(total)]


def _packed(groups: Iterator[list[Any]], rows_per_batch: int) -> Iterator[Any]:
    """The rows of ``groups`` in batches of ``rows_per_batch`` made of whole groups (see :func:`training_order`)."""
    unfilled: list[list[Any]] = []
    for group in groups:
        for start in range(0, len(group), rows_per_batch):
            piece = group[start:start + rows_per_batch]
            labels = {getattr(s, "label", None) for s in piece}
            room = [batch for batch in unfilled if len(batch) + len(piece) <= rows_per_batch]
            if not room:
                room = [[]]
                unfilled.append(room[0])
            batch = next((b for b in room if not labels & {getattr(s, "label", None) for s in b}), room[0])
            batch.extend(piece)
            if len(batch) == rows_per_batch:
                unfilled = [b for b in unfilled if b is not batch]
                yield from batch


def _cycled(items: list[Any], rng: random.Random):
    while True:
        shuffled = list(items)
        rng.shuffle(shuffled)
        yield from shuffled


def to_dataset(
    env_id: str,
    split: str = "train",
    n: int | None = None,
    seed: int = 0,
    balance: bool = True,
    oversample: Mapping[str, int] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    prompt_form: str = "flat",
    group_rows: bool = False,
    rows_per_batch: int = 1,
) -> Any:
    """A :class:`datasets.Dataset` of one split of an environment, one row per scenario.

    Args:
        env_id: A registered id, e.g. ``"affectgym/Sarcasm-v0"``.
        split: Which scenarios (``"train"``; ``"eval"`` for held-out evaluation).
        n: Number of rows (scenarios repeated or sampled); ``None`` = one pass.
        seed: Seed of the order.
        balance: Class-balanced interleaving by ``scenario.label`` (see :func:`training_order`).
        oversample: ``{flag: k}``: scenarios with the boolean attribute ``flag`` set appear ``k`` times.
        env_kwargs: Further keyword arguments of the env (``split`` is set from ``split``).
        prompt_form: ``"flat"`` (every tool output pre-rendered) or ``"interactive"``
            (system prompt and first observation; the policy calls the tools) or ``"chat"``
            (the conversation after the flat tool calls, with a ``tools`` column; see the module docstring).
        group_rows: Order rows group by group (``env.split_group``; see :func:`training_order`).
        rows_per_batch: With ``group_rows``, the rows (prompts) of one training batch: no
            group straddles two batches (see :func:`training_order`).

    Returns:
        Columns ``prompt``, ``scenario_id``, ``env_id``, ``env_kwargs`` (JSON), ``tools`` (JSON,
        ``"chat"`` only) and, where the scenarios have them, ``label`` and boolean flags.
    """
    import datasets

    if prompt_form not in PROMPT_FORMS:
        raise ValueError(f"prompt_form must be one of {PROMPT_FORMS}, got {prompt_form!r}")
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"n must be a positive integer or None, got {n!r}")
    kwargs = {**dict(env_kwargs or {}), "split": split}
    encoded = kwargs_json(kwargs)
    env = shared_env(env_id, encoded)
    rows: dict[str, list[Any]] = {"prompt": [], "scenario_id": [], "env_id": [], "env_kwargs": []}
    player = make_env(env_id, kwargs) if prompt_form == "chat" else None
    if player is not None:
        rows["tools"] = []
    order = training_order(
        list(env.scenarios), n=n, seed=seed, balance=balance, oversample=oversample,
        group_of=env.split_group if group_rows else None, rows_per_batch=rows_per_batch,
    )
    extra_names = list(scenario_columns(order[0]))
    for name in extra_names:
        rows[name] = []
    prompts: dict[str, list[dict[str, str]]] = {}
    for scenario in order:
        if scenario.id not in prompts:
            prompts[scenario.id] = chat_prompt(player, scenario.id) if player else _prompt(env, scenario, prompt_form)
        rows["prompt"].append(prompts[scenario.id])
        if player is not None:
            rows["tools"].append(json.dumps(player.tool_schemas))
        rows["scenario_id"].append(scenario.id)
        rows["env_id"].append(env_id)
        rows["env_kwargs"].append(encoded)
        extra = scenario_columns(scenario)
        for name in extra_names:
            rows[name].append(extra.get(name))
    return datasets.Dataset.from_dict(rows)


def chat_prompt(env: Any, scenario_id: str) -> list[dict[str, Any]]:
    """The ``"chat"`` prompt of a scenario: its episode after the flat tool calls, ready for the answer.

    Played on ``env`` (an unwrapped env of the right split; it is reset) with one message of
    :func:`~affectgym.agents.protocol.protocol_tool_message`; the messages are those a local
    model's chat template renders (:func:`~affectgym.agents.base.raw_text_messages`).

    Raises:
        ValueError: A flat tool call failed, so no agent could reach this conversation.
    """
    from affectgym.agents.base import raw_text_messages
    from affectgym.agents.protocol import protocol_tool_message

    env.reset(options={"scenario_id": scenario_id})
    message = protocol_tool_message(env, env.scenario)
    _, _, terminated, truncated, info = env.step(message)
    failed = [entry for entry in env.trace if not entry.get("ok", True) or entry["type"] == "invalid"]
    if terminated or truncated or failed:
        raise ValueError(f"the flat tool calls of scenario {scenario_id!r} did not run as one message: {failed or message!r}")
    return raw_text_messages(info["messages"])


def _prompt(env: Any, scenario: Any, prompt_form: str) -> list[dict[str, str]]:
    if prompt_form == "flat":
        return [dict(message) for message in env.flat_prompt(scenario)]
    return [
        {"role": "system", "content": env.system_prompt(scenario)},
        {"role": "user", "content": env.first_observation(scenario)},
    ]


def flat_episode_env(env: Any) -> Any:
    """Wrap ``env`` so that episodes are played in the flattened form a flat policy was trained on.

    At reset the flat tool calls are made for the agent (as the flat prompt pre-renders
    them) and ``info["messages"]`` is ``env.flat_prompt(scenario)`` with no tools offered;
    the agent then answers. The reward those tool steps earned is carried into the next
    step, so an episode's step rewards still sum to its score. It plays a flat policy through
    the eval runner in the form it was trained on (``run_eval(..., env_factory=...)``); the
    training run's own held-out evaluation plays multi-step, as the model is deployed.

    Args:
        env: An affectgym env (from ``affectgym.make``, wrapped or not).

    Returns:
        A :class:`gymnasium.Wrapper`.
    """
    import gymnasium as gym

    class FlatEpisode(gym.Wrapper):
        """An affectgym env played from its flat prompt (see :func:`flat_episode_env`)."""

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
            """Reset the env, make the flat tool calls and show the flat prompt."""
            _, info = self.env.reset(seed=seed, options=options)
            base = self.env.unwrapped
            self._carried = 0.0
            for name, arguments in base.flat_tool_calls(base.scenario):
                call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
                _, reward, _, _, _ = self.env.step(f"<tool_call>{call}</tool_call>")
                self._carried += float(reward)
            self._messages = [dict(m) for m in base.flat_prompt(base.scenario)]
            return self._messages[-1]["content"], {**info, "messages": copy.deepcopy(self._messages), "tools": []}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
            """Step the env with the agent's message; the first step carries the flat tool steps' reward."""
            observation, reward, terminated, truncated, info = self.env.step(action)
            reward, self._carried = float(reward) + self._carried, 0.0
            self._messages.append({"role": "assistant", "content": action if isinstance(action, str) else repr(action)})
            if not (terminated or truncated):
                self._messages.append({"role": "user", "content": observation})
            return observation, reward, terminated, truncated, {**info, "messages": copy.deepcopy(self._messages), "tools": []}

    return FlatEpisode(env)


__all__ = ["PROMPT_FORMS", "flat_episode_env", "kwargs_json", "make_env", "scenario_columns", "shared_env", "to_dataset", "training_order"]
