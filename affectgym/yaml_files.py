"""Reading a YAML file a user hands in (a ``--config`` file, a material file) within limits.

``yaml.safe_load`` builds no arbitrary objects, but it takes any document: nine lines of
nested aliases (a "billion laughs") stand for 10^9 values, which whoever walks, prints or
copies them expands until memory runs out; a key given twice keeps its last value without a
word; a few thousand ``[`` exceed Python's recursion limit with an error that names no file.
:func:`load_yaml_file` reads through :class:`LimitedSafeLoader`, PyYAML's safe loader whose
composer counts while it builds the node graph, and refuses, in one line naming the file, what
is wrong and what is accepted (a :class:`YamlFileError`):

* more than :attr:`YamlLimits.max_aliases` aliases (``*name``);
* a document that stands for more than :attr:`YamlLimits.max_values` values once every alias
  is expanded (counted on the graph, where an alias costs what it names: nothing is expanded
  to count it);
* lists and mappings nested deeper than :attr:`YamlLimits.max_depth` levels (through aliases
  too), and an alias inside the value it names;
* a key given twice in one mapping (a key that a ``<<`` merge brings in may be overridden);
* a file of more than :attr:`YamlLimits.max_bytes` bytes.

Every check is made while the document is composed, before any Python value is built, so a
hostile file fails as soon as the offending line is read: the billion laughs in milliseconds.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "run.yaml"
>>> _ = path.write_text("seed: 1\\nmax_steps: 3\\nseed: 2\\n")
>>> load_yaml_file(path, what="config file")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
affectgym.yaml_files.YamlFileError: config file '...run.yaml': key 'seed' is given twice in one mapping (lines 1 and 3); each key may be given once
>>> _ = path.write_text("seed: 1\\ndemos: [a, b]\\n")
>>> load_yaml_file(path)
{'seed': 1, 'demos': ['a', 'b']}
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import Resolver

if yaml.__with_libyaml__:
    # libyaml's scanner and parser, then PyYAML's composer (counting) and constructor: PyYAML's own
    # scanner takes time quadratic in the open brackets (a few thousand "[" take seconds), libyaml's linear
    from yaml.cyaml import CParser

    _EVENTS: tuple[type, ...] = (CParser,)
else:
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    _EVENTS = (Reader, Scanner, Parser)

#: The tag of a ``<<`` merge key: the mapping it names is merged in, and its keys may be overridden.
_MERGE_TAG = "tag:yaml.org,2002:merge"
#: The tag of a ``=`` key, which SafeLoader reads as the text "=".
_VALUE_TAG = "tag:yaml.org,2002:value"
#: libyaml's own refusal of nesting past 1000 levels, met while it scans ahead of the composer.
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


class YamlFileError(ValueError):
    """A YAML file refused by :func:`load_yaml_file`'s limits; the one-line message names the file."""


@dataclass(frozen=True)
class YamlLimits:
    """How much a YAML file may hold; the defaults are far above any config affectgym writes or ships."""

    max_aliases: int = 100
    """Aliases (``*name``) in the document: sharing a value a few times is fine, a graph of them is not."""
    max_values: int = 100_000
    """Scalars, lists and mappings the document stands for, each alias counted as all it names."""
    max_depth: int = 50
    """Lists and mappings nested in one another, through aliases too."""
    max_bytes: int = 4 * 1024 * 1024
    """Size of the file in bytes (4 MiB)."""


