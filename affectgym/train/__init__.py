"""Training: flattened datasets, TRL reward functions, environment_factory, GRPO entry.

The three pieces a hand-written TRL script needs are importable from here (each module
imports TRL, datasets and torch only inside the functions that use them):

* :func:`to_dataset` (:mod:`affectgym.train.flatten`): one row per scenario of a split;
* :func:`reward_functions` (:mod:`affectgym.train.rewards`): one TRL reward function per
  rubric component, and the rubric's weights;
* :func:`environment_factory` (:mod:`affectgym.train.environment`): the class TRL's
  ``GRPOTrainer(environment_factory=...)`` wants, for multi-turn GRPO;

and :func:`resolve_model` gives the folder ``from_pretrained`` loads for a model alias
(``resolve_model("smollm2-135m")``: the embedded SmolLM2-135M-Instruct, offline).
"""

from __future__ import annotations

from affectgym.train.environment import environment_factory
from affectgym.train.flatten import to_dataset
from affectgym.train.policy import resolve_model
from affectgym.train.rewards import reward_functions

__all__ = ["environment_factory", "resolve_model", "reward_functions", "to_dataset"]
