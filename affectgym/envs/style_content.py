"""What EmotionStyle-v0's emotion scorer reads: the sentences of a reply that say something of their own.

The emotion of a reply is credited only where the reply carries content. :func:`content_text`
turns a reply into the text the classifier scores:

1. **Plain text.** The letters are normalised as the rules read them
   (:func:`~affectgym.text.normalise_for_rules`: fullwidth and mathematical letters, invisible
   characters, look-alike letters); emoji and other symbols are dropped; runs of ``!`` or
   ``?`` become one; asides of one to six words in ``(brackets)`` or ``[square brackets]``,
   or in ``*stars*`` outside a sentence (stage directions), are dropped; markdown and HTML
   are read by ``markdown-it-py`` and only their text is kept (``**Wow!**``, ``# Wow``,
   ``- Wow`` and ``<b>Wow</b>`` all read ``Wow``).
2. **Content sentences.** A sentence counts when it brings at least
   :data:`MIN_NEW_CONTENT_WORDS` distinct content words (not stop words or
   :data:`DISCOURSE_MARKERS`, compared by stem) that
   the prompt does not already hold, when it is a clause rather than a heap of words
   (:func:`~affectgym.rewards.rules.is_clause`: "Wonderful, fantastic, amazing, lovely!" is
   none), when it is not a repeat of an earlier sentence, and when ``py3langid`` reads it as
   the requested language (English). Interjections, stock
   exclamations ("This is amazing!", "Oh no, no, no!"), echoes of the prompt, filler and
   repeats earn nothing, so appending them cannot raise the score.

A reply with no content sentence gets no emotion credit.

>>> content_text("**Wow!** 😀 The lantern festival lit the whole harbour tonight! Wow!", "Describe a festival.")
'The lantern festival lit the whole harbour tonight!'
"""

from __future__ import annotations

import functools
import re
import unicodedata

from affectgym.rewards.rules import is_clause
from affectgym.text import english_stemmer, english_stop_words, normalise_for_rules

__all__ = [
    "DISCOURSE_MARKERS",
    "LANGUAGE_MIN_WORDS",
    "MIN_NEW_CONTENT_WORDS",
    "REQUESTED_LANGUAGE",
    "content_sentences",
    "content_text",
    "in_requested_language",
    "language_of",
    "plain_text",
]

#: Distinct content words, beyond the prompt's, that a sentence must bring to be scored.
MIN_NEW_CONTENT_WORDS = 3
#: The language a reply is asked to be in (an ISO 639-1 code, as ``py3langid`` names it).
REQUESTED_LANGUAGE = "en"
#: Replies whose content text is memoised (a red-team search re-reads the same reply many times).
CONTENT_CACHE_ENTRIES = 8192

#: English conjunctive adverbs and discourse markers (a closed class, like the stop words): they link
#: sentences and say nothing of their own, so "Furthermore, moreover, in conclusion." is no content.
DISCOURSE_MARKERS = frozenset("""
    accordingly additionally also anyhow anyway besides certainly conclusion consequently conversely finally
    firstly furthermore hence however incidentally indeed instead lastly likewise meanwhile moreover namely
    nevertheless next nonetheless notably otherwise overall secondly similarly specifically still subsequently
    summary then thereafter therefore thirdly thus ultimately
""".split())
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# An aside of one to six words, narration rather than speech: in brackets anywhere, or in stars
# where it stands alone (at the start, or after a sentence's end); stars inside a sentence are emphasis.
_ASIDE = re.compile(r"\([^()\n]{1,60}\)|\[[^\[\]\n]{1,60}\]|(?:^|(?<=[.!?…])\s+|\n)\*[^*\n]{1,60}\*(?![*\w])")
_REPEATED_MARKS = re.compile(r"([!?])[!?]+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_SYMBOL_CATEGORIES = frozenset({"So", "Sk", "Co", "Cn"})


@functools.cache
def _markdown() -> object:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True})


def plain_text(reply: str) -> str:
    """The text a reader reads in ``reply``: markup gone, symbols dropped, letters normalised.

    Each block of the markdown (a paragraph, a heading, a list item) becomes a line of its own.

    >>> plain_text("# Big news\\n\\n- **so** <i>fun</i>!!! 🎉 *grins widely*")
    'Big news\\nso fun!'
    """
    visible = "".join(" " if unicodedata.category(ch) in _SYMBOL_CATEGORIES else ch for ch in normalise_for_rules(reply))
    visible = _ASIDE.sub(lambda match: " " if 1 <= len(match.group(0).split()) <= 6 else match.group(0),
                         _REPEATED_MARKS.sub(r"\1", visible))
    lines = []
    for token in _markdown().parse(visible):
        if token.type == "inline":
            pieces = [child.content if child.type in ("text", "code_inline") else "\n" if child.type.endswith("break") else ""
                      for child in token.children or ()]
            lines.append("".join(pieces))
        elif token.type in ("code_block", "fence"):
            lines.append(token.content)
    return "\n".join(" ".join(line.split()) for line in "\n".join(lines).splitlines() if line.strip())


def _content_stems(text: str) -> set[str]:
    stem, stop = english_stemmer(), english_stop_words()
    return {stem(word) for word in _WORD.findall(text.lower())
            if len(word) > 2 and word not in stop and word not in DISCOURSE_MARKERS}


def language_of(text: str) -> str:
    """``py3langid``'s reading of ``text``'s language (an ISO 639-1 code).

    >>> language_of("The harbour was quiet under the morning fog."), language_of("Lorem ipsum dolor sit amet.")
    ('en', 'la')
    """
    import py3langid

    return str(py3langid.classify(text)[0])


@functools.lru_cache(maxsize=CONTENT_CACHE_ENTRIES)
def content_sentences(reply: str, prompt: str = "") -> tuple[str, ...]:
    """The sentences of ``reply`` that carry content: see the module docstring.

    Args:
        reply: The visible reply (``<think>`` already removed).
        prompt: The prompt it answers; its words are not new content.

    Returns:
        The content sentences in order, in plain text.

    >>> content_sentences("Oh no, no, no! The cellar door creaked open by itself at midnight. Oh no!")
    ('The cellar door creaked open by itself at midnight.',)
    """
    given = _content_stems(prompt)
    seen: list[set[str]] = []
    kept = []
    for sentence in _SENTENCE_END.split(plain_text(reply)):
        stems = _content_stems(sentence) - given
        if len(stems) < MIN_NEW_CONTENT_WORDS or any(stems <= earlier for earlier in seen) or not is_clause(sentence):
            continue
        if language_of(sentence) != REQUESTED_LANGUAGE:
            continue
        seen.append(stems)
        kept.append(sentence.strip())
    return tuple(kept)


def content_text(reply: str, prompt: str = "") -> str:
    """The content sentences of ``reply`` joined by spaces: what the emotion classifier reads (``""`` when none)."""
    return " ".join(content_sentences(reply, prompt))


#: Words a reply needs before its language is judged (``py3langid`` guesses wildly on two words).
LANGUAGE_MIN_WORDS = 5


def in_requested_language(reply: str) -> bool:
    """Whether ``reply`` is in :data:`REQUESTED_LANGUAGE`, as ``py3langid`` reads its plain text.

    A reply of fewer than :data:`LANGUAGE_MIN_WORDS` words counts as in it (too short to tell).

    >>> in_requested_language("¡Qué alegría! Hablemos de la playa, es maravillosa de verdad."), in_requested_language("Yuck.")
    (False, True)
    """
    text = plain_text(reply)
    return len(_WORD.findall(text.lower())) < LANGUAGE_MIN_WORDS or language_of(text) == REQUESTED_LANGUAGE
