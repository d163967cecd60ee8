"""Evaluation: the runner, its results files, the summaries and metrics, and the report.

* :mod:`affectgym.eval.runner`: :func:`run_eval` plays an agent on an env's scenarios
  (``affectgym eval``);
* :mod:`affectgym.eval.results`: ``results.jsonl`` (one record per episode, the env's
  outcome under ``"outcome"``), ``metadata.json``, ``summary.json``;
* :mod:`affectgym.eval.summary`: the numbers of ``summary.json``, with the outcome
  summaries each env declares (the runner names no env);
* :mod:`affectgym.eval.metrics` and :mod:`affectgym.eval.dialogue_metrics`: classification,
  calibration, pass@k, intervals; BLEU-4, ROUGE, tag accuracy;
* :mod:`affectgym.eval.report`: figures and ``report.md`` (``affectgym report``).

Importing this package is cheap: rich, matplotlib, scikit-learn and sacrebleu load on first use.
"""

from __future__ import annotations

from affectgym.eval.config import EvalConfig
from affectgym.eval.report import load_run, register_report_plot, write_report
from affectgym.eval.results import read_results
from affectgym.eval.runner import RunAborted, RunResult, run_eval
from affectgym.eval.summary import register_outcome_summary, summarize

__all__ = [
    "EvalConfig",
    "RunAborted",
    "RunResult",
    "load_run",
    "read_results",
    "register_outcome_summary",
    "register_report_plot",
    "run_eval",
    "summarize",
    "write_report",
]
