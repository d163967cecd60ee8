"""affectgym envs on other engines: served over OpenEnv, evaluated as verifiers tasksets.

* :mod:`affectgym.integrations.openenv`: ``affectgym serve ENV_ID`` (an OpenEnv-compatible
  HTTP + WebSocket server, one env per session) and :class:`~affectgym.integrations.openenv.client.RemoteEnv`,
  the Gymnasium env that plays a served env (what ``affectgym eval --env-url`` uses);
* :mod:`affectgym.integrations.verifiers`: the verifiers taskset ``affectgym-verifiers`` (one
  task per scenario) and the env that plays its episodes, scored by the env's own rubric.

Both need their extra (``pip install 'affectgym[openenv]'`` or ``'affectgym[verifiers]'``, which cannot
share one environment);
the packages are imported only when one of these is used, so ``import affectgym`` never
loads them.
"""

from __future__ import annotations

import importlib.util


def require(package: str, extra: str) -> None:
    """Fail with one line naming the extra when the optional ``package`` is not installed.

    >>> require("json", "openenv")
    """
    if importlib.util.find_spec(package) is None:
        raise ImportError(f"{package!r} is not installed; it comes with pip install 'affectgym[{extra}]'")


__all__ = ["require"]
