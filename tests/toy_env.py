"""The toy env of the tests: the single-answer example of the plug-in guide, docs/plugins.md.

The guide holds the only copy of its code. This module runs the guide's blocks up to the
one that defines ``ToyMoodEnv`` (``Note``, ``NOTES``, ``parse_answer``, the criteria and
the env), so the tests, the benchmarks and ``gym.register(entry_point="toy_env:ToyMoodEnv")``
use exactly what a plug-in author reads; tracebacks point into docs/plugins.md.
"""

from __future__ import annotations

from doc_blocks import DOCS, compile_block, python_blocks

_GUIDE = DOCS / "plugins.md"
for _line, _code in python_blocks(_GUIDE):
    exec(compile_block(_GUIDE, _line, _code), globals())
    if "class ToyMoodEnv(" in _code:
        break
