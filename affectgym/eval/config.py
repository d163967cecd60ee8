"""What an eval run plays and where it writes: :class:`EvalConfig`, the fields of ``affectgym eval``.

The runner (:func:`affectgym.eval.runner.run_eval`) takes it; what a run records of itself
(:mod:`affectgym.eval.run_metadata`) and what a resumed run must match
(:mod:`affectgym.eval.resume`) read it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class EvalConfig:
    """What to evaluate and where to write it (the fields of ``affectgym eval``).

    Attributes:
        env_id: A registered env id (``affectgym list``).
        agent: An agent spec for :func:`~affectgym.agents.registry.make_agent`.
        out: Output folder.
        n: Scenarios to play (the first ``n`` of the split in the seeded order); all if ``None``.
        rollouts: Episodes per scenario.
        concurrency: Episodes played at the same time.
        split: Split passed to the env.
        seed: Seeds the scenario order and each episode's seed.
        resume: Continue a run in ``out``; otherwise ``out`` must not hold results yet.
        env_kwargs: Extra keyword arguments of ``affectgym.make``.
        env_url: Play the env served at this URL by ``affectgym serve`` (``ws://HOST:PORT`` or
            ``http://HOST:PORT``) instead of making it here: each worker opens its own session
            (:class:`~affectgym.integrations.openenv.client.RemoteEnv`). A list of URLs is N
            replicas of one env: the workers' sessions go to them in turn. The served env's id
            and split must be ``env_id`` and ``split``; its kwargs are the server's
            (``env_kwargs`` must be empty).
        agent_kwargs: Keyword arguments of ``make_agent``.
        user_simulator: An agent spec that plays the user, for envs with a simulated user:
            each env gets ``user_simulator=`` a function of the chat (messages in, the user's
            next line out) backed by that agent. Only with the default env factory.
        max_fail_fraction: The run stops once more than this fraction of its episodes fail.
        retry_errors: With ``resume``, play again the episodes recorded with an error.
        progress: Show a progress bar.
        command: The command line recorded in metadata (default ``sys.argv``).
    """

    env_id: str
    agent: str
    out: Path | str
    n: int | None = None
    rollouts: int = 1
    concurrency: int = 1
    split: str = "eval"
    seed: int = 0
    resume: bool = False
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    env_url: str | list[str] | None = None
    agent_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    user_simulator: str | None = None
    max_fail_fraction: float = 0.5
    retry_errors: bool = False
    progress: bool = True
    command: str | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be a positive number of scenarios or None (all), got {self.n}")
        if self.rollouts < 1:
            raise ValueError(f"rollouts must be >= 1, got {self.rollouts}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if not 0 <= self.max_fail_fraction <= 1:
            raise ValueError(f"max_fail_fraction must be in [0, 1], got {self.max_fail_fraction}")
        if "split" in self.env_kwargs:
            raise ValueError(
                f"env_kwargs sets split={self.env_kwargs['split']!r}; the split has its own option "
                f"(--split on the command line, now {self.split!r}): pass --split {self.env_kwargs['split']} instead"
            )
        if self.env_url is not None and not isinstance(self.env_url, str):
            urls = self.env_url
            if not isinstance(urls, list | tuple) or not urls or not all(isinstance(url, str) and url for url in urls):
                raise ValueError(f"env_url must be a URL or a non-empty list of URLs (replicas), got {urls!r}")
            self.env_url = urls[0] if len(urls) == 1 else list(urls)
        if self.env_url is not None and self.env_kwargs:
            raise ValueError(
                f"env_kwargs {self.env_kwargs} with env_url {self.env_url!r}: a served env has the server's kwargs; "
                "pass them to `affectgym serve ENV_ID --env-kwargs ...` instead"
            )
        if self.env_url is not None and self.user_simulator is not None:
            raise ValueError(
                f"user_simulator={self.user_simulator!r} with env_url {self.env_url!r}: the simulator is given to an env "
                "made here; a served env has the server's"
            )


__all__ = ["EvalConfig"]
