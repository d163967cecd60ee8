"""The per-turn criteria of EmpatheticDialogue-v0: structure, tags, length, the open question, shown not told, relevance."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

from affectgym.data.dialogues import DIALOGUE_LABELS, DialogueTurn, split_tagged
from affectgym.envs.core import Trace
from affectgym.envs.dialogue_parsing import (
    ChatbotTurn,
    chatbot_reply,  # noqa: F401 - the doctests' replies
    count_words,
    question_kind,
    tells_emotion,
)
from affectgym.envs.style_content import in_requested_language, plain_text
from affectgym.rewards.rubric import Reply
from affectgym.rewards.rules import EMOTION_WORDS, is_clause
from affectgym.text import english_stemmer, english_stop_words

REPLY_WORDS_FULL_CREDIT = (20, 25)  # words in the three sentences together that earn full length credit
LENGTH_SLACK_WORDS = 15  # length credit falls linearly to 0 this many words outside that range
FAR_OFF_LENGTH_CAP = 0.5  # highest turn reward while the length credit is 0 (e.g. a 200-word reply)
YES_NO_QUESTION_CREDIT = 0.3  # open-question credit of a yes/no question (0 for no question at all)
MALFORMED_STRUCTURE_CREDIT = 0.5  # structure credit of a reply that does not parse, times its share of valid segments
RELEVANT_STEMS_FULL_CREDIT = 2  # content stems of the user's turn the reply must take up for full relevance credit
ECHO_SHARE = 2 / 3  # words copied from a user line, in order, that cover this share of it are an echo, not a response
ECHO_MIN_WORDS = 4  # ... and at least this many words
ECHO_RUN_WORDS = 2  # ... counted over runs of at least this many words in a row (a swapped word breaks no echo)
#: A language model's listening credit for a sentence (:func:`sentence_listening_credit`) is its PMI with what
#: the user said, against what other users said (nats per token, see ``LISTENING_CONTRASTS`` of
#: :mod:`affectgym.envs.dialogue`), mapped linearly from 0 credit at :data:`LISTENING_PMI_NONE` to 1 at
#: :data:`LISTENING_PMI_FULL`. Against other users' stories a sentence that suits any story ("What wonderful
#: news, congratulations!", "What happened after that?") gains nothing. Chosen on the embedded train turns, eval
#: unseen, by a rule fixed before the sweep: of the readings and scales whose references keep a mean within
#: 0.01 of the train references' 0.823, the one under which the fewest canaries (the content-free template,
#: the echo, the template carrying the user's words) beat the reference by more than 0.02: 15 of 285, against
#: 28 before (and the references' mean rose to 0.851).
LISTENING_PMI_NONE = 0.0
LISTENING_PMI_FULL = 0.6
#: The share of its listening credit that the question (the third sentence) lends the reply's (:func:`reply_listening`).
#: A follow-up question takes the user's words up for free ("What happened with the lighthouse and the keeper
#: after that?"); the sentences that answer the user show whether they were heard. Chosen on the train turns
#: by the listening sweep's rule (references' mean within 0.01 of 0.823, the fewest canary wins; a tie to the
#: share nearest 1): of 1, 0.75, 0.5, 0.25 and 0, 0.25 cut the canary wins from 15 to 8 of 285 (the template
#: carrying the user's words 9 -> 4) while the references' mean went 0.851 -> 0.848.
QUESTION_LISTENING_SHARE = 0.25
_CONTENT_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
#: Words in a row, each one the user said (or a tag's name), that make a keyword heap when the user never said
#: them in a row: "after that DISGUST left fish office fridge weeks". None of the 285 sentences of the embedded
#: train replies holds a run of four (three: 3 of them, e.g. "a huge tomato harvest after months of care").
KEYWORD_HEAP_WORDS = 4
_TAG_WORDS = frozenset(label.lower() for label in DIALOGUE_LABELS)
_EMOTION_NAMES = frozenset().union(*EMOTION_WORDS.values())
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_SPACE_BEFORE_MARK = re.compile(r"\s+([.!?,;:…])")
_MARK_RUN = re.compile(r"[.!?…]{2,}")
#: A sentence start left inside a sentence: a capitalised word right after a lower-case one, no mark between
#: ("must ache Sigh. Sigh.", "feel heavy I'm shaking!"); see :func:`said_parts` for the exceptions.
_RUN_ON_START = re.compile(r"\b([a-z][a-z']*)( +)(?=([A-Z][A-Za-z']*))")
_CAPITALISED = re.compile(r"\b[A-Z][A-Za-z']*")


def structure(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """1 for exactly three tagged, non-empty sentences; else 0.5 × the share of valid tagged sentences.

    >>> structure(None, chatbot_reply("(ANGER) Ugh. (FEAR) Yikes. (NEUTRAL) What now?"), [])
    1.0
    >>> round(structure(None, chatbot_reply("(ANGER) Ugh. (FEAR) Yikes."), []), 3), structure(None, chatbot_reply("Hello there?"), [])
    (0.333, 0.0)
    """
    read = reply.answer
    if read is None:
        return 0.0
    if read.turn is not None:
        return 1.0
    valid = sum(1 for s in read.segments if s.label is not None and count_words(s.text))
    return MALFORMED_STRUCTURE_CREDIT * min(valid, 3) / 3


def tag_correctness(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """Share of slots carrying their required tag (user's emotion, requested emotion, NEUTRAL); 0 unless the reply parses.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "It broke.", "HAPPINESS")
    >>> round(tag_correctness(turn, chatbot_reply("(sadness) Oh no. (SURPRISE) Wow. (NEUTRAL) What now?"), []), 3)
    0.667
    """
    return _slot_share(scenario, reply, lambda tag, sentence, required: tag == required)


def length_credit(words: int) -> float:
    """1 for 20-25 words; falling linearly to 0 at 15 words outside that range.

    >>> [length_credit(n) for n in (5, 14, 20, 25, 31, 40, 200)]
    [0.0, 0.6, 1.0, 1.0, 0.6, 0.0, 0.0]
    """
    low, high = REPLY_WORDS_FULL_CREDIT
    distance = low - words if words < low else max(0, words - high)
    return max(0.0, round(1.0 - distance / LENGTH_SLACK_WORDS, 12))


def reply_length(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """:func:`length_credit` of the reply's words, tags excluded; 0 when unanswered.

    >>> reply_length(None, chatbot_reply("(SADNESS) That sounds heavy. (HAPPINESS) You still finished it, and that counts. (NEUTRAL) What helped you most along the way?"), [])
    0.8
    """
    read = reply.answer
    if not reply.text or read is None:
        return 0.0
    return length_credit(sum(count_words(sentence) for sentence in read.sentences))


def open_question(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """1 for an open question, 0.3 for a yes/no one, 0 for none (see :func:`question_kind`).

    The question is the third sentence when the reply parses, else the reply's end.

    >>> open_question(None, chatbot_reply("(FEAR) Oof. (HAPPINESS) You can do it. (NEUTRAL) Do you feel ready?"), [])
    0.3
    """
    read = reply.answer
    if not reply.text or read is None:
        return 0.0
    question = read.turn.sentences[2] if read.turn is not None else " ".join(read.sentences)
    kind = question_kind(question)
    return {"open": 1.0, "yes_no": YES_NO_QUESTION_CREDIT}.get(kind, 0.0)


def shows_not_tells(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """Share of the three sentences that neither state a feeling nor name their slot's emotion; 0 unless it parses.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "It broke.", "HAPPINESS")
    >>> round(shows_not_tells(turn, chatbot_reply("(SADNESS) You must be so sad. (HAPPINESS) I feel happy. (NEUTRAL) What now?"), []), 3)
    0.333
    """
    return _slot_share(scenario, reply, lambda tag, sentence, required: not tells_emotion(sentence, required))


def relevance(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """Whether the reply takes up what the user said: shared content stems, echoes not counted.

    What the user said is the turn's line and the user's earlier lines in the dialogue (tags
    removed). It and the reply are cut into content words (scikit-learn's English stop words
    left out), each reduced to its Snowball stem (NLTK), so "rejected" meets "rejection". A
    stem the user said counts once the reply uses it outside an echo: words copied in order
    from one of the user's lines, in runs of two or more, that cover two thirds of it (repeating the user is not
    listening; quoting a few of their words is). Credit is the share of
    2 such stems (of all the user's stems when there are fewer); 0 when unanswered.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "My novel got rejected by the tenth publisher.", "HAPPINESS")
    >>> relevance(turn, chatbot_reply("(SADNESS) Ten rejections would sting anyone. (HAPPINESS) Your novel is finished! (NEUTRAL) What is it about?"), [])
    1.0
    >>> relevance(turn, chatbot_reply("(SADNESS) Losing him leaves an empty chair. (HAPPINESS) What great news! (NEUTRAL) What happened after that?"), [])
    0.0
    >>> relevance(turn, chatbot_reply("(SADNESS) My novel got rejected by the tenth publisher. (HAPPINESS) Yay! (NEUTRAL) What now?"), [])
    0.0
    """
    if not reply.text or reply.answer is None:
        return 0.0
    read = reply.answer
    said = " ".join(read.sentences)
    user_lines = _user_lines(scenario)
    copied = set().union(*(_copied_positions(_CONTENT_WORD.findall(line.lower()), said) for line in user_lines))
    stem = english_stemmer()
    user_stems = _user_stems(scenario)
    taken_up = {stem(w) for i, w in _content_words(said) if i not in copied} & user_stems
    needed = min(RELEVANT_STEMS_FULL_CREDIT, len(user_stems))
    return min(1.0, len(taken_up) / needed) if needed else 0.0


def listened_sentences(scenario: DialogueTurn, turn: ChatbotTurn) -> list[str]:
    """The reply's sentences that are neither echoes of a user line (see :func:`relevance`) nor keyword heaps
    (:func:`keyword_heap`): what it says back.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "My novel got rejected by the tenth publisher.", "HAPPINESS")
    >>> listened_sentences(turn, chatbot_reply("(SADNESS) My novel got rejected by the tenth publisher. (HAPPINESS) Yay! (NEUTRAL) What now?").answer.turn)
    ['Yay!', 'What now?']
    >>> listened_sentences(turn, chatbot_reply("(SADNESS) Oh no. (HAPPINESS) Yay! (NEUTRAL) What now, tenth publisher novel rejected?").answer.turn)
    ['Oh no.', 'Yay!']
    """
    lines = [_CONTENT_WORD.findall(line.lower()) for line in _user_lines(scenario)]
    return [sentence for sentence in turn.sentences
            if not any(_copied_positions(words, sentence) for words in lines) and not keyword_heap(scenario, sentence)]


def keyword_heap(scenario: DialogueTurn, sentence: str) -> bool:
    """Whether ``sentence`` strings together :data:`KEYWORD_HEAP_WORDS` or more content words in a row that the
    user said (by stem) or that name a tag, in an order the user never said them in.

    Quoting the user ("your project management work") is not a heap; their words piled up
    after a stock question ("What happened after that, footsteps attic night dark?") are.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "FEAR", "I hear footsteps in the attic every night.", "NEUTRAL")
    >>> keyword_heap(turn, "What happened after that FEAR footsteps attic night?"), keyword_heap(turn, "Footsteps in the attic at night would scare anyone.")
    (True, False)
    """
    stem, stop, said = english_stemmer(), english_stop_words(), _user_stems(scenario)
    spoken = [" ".join(_CONTENT_WORD.findall(line.lower())) for line in _user_lines(scenario)]
    words = _CONTENT_WORD.findall(plain_text(sentence).lower())
    start = 0
    while start < len(words):
        end = start
        while end < len(words) and words[end] not in stop and (stem(words[end]) in said or words[end] in _TAG_WORDS):
            end += 1
        if end - start >= KEYWORD_HEAP_WORDS and not any(" ".join(words[start:end]) in line for line in spoken):
            return True
        start = max(end, start + 1)
    return False


def emotion_unreadable(scenario: DialogueTurn, sentence: str) -> str | None:
    """Why ``sentence``'s emotion earns no credit, or ``None`` when it can: the emotion is credited only where the
    sentence says something, as EmotionStyle-v0 credits it (:mod:`affectgym.envs.style_content`).

    The sentence is read as plain text (markup and symbols gone, look-alike letters
    normalised). It earns nothing when none of its sentences is a clause (interjections, a heap
    of words: "Hooray! Hooray! Hooray!"), when it names an emotion (any of the seven: naming
    is telling, and a word of another emotion is a heap of its own), when it is not in English
    (``py3langid``, from five words on), or when it is a :func:`keyword_heap`.

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "FEAR", "I hear footsteps in the attic every night.", "HAPPINESS")
    >>> [emotion_unreadable(turn, s) for s in ("Hooray! Hooray!", "A mortgage and two kids, rage rage.", "Footsteps at night would chill anyone.")]
    ['no clause', 'names an emotion', None]
    """
    plain = plain_text(sentence)
    if not any(is_clause(part) for part in said_parts(plain, scenario) if part.strip()):
        return "no clause"
    if _EMOTION_NAMES & set(_CONTENT_WORD.findall(plain.lower())):
        return "names an emotion"
    if not in_requested_language(plain):
        return "not English"
    if keyword_heap(scenario, sentence):
        return "keyword heap"
    return None


def said_pieces(sentence: str, scenario: DialogueTurn | None = None) -> list[str]:
    """What a slot's sentence says, piece by piece, as the reward reads it: its plain text (markup and
    symbols gone) split at sentence ends and at sentence starts left inside a sentence (:func:`said_parts`;
    ``scenario``'s user keeps their names in), the clauses kept; the whole plain text when none is a clause.

    Each piece is read alone, so an exclamation, an emoji or filler added to a sentence changes
    none of its pieces' readings; a run of marks is read as its last ("lately ...!" as "lately!").

    >>> said_pieces("Wow! Oh no! A truck that close would rattle **anyone** 🙄.")
    ['A truck that close would rattle anyone.']
    >>> said_pieces("Which trail?")
    ['Which trail?']
    """
    plain = plain_text(sentence)
    clauses = [_read_alone(part) for part in said_parts(plain, scenario) if part.strip() and is_clause(part)]
    return clauses or [_read_alone(plain)]


def _read_alone(piece: str) -> str:
    """A piece as it is read: no space before a mark, and a run of marks ("...!", "?!!") cut to its last."""
    return _MARK_RUN.sub(lambda run: run.group()[-1], _SPACE_BEFORE_MARK.sub(r"\1", piece))


def said_parts(plain: str, scenario: DialogueTurn | None) -> list[str]:
    """Plain text's sentences: cut at sentence ends, and where a sentence starts without a mark before it
    (:data:`_RUN_ON_START`). Not before a word the user wrote with a capital too (their names, "Portugal",
    "a B", stay in the sentence), nor before "I" after a stop word ("and I'm", "what I"). The part cut off
    before a run-on start ends with its sentence's closing mark.

    >>> said_parts("Your day must ache Sigh. Sigh.", None), said_parts("A week in Portugal sounds lovely.", DialogueTurn("d/t0", "d", 0, 1, "HAPPINESS", "We fly to Portugal.", "NEUTRAL"))
    (['Your day must ache.', 'Sigh.', 'Sigh.'], ['A week in Portugal sounds lovely.'])
    """
    names = {w.lower() for w in _CAPITALISED.findall(user_said(scenario))} if scenario is not None else set()
    stop_words = english_stop_words()
    parts = []
    for part in _SENTENCE_END.split(plain):
        start, last = 0, part.rstrip()[-1:]
        mark = last if last in ".!?…" else ""
        for cut in _RUN_ON_START.finditer(part):
            before, following = cut.group(1), cut.group(3)
            pronoun = following == "I" or following.startswith("I'")
            if (before not in stop_words) if pronoun else (following.lower() not in names):
                parts.append(part[start:cut.start(2)] + mark)
                start = cut.end(2)
        parts.append(part[start:])
    return parts


def user_said(scenario: DialogueTurn) -> str:
    """Everything the user said up to this turn, tags removed, in one line.

    >>> user_said(DialogueTurn("d/t1", "d", 1, 2, "FEAR", "Now it is worse.", "NEUTRAL", history=(("(SADNESS) It broke.", "(SADNESS) Oh no."),)))
    'It broke. Now it is worse.'
    """
    return " ".join(_user_lines(scenario))


def sentence_listening_credit(pmi: float) -> float:
    """A sentence's listening credit, in [0, 1], from its PMI with what the user said against other users
    (nats per token): 0 at :data:`LISTENING_PMI_NONE`, 1 at :data:`LISTENING_PMI_FULL`, linear between.

    >>> sentence_listening_credit(0.9), sentence_listening_credit(0.3), sentence_listening_credit(-0.2)
    (1.0, 0.5, 0.0)
    """
    return min(1.0, max(0.0, (pmi - LISTENING_PMI_NONE) / (LISTENING_PMI_FULL - LISTENING_PMI_NONE)))


def reply_listening(slots: Sequence[Sequence[float]]) -> float:
    """A reply's listening credit from its slots' pieces' credits (``[]`` for a reply that does not parse):
    its best sentence's, a sentence's being its weakest piece's, the question's (the third) counted at
    :data:`QUESTION_LISTENING_SHARE`.

    >>> reply_listening([[0.2], [0.5, 0.1], [1.0]]), reply_listening([[0.9], [0.1], [0.4]]), reply_listening([])
    (0.25, 0.9, 0.0)
    """
    if not slots:
        return 0.0
    return max(share * min(pieces) for share, pieces in zip((1.0, 1.0, QUESTION_LISTENING_SHARE), slots, strict=True))


def user_words(scenario: DialogueTurn) -> list[str]:
    """The content words of the user's turn (lower case, stop words left out), in order, each once.

    >>> user_words(DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "My novel, my novel was rejected.", "HAPPINESS"))
    ['novel', 'rejected']
    """
    return list(dict.fromkeys(w for _, w in _content_words(scenario.user_text)))


def _user_stems(scenario: DialogueTurn) -> set[str]:
    """The Snowball stems of the content words of everything the user said so far."""
    stem = english_stemmer()
    return {stem(w) for line in _user_lines(scenario) for _, w in _content_words(line)}


def _user_lines(scenario: DialogueTurn) -> list[str]:
    """The user's lines of the dialogue so far, this turn's last, tags removed."""
    return [" ".join(s.text for s in split_tagged(line)[1]) for line, _ in scenario.history] + [scenario.user_text]


def _slot_share(scenario: DialogueTurn, reply: Reply, passes: Callable[[str, str, str], bool]) -> float:
    """Share of the reply's three slots whose ``(tag, sentence, required tag)`` ``passes``; 0 unless the reply parses."""
    parsed = reply_turn(reply)
    if parsed is None:
        return 0.0
    return sum(passes(*slot) for slot in zip(parsed.tags, parsed.sentences, scenario.required_tags, strict=True)) / 3


