"""verifiers' taskset id for affectgym: ``vf-eval affectgym-verifiers --env.taskset.env ENV_ID ...``.

verifiers resolves a taskset id to a top-level module exporting one ``Taskset`` (and one
``Env``) in ``__all__``; this module is that name for
:mod:`affectgym.integrations.verifiers`, where both are defined.
"""

from affectgym.integrations.verifiers import AffectGymEnv, AffectGymTaskset

__all__ = ["AffectGymEnv", "AffectGymTaskset"]
