"""The one policy for text that UTF-8 cannot encode: lone surrogates become U+FFFD.

A lone surrogate (a code point in U+D800-U+DFFF on its own: half an emoji cut by a
model's ``max_tokens``, or a fuzzer's junk) is a valid Python ``str`` but has no UTF-8
form, so a JSON file, an SQLite key or an HTTP body refuses it. Wherever affectgym encodes
an agent's text (the eval runner's files, the judge's cache keys and requests, the
scorers' input) it replaces each one with U+FFFD REPLACEMENT CHARACTER, the character
Unicode reserves for one that could not be represented, and never with ``?``, which is
text that means something (a question) to a scorer.

>>> replace_lone_surrogates("Yay \\ud83d"), count_lone_surrogates("Yay \\ud83d")
('Yay �', 1)
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT_CHARACTER", "count_lone_surrogates", "replace_lone_surrogates"]

REPLACEMENT_CHARACTER = "\ufffd"
"""What each lone surrogate becomes."""

# A Python str holds a surrogate pair as one astral code point, so every code point in
# this range is lone (two lone halves side by side stay two, as UTF-8 sees them).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so that it encodes as UTF-8.

    Args:
        text: Any text.

    Returns:
        The text, unchanged when it holds no lone surrogate.

    >>> replace_lone_surrogates("cut \\ud83d here").encode()
    b'cut \\xef\\xbf\\xbd here'
    >>> replace_lone_surrogates("whole \\U0001f600") == "whole \\U0001f600"
    True
    """
    return _LONE_SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def count_lone_surrogates(text: str) -> int:
    """How many lone surrogates :func:`replace_lone_surrogates` would replace in ``text``.

    Args:
        text: Any text.

    Returns:
        The count.

    >>> count_lone_surrogates("\\ud83d\\ude00 and \\U0001f600")
    2
    """
    return len(_LONE_SURROGATE.findall(text))
