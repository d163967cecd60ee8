"""Layers point one way: no module of affectgym imports a module above its own, and no two import each other.

Bottom to top: the emotion vocabulary and bottom helpers; features, rewards, then data; envs,
then ``affectgym/__init__.py``, which registers them; agents, the OpenEnv server and client, eval,
then the verifiers taskset; train
(its floor, then the algorithms, then the demo and ``train.commands``); the command line
(``affectgym.cli``, ``affectgym.commands``). Each layer is a list of tiers, bottom first; a module
imports its own tier or lower ones. A package's subcommands (``affectgym.<package>.commands``) sit
in their package's layer like any of its modules, so they import that layer and below, plus the
argument types every subcommand shares (``affectgym.cli_arguments``, at the bottom). On top of the
order:

* no circle: no set of modules imports one another, however indirectly, so a reader can start
  anywhere and read down;
* the training algorithms (``grpo``, ``sft``, ``dpo``, ``sb3``) are leaves: they share the
  floor of ``train/`` and never import one another;
* ``train/``'s modules import one another at module level: an import of a train module inside
  a function is what dodges a circle at run time. Two kinds stay inside functions: those of
  ``train.commands`` (it loads the algorithm it runs when it runs, so ``affectgym --help`` loads
  none), and those of a train module that imports a heavy library (torch, TRL) at its top, such as
  the trainer subclasses: importing it is the heavy import.

Every ``import`` statement counts, at module level and inside functions (a lazy import is still
a dependency); the source is parsed, not run. Heavy third-party imports (torch, transformers)
stay inside functions, as STYLE.md asks: they are not affectgym modules, so no rule here sees them.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "affectgym"

LAYERS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("affectgym.emotions", "affectgym._version", "affectgym.cache_root", "affectgym.hub", "affectgym.models", "affectgym.library_output", "affectgym.text",
      "affectgym.cli_arguments", "affectgym.yaml_files", "affectgym.serving"),),
    # data reads clips with the features' audio reader and fits their prosody norms
    (("affectgym.features", "affectgym.rewards"), ("affectgym.data",)),
    # `affectgym features precompute DATASET` measures a dataset's clips through its speech env
    # the red team searches an env through its public API; validate and check_env run it
    (("affectgym.envs",), ("affectgym.redteam",), ("affectgym.envs.validation", "affectgym.envs.checker"),
     ("affectgym", "affectgym.features.commands")),
    # eval plays agents on local envs or on served ones (the OpenEnv client); the verifiers
    # taskset plays episodes as the eval runner does (its episode seeds)
    (("affectgym.agents",), ("affectgym.integrations",), ("affectgym.eval", "affectgym.redteam.commands"),
     ("affectgym.integrations.verifiers",)),
    (
        ("affectgym.train",),
        ("affectgym.train.grpo", "affectgym.train.sft", "affectgym.train.dpo", "affectgym.train.sb3"),
        ("affectgym.train.demo",),
        # train's subcommand, and what `eval --from-train RUN` reads from a run
        ("affectgym.train.commands",),
    ),
    # an experiment's arms train and play; the runner plays them through eval
    (("affectgym.experiments",),),
    (("affectgym.cli", "affectgym.__main__", "affectgym.commands"),),
)
"""Module prefixes of each tier of each layer, bottom first; ``affectgym`` alone is the package's ``__init__``."""

HEAVY_LIBRARIES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "stable_baselines3")
"""Libraries a module imports inside the functions that need them (STYLE.md), so ``affectgym`` starts fast."""
ALGORITHMS = LAYERS[4][1]
"""The training algorithms: leaves over the floor of ``train/``."""


def module_name(path: Path) -> str:
    """``affectgym/envs/core.py`` -> ``affectgym.envs.core``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def place_of(module: str) -> tuple[int, int] | None:
    """``(layer, tier)`` of an affectgym module, or ``None`` when no layer names it."""
    best: tuple[int, int, int] | None = None  # (prefix length, layer, tier): the longest prefix wins
    for layer, tiers in enumerate(LAYERS):
        for tier, prefixes in enumerate(tiers):
            for prefix in prefixes:
                matches = module == prefix if prefix == "affectgym" else module == prefix or module.startswith(prefix + ".")
                if matches and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), layer, tier)
    return None if best is None else best[1:]


def imports_of(module: str, path: Path) -> list[tuple[int, str, bool]]:
    """``(line, affectgym module, inside a function)`` for every import statement of ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    in_function = {
        id(inner) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(node)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        lazy = id(node) in in_function
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, lazy) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                # `from affectgym import _version` imports the submodule, not the package.
                found.append((node.lineno, submodule if submodule in MODULES else base, lazy))
    return [item for item in found if item[1] == "affectgym" or item[1].startswith("affectgym.")]


def imported_modules(module: str, path: Path) -> list[tuple[int, str]]:
    """``(line, affectgym module)`` for every import statement of ``path``, relative ones resolved."""
    return [(line, name) for line, name, _ in imports_of(module, path)]


