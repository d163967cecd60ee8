"""``python -m affectgym``: the ``affectgym`` command (:mod:`affectgym.cli`)."""

from __future__ import annotations

import sys

from affectgym.cli import main

if __name__ == "__main__":
    sys.exit(main())
