"""Whether the Hugging Face hub can serve something, known before anything waits on it.

Loading a model that is neither a local folder nor in the hub cache makes ``from_pretrained``
retry the hub for most of a minute on a machine without network. :func:`hub_offline_reason`
says at once why the hub cannot be reached (``HF_HUB_OFFLINE`` is set, or no TCP connection
to ``$HF_ENDPOINT`` within a few seconds), and :func:`pretrained_problem` says why a name
cannot load here: a path with no folder behind it, or a hub id that is not cached while the
hub is unreachable. Both read the environment on every call.

>>> pretrained_problem("/no/such/model-folder")
"folder '/no/such/model-folder' not found; give a local model folder (with config.json) or a hub id such as org/name"
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

HUB_PROBE_TIMEOUT_S = 3.0  # how long the hub gets to accept a TCP connection
DEFAULT_ENDPOINT = "https://huggingface.co"
# A hub repo id: a name, or a namespace and a name (what huggingface_hub accepts).
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def hub_offline_reason(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """Why the hub cannot be reached, or ``None`` when it accepts a TCP connection.

    Args:
        timeout_s: How long the connection may take.

    Returns:
        ``"HF_HUB_OFFLINE is set"``, ``"no connection to <host>:<port> (<error>)"`` or ``None``.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    parsed = urlparse(os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"no connection to {host}:{port} ({exc.strerror or type(exc).__name__})"


def is_hub_id(name: str) -> bool:
    """Whether ``name`` has the form of a hub repo id (``name`` or ``namespace/name``) and is no local path.

    >>> is_hub_id("j-hartmann/emotion-english-distilroberta-base"), is_hub_id("/tmp/model"), is_hub_id("a/b/c")
    (True, False, False)
    """
    return bool(_REPO_ID.match(name)) and not name.startswith((".", "~")) and not Path(name).exists()


def in_hub_cache(repo_id: str) -> bool:
    """Whether the local hub cache holds ``repo_id``'s ``config.json``."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id after all
        return False


def pretrained_problem(name: str) -> str | None:
    """Why ``from_pretrained(name)`` cannot work on this machine, or ``None`` when it may.

    Args:
        name: A local folder or a hub id.

    Returns:
        ``"folder ... not found ..."`` for a path with no folder; ``"... not in the local hub
        cache and the hub is unreachable (...)"`` for an uncached hub id while offline; else ``None``.
    """
    if Path(name).expanduser().is_dir():
        return None
    if not is_hub_id(name):
        return (
            f"folder {name!r} not found; give a local model folder (with config.json) or a hub id such as org/name"
        )
    if in_hub_cache(name):
        return None
    reason = hub_offline_reason()
    if reason is None:
        return None
    return f"{name!r} is no local folder and not in the local hub cache, and the Hugging Face hub is unreachable ({reason})"


__all__ = ["HUB_PROBE_TIMEOUT_S", "hub_offline_reason", "in_hub_cache", "is_hub_id", "pretrained_problem"]
