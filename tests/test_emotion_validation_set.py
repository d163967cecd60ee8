"""The emotion validation set: seven emotions × 20 situations × 3 paraphrases of hand-written replies that
show the emotion without naming it, on situations disjoint from the env's instructions and demonstrations."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

from affectgym.data.emotion_validation_set import load_emotion_validation
from affectgym.data.instructions import load_embedded_instructions
from affectgym.data.speech_sources import DatasetError
from affectgym.data.style_demonstrations import load_style_demonstrations
from affectgym.emotions import EMOTIONS
from affectgym.rewards.rules import names_emotion, rule_penalties

SITUATIONS = 20
PARAPHRASES = ("a", "b", "c")
MIN_WORDS, MAX_WORDS = 12, 45
MAX_DEMONSTRATION_SIMILARITY = 0.6  # TF-IDF cosine from which a reply is a near-copy of a demonstration
WORD = re.compile(r"[A-Za-z][A-Za-z']*")
#: Stems of the labels and of the lexicons' synonyms that name an emotion as well as
#: ``EMOTION_WORDS`` does ("sadly", "fearless", "upsetting", "cheerfully", "worrying", "calmly").
NAMING_STEMS = (
    "anger", "angr", "annoy", "irritat", "infuriat", "enrag", "outrag", "resent", "frustrat",
    "disgust", "revolt", "repuls", "repugn", "nause", "sicken", "loath", "appall",
    "fear", "afraid", "terrif", "terror", "fright", "panick", "anxi", "nervous", "dread", "horr", "petrif", "worr",
    "joy", "delight", "elat", "thrill", "ecsta", "overjoy", "cheer", "jubil", "excit",
    "neutral", "calm", "content", "indifferen",
    "sad", "unhapp", "sorrow", "grie", "depress", "heartbr", "gloom", "melanchol", "despair", "devastat", "upset",
    "surpris", "shock", "astonish", "amaz", "astound", "startl", "flabbergast",
)
#: Naming words whose stems would also catch innocent words ("happen", "stung", "madam", "gladiator").
NAMING_WORDS = frozenset(
    "happy happier happiest happily happiness glad gladly mad madder fury furious furiously rage raged raging "
    "livid irate fuming seething wrath gross grossed scared scary scare panic stun stunned stunning miserable "
    "misery".split()
)
EMOJI = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]")


@pytest.fixture(scope="module")
def replies():
    return load_emotion_validation()


def test_the_set_holds_420_replies_twenty_situations_of_three_paraphrases_for_each_emotion(replies) -> None:
    assert len(replies) == len(EMOTIONS) * SITUATIONS * len(PARAPHRASES) == 420
    groups = collections.defaultdict(list)
    for reply in replies:
        groups[reply.group].append(reply)
    per_emotion = collections.Counter(members[0].emotion for members in groups.values())
    assert per_emotion == {emotion: SITUATIONS for emotion in EMOTIONS}
    assert all(sorted(r.id[-1] for r in members) == list(PARAPHRASES) for members in groups.values())
    assert all(len({r.emotion for r in members}) == 1 for members in groups.values())


def test_ids_and_groups_are_consistent_unique_and_in_order(replies) -> None:
    ids = [r.id for r in replies]
    assert len(set(ids)) == len(ids)
    expected = [
        f"{emotion}-{situation:02d}-{paraphrase}"
        for emotion in sorted(EMOTIONS)
        for situation in range(1, SITUATIONS + 1)
        for paraphrase in PARAPHRASES
    ]
    assert ids == expected
    for reply in replies:
        assert reply.group == reply.id[:-2] and reply.group.startswith(f"{reply.emotion}-"), reply


def test_no_reply_names_any_of_the_seven_emotions(replies) -> None:
    named = {
        r.id: [match.span for emotion in EMOTIONS if (match := names_emotion(r.reply, emotion)).hit]
        for r in replies
    }
    assert {key: spans for key, spans in named.items() if spans} == {}


def test_no_reply_uses_a_naming_stem_or_synonym(replies) -> None:
    found = {
        r.id: words for r in replies
        if (words := [w for w in WORD.findall(r.reply.lower()) if w in NAMING_WORDS or w.startswith(NAMING_STEMS)])
    }
    assert found == {}


def test_no_reply_breaks_a_rule_of_the_env(replies) -> None:
    broken = {
        r.id: hits for r in replies
        if (hits := {name: match.span for name, match in rule_penalties(r.reply, r.emotion).items() if match.hit})
    }
    assert broken == {}


def test_every_reply_is_one_to_three_plain_sentences_of_twelve_to_forty_five_words(replies) -> None:
    for r in replies:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", r.reply.strip()) if s]
        assert 1 <= len(sentences) <= 3, r
        assert MIN_WORDS <= len(r.reply.split()) <= MAX_WORDS, r
        assert r.reply.count("!") <= 1, r
        assert not EMOJI.search(r.reply) and r.reply.isascii(), r
        assert not re.search(r"\b[A-Z]{3,}\b", r.reply), r  # no shouting, and no acronym that reads as one
        assert not re.search(r"[()\[\]*]", r.reply), r  # no asides: stage directions live in them


def test_no_reply_mentions_the_topic_of_an_instruction(replies) -> None:
    topics = {item.topic.lower() for item in load_embedded_instructions() if item.topic}
    assert len(topics) > 200
    mentioned = {r.id: hits for r in replies if (hits := [t for t in topics if t in r.reply.lower()])}
    assert mentioned == {}


def test_no_reply_is_a_near_copy_of_a_demonstration(replies) -> None:
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    demonstrations = [d.reply for d in load_style_demonstrations()]
    texts = [r.reply for r in replies]
    vectoriser = TfidfVectorizer().fit(texts + demonstrations)
    similarity = cosine_similarity(vectoriser.transform(texts), vectoriser.transform(demonstrations))
    near = {replies[i].id: round(float(row.max()), 2) for i, row in enumerate(similarity)
            if row.max() >= MAX_DEMONSTRATION_SIMILARITY}
    assert near == {}
    assert not set(texts) & set(demonstrations)


def test_paraphrases_of_a_situation_are_different_texts(replies) -> None:
    groups = collections.defaultdict(list)
    for r in replies:
        groups[r.group].append(" ".join(r.reply.lower().split()))
    assert all(len(set(texts)) == len(PARAPHRASES) for texts in groups.values())
    assert len({r.reply for r in replies}) == len(replies)


def test_a_file_with_an_unknown_emotion_or_a_stray_id_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "replies.jsonl"
    good = {"id": "joy-01-a", "emotion": "joy", "group": "joy-01", "reply": "We won the quiz tonight."}
    for bad, message in (
        ({**good, "emotion": "glee"}, r"replies\.jsonl:2: emotion 'glee' is not one of"),
        ({**good, "id": "joy-01-d"}, r"replies\.jsonl:2: id 'joy-01-d' must be"),
        ({**good, "group": "fear-01"}, r"replies\.jsonl:2: id 'joy-01-a' must be"),
        (good, r"replies\.jsonl:2: id 'joy-01-a' appears twice"),
    ):
        path.write_text("".join(json.dumps(row) + "\n" for row in (good, bad)), encoding="utf-8")
        with pytest.raises(DatasetError, match=message):
            load_emotion_validation(path)
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert [r.id for r in load_emotion_validation(path)] == ["joy-01-a"]
    with pytest.raises(DatasetError, match="could not be read"):
        load_emotion_validation(tmp_path / "missing.jsonl")
