"""Modules talk through public names: no private call into another module, no thread-local state,
no reading of another function's frame.

A private name (``_step``) is a module's own business. A call ``obj._name(...)`` is allowed
on ``self``, ``cls`` or ``super()``, or when the module itself defines ``_name``; anything
else reaches into another module's internals (the bookkeeping that should travel in return
values, e.g. a reward function finishing an adapter's episode through its private method).
The source is parsed, not run.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "affectgym"
#: Private names every Python object of a kind has as public API.
PUBLIC_PRIVATES = {"_replace", "_asdict", "_make", "_fields"}


def private_calls(path: Path) -> list[tuple[int, str]]:
    """``(line, call)`` for every call of another module's private name in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, target = node.func.attr, node.func.value
        if not name.startswith("_") or name.startswith("__") or name in PUBLIC_PRIVATES or name in own:
            continue
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            continue
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
            continue
        found.append((node.lineno, ast.unparse(node.func)))
    return found


def test_no_module_calls_a_private_name_of_another():
    relative = {path: path.relative_to(PACKAGE_ROOT.parent).as_posix() for path in sorted(PACKAGE_ROOT.rglob("*.py"))}
    offending = [
        f"{where}:{line}: {call}" for path, where in relative.items()
        for line, call in private_calls(path)
    ]
    assert not offending, "calls of another module's private names:\n" + "\n".join(offending)


def test_no_module_keeps_thread_local_state():
    offending = [
        path.relative_to(PACKAGE_ROOT.parent).as_posix() for path in sorted(PACKAGE_ROOT.rglob("*.py"))
        if "threading.local" in path.read_text(encoding="utf-8")
    ]
    assert not offending, f"thread-local state in {offending}; pass what a thread needs, or return it"


def test_no_module_reads_another_functions_frame():
    offending = [
        path.relative_to(PACKAGE_ROOT.parent).as_posix() for path in sorted(PACKAGE_ROOT.rglob("*.py"))
        if any(word in path.read_text(encoding="utf-8") for word in ("_getframe", "inspect.currentframe", "f_back"))
    ]
    assert not offending, f"frame reading in {offending}; take what a function needs as an argument"


def test_the_rule_catches_a_private_call_into_another_object(tmp_path: Path):
    source = tmp_path / "module.py"
    source.write_text(
        "def _own():\n    pass\n\n"
        "class A:\n    def f(self, other):\n        self._g()\n        super()._h()\n        _own()\n"
        "        other._finish_episode(1)\n        return other._replace(x=1)\n",
        encoding="utf-8",
    )
    assert private_calls(source) == [(9, "other._finish_episode")]
