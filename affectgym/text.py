"""How affectgym reads an agent's raw text: what UTF-8 cannot encode, and what only looks like ASCII.

**Lone surrogates become U+FFFD.** A lone surrogate (a code point in U+D800-U+DFFF on its own: half an emoji cut by a
model's ``max_tokens``, or a fuzzer's junk) is a valid Python ``str`` but has no UTF-8
form, so a JSON file, an SQLite key or an HTTP body refuses it. Wherever affectgym encodes
an agent's text (the eval runner's files, the judge's cache keys and requests, the
scorers' input) it replaces each one with U+FFFD REPLACEMENT CHARACTER, the character
Unicode reserves for one that could not be represented, and never with ``?``, which is
text that means something (a question) to a scorer.

>>> replace_lone_surrogates("Yay \\ud83d"), count_lone_surrogates("Yay \\ud83d")
('Yay �', 1)

**Rules read the text a person sees.** A word written with a Cyrillic ``а``, split by a
zero-width space or set in mathematical bold looks like the word to a reader and to a
classifier trained on web text, but not to a regular expression. :func:`normalise_for_rules`
folds such text to the letters it shows (Unicode's NFKC, format characters and combining marks
dropped, and the confusable letters of Unicode's UTS #39 data, as shipped by
``confusable-homoglyphs``, mapped to ASCII) before any lexical rule reads it.

>>> normalise_for_rules("I am \\u0430ngr\\u0443, fu\\u200brious, \\U0001d41a\\U0001d427\\U0001d420\\U0001d42b\\U0001d432")
'I am angry, furious, angry'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Mapping

__all__ = [
    "REPLACEMENT_CHARACTER",
    "count_lone_surrogates",
    "english_stemmer",
    "english_stop_words",
    "normalise_for_rules",
    "replace_lone_surrogates",
]

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



# Characters a reader does not see: format characters (Cf: zero-width space and joiners, soft
# hyphen, bidi marks, the BOM) and combining marks (Mn, Me: accents, strike-throughs, the
# variation selectors), which a word can carry without looking like another word.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me"})
NORMALISED_CACHE_ENTRIES = 4096  # texts whose normal form is memoised (every rule of a reply reads it)


@functools.lru_cache(maxsize=1)
def _confusable_letters() -> Mapping[int, str]:
    """``str.translate`` table: each non-ASCII character that Unicode lists as confusable with an
    ASCII letter, to that letter. An upper-case character whose listed letter is not upper case
    takes the upper case of its lower case's letter: Greek capital iota reads ``I``, not the
    ``l`` of Unicode's skeleton, and capital nu still reads ``N``."""
    from confusable_homoglyphs.confusables import confusables_data

    def ascii_letter(character: str) -> str | None:
        for homoglyph in confusables_data.get(character, ()):
            glyph = homoglyph["c"]
            if len(glyph) == 1 and glyph.isascii() and glyph.isalpha():
                return glyph
        return None

    table: dict[int, str] = {}
    for character in confusables_data:
        if len(character) != 1 or character.isascii():
            continue
        letter = ascii_letter(character)
        lower = character.lower()
        if character.isupper() and (letter is None or not letter.isupper()) and len(lower) == 1:
            letter = (ascii_letter(lower) or letter or "").upper() or None
        if letter is not None:
            table[ord(character)] = letter
    return table


@functools.lru_cache(maxsize=NORMALISED_CACHE_ENTRIES)
def normalise_for_rules(text: str) -> str:
    """``text`` as the lexical rules read it: the letters a reader sees, in ASCII where they look ASCII.

    NFKC first (fullwidth ``ｓｉｇｈｓ`` and mathematical ``𝐬𝐢𝐠𝐡𝐬`` become ``sighs``, a
    no-break space a space), then every format character and combining mark is dropped
    (``fu\\u200brious`` reads ``furious``, ``a\\u0301ngry`` reads ``angry``), then each letter
    that Unicode lists as confusable with an ASCII letter becomes it (Cyrillic ``у`` reads
    ``y``, Greek ``ο`` reads ``o``). Idempotent; letters of other scripts that look like no
    ASCII letter stay as they are. Only rules read this form: scorers see the reply itself.

    Args:
        text: Any text.

    Returns:
        The normalised text (the same string when it is plain ASCII).

    >>> normalise_for_rules("\\uff08\\uff53\\uff49\\uff47\\uff48\\uff53\\uff09 Fine")
    '(sighs) Fine'
    >>> normalise_for_rules("Caf\\u00e9 \\u0399RATE")
    'Cafe IRATE'
    """
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    visible = "".join(ch for ch in folded if unicodedata.category(ch) not in _INVISIBLE_CATEGORIES)
    return unicodedata.normalize("NFC", visible).translate(_confusable_letters())


#: Distinct words whose stems :func:`english_stemmer` remembers.
STEMS_REMEMBERED = 65_536


@functools.cache
def english_stemmer() -> Callable[[str], str]:
    """NLTK's Snowball English stemmer, made once: the lexical criteria compare words by stem.

    Each distinct word is stemmed once (the last :data:`STEMS_REMEMBERED` kept): a long reply
    repeats its words, and stemming costs microseconds a word.

    >>> english_stemmer()("reassured"), english_stemmer()("reassuring")
    ('reassur', 'reassur')
    """
    from nltk.stem.snowball import SnowballStemmer

    return functools.lru_cache(maxsize=STEMS_REMEMBERED)(SnowballStemmer("english").stem)


@functools.cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words: what a content-word criterion leaves out.

    >>> "the" in english_stop_words(), "tide" in english_stop_words()
    (True, False)
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)
