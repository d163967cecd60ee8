"""Agents that act through the env contract, and the evaluation runner."""