def _content_words(text: str) -> list[tuple[int, str]]:
    """``(position, word)`` of the words of ``text`` (lower case) that are not stop words."""
    stop_words = english_stop_words()
    return [(i, w) for i, w in enumerate(_CONTENT_WORD.findall(text.lower())) if w not in stop_words and len(w) > 1]


def _copied_positions(user_words: Sequence[str], text: str) -> set[int]:
    """Positions of the words of ``text`` that repeat most of ``user_words`` in order (an echo, see
    :data:`ECHO_SHARE`), counted over runs of two or more words: an echo with a word swapped or blanked
    ("during the war, --- were apart") is still one.

    >>> line = "during the war they were apart for four years".split()
    >>> sorted(_copied_positions(line, "During the war, --- were apart for four years.")), _copied_positions(line, "A war is hard.")
    ([0, 1, 2, 3, 4, 5, 6, 7], set())
    """
    words = _CONTENT_WORD.findall(text.lower())
    matcher = difflib.SequenceMatcher(None, words, list(user_words), autojunk=False)
    runs = [run for run in matcher.get_matching_blocks() if run.size >= ECHO_RUN_WORDS]
    if sum(run.size for run in runs) < max(ECHO_MIN_WORDS, ECHO_SHARE * len(user_words)):
        return set()
    return {i for run in runs for i in range(run.a, run.a + run.size)}


