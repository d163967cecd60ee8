"""Experiments as declarations, run by one runner that keeps the protocol: settings chosen on validation by
a rule written beforehand, eval played once per frozen recipe and seed, every episode kept.

* :mod:`~affectgym.experiments.declaration`: :class:`Experiment`, :class:`Arm`, :class:`Sweep`,
  :class:`Comparison`;
* :mod:`~affectgym.experiments.runner`: :class:`ExperimentRunner` (``choose()``, then ``play()``);
* :mod:`~affectgym.experiments.protocol`: the ledger that refuses each way of breaking the protocol.
"""

from affectgym.experiments.declaration import Arm, ArmRun, Comparison, Experiment, Sweep
from affectgym.experiments.protocol import ProtocolError, ProtocolLedger, recipe_hash
from affectgym.experiments.runner import ExperimentRunner

__all__ = ["Arm", "ArmRun", "Comparison", "Experiment", "ExperimentRunner", "ProtocolError", "ProtocolLedger",
           "Sweep", "recipe_hash"]
