"""Agents that act through the env contract (the eval runner is :mod:`affectgym.eval`)."""
