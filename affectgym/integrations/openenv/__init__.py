"""affectgym envs over OpenEnv: ``affectgym serve`` and the client that plays a served env.

* :mod:`~affectgym.integrations.openenv.models`: the typed ``AffectAction``,
  ``AffectObservation`` and ``AffectState`` on the wire;
* :mod:`~affectgym.integrations.openenv.environment`: one affectgym env as an OpenEnv
  ``Environment``, one per session;
* :mod:`~affectgym.integrations.openenv.sockets`: how a session's socket ends (idle timeout, refusal, disconnect);
* :mod:`~affectgym.integrations.openenv.app`: the FastAPI app and :func:`~affectgym.integrations.openenv.app.serve`;
* :mod:`~affectgym.integrations.openenv.client`: :class:`~affectgym.integrations.openenv.client.RemoteEnv`,
  a served env as a Gymnasium env (``affectgym eval --env-url``);
* :mod:`~affectgym.integrations.openenv.manifest`: an env's ``openenv.yaml`` (``affectgym manifest``).

Needs ``pip install 'affectgym[openenv]'`` (OpenEnv 0.10); ``openenv`` is imported on first use.
"""

from __future__ import annotations
