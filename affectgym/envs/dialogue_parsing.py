"""Reading a chatbot turn of EmpatheticDialogue-v0: the three tagged sentences, their words, the question's kind."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from affectgym.data.dialogues import (
    DIALOGUE_LABELS,
    EMOTION_OF_LABEL,
    TaggedSegment,
    normalise_text,
    split_tagged,
)
from affectgym.rewards.rubric import Reply
from affectgym.rewards.rules import names_emotion, states_feeling, strip_think

FORMAT_HINT = "(USER_EMOTION) empathy sentence. (REQUESTED_EMOTION) emotional sentence. (NEUTRAL) open question?"
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


@dataclasses.dataclass(frozen=True)
class ChatbotTurn:
    """A parsed chatbot reply.

    Attributes:
        tags: The three tags, as dialogue labels (``"HAPPINESS"``...).
        sentences: The three sentences, without their tags.
    """

    tags: tuple[str, str, str]
    sentences: tuple[str, str, str]

    @property
    def words(self) -> int:
        """Words in the three sentences together (tags not counted)."""
        return sum(count_words(s) for s in self.sentences)


def count_words(text: str) -> int:
    """Words (runs of letters or digits, with inner apostrophes or hyphens) in ``text``.

    >>> count_words("Oh no... that's a well-known spot, isn't it?")
    8
    """
    return len(_WORD.findall(text))


@dataclasses.dataclass(frozen=True)
class ChatbotReply:
    """A chatbot reply read once: its tagged segments, and the turn they form when well formed.

    This is the answer the env's criteria receive (``reply.answer``); those that also
    score malformed replies (structure, length, question) read its segments.

    Attributes:
        lead: Visible text before the first tag (``<think>`` blocks removed).
        segments: The tagged segments (see :func:`~affectgym.data.dialogues.split_tagged`).
        turn: The three tagged sentences; ``None`` when the reply is malformed.
        error: What is wrong and what is accepted; ``None`` when the reply is well formed.
    """

    lead: str
    segments: tuple[TaggedSegment, ...]
    turn: ChatbotTurn | None
    error: str | None

    @property
    def sentences(self) -> tuple[str, ...]:
        """What the reply says, tags left out: the turn's three sentences, or the lead and each segment's text when malformed.

        >>> read_chatbot_reply("Well. (ANGER) Ugh. (FEAR) Yikes.").sentences
        ('Well.', 'Ugh.', 'Yikes.')
        """
        return self.turn.sentences if self.turn is not None else (self.lead, *(s.text for s in self.segments))


def read_chatbot_reply(text: str | None) -> ChatbotReply:
    """Read a chatbot reply once (see :func:`parse_chatbot_turn` for the accepted form).

    >>> reply = read_chatbot_reply("(ANGER) Ugh. (FEAR) Yikes.")
    >>> [s.label for s in reply.segments], reply.turn, reply.error[:21]
    (['ANGER', 'FEAR'], None, 'found 2 tagged senten')
    """
    accepted = f"accepted: {FORMAT_HINT}"
    visible = strip_think(text) if text else ""
    lead, segments = split_tagged(visible)
    turn, error = _turn_of(visible, lead, segments, accepted)
    return ChatbotReply(lead, tuple(segments), turn, error)


def _turn_of(
    visible: str, lead: str, segments: Sequence[TaggedSegment], accepted: str
) -> tuple[ChatbotTurn | None, str | None]:
    if not visible.strip():
        return None, f"the reply is empty; {accepted}"
    if not segments:
        return None, f"no emotion tags found; write three tagged sentences, {accepted}"
    if lead:
        return None, f"text before the first tag ({lead[:40]!r}); start with the first tag, {accepted}"
    for segment in segments:
        if segment.label is None:
            return None, f"unknown tag ({segment.raw_tag}); tags are {', '.join(DIALOGUE_LABELS)}"
    if len(segments) != 3:
        return None, f"found {len(segments)} tagged sentences; exactly three are accepted: {FORMAT_HINT}"
    sentences = []
    for number, segment in enumerate(segments, start=1):
        sentence = " ".join(segment.text.split())
        if not count_words(sentence):
            return None, f"sentence {number} after ({segment.label}) is empty; each tag must be followed by a sentence"
        sentences.append(sentence)
    tags = tuple(s.label for s in segments)
    return ChatbotTurn(tags, tuple(sentences)), None  # type: ignore[arg-type]


def parse_chatbot_turn(text: str | None) -> tuple[ChatbotTurn | None, str | None]:
    """Read a chatbot reply ``(TAG) sentence. (TAG) sentence. (TAG) sentence``.

    Robust to lower-case tags, square or full-width brackets, extra whitespace and line
    breaks, missing periods, Unicode punctuation (NFKC: ``？`` is ``?``), a leading
    ``Chatbot:`` and ``<think>`` blocks. Tags are the seven labels (synonyms such as ``JOY``
    are read as ``HAPPINESS``).

    Args:
        text: The reply.

    Returns:
        ``(turn, None)``, or ``(None, what was wrong and what is accepted)``.

    >>> parse_chatbot_turn("(sadness)  Oh no  [Happiness] you tried  (NEUTRAL) what now？")[0]
    ChatbotTurn(tags=('SADNESS', 'HAPPINESS', 'NEUTRAL'), sentences=('Oh no', 'you tried', 'what now?'))
    >>> parse_chatbot_turn("(SADNESS) Oh no. (HAPPINESS) Still, well done.")[1]
    'found 2 tagged sentences; exactly three are accepted: (USER_EMOTION) empathy sentence. (REQUESTED_EMOTION) emotional sentence. (NEUTRAL) open question?'
    >>> parse_chatbot_turn("(SADNESS). (HAPPINESS). (NEUTRAL)?")[1]
    'sentence 1 after (SADNESS) is empty; each tag must be followed by a sentence'
    >>> parse_chatbot_turn("(SAD-ISH) Hm. (HAPPINESS) Yes. (NEUTRAL) Why?")[1]
    'unknown tag (SAD-ISH); tags are ANGER, FEAR, SADNESS, DISGUST, HAPPINESS, SURPRISE, NEUTRAL'
    """
    reply = read_chatbot_reply(text)
    return reply.turn, reply.error


def chatbot_reply(text: str | None) -> Reply:
    """``text`` as the env's criteria receive it: ``Reply(text, read_chatbot_reply(text))``.

    ``None`` (an unanswered turn) gives ``Reply(None)``.

    >>> chatbot_reply("(FEAR) Oof. (HAPPINESS) Go on. (NEUTRAL) What next?").answer.turn.tags
    ('FEAR', 'HAPPINESS', 'NEUTRAL')
    """
    return Reply(None) if text is None else Reply(text, read_chatbot_reply(text))


_WH_WORDS = frozenset("what which who whom whose where when why how whatever whereabouts".split())
_AUXILIARIES = frozenset(
    "do does did is are was were am can could will would shall should have has had may might must "
    "dont doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt shant shouldnt havent hasnt "
    "hadnt mightnt mustnt aint".split()
)
_TELLING_VERBS = frozenset("tell share describe explain say walk talk elaborate".split())
_OPEN_IMPERATIVES = frozenset("tell describe share explain elaborate imagine".split())
_FILLERS = frozenset("so and but well okay ok oh then now hey also anyway honestly or just um hmm ah alright right".split())
# A run of punctuation is matched from its first character only (from inside a run, each
# retry would rescan the rest of it: quadratic on "......").
_CLAUSE_BREAK = re.compile(r"(?<![.!?;:])[.!?;:]+\s+|\s[-–—]+\s")


def _question_words(chunk: str) -> list[str]:
    words = [w.lower().replace("’", "'").replace("'", "") for w in _WORD.findall(chunk)]
    while words and words[0] in _FILLERS:
        words.pop(0)
    return words


def question_kind(sentence: str) -> str:
    """Classify a follow-up sentence as ``"open"``, ``"yes_no"`` or ``"not_a_question"``.

    The rules, applied to the last clause before the final ``?`` (after NFKC, so ``？`` counts):

    1. No final ``?`` (closing quotes and brackets aside): ``not_a_question``.
    2. The clause is cut at commas; from the last piece backwards, the first piece whose
       first word (after fillers such as "so", "and", "well") is a wh-word (what, which,
       who, where, when, why, how; so "what if" and "how about" too) or an open imperative
       (tell, describe, share, explain, imagine) makes it ``open``.
    3. A piece opening with an auxiliary verb (do, did, is, are, can, will, would, have,
       don't...) makes it ``yes_no``, unless it asks to be told something (a telling verb
       and a later wh-word: "Can you tell me what happened?"), which is ``open``.
    4. A question with neither ("You went there?", "Anything else?") invites a yes or a no:
       ``yes_no``.

    >>> [question_kind(q) for q in ("What happened next?", "How did it go?", "What if you asked her?")]
    ['open', 'open', 'open']
    >>> [question_kind(q) for q in ("Do you want to talk about it?", "Is it serious?", "Don't you think so?")]
    ['yes_no', 'yes_no', 'yes_no']
    >>> question_kind("Can you tell me what happened?"), question_kind("Would you like to share how it went?")
    ('open', 'open')
    >>> question_kind("If you could go anywhere, where would you go?"), question_kind("What do you think, is it worth it?")
    ('open', 'yes_no')
    >>> question_kind("So, tell me about the trip?"), question_kind("You went there?"), question_kind("Do you know why?")
    ('open', 'yes_no', 'yes_no')
    >>> question_kind("Where have you searched so far？"), question_kind("How are you holding up?”"), question_kind("Tell me more.")
    ('open', 'open', 'not_a_question')
    """
    text = normalise_text(sentence).strip().rstrip("\"'”’»)] ")
    if not text.endswith("?"):
        return "not_a_question"
    body = text.rstrip("?! ")
    clause = _CLAUSE_BREAK.split(body)[-1]
    pieces = [_question_words(piece) for piece in clause.split(",")]
    if not any(pieces):
        return "not_a_question"
    for words in reversed(pieces):
        if not words:
            continue
        first = words[0]
        if first in _WH_WORDS or first in _OPEN_IMPERATIVES:
            return "open"
        if first in _AUXILIARIES:
            asks_to_tell = any(w in _TELLING_VERBS for w in words[1:]) and any(w in _WH_WORDS for w in words[2:])
            return "open" if asks_to_tell else "yes_no"
    return "yes_no"


def tells_emotion(sentence: str, tag: str) -> bool:
    """Whether a sentence states a feeling ("I feel happy") or names its own emotion ("so sad").

    >>> tells_emotion("I feel so happy for you!", "HAPPINESS"), tells_emotion("What a wonderful surprise!", "HAPPINESS")
    (True, False)
    >>> tells_emotion("That must be heartbreaking.", "SADNESS"), tells_emotion("That must weigh on you.", "SADNESS")
    (False, False)
    """
    return states_feeling(sentence).hit or names_emotion(sentence, EMOTION_OF_LABEL[tag]).hit
