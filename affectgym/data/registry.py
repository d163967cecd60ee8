"""Named datasets of each kind, the seam every env reads its scenarios through.

An env names its data with one argument: ``SpeechEmotion-v0(dataset=...)``,
``EmpatheticDialogue-v0(dataset=...)``, ``EmotionStyle-v0(instructions=...)``. That name is
looked up here, among the datasets of the env's kind (:data:`KINDS`): the built-ins, which
their own modules register (``"embedded"``, ``"file"``, ``"hub"``... are entries, not
branches of the env), those registered in the process with :func:`register_dataset`, and
those a package declares in the kind's entry-point group, loaded when a kind is first
looked up::

    [options.entry_points]
    affectgym.datasets.dialogue =
        my-dialogues = my_package.data:load_my_dialogues

What a loader is depends on the kind: a :class:`~affectgym.data.speech_datasets.SpeechDataset`
for ``"speech"``, a function of the env's data arguments for the text kinds (see
:mod:`affectgym.data.dialogues` and :mod:`affectgym.data.instructions`).

>>> from affectgym.data import dialogues  # registers the built-in dialogue datasets
>>> {"embedded", "file", "hub"} <= set(datasets("dialogue"))
True
>>> dataset_loader("dialogue", "no-such")  # doctest: +ELLIPSIS
Traceback (most recent call last):
ValueError: unknown dialogue dataset 'no-such'; dataset= accepts: ...embedded, file, hub... (a package adds one through the entry-point group affectgym.datasets.dialogue, ...)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from types import MappingProxyType
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetKind:
    """A kind of dataset: the envs that read one, the argument that names it, and where plug-ins declare theirs.

    Attributes:
        group: The entry-point group of plug-in datasets of this kind.
        argument: The env argument that names a dataset (``"dataset"``, ``"instructions"``).
        envs: The built-in envs that read a dataset of this kind (a plug-in env may read one too).
    """

    group: str
    argument: str
    envs: tuple[str, ...]


KINDS: Mapping[str, DatasetKind] = MappingProxyType({
    "speech": DatasetKind("affectgym.datasets", "dataset", ("affectgym/SpeechEmotion-v0", "affectgym/Sarcasm-v0")),
    "dialogue": DatasetKind("affectgym.datasets.dialogue", "dataset", ("affectgym/EmpatheticDialogue-v0",)),
    "instructions": DatasetKind("affectgym.datasets.instructions", "instructions", ("affectgym/EmotionStyle-v0",)),
})
"""Every kind of dataset, by name: speech clips, tagged dialogues and open-ended instructions."""

_LOADERS: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
_plugins_loaded: set[str] = set()
_plugins_lock = threading.RLock()  # a plug-in's module may look a dataset up while it loads


def _kind(kind: str) -> DatasetKind:
    if kind not in KINDS:
        raise ValueError(f"unknown dataset kind {kind!r}; kinds: {', '.join(KINDS)}")
    return KINDS[kind]


def register_dataset(kind: str, name: str, loader: Any) -> None:
    """Make ``loader`` the dataset ``name`` of ``kind`` (replacing one of the same name).

    Raises:
        ValueError: ``kind`` is none of :data:`KINDS`, or ``name`` is not a non-empty string.
    """
    _kind(kind)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a dataset's name must be a non-empty string, got {name!r}")
    _LOADERS[kind][name] = loader


def datasets(kind: str) -> dict[str, Any]:
    """Every dataset of ``kind`` by name, its plug-ins' included."""
    _load_plugins(kind)
    return dict(_LOADERS[kind])


def dataset_loader(kind: str, name: str) -> Any:
    """The loader of the dataset ``name`` of ``kind``.

    Raises:
        ValueError: No dataset of ``kind`` has that name; the message lists those that do and
            how a package or a script adds one.
    """
    known = datasets(kind)
    if not isinstance(name, str) or name not in known:
        declared = KINDS[kind]
        raise ValueError(
            f"unknown {kind} dataset {name!r}; {declared.argument}= accepts: {', '.join(sorted(known))} "
            f"(a package adds one through the entry-point group {declared.group}, a script with "
            f"affectgym.data.registry.register_dataset({kind!r}, NAME, loader))"
        )
    return known[name]


def read_dataset(kind: str, name: str, item: type, error: type[Exception], **arguments: Any) -> list[Any]:
    """What the loader of the dataset ``name`` of ``kind`` returns given ``arguments``: a non-empty list of ``item``.

    Args:
        kind: One of :data:`KINDS` whose loaders are functions (``"dialogue"``, ``"instructions"``).
        name: The dataset's name.
        item: The type of what the list must hold.
        error: The kind's exception for a dataset that cannot be read.
        arguments: The env's data arguments, passed to the loader as keywords.

    Raises:
        ValueError: An unknown name (see :func:`dataset_loader`).
        error: The registered loader is not a function, or returned something else than a non-empty
            list of ``item``.
    """
    loader = dataset_loader(kind, name)
    wanted = f"a function of {', '.join(f'{argument}=' for argument in arguments)} returning a list of {item.__name__}"
    if not callable(loader):
        raise error(f"{kind} dataset {name!r} is a {type(loader).__name__}, not a loader ({wanted})")
    items = loader(**arguments)
    if not isinstance(items, list) or not items or not all(isinstance(one, item) for one in items):
        raise error(f"{kind} dataset {name!r} gave {type(items).__name__} {str(items)[:80]!r}; its loader must be "
                    f"{wanted}, and the list not empty")
    return items


def _load_plugins(kind: str) -> None:
    group = _kind(kind).group
    with _plugins_lock:
        if kind in _plugins_loaded:
            return
        _plugins_loaded.add(kind)
        for entry_point in metadata.entry_points(group=group):
            try:
                loader = entry_point.load()
            except Exception as exc:  # a broken third-party dataset is reported, not fatal
                log.warning("affectgym %s dataset plug-in %r (%s) failed to load: %s", kind, entry_point.name,
                            entry_point.value, exc)
                continue
            _LOADERS[kind][entry_point.name] = loader


__all__ = ["KINDS", "DatasetKind", "dataset_loader", "datasets", "read_dataset", "register_dataset"]
