"""One affectgym env as an OpenEnv ``Environment``: what each session of ``affectgym serve`` plays.

:func:`environment_factory` returns the zero-argument factory OpenEnv's ``create_app``
calls once per WebSocket session (and once per stateless HTTP request). Each call builds
an :class:`AffectGymEnvironment` holding its own env, made with ``affectgym.make(env_id,
**env_kwargs)`` on the session's first reset (making it is the slow part, and OpenEnv
calls the factory on the event loop). Sessions share nothing but what the server read
once and never changes: a speech env's loaded dataset
(:func:`~affectgym.integrations.openenv.app.session_env_kwargs`).

* ``reset(seed=, episode_id=, options=)``: ``options`` as ``AffectEnv.reset`` takes them,
  e.g. ``{"scenario_id": "..."}``; returns the first :class:`~affectgym.integrations.openenv.models.AffectObservation`;
* ``step(AffectAction(message=...))``: one ``env.step``; before any reset, after a reset
  that failed (an unknown scenario id), and on OpenEnv's stateless ``POST /step``, which
  makes a fresh env per request, it answers, without raising, that the episode needs a
  reset over the WebSocket session;
* ``state``: an :class:`~affectgym.integrations.openenv.models.AffectState`;
* OpenEnv 0.10's Task API (``list_splits``, ``list_tasks``, ``num_tasks``, ``get_task``,
  ``get_task_range``, served as ``GET /{name}/splits`` and ``POST /{name}/tasks`` and so on):
  one split, the one served, whose task ``i`` is its scenario ``i`` (``{"id", "index",
  "split"}``, never a gold label); ``reset(split=, index=)`` starts that scenario. Another
  split has no tasks here: its count is 0 and a reset naming it is refused;
* ``rubric``: OpenEnv's rubric tree (RFC 004) of the env's reward: its root scores a step at
  the env's reward, and ``rubric.components[name]`` holds each named part of the env's rubric,
  its ``last_score`` that part of the last step's reward (``None`` while unscored), as the
  observation's ``reward_components`` carry them on the wire.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from affectgym.integrations.openenv.models import observation_fields

# One env is made at a time: making one holds the GIL for a while (0.15 s for Sarcasm-v0 on
# 2 idle cores), and 32 sessions making theirs at once starve the event loop, whose
# WebSocket handshakes then time out.
_MAKING = threading.Lock()

#: OpenEnv's split types (``train``, ``validation``, ``test``) by affectgym split.
SPLIT_TYPES = {"train": "train", "validation": "validation", "eval": "test"}

#: What ``step`` answers when the session has no episode.
NO_EPISODE = (
    "Error: no episode is running in this session; send a reset first. Over HTTP, POST /step has no "
    "session (each request gets a fresh env): play episodes over the WebSocket endpoint /ws, as OpenEnv's clients do"
)


@functools.cache
def _rubric_class() -> type:
    from openenv.core.rubrics import Rubric
    from openenv.core.rubrics.containers import RubricDict

    class ComponentScore(Rubric):
        """One named part of the env's reward: the step's ``reward_components[name]``, as the env scored it.

        Args:
            name: The component's name in the env's rubric.
        """

        def __init__(self, name: str):
            super().__init__()
            self.name = name

        def forward(self, action: Any, observation: Any) -> float | None:
            return observation.reward_components.get(self.name)

    class EnvRubric(Rubric):
        """The env's reward as a rubric tree: the step's reward, with one child per named component.

        Args:
            components: The names of the env rubric's components.
        """

        def __init__(self, components: Sequence[str]):
            super().__init__()
            self.components = RubricDict({name: ComponentScore(name) for name in components})

        def forward(self, action: Any, observation: Any) -> float:
            for child in self.components.children():
                child(action, observation)
            return 0.0 if observation.reward is None else float(observation.reward)

    return EnvRubric


@functools.cache
def _environment_class() -> type:
    from openenv.core.env_server import Environment
    from openenv.core.env_server.types import EnvironmentMetadata

    from affectgym.integrations.openenv.models import AffectObservation, AffectState

    env_rubric = _rubric_class()

    class AffectGymEnvironment(Environment):
        """A served affectgym env: one env instance per OpenEnv session (see the module docstring).

        Args:
            env_id: A registered env id.
            env_kwargs: Keyword arguments of ``affectgym.make``.
            split: The split served.
            scenario_ids: Its scenario ids, in order: the Task API's tasks.
            components: The names of its rubric's components.
        """

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self, env_id: str, env_kwargs: Mapping[str, Any], split: str, scenario_ids: Sequence[str],
                     components: Sequence[str]):
            super().__init__(rubric=env_rubric(components))
            self.env_id = env_id
            self.env_kwargs = dict(env_kwargs)
            self.split = split
            self.scenario_ids = tuple(scenario_ids)
            self._env: Any = None
            self._state = AffectState(env_id=env_id)

        def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None,
                  split: str | None = None, index: int | None = None) -> Any:
            """Start an episode: ``options`` as ``AffectEnv.reset`` takes them, or the Task API's
            ``split`` and ``index`` (the served split's scenario ``index``).

            Raises:
                ValueError: ``split`` is not the one served, ``index`` is out of range or not an
                    int, or ``index`` comes with a ``scenario_id`` option.
            """
            if split is not None and split != self.split:
                raise ValueError(f"this server serves the {self.split!r} split only, not {split!r}")
            if index is not None:
                if options and {"scenario", "scenario_id"} & set(options):
                    raise ValueError("give the task's index or a scenario option, not both")
                options = {**(options or {}), "scenario_id": self._scenario_at(index)}
            if self._env is None:
                import affectgym

                with _MAKING:
                    self._env = affectgym.make(self.env_id, **self.env_kwargs)
            # No episode until this reset succeeds: a failed one leaves the session as a fresh one is.
            self._state = AffectState(env_id=self.env_id)
            text, info = self._env.reset(seed=seed, options=options)
            self._state = AffectState(env_id=self.env_id, episode_id=episode_id or uuid.uuid4().hex,
                                      scenario_id=info.get("scenario_id"), done=False)
            return AffectObservation(**observation_fields(text, None, False, False, info))

        def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
            """Read one agent message (``action.message``) and answer it."""
            if self._env is None or self._state.episode_id is None:
                return AffectObservation(text=NO_EPISODE, done=True, reward=0.0)
            text, reward, terminated, truncated, info = self._env.step(action.message)
            self._state = self._state.model_copy(
                update={"step_count": self._state.step_count + 1, "turn": int(info.get("turn", 0)),
                        "done": bool(terminated or truncated)}
            )
            observation = AffectObservation(**observation_fields(text, reward, terminated, truncated, info))
            self.rubric(action, observation)
            return observation

        def _scenario_at(self, index: Any) -> str:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.scenario_ids):
                raise ValueError(f"index must be an int from 0 to {len(self.scenario_ids) - 1} (the {self.split!r} "
                                 f"split's scenarios), got {index!r}")
            return self.scenario_ids[index]

        def list_splits(self) -> list[dict[str, str]]:
            """The Task API's splits: the one served, with OpenEnv's type of it."""
            return [{"name": self.split, "type": SPLIT_TYPES.get(self.split, "validation")}]

        def list_tasks(self, split: str) -> list[dict[str, Any]]:
            """Every task of ``split``: one per scenario (none for a split not served)."""
            return self.get_task_range(split)

        def num_tasks(self, split: str) -> int:
            """How many tasks ``split`` has here."""
            return len(self.scenario_ids) if split == self.split else 0

        def get_task(self, split: str, index: int) -> dict[str, Any]:
            """Task ``index`` of ``split``: its scenario id, index and split.

            Raises:
                IndexError: ``index`` is out of range, or ``split`` is not served.
            """
            if split != self.split or not 0 <= index < len(self.scenario_ids):
                raise IndexError(index)
            return {"id": self.scenario_ids[index], "index": index, "split": split}

        def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
            """The tasks of ``split`` in ``[start, stop)``, as a Python slice takes the bounds."""
            indices = range(self.num_tasks(split))[slice(start, stop)]
            return [self.get_task(split, index) for index in indices]

        @property
        def state(self) -> Any:
            """The session's episode: id, steps, scenario, turn, done."""
            return self._state

        def get_metadata(self) -> Any:
            """The env id and the first line of its docstring."""
            from affectgym.envs.registration import env_summary

            return EnvironmentMetadata(name=self.env_id, description=env_summary(self.env_id))

        def close(self) -> None:
            """Close the session's env."""
            if self._env is not None:
                self._env.close()
                self._env = None

    AffectGymEnvironment.__qualname__ = "AffectGymEnvironment"
    return AffectGymEnvironment


def environment_factory(env_id: str, env_kwargs: Mapping[str, Any], *, split: str, scenario_ids: Sequence[str],
                        components: Sequence[str] = ()) -> Callable[[], Any]:
    """The factory OpenEnv's ``create_app`` takes: each call is a new, isolated session env.

    Args:
        env_id: A registered env id.
        env_kwargs: Keyword arguments of ``affectgym.make``.
        split: The split the env plays (``env_kwargs``'s, or the env's default).
        scenario_ids: Its scenario ids, in order.
        components: The names of its rubric's components (none for an env without a rubric).
    """
    return functools.partial(_environment_class(), env_id, dict(env_kwargs), split, tuple(scenario_ids), tuple(components))


def __getattr__(name: str) -> Any:
    # Built on first use, like the models: openenv loads only when it is needed.
    if name == "AffectGymEnvironment":
        return _environment_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["NO_EPISODE", "SPLIT_TYPES", "AffectGymEnvironment", "environment_factory"]  # noqa: F822 (AffectGymEnvironment: the module __getattr__)
