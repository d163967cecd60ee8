"""Every public module, class and function of the package has a docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import affectgym


def public_objects():
    for info in pkgutil.walk_packages(affectgym.__path__, prefix="affectgym."):
        module = importlib.import_module(info.name)
        yield info.name, module
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
                if inspect.isclass(obj):
                    for member_name, member in vars(obj).items():
                        if not member_name.startswith("_") and inspect.isfunction(member):
                            yield f"{info.name}.{name}.{member_name}", member


def test_every_public_module_class_and_function_has_a_docstring():
    missing = [name for name, obj in public_objects() if not inspect.getdoc(obj)]
    assert not missing, "missing docstrings:\n" + "\n".join(missing)
