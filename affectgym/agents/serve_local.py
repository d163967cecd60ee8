"""Serve a local model as an OpenAI-compatible endpoint on CPU, with ``transformers serve``.

The engine is Hugging Face's own server (FastAPI, ``/v1/chat/completions`` and
``/v1/models``); this module only picks its settings and the model folder::

    python -m affectgym.agents.serve_local --port 8000
    affectgym eval affectgym/Sarcasm-v0 --agent openai:smollm2-135m@http://127.0.0.1:8000/v1 -n 4 -t 32

A model alias (``smollm2-135m``, see :mod:`affectgym.models`) is resolved to its
folder and served from the folder above it under its own name, so requests name the
model as affectgym does. The settings that make it answer on a CPU:

* ``--device cpu`` and no ``--continuous-batching``: continuous batching sizes its paged KV
  cache from memory (60 % of it on a CPU), so its first request allocates and touches many
  GiB (14 GiB and 100 s for "Say hi" on a 23 GiB, 2-core machine) and swaps where less
  memory is free;
* ``HF_HUB_OFFLINE=1`` (unless set): the folder is local, nothing needs the Hub.

``transformers serve`` cannot serve the GGUF file itself (``folder:file.gguf`` fails at start
with a config that names no architecture), hence the converted fp32 folder. Clients should
send ``max_tokens``: without it the server generates up to 1024 tokens a reply.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NamedTuple

from affectgym.models import resolve_model

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


class ServeCommand(NamedTuple):
    """How to start ``transformers serve`` on one model.

    Attributes:
        argv: The command line.
        cwd: The folder to run it in (the model folder's parent).
        model: The model name requests must carry (the folder's name).
        base_url: The endpoint, ending in ``/v1``.
    """

    argv: list[str]
    cwd: Path
    model: str
    base_url: str


def serve_command(model: str = "smollm2-135m", *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ServeCommand:
    """The ``transformers serve`` command for ``model`` on CPU (converting an alias on first use).

    Args:
        model: A model alias (``smollm2-135m``) or a local model folder.
        host: Address to listen on.
        port: Port to listen on.

    Raises:
        FileNotFoundError: ``model`` is neither an alias nor a folder with a ``config.json``.
    """
    folder = Path(resolve_model(model)).expanduser().resolve()
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"cannot serve {model!r}: {folder} is not a model folder (no config.json); "
            "give a model alias (see affectgym.models.model_aliases()) or a local transformers model folder"
        )
    argv = [sys.executable, "-m", "transformers.cli.transformers", "serve", folder.name,
            "--device", "cpu", "--host", host, "--port", str(port)]
    return ServeCommand(argv, folder.parent, folder.name, f"http://{host}:{port}/v1")


def main(argv: list[str] | None = None) -> None:
    """Print the ``--agent`` spec, then become the server (``os.execv``)."""
    parser = argparse.ArgumentParser(prog="python -m affectgym.agents.serve_local", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default="smollm2-135m", help="model alias or folder (default: smollm2-135m)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default: {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    args = parser.parse_args(argv)
    command = serve_command(args.model, host=args.host, port=args.port)
    print(f"serving {command.cwd / command.model} at {command.base_url}; play it with "
          f"--agent openai:{command.model}@{command.base_url}", flush=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.chdir(command.cwd)
    os.execv(command.argv[0], command.argv)


if __name__ == "__main__":
    main()