def earlier_turns(scenario: DialogueTurn, reply: Reply, trace: Trace) -> float:
    """What the episode's earlier turns earned: the sum of their ``reply`` entries' rewards.

    Not capped by the last turn's rules; 0 for a turn scored on its own (an empty trace).

    >>> earlier_turns(None, Reply(None), [{"type": "reply", "reward": 0.5}, {"type": "invalid"}, {"type": "reply", "reward": 0.25}])
    0.75
    """
    return float(sum(entry["reward"] for entry in trace if entry.get("type") == "reply"))


def reply_turn(reply: Reply) -> ChatbotTurn | None:
    """The parsed turn of a reply, ``None`` when it did not parse or there was none."""
    return reply.answer.turn if reply.answer is not None else None


def render_history(history: Sequence[tuple[str, str]]) -> str:
    """The dialogue so far as ``Human: ...`` / ``Chatbot: ...`` lines.

    >>> print(render_history([("(FEAR) Exams soon.", "(FEAR) Oof. (HAPPINESS) You got this. (NEUTRAL) Which one?")]))
    Human: (FEAR) Exams soon.
    Chatbot: (FEAR) Oof. (HAPPINESS) You got this. (NEUTRAL) Which one?
    """
    return "\n".join(f"Human: {user}\nChatbot: {bot}" for user, bot in history)