class LimitedSafeLoader(Composer, *_EVENTS, SafeConstructor, Resolver):
    """PyYAML's safe loader whose composer refuses what :class:`YamlLimits` does not accept.

    ``yaml.CSafeLoader``'s parts (``yaml.SafeLoader``'s without libyaml), with PyYAML's Python
    composer in place of libyaml's, so that it can count.

    Composing is where aliases are resolved into a graph (an alias is the node it names, not a
    copy), so the loader counts there: each node's expanded size and depth are computed once,
    when it is composed, from those of its children. Refusals are :class:`YamlFileError`
    naming ``what`` and ``name``; PyYAML's own errors (a syntax error) pass through.

    Args:
        stream: The document (bytes, text or a file), as for ``yaml.SafeLoader``.
        name: The file, as the messages name it.
        what: What the file is to the caller ("config file", "material file").
        limits: What the file may hold.
    """

    def __init__(self, stream: Any, *, name: str = "<string>", what: str = "YAML file",
                 limits: YamlLimits = YamlLimits()) -> None:
        if yaml.__with_libyaml__:
            CParser.__init__(self, stream)
        else:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.limits = limits
        self.source = f"{what} {name!r}"
        self.aliases_seen = 0
        self.nodes_composed = 0
        self.depth = 0
        #: Each composed node's (values it stands for, levels it nests), by id; a node being composed is absent.
        self.extent: dict[int, tuple[int, int]] = {}

    def refuse(self, problem: str) -> YamlFileError:
        """The error for ``problem`` (what is wrong, then what is accepted), naming the file."""
        return YamlFileError(f"{self.source}: {problem}")

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        """PyYAML's node, refused past the limits; its expanded size and depth recorded."""
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > self.limits.max_aliases:
                raise self.refuse(f"more than {self.limits.max_aliases} aliases (the last *{event.anchor} at line "
                                  f"{line}); at most {self.limits.max_aliases} are accepted: write the values out")
            node = super().compose_node(parent, index)
            if id(node) not in self.extent:
                raise self.refuse(f"alias *{event.anchor} at line {line} is inside the value it names (a value "
                                  f"that contains itself); an alias may only repeat a finished value")
            values, levels = self.extent[id(node)]
            self.check_extent(values, self.depth + levels, line)
            return node
        self.nodes_composed += 1
        if isinstance(event, ScalarEvent):  # most nodes: nothing inside, no level
            self.check_extent(self.nodes_composed, self.depth, line)
            node = super().compose_node(parent, index)
            self.extent[id(node)] = (1, 0)
            return node
        self.depth += 1
        self.check_extent(self.nodes_composed, self.depth, line)  # before the values inside it are read
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        children = [part for pair in node.value for part in pair] if isinstance(node, MappingNode) else node.value
        values = 1 + sum(self.extent[id(child)][0] for child in children)
        levels = 1 + max((self.extent[id(child)][1] for child in children), default=0)
        self.check_extent(values, self.depth + levels, line)
        self.extent[id(node)] = (values, levels)
        return node

    def check_extent(self, values: int, depth: int, line: int) -> None:
        """Refuse a document that, by ``line``, stands for more than ``max_values`` or nests deeper than ``max_depth``."""
        if values > self.limits.max_values:
            raise self.refuse(f"the document stands for more than {self.limits.max_values} values (aliases expanded) "
                              f"by line {line}; at most {self.limits.max_values} are accepted")
        if depth > self.limits.max_depth:
            raise self.refuse(f"lists and mappings nest deeper than {self.limits.max_depth} levels (aliases expanded) "
                              f"at line {line}; at most {self.limits.max_depth} are accepted")

    def compose_mapping_node(self, anchor: str | None) -> MappingNode:
        """PyYAML's mapping node, refused when a key is given twice (a ``<<`` merge's keys may be overridden)."""
        node = super().compose_mapping_node(anchor)
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue  # a list or mapping as a key is SafeLoader's to refuse
            # "1" and "0x1", or "yes" and "true", are one key
            key = key_node.value if key_node.tag == _VALUE_TAG else self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise self.refuse(f"key {key!r} is given twice in one mapping (lines {first_line[key]} and {line}); "
                                  "each key may be given once")
            first_line[key] = line
        return node


def load_yaml_file(path: str | Path, *, what: str = "YAML file", limits: YamlLimits = YamlLimits()) -> Any:
    """The value of the YAML file at ``path``, as ``yaml.safe_load`` reads it, within ``limits``.

    Args:
        path: The file.
        what: What the file is to the caller, for the messages ("config file", "material file").
        limits: What the file may hold (:class:`YamlLimits`).

    Returns:
        The document's value (``None`` for an empty file).

    Raises:
        FileNotFoundError: No file at ``path`` (``OSError`` for one that cannot be read).
        YamlFileError: The file breaks one of ``limits`` or gives a key twice; one line naming the file.
        yaml.YAMLError: The file is not YAML (PyYAML's error, with the line and column; an undecodable
            file is a ``yaml.reader.ReaderError``), for the caller to word for its users.
    """
    with open(path, "rb") as file:
        data = file.read(limits.max_bytes + 1)
    stream = io.BytesIO(data)
    stream.name = str(path)  # PyYAML's own errors name the file too
    loader = LimitedSafeLoader(stream, name=str(path), what=what, limits=limits)
    try:
        if len(data) > limits.max_bytes:
            raise loader.refuse(f"more than {limits.max_bytes} bytes; at most {limits.max_bytes} are accepted")
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        if exc.problem != _LIBYAML_TOO_DEEP:
            raise
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise loader.refuse(f"lists and mappings nest deeper than {limits.max_depth} levels at line {line}; "
                            f"at most {limits.max_depth} are accepted") from None
    finally:
        loader.dispose()


__all__ = ["LimitedSafeLoader", "YamlFileError", "YamlLimits", "load_yaml_file"]
