"""``affectgym manifest``: an OpenEnv ``openenv.yaml`` for one served env, from its registration and its validate report.

OpenEnv 0.10 reads a served environment's folder through its ``openenv.yaml``: the top level
names it (``spec_version: 1``, ``name``, ``version``, ``type: space``, ``runtime: fastapi``,
``app``, ``port``, as its ``openenv init`` template writes them), ``validation:`` declares what
``openenv validate`` holds it to (manifest schema 1), and RFC 011's Environment Card
(``openenv.discovery.producer.build_catalog``) takes the card's name and description from it.
:func:`build_manifest` fills it for one env:

* ``name``: the env's OpenEnv name, its id as a slug (:func:`~affectgym.integrations.openenv.app.openenv_name`,
  as the server names it); ``version``: affectgym's;
  ``description``: the first line of the env class's docstring (what ``affectgym list`` shows);
* ``app``: :func:`~affectgym.integrations.openenv.app.app_from_environment`, the app uvicorn
  serves. It is a factory (``uvicorn --factory``) that reads the env to serve from the JSON
  :class:`~affectgym.integrations.openenv.app.ServeConfig` in the environment variable
  :data:`~affectgym.integrations.openenv.app.CONFIG_VARIABLE`: ``affectgym.serve`` gives that
  value, the ``affectgym serve`` command line, and the variables the env image's entry command
  reads (``deploy/serve.sh``: ``AFFECTGYM_ENV_ID``, ``AFFECTGYM_SPLIT``, ``AFFECTGYM_ENV_KWARGS``);
* ``validation:``: the report's :meth:`~affectgym.envs.validation.ValidationReport.validation_block`;
* ``affectgym:``: the env id and keyword arguments, how it is served, and ``affectgym validate``'s
  JSON report (:meth:`~affectgym.envs.validation.ValidationReport.to_dict`) with the command that
  produced it. OpenEnv's parser reads only the keys above and ignores this block.

The files are deterministic, so that committed ones regenerate byte for byte: keys in a fixed
order, no timestamps, and the report without its checks' ``duration_s``, the one field that
differs from run to run.

:func:`write_manifest` writes ``<out>/<name>/openenv.yaml`` and, beside it, ``discovery.json``
holding one key, the licence. A card needs a name and a description, both in the manifest,
and a licence, which ``build_catalog`` reads from the env folder's ``discovery.json``,
``pyproject.toml`` or README front matter, else from the repository's ``pyproject.toml``
``[project]`` table. affectgym declares its licence in ``setup.cfg``, which OpenEnv does not
read, so without a declaration every card would say ``unknown``. ``discovery.json`` is the
smallest declaration, and with no ``license_source`` the declaration is its own evidence,
so the folder needs no other file wherever it is committed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from affectgym._version import __version__
from affectgym.envs.registration import env_summary
from affectgym.envs.validation import ValidationReport
from affectgym.integrations.openenv.app import (
    CONFIG_VARIABLE,
    ServeConfig,
    app_from_environment,
    openenv_name,
)

#: The manifest's file name, which OpenEnv's parser and ``build_catalog`` read.
MANIFEST_FILE = "openenv.yaml"
#: The file beside it that declares the card's licence.
DISCOVERY_FILE = "discovery.json"
#: The port the app is served on: ``affectgym serve``'s default, and the env image's.
PORT = ServeConfig(env_id="").port
#: ``module:attribute`` of the app factory (``uvicorn --factory``).
APP = f"{app_from_environment.__module__}:{app_from_environment.__qualname__}"
#: The first lines of every manifest: what wrote it and how to run ``app``.
HEADER = (
    "# Written by `affectgym manifest` from the env's registration, its docstring and `affectgym validate`'s\n"
    "# report (affectgym.validate): regenerate it rather than edit it.\n"
    f"# `app` is a factory (uvicorn --factory) reading the env to serve from {CONFIG_VARIABLE}\n"
    "# (affectgym.serve.app_config); `affectgym serve` (affectgym.serve.command) sets it.\n"
)


def serve_command(env_id: str, env_kwargs: Mapping[str, Any]) -> str:
    """The ``affectgym serve`` command line that serves ``env_id`` made with ``env_kwargs`` on :data:`PORT`.

    Args:
        env_id: A registered env id.
        env_kwargs: Its keyword arguments, ``split`` among them.

    Returns:
        The command line, quoted for a POSIX shell.

    Raises:
        ValueError: ``env_kwargs`` names no split.

    >>> serve_command("affectgym/Sarcasm-v0", {"split": "eval", "max_turns": 4})
    'affectgym serve affectgym/Sarcasm-v0 --split eval --env-kwargs \\'{"max_turns": 4}\\' --port 8000'
    """
    extra = _without_split(env_kwargs)
    words = ["affectgym", "serve", env_id, "--split", str(env_kwargs["split"])]
    if extra:
        words += ["--env-kwargs", json.dumps(extra, sort_keys=True)]
    return shlex.join([*words, "--port", str(PORT)])


def build_manifest(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    report: ValidationReport,
    *,
    max_scenarios: int,
    replays: int,
) -> dict[str, Any]:
    """The ``openenv.yaml`` of one env as data, in the order it is written (see the module docstring).

    Args:
        env_id: A registered env id.
        env_kwargs: The keyword arguments it is served and was validated with, ``split`` among
            them (``affectgym serve`` always passes one).
        report: ``validate(env_id, env_kwargs=env_kwargs, max_scenarios=max_scenarios,
            replays=replays)``, with validate's default seed.
        max_scenarios: Scenarios validate visited, for the command that reproduces ``report``.
        replays: Replays of its ``verifier_determinism``, for that command.

    Returns:
        The manifest: plain data (strings, numbers, lists and mappings), ready for YAML.

    Raises:
        ValueError: ``env_kwargs`` names no split.
    """
    extra = _without_split(env_kwargs)
    served_kwargs = dict(env_kwargs)
    report_data = json.loads(report.to_json())  # plain data, as `affectgym validate --json` prints it
    for result in report_data["results"]:
        del result["duration_s"]
    image_variables = {"AFFECTGYM_ENV_ID": env_id, "AFFECTGYM_SPLIT": str(env_kwargs["split"])}
    if extra:
        image_variables["AFFECTGYM_ENV_KWARGS"] = json.dumps(extra, sort_keys=True)
    validate_words = [
        "affectgym", "validate", env_id, "--env-kwargs", json.dumps(served_kwargs, sort_keys=True),
        "--max-scenarios", str(max_scenarios), "--replays", str(replays), "--json",
    ]
    return {
        "spec_version": 1,
        "name": openenv_name(env_id),
        "version": __version__,
        "description": env_summary(env_id),
        "type": "space",
        "runtime": "fastapi",
        "app": APP,
        "port": PORT,
        "validation": report.validation_block(),
        "affectgym": {
            "env_id": env_id,
            "env_kwargs": served_kwargs,
            "serve": {
                "command": serve_command(env_id, env_kwargs),
                "app_config": {
                    "variable": CONFIG_VARIABLE,
                    "value": json.dumps({"env_id": env_id, "env_kwargs": served_kwargs}, sort_keys=True),
                },
                "image_variables": image_variables,
            },
            "validate": {"command": shlex.join(validate_words), "report": report_data},
        },
    }


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """``manifest`` as the text of an ``openenv.yaml``: :data:`HEADER`, then its keys in their order.

    Args:
        manifest: A manifest of :func:`build_manifest`.

    Returns:
        The YAML text, ending in a newline.
    """
    # no width: a long line stays one line (PyYAML would fold it at 80 characters), so a diff shows what changed
    body = yaml.dump(dict(manifest), Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=float("inf"),
                     default_flow_style=False)
    return HEADER + body


def write_manifest(manifest: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Write ``<out_dir>/<name>/openenv.yaml`` and its ``discovery.json`` (the licence), creating the folders.

    Args:
        manifest: A manifest of :func:`build_manifest`.
        out_dir: The folder that holds one folder per env (``build_catalog``'s ``root``).

    Returns:
        The path of the ``openenv.yaml`` written.

    Raises:
        OSError: A folder could not be made or a file written (e.g. ``out_dir`` is a file).
    """
    folder = Path(out_dir) / manifest["name"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MANIFEST_FILE
    path.write_text(manifest_text(manifest), encoding="utf-8", newline="\n")
    declaration = json.dumps({"license": package_licence()}, indent=2, sort_keys=True) + "\n"
    (folder / DISCOVERY_FILE).write_text(declaration, encoding="utf-8", newline="\n")
    return path


def package_licence() -> str:
    """affectgym's licence as its package metadata declares it (an SPDX expression), ``unknown`` when not installed.

    Returns:
        E.g. ``Apache-2.0``.
    """
    try:
        declared = metadata.metadata("affectgym")
    except metadata.PackageNotFoundError:
        return "unknown"
    return declared.get("License-Expression") or declared.get("License") or "unknown"


class _PlainDumper(yaml.SafeDumper):
    """PyYAML's safe dumper writing a value met twice in full each time, never as an ``&anchor`` and ``*alias``."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _without_split(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` less ``split``, which must be there."""
    if "split" not in env_kwargs:
        raise ValueError(
            f"env_kwargs {dict(env_kwargs)!r} name no split; a served env is made with one, e.g. {{'split': 'eval'}}"
        )
    return {key: value for key, value in env_kwargs.items() if key != "split"}


__all__ = [
    "APP", "DISCOVERY_FILE", "HEADER", "MANIFEST_FILE", "PORT", "build_manifest", "manifest_text",
    "package_licence", "serve_command", "write_manifest",
]
