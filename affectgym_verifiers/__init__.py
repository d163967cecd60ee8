"""verifiers' v1 taskset id for affectgym: ``eval affectgym-verifiers --env.taskset.env ENV_ID ...``.

verifiers resolves a taskset id to a top-level module exporting one ``Taskset`` (and one
``Env``) in ``__all__``; this module is that name for
:mod:`affectgym.integrations.verifiers_v1`, where both are defined.
"""

from affectgym.integrations.verifiers_v1 import AffectGymEnv, AffectGymTaskset

__all__ = ["AffectGymEnv", "AffectGymTaskset"]
