"""A saved adapter (or model) folder checked before anything loads it: its files, their fields, its base model.

A training run that starts from ``--init-adapter`` and ``affectgym eval --from-train`` both
load a folder an earlier run wrote. A folder that is missing, empty or torn (a run killed
while saving), or whose ``adapter_config.json`` holds a field of the wrong type, fails late
in PEFT's or safetensors' words ("Can't find adapter_config.json", "header too large");
:func:`saved_model_problem` names the file and what is wrong with it first, reading only the
config and the weights files' headers. :func:`check_init_adapter` also refuses an adapter
trained on another base model than ``--model``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Fields of ``adapter_config.json`` PEFT reads, and what each must hold.
ADAPTER_FIELDS: dict[str, tuple[str, Any]] = {
    "r": ("a positive integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0),
    "lora_alpha": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "lora_dropout": ("a number in [0, 1)", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1),
    "target_modules": ("a module name, a list of them or null",
                       lambda v: v is None or isinstance(v, str) or (isinstance(v, list) and all(isinstance(m, str) for m in v))),
    "layers_to_transform": ("a layer index, a list of them or null",
                            lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool))
                            or (isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v))),
    "base_model_name_or_path": ("a model folder or hub id, or null", lambda v: v is None or isinstance(v, str)),
}
#: The weights files a saved adapter or model may have, by the file that says what it is.
WEIGHTS = {"adapter_config.json": ("adapter_model.safetensors", "adapter_model.bin"),
           "config.json": ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")}
#: The config fields that fix a model's weight shapes (two models sharing them can share an adapter).
SHAPE_FIELDS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size")


def saved_model_problem(folder: str | Path) -> str | None:
    """What keeps ``folder`` from loading as a PEFT adapter (or a saved model), or ``None`` when nothing does.

    An adapter folder has ``adapter_config.json`` (a JSON object whose :data:`ADAPTER_FIELDS`
    have their types) and ``adapter_model.safetensors`` (or ``.bin``); a saved model, a
    ``config.json`` and its weights. A safetensors file must have a whole header and the data
    it describes (a file cut short is named).

    >>> saved_model_problem("no/such/folder")
    "no folder 'no/such/folder'"
    """
    folder = Path(folder)
    if not folder.is_dir():
        return f"no folder {str(folder)!r}"
    kind = next((name for name in WEIGHTS if (folder / name).is_file()), None)
    if kind is None:
        return f"no adapter_config.json (nor a model's config.json) in {folder}: the run did not save it"
    config_file = folder / kind
    try:
        values = json.loads(config_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"{config_file} is not JSON ({exc})"
    if not isinstance(values, dict):
        return f"{config_file} holds a {type(values).__name__}, not a JSON object"
    if kind == "adapter_config.json":
        wrong = [f"{name} must be {words}, got {values[name]!r}" for name, (words, fits) in ADAPTER_FIELDS.items()
                 if name in values and not fits(values[name])]
        if wrong:
            return f"{config_file}: {'; '.join(wrong)}"
    weights = [folder / name for name in WEIGHTS[kind] if (folder / name).is_file()]
    if not weights:
        return f"no weights in {folder} ({' or '.join(WEIGHTS[kind])}): the run did not save them"
    return _safetensors_problem(weights[0]) if weights[0].suffix == ".safetensors" else None


def _safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file ``path`` cannot be read (cut short, not safetensors), or ``None``."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            handle.keys()
    except (SafetensorError, OSError) as exc:
        return f"{path} is torn or not a safetensors file ({exc})"
    return None


def check_init_adapter(config: Any, *, model_path: str | None = None) -> None:
    """Fail before any weights load when ``config.init_adapter`` cannot start the run.

    Args:
        config: A :class:`~affectgym.train.config.TrainConfig` with ``init_adapter`` set.
        model_path: What ``config.model`` loads (its folder or hub id); default: ``config.model``.

    Raises:
        FileNotFoundError: No such folder, or no ``adapter_config.json`` in it.
        ValueError: A torn file, a field of the wrong type, a full model instead of an adapter,
            or an adapter of another base model than ``config.model`` (both named).
    """
    folder = Path(config.init_adapter).expanduser()
    what = f"--init-adapter {config.init_adapter!r}"
    if not folder.is_dir() or not (folder / "adapter_config.json").is_file():
        reason = "no such folder" if not folder.is_dir() else "no adapter_config.json in that folder"
        raise FileNotFoundError(f"{what}: {reason}; pass the adapter/ folder of an earlier --algo sft, grpo or dpo run")
    problem = saved_model_problem(folder)
    if problem is not None:
        raise ValueError(f"{what}: {problem}")
    base = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8")).get("base_model_name_or_path")
    if base and not same_base_model(base, config.model, model_path or config.model):
        raise ValueError(
            f"{what} was trained on {base!r}, not on --model {config.model!r}: its weights do not fit that model; "
            f"pass --model {base}, or an adapter trained on {config.model}"
        )


def same_base_model(base: str, model: str, resolved: str) -> bool:
    """Whether an adapter trained on ``base`` fits ``model`` (an alias, a folder or a hub id), as far as can be told.

    ``resolved`` is what ``model`` loads (an alias's folder). The same name or folder fits;
    two local folders fit when their ``config.json`` files give the same shapes
    (:data:`SHAPE_FIELDS`); a base that is no folder here cannot be compared and is taken to
    fit (PEFT checks the weights as it loads them).

    >>> same_base_model("org/model", "org/model", "org/model"), same_base_model("./a", "./a/", "./a/")
    (True, True)
    """
    if base in (model, resolved) or _same_path(base, resolved):
        return True
    here, there = Path(resolved).expanduser() / "config.json", Path(base).expanduser() / "config.json"
    if not (here.is_file() and there.is_file()):
        return True
    shapes = [json.loads(path.read_text(encoding="utf-8")) for path in (here, there)]
    return all(shapes[0].get(name) == shapes[1].get(name) for name in SHAPE_FIELDS)


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except OSError:
        return False


__all__ = ["ADAPTER_FIELDS", "SHAPE_FIELDS", "WEIGHTS", "check_init_adapter", "same_base_model", "saved_model_problem"]
