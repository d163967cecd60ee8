"""Layers point one way: no module of affectgym imports a module of a higher layer.

Bottom to top: the emotion vocabulary and bottom helpers; features, rewards, data; envs
(with ``affectgym/__init__.py``, which registers them); agents, eval, integrations; train; the command
modules (``affectgym.cli``, ``affectgym.commands``, ``affectgym.<package>.commands``).
Imports within a layer are free. Every ``import`` statement counts, at module level and
inside functions (a lazy import is still a dependency); the source is parsed, not run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "affectgym"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("affectgym.emotions", "affectgym._version", "affectgym.cache_root", "affectgym.hub", "affectgym.library_output", "affectgym.text"),
    ("affectgym.features", "affectgym.rewards", "affectgym.data"),
    ("affectgym.envs", "affectgym"),
    ("affectgym.agents", "affectgym.eval", "affectgym.integrations"),
    ("affectgym.train",),
    ("affectgym.cli", "affectgym.__main__", "affectgym.commands"),
)
"""Module prefixes of each layer, bottom first; ``affectgym`` alone is the package's ``__init__``."""

COMMANDS_LAYER = len(LAYERS) - 1


def module_name(path: Path) -> str:
    """``affectgym/envs/core.py`` -> ``affectgym.envs.core``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    """The layer of an affectgym module, or ``None`` when no layer names it."""
    if module.endswith(".commands"):
        return COMMANDS_LAYER
    best: tuple[int, int] | None = None  # (prefix length, layer): the longest prefix wins
    for layer, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix if prefix == "affectgym" else module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
    return None if best is None else best[1]


def imported_modules(module: str, path: Path) -> list[tuple[int, str]]:
    """``(line, affectgym module)`` for every import statement of ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                # `from affectgym import _version` imports the submodule, not the package.
                found.append((node.lineno, submodule if submodule in MODULES else base))
    return [(line, name) for line, name in found if name == "affectgym" or name.startswith("affectgym.")]


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(name for name in MODULES if layer_of(name) is None)
    assert not unplaced, f"modules outside every layer (add them to LAYERS in {Path(__file__).name}): {unplaced}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    path = MODULES[module]
    own = layer_of(module)
    assert own is not None
    upward = [
        f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {name} (layer {layer_of(name)} > {own})"
        for line, name in imported_modules(module, path)
        if (layer_of(name) or 0) > own
    ]
    assert not upward, "\n".join(upward)


def test_the_rule_itself_catches_upward_and_lazy_imports(tmp_path: Path) -> None:
    assert layer_of("affectgym.features.cache") < layer_of("affectgym") < layer_of("affectgym.eval.runner")
    assert layer_of("affectgym.eval.commands") == layer_of("affectgym.cli") == COMMANDS_LAYER
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    import affectgym\n    from affectgym import _version\n    from affectgym.train import grpo\n")
    names = [name for _, name in imported_modules("affectgym.features.probe", source)]
    assert names == ["affectgym", "affectgym._version", "affectgym.train.grpo"]
