"""Argument types the ``affectgym`` subcommands share; the bottom of the command modules, importing no other affectgym module."""

from __future__ import annotations

import argparse
import json
from typing import Any


def json_object_argument(text: str) -> dict[str, Any]:
    """An argparse ``type`` for a JSON object option such as ``--env-kwargs '{"max_turns": 6}'``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}; write an object such as '{{\"max_turns\": 6}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}: {text!r}")
    return value


__all__ = ["json_object_argument"]
