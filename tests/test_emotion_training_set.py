"""The offline emotion scorer's training replies: seven emotions × 60 hand-written replies to
EmotionStyle-v0's train-split instructions that show the emotion without naming it, break none
of the env's rules, and copy no demonstration."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

import affectgym
from affectgym.emotions import EMOTIONS
from affectgym.rewards.rules import EMOTION_WORDS, names_emotion, rule_penalties

ENV_ID = "affectgym/EmotionStyle-v0"
DATA = Path(affectgym.__file__).parent / "data"
REPLIES = DATA / "emotion_training" / "replies.jsonl"
DEMONSTRATIONS = DATA / "style_demonstrations" / "demonstrations.jsonl"
PER_EMOTION = 60
MIN_INSTRUCTIONS_PER_EMOTION = 50
MIN_WORDS, MAX_WORDS = 12, 45
MAX_DEMONSTRATION_SIMILARITY = 0.6  # TF-IDF cosine
WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
ID = re.compile(r"^(?P<instruction>[a-z]+\d+):(?P<emotion>[a-z]+):(?P<n>[12])$")
#: Stems of words that name an emotion, beyond the lexicon's inflections ("sadly", "fearless",
#: "surprising", "terrifies", "horrible", "cheery", ...): none may start a word of a reply.
NAMING_STEMS = (
    "anger", "angr", "furious", "fury", "rage", "raging", "enrag", "livid", "irate", "irrita",
    "annoy", "pissed", "outrag", "infuriat", "seeth", "fuming", "incens", "resent", "wrath",
    "frustrat", "irk", "disgust", "revolt", "repuls", "revuls", "nause", "sicken", "gross",
    "repugn", "loath", "appal", "fear", "afraid", "scare", "scary", "frighten", "terrif",
    "terror", "panic", "anxi", "nervous", "dread", "horr", "petrif", "alarmed", "worr", "joy",
    "happy", "happi", "unhapp", "glad", "delight", "elat", "thrill", "ecstat", "overjoy",
    "cheer", "jubil", "excit", "sad", "sorrow", "grief", "griev", "depress", "miser", "heartbr",
    "gloom", "melanchol", "despair", "devastat", "upset", "lonel", "surpris", "astonish", "amaz",
    "shock", "stun", "astound", "startl", "flabbergast", "calm", "neutral", "indifferen",
    "unemotional", "impartial", "emotion",
)
NAMING_WORDS = frozenset({"mad", "madder", "hate"})


def constant_classifier(texts: list[str]) -> list[dict[str, float]]:
    return [{"neutral": 1.0} for _ in texts]


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def replies() -> list[dict]:
    return read_jsonl(REPLIES)


@pytest.fixture(scope="module")
def instructions() -> dict[str, dict[str, str]]:
    """Instruction id -> instruction text, for each split of the env."""
    splits = {}
    for split in ("train", "validation", "eval"):
        env = affectgym.make(ENV_ID, split=split, classifier=constant_classifier).unwrapped
        splits[split] = {s.instruction_id: s.instruction for s in env.scenarios}
    return splits


@pytest.fixture(scope="module")
def train_scenarios() -> dict[str, object]:
    env = affectgym.make(ENV_ID, split="train", classifier=constant_classifier).unwrapped
    return {s.id: s for s in env.scenarios}


def test_the_set_holds_sixty_replies_of_each_of_the_seven_emotions(replies) -> None:
    counts = collections.Counter(r["emotion"] for r in replies)
    assert dict(counts) == {emotion: PER_EMOTION for emotion in EMOTIONS}
    assert len(replies) == 7 * PER_EMOTION


def test_every_reply_has_a_unique_id_naming_its_instruction_emotion_and_number(replies) -> None:
    ids = [r["id"] for r in replies]
    assert len(set(ids)) == len(ids), [i for i, c in collections.Counter(ids).items() if c > 1]
    for r in replies:
        assert set(r) == {"id", "instruction_id", "emotion", "reply"}, r
        match = ID.match(r["id"])
        assert match, r["id"]
        assert (match["instruction"], match["emotion"]) == (r["instruction_id"], r["emotion"]), r
    pairs = collections.Counter((r["instruction_id"], r["emotion"]) for r in replies)
    for r in replies:  # a second reply to a pair is numbered 2, a lone one 1
        n = int(ID.match(r["id"])["n"])
        assert n <= pairs[r["instruction_id"], r["emotion"]], r["id"]


def test_each_emotion_spreads_over_at_least_fifty_instructions(replies) -> None:
    spread = collections.defaultdict(set)
    for r in replies:
        spread[r["emotion"]].add(r["instruction_id"])
    assert {e: len(ids) for e, ids in spread.items() if len(ids) < MIN_INSTRUCTIONS_PER_EMOTION} == {}


def test_every_reply_answers_a_train_instruction_and_none_a_held_out_one(replies, instructions) -> None:
    used = {r["instruction_id"] for r in replies}
    assert used <= set(instructions["train"]), sorted(used - set(instructions["train"]))
    assert not used & (set(instructions["validation"]) | set(instructions["eval"]))


def test_no_reply_names_any_emotion_by_the_projects_matcher_or_a_naming_stem(replies) -> None:
    lexicon = frozenset().union(*EMOTION_WORDS.values())
    named = {}
    for r in replies:
        found = [names_emotion(r["reply"], label).span for label in EMOTIONS
                 if names_emotion(r["reply"], label).hit]
        words = [w.lower().strip("'’") for w in WORD.findall(r["reply"])]
        found += [w for w in words if w in lexicon or w in NAMING_WORDS or w.startswith(NAMING_STEMS)]
        if found:
            named[r["id"]] = found
    assert named == {}


def test_no_rule_penalty_fires_on_any_reply(replies, train_scenarios) -> None:
    broken = {}
    for r in replies:
        scenario = train_scenarios[f"{r['instruction_id']}:{r['emotion']}"]
        hits = rule_penalties(r["reply"], r["emotion"], scenario.instruction, scenario.topic)
        if fired := sorted(name for name, match in hits.items() if match.hit):
            broken[r["id"]] = fired
    assert broken == {}


def test_no_rule_of_the_env_fires_when_a_reply_is_its_answer(replies) -> None:
    env = affectgym.make(ENV_ID, split="train", classifier=constant_classifier)
    broken = {}
    for r in replies:
        env.reset(options={"scenario_id": f"{r['instruction_id']}:{r['emotion']}"})
        _, _, terminated, _, info = env.step(r["reply"])
        assert terminated
        if info["outcome"]["rule_hits"]:
            broken[r["id"]] = info["outcome"]["rule_hits"]
    assert broken == {}


def test_every_reply_is_one_to_three_plain_sentences_of_twelve_to_forty_five_words(replies) -> None:
    for r in replies:
        text = r["reply"]
        assert text == text.strip() and "\n" not in text, r["id"]
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s]
        assert 1 <= len(sentences) <= 3, r["id"]
        assert MIN_WORDS <= len(text.split()) <= MAX_WORDS, r["id"]
        assert text.count("!") <= 1, r["id"]
        assert not re.search(r"[()\[\]*_#<>~]", text), r["id"]  # no asides, markup or stage directions
        assert not re.search(r"\b[A-Z]{2,}\b", text), r["id"]  # no capitals shouted or acronyms
        assert not re.search(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]", text), r["id"]  # no emoji


def test_no_reply_equals_or_nearly_copies_a_demonstration(replies) -> None:
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    demonstrations = [d["reply"] for d in read_jsonl(DEMONSTRATIONS)]
    texts = [r["reply"] for r in replies]
    assert not set(texts) & set(demonstrations)
    vectoriser = TfidfVectorizer().fit(texts + demonstrations)
    similarity = cosine_similarity(vectoriser.transform(texts), vectoriser.transform(demonstrations))
    closest = similarity.max(axis=1)
    too_close = {replies[i]["id"]: round(float(s), 2) for i, s in enumerate(closest)
                 if s >= MAX_DEMONSTRATION_SIMILARITY}
    assert too_close == {}


def test_no_two_replies_are_the_same_text(replies) -> None:
    texts = [" ".join(r["reply"].lower().split()) for r in replies]
    assert len(set(texts)) == len(texts)
