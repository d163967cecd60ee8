"""Serve a local model as an OpenAI-compatible endpoint on CPU: ``transformers serve``'s app, with limits.

The engine is Hugging Face's own server app (FastAPI, ``/v1/chat/completions`` and
``/v1/models``); this module picks its settings and the model folder, and puts
:class:`~affectgym.agents.serve_limits.ModelRequestLimits` in front of it, so that no one
request can hold the server for long::

    python -m affectgym.agents.serve_local --port 8000
    affectgym eval affectgym/Sarcasm-v0 --agent openai:smollm2-135m@http://127.0.0.1:8000/v1 -n 4 -t 32

A model alias (``smollm2-135m``, see :mod:`affectgym.models`) is resolved to its
folder and served from the folder above it under its own name, so requests name the
model as affectgym does. The settings that make it answer on a CPU:

* device ``cpu`` and no continuous batching: continuous batching sizes its paged KV cache from
  memory (60 % of it on a CPU), so its first request allocates and touches many GiB (14 GiB
  and 100 s for "Say hi" on a 23 GiB, 2-core machine) and swaps where less memory is free;
* ``HF_HUB_OFFLINE=1`` (unless set): the folder is local, nothing needs the Hub.

``transformers serve`` cannot serve the GGUF file itself (``folder:file.gguf`` fails at start
with a config that names no architecture), hence the converted fp32 folder. The limits
(``--max-prompt-tokens``, ``--max-reply-tokens``, ``--max-pending``, ...) are
:class:`~affectgym.agents.serve_limits.ServeLimits`; a request that names no ``max_tokens``
gets ``--max-reply-tokens``. uvicorn serves the app with the header and unread clocks of
:mod:`affectgym.serving.protocols`, so half-open connections and clients that
never read cannot hold it either.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any, NamedTuple

from affectgym.agents.serve_limits import ModelRequestLimits, ServeLimits
from affectgym.models import resolve_model

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


class ServedModel(NamedTuple):
    """Where a model is served from and under which name.

    Attributes:
        folder: The model folder.
        model: The model name requests must carry (the folder's name).
        base_url: The endpoint, ending in ``/v1``.
    """

    folder: Path
    model: str
    base_url: str


def served_model(model: str = "smollm2-135m", *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ServedModel:
    """The folder and name ``model`` is served under (converting an alias on first use).

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
    return ServedModel(folder, folder.name, f"http://{host}:{port}/v1")


def build_app(served: ServedModel, limits: ServeLimits | None = None) -> Any:
    """``transformers serve``'s app on CPU with ``served``'s model loaded, behind ``limits``.

    The model is loaded here (from the folder's parent, under the folder's name).
    """
    from transformers.cli.serving.chat_completion import ChatCompletionHandler
    from transformers.cli.serving.completion import CompletionHandler
    from transformers.cli.serving.model_manager import ModelManager
    from transformers.cli.serving.response import ResponseHandler
    from transformers.cli.serving.server import build_server
    from transformers.cli.serving.systemone import SystemOneHandler
    from transformers.cli.serving.transcription import TranscriptionHandler
    from transformers.cli.serving.utils import GenerationState

    os.chdir(served.folder.parent)
    manager = ModelManager(device="cpu", force_model=served.model)
    _, tokenizer = manager.load_model_and_processor(manager.process_model_name(served.model))
    state = GenerationState(continuous_batching=False)
    handlers = {"chat_handler": ChatCompletionHandler(model_manager=manager, generation_state=state, chat_template_kwargs={}),
                "completion_handler": CompletionHandler(model_manager=manager, generation_state=state),
                "response_handler": ResponseHandler(model_manager=manager, generation_state=state, chat_template_kwargs={}),
                "transcription_handler": TranscriptionHandler(manager, state),
                "systemone_handler": SystemOneHandler(model_manager=manager, generation_state=state, chat_template_kwargs={})}
    app = build_server(manager, generation_state=state, **handlers)

    def prompt_tokens(request: dict[str, Any]) -> int:
        rendered = tokenizer.apply_chat_template(request["messages"], tools=request.get("tools"),
                                                 add_generation_prompt=True, tokenize=True)
        return len(rendered["input_ids"])

    return ModelRequestLimits(app, prompt_tokens, limits or ServeLimits())


def serve(served: ServedModel, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, limits: ServeLimits | None = None) -> None:
    """Load the model and serve it on ``host:port`` until interrupted (``limits``: :class:`ServeLimits`' defaults)."""
    import uvicorn

    from affectgym.serving.protocols import protocol_options

    limits = limits or ServeLimits()
    app = build_app(served, limits)
    uvicorn.run(app, host=host, port=port, limit_concurrency=limits.max_connections, log_level="info",
                **protocol_options(limits.header_timeout_s, limits.unread_timeout_s, limits.max_connections))


def main(argv: list[str] | None = None) -> None:
    """Print the ``--agent`` spec, then serve the model."""
    parser = argparse.ArgumentParser(prog="python -m affectgym.agents.serve_local", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default="smollm2-135m", help="model alias or folder (default: smollm2-135m)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default: {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    defaults = ServeLimits()
    for field in dataclasses.fields(ServeLimits):
        parser.add_argument("--" + field.name.replace("_", "-"), type=type(getattr(defaults, field.name)),
                            default=getattr(defaults, field.name),
                            help=f"ServeLimits.{field.name}, see affectgym.agents.serve_limits (default: {getattr(defaults, field.name)})")
    args = parser.parse_args(argv)
    try:
        limits = ServeLimits(**{field.name: getattr(args, field.name) for field in dataclasses.fields(ServeLimits)})
        served = served_model(args.model, host=args.host, port=args.port)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"serving {served.folder} at {served.base_url}; play it with --agent openai:{served.model}@{served.base_url}",
          flush=True)
    serve(served, args.host, args.port, limits)


if __name__ == "__main__":
    main()