def import_graph() -> dict[str, dict[str, int]]:
    """Every affectgym module -> each affectgym module it imports -> the line of the first such import."""
    graph: dict[str, dict[str, int]] = {module: {} for module in MODULES}
    for module, path in MODULES.items():
        for line, name, _ in imports_of(module, path):
            if name != module:
                graph[module].setdefault(name, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Circles of ``graph``, one per back edge found: each circle's modules, the first repeated at the end.

    ``graphlib`` names one circle at a time; its closing edge is dropped and the search goes on.
    """
    edges = {module: dict(targets) for module, targets in graph.items()}
    found = []
    while True:
        try:
            graphlib.TopologicalSorter({module: set(targets) for module, targets in edges.items()}).prepare()
        except graphlib.CycleError as error:
            cycle = list(reversed(error.args[1]))  # graphlib lists a circle against the arrows
            found.append(cycle)
            del edges[cycle[-2]][cycle[-1]]
        else:
            return found


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(name for name in MODULES if place_of(name) is None)
    assert not unplaced, f"modules outside every layer (add them to LAYERS in {Path(__file__).name}): {unplaced}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer_or_tier(module: str) -> None:
    path = MODULES[module]
    own = place_of(module)
    assert own is not None
    upward = [
        f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {name} (layer, tier {place_of(name)} > {own})"
        for line, name in imported_modules(module, path)
        if (place_of(name) or (0, 0)) > own
    ]
    assert not upward, "\n".join(upward)


def test_no_modules_import_one_another() -> None:
    graph = import_graph()
    found = [
        " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)) + f" -> {cycle[0]}"
        for cycle in circles(graph)
    ]
    assert not found, "modules that import one another:\n" + "\n".join(found)


def test_training_algorithms_are_leaves_over_the_train_floor() -> None:
    crossing = [
        f"{module} (line {line}) imports {name}" for module, targets in import_graph().items() for name, line in targets.items()
        if place_of(module) == place_of(name) == place_of(ALGORITHMS[0])
    ]
    assert not crossing, "\n".join(crossing)


def imports_heavy_library_at_top(path: Path) -> bool:
    """Whether the module at ``path`` imports one of :data:`HEAVY_LIBRARIES` at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom) and not node.level]
    return any(name.split(".")[0] in HEAVY_LIBRARIES for name in names)


def test_train_modules_import_one_another_at_module_level() -> None:
    lazy = [
        f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {name} inside a function"
        for module, path in MODULES.items()
        if module.startswith("affectgym.train.") and module != "affectgym.train.commands"
        for line, name, inside in imports_of(module, path)
        if inside and name.startswith("affectgym.train") and not imports_heavy_library_at_top(MODULES[name])
    ]
    assert not lazy, "\n".join(lazy)


def test_the_rules_themselves_catch_upward_lazy_and_circular_imports(tmp_path: Path) -> None:
    assert place_of("affectgym.features.cache") < place_of("affectgym.data.splits") < place_of("affectgym")
    assert place_of("affectgym.envs.core") < place_of("affectgym") < place_of("affectgym.eval.runner")
    assert place_of("affectgym.integrations.openenv.client") < place_of("affectgym.eval.runner")
    assert place_of("affectgym.eval.runner") < place_of("affectgym.integrations.verifiers")
    assert place_of("affectgym.train.run") < place_of("affectgym.train.grpo") < place_of("affectgym.train.demo")
    assert place_of("affectgym.eval.commands") == place_of("affectgym.eval.runner") < place_of("affectgym.train.run")
    assert place_of("affectgym.integrations.commands") < place_of("affectgym.eval.commands")
    assert place_of("affectgym.data.commands") < place_of("affectgym.eval.difficulty")
    assert place_of("affectgym.cli_arguments") < place_of("affectgym.features") < place_of("affectgym.train.commands")
    assert place_of("affectgym.train.demo") < place_of("affectgym.train.commands") < place_of("affectgym.cli")
    assert imports_heavy_library_at_top(MODULES["affectgym.train.shared_prefix"])
    assert not imports_heavy_library_at_top(MODULES["affectgym.train.policy"])
    source = tmp_path / "probe.py"
    source.write_text("import affectgym.emotions\ndef f():\n    import affectgym\n    from affectgym import _version\n"
                      "    from affectgym.train import grpo\n")
    found = imports_of("affectgym.features.probe", source)
    assert [(name, lazy) for _, name, lazy in found] == [
        ("affectgym.emotions", False), ("affectgym", True), ("affectgym._version", True), ("affectgym.train.grpo", True)
    ]
    found = circles({"a": {"b": 1}, "b": {"c": 1, "d": 1}, "c": {"a": 1}, "d": {}})
    assert len(found) == 1 and found[0][0] == found[0][-1] and set(found[0]) == {"a", "b", "c"}
    assert circles({"a": {"b": 1}, "b": {}}) == []
