"""EmotionStyle-v0's embedded demonstrations: seven emotions × 30 train-split replies that show the
emotion without naming it, pass every rule of the env, and become an eval folder the SFT trainer reads."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

import affectgym
from affectgym.data.speech_sources import DatasetError
from affectgym.data.style_demonstrations import load_style_demonstrations
from affectgym.emotions import EMOTIONS
from affectgym.rewards.rules import EMOTION_WORDS

ENV_ID = "affectgym/EmotionStyle-v0"
PER_EMOTION = 30
MAX_WORDS = 36  # 1-3 sentences; every reply is at most 39 SmolLM2 tokens (benchmarks/bench_style_demos.py)
#: The labels' stems: "sadly", "fearless", "surprising" name an emotion as well as the lexicon's words do.
LABEL_STEMS = ("anger", "angr", "disgust", "fear", "joy", "sad", "surpris", "neutral")
WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")


def constant_classifier(texts: list[str]) -> list[dict[str, float]]:
    return [{"neutral": 1.0} for _ in texts]


@pytest.fixture(scope="module")
def demonstrations():
    return load_style_demonstrations()


def test_the_set_holds_thirty_demonstrations_of_each_of_the_seven_emotions(demonstrations) -> None:
    counts = collections.Counter(d.emotion for d in demonstrations)
    assert set(counts) == set(EMOTIONS)
    assert min(counts.values()) >= PER_EMOTION
    assert len({d.scenario_id for d in demonstrations}) == len(demonstrations) >= 7 * PER_EMOTION


def test_every_demonstration_answers_a_train_scenario_and_none_a_held_out_one(demonstrations) -> None:
    ids = {
        split: {s.id for s in affectgym.make(ENV_ID, split=split, classifier=constant_classifier).unwrapped.scenarios}
        for split in ("train", "validation", "eval")
    }
    demonstrated = {d.scenario_id for d in demonstrations}
    assert demonstrated <= ids["train"]
    assert not demonstrated & (ids["validation"] | ids["eval"])


def test_every_demonstration_breaks_no_rule_of_the_env(demonstrations) -> None:
    env = affectgym.make(ENV_ID, split="train", classifier=constant_classifier)
    broken = {}
    for demonstration in demonstrations:
        env.reset(options={"scenario_id": demonstration.scenario_id})
        _, _, terminated, _, info = env.step(demonstration.reply)
        assert terminated
        if info["outcome"]["rule_hits"]:
            broken[demonstration.scenario_id] = info["outcome"]["rule_hits"]
    assert broken == {}


def test_no_demonstration_names_any_emotion_or_a_word_of_its_family(demonstrations) -> None:
    naming = frozenset().union(*EMOTION_WORDS.values())
    named = {
        d.scenario_id: found for d in demonstrations
        if (found := [w for w in WORD.findall(d.reply.lower()) if w in naming or w.startswith(LABEL_STEMS)])
    }
    assert named == {}


def test_every_demonstration_is_one_to_three_plain_sentences(demonstrations) -> None:
    for d in demonstrations:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", d.reply.strip()) if s]
        assert 1 <= len(sentences) <= 3, d
        assert len(d.reply.split()) <= MAX_WORDS, d
        assert not re.search(r"[()\[\]*]", d.reply), d  # no asides: stage directions live in them


def test_a_demonstration_file_with_an_unknown_emotion_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "demos.jsonl"
    rows = [{"scenario_id": "es001:joy", "emotion": "joy", "reply": "Yes!"},
            {"scenario_id": "es001:glee", "emotion": "glee", "reply": "Yes!"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"demos\.jsonl:2: emotion 'glee' is not one of"):
        load_style_demonstrations(path)


def test_written_demonstrations_are_an_eval_folder_the_sft_trainer_keeps_whole(tmp_path: Path) -> None:
    pytest.importorskip("nade")
    from affectgym.train.demos import episode_demonstrations
    from affectgym.train.style_demonstrations import write_style_demonstrations

    out = tmp_path / "style-demos"
    summary = write_style_demonstrations(out)
    assert summary["episodes"] == 210 and summary["style"]["any_rule"] == 0.0
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert (metadata["split"], metadata["status"], metadata["scorers"]["classifier"]) == \
        ("train", "complete", "nade:neutral_weight=0.25")
    rows, counts = episode_demonstrations([out], ENV_ID)
    assert counts["kept"] == 210
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": load_style_demonstrations()[0].reply}
    with pytest.raises(FileExistsError, match="results.jsonl exists"):
        write_style_demonstrations(out)
