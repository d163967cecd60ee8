"""Every env has a validation side to choose settings on: disjoint from train and eval, carved
out of train, so the eval scenarios are the ones every earlier result was measured on."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data.speech_sources import DatasetError
from affectgym.data.speech_splits import IdFolds, LeaveOneGroupOut, Partition
from affectgym.data.splits import assign_splits, balanced_eval_ids, held_out_counts, select_split

TEXT_AND_SPEECH_ENVS = {
    "affectgym/Sarcasm-v0": {},
    "affectgym/SpeechEmotion-v0": {},
    "affectgym/EmotionStyle-v0": {"classifier": "nade"},
    "affectgym/EmpatheticDialogue-v0": {},
    "affectgym/EmotionStateText-v0": {},
}


def _ids(env_id, split, **kwargs):
    env = affectgym.make(env_id, split=split, **{**TEXT_AND_SPEECH_ENVS[env_id], **kwargs})
    return set(env.unwrapped.scenario_ids)


@pytest.mark.parametrize("env_id", list(TEXT_AND_SPEECH_ENVS))
def test_every_env_serves_a_validation_side_disjoint_from_train_and_eval(env_id):
    train, validation, evaluation = (_ids(env_id, split) for split in ("train", "validation", "eval"))
    assert validation and evaluation and train
    assert not train & validation and not train & evaluation and not validation & evaluation
    assert train | validation | evaluation == _ids(env_id, "all")


@pytest.mark.parametrize("env_id", ["affectgym/Sarcasm-v0", "affectgym/SpeechEmotion-v0"])
def test_the_validation_side_is_carved_from_train_so_eval_does_not_move(env_id):
    without = {split: _ids(env_id, split, validation_fraction=0.0) for split in ("train", "eval")}
    with pytest.raises(ValueError, match="split 'validation' has no scenarios"):
        _ids(env_id, "validation", validation_fraction=0.0)
    assert _ids(env_id, "eval") == without["eval"]
    assert _ids(env_id, "train") | _ids(env_id, "validation") == without["train"]


def test_the_numeric_emotion_state_env_takes_the_validation_arcs():
    env = affectgym.make("affectgym/EmotionState-v0", split="validation")
    text = affectgym.make("affectgym/EmotionStateText-v0", split="validation")
    assert env.unwrapped.scenario_ids == text.unwrapped.scenario_ids
    assert len(env.unwrapped.scenario_ids) == 1


def test_eval_groups_are_the_lowest_hash_whatever_the_validation_fraction():
    items = [(f"clip{i}", "sarcastic" if i % 2 else "sincere") for i in range(60)]
    lines = {item_id: f"line{i // 2}" for i, (item_id, _) in enumerate(items)}
    expected = balanced_eval_ids(items, 0.2, groups=lines)
    for fraction in (0.0, 0.1, 0.3):
        assert set(select_split(items, "eval", 0.2, groups=lines, validation_fraction=fraction)) == expected
    sides = assign_splits(items, groups=lines)
    sides_of_line = {line: {sides[item] for item, item_line in lines.items() if item_line == line} for line in lines.values()}
    assert all(len(line_sides) == 1 for line_sides in sides_of_line.values()), "a line never straddles two sides"
    assert set(sides.values()) == {"train", "validation", "eval"}


def test_a_stratum_of_three_groups_gives_validation_one_and_never_empties_train():
    assert held_out_counts(3, 0.2, 0.1) == (1, 1)
    assert held_out_counts(2, 0.2, 0.1) == (0, 0)
    assert held_out_counts(10, 0.2, 0.9) == (2, 7)
    with pytest.raises(ValueError, match=r"validation_fraction must be in \[0, 1\), got 1.0"):
        held_out_counts(10, 0.2, 1.0)


def _tone(path, f0_hz):
    t = np.arange(8_000) / 16_000
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), 0.3 * np.sin(2 * np.pi * f0_hz * t), 16_000)


@pytest.fixture
def speakers_corpus(tmp_path):
    """A manifest of four speakers, two emotions each, and its own train/dev/test partitions."""
    rows = ["path,label,speaker,transcript,split"]
    for k, speaker in enumerate(("ana", "ben", "cai", "dee")):
        for label, f0_hz in (("calm", 120.0), ("angry", 260.0)):
            _tone(tmp_path / "audio" / f"{speaker}-{label}.wav", f0_hz + k)
            partition = {"ana": "train", "ben": "train", "cai": "dev", "dee": "test"}[speaker]
            rows.append(f"audio/{speaker}-{label}.wav,{label},{speaker},line of {speaker},{partition}")
    (tmp_path / "manifest.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "manifest.csv"


def _speakers(manifest, split):
    env = affectgym.make("affectgym/SpeechEmotion-v0", dataset="manifest", data_dir=str(manifest), split=split)
    return sorted({clip.speaker for clip in env.unwrapped.scenarios})


def test_a_dataset_with_its_own_dev_partition_validates_on_it(speakers_corpus):
    assert _speakers(speakers_corpus, "validation") == ["cai"]
    assert _speakers(speakers_corpus, "test") == ["dee"]
    assert _speakers(speakers_corpus, Partition("test", part="validation")) == ["cai"]


def test_leave_one_speaker_out_validates_on_a_second_held_out_speaker(speakers_corpus):
    split = LeaveOneGroupOut("speaker", "dee", validation_held_out="cai")
    assert _speakers(speakers_corpus, split) == ["dee"]
    assert _speakers(speakers_corpus, split.with_part("validation")) == ["cai"]
    assert _speakers(speakers_corpus, split.with_part("train")) == ["ana", "ben"]
    with pytest.raises(ValueError, match="has no validation side: pass validation_held_out="):
        LeaveOneGroupOut("speaker", "dee").with_part("validation")
    with pytest.raises(DatasetError, match="no clip has speaker 'zed'"):
        _speakers(speakers_corpus, LeaveOneGroupOut("speaker", "dee", validation_held_out="zed"))


def test_folds_without_validation_ids_say_which_keys_they_have(speakers_corpus):
    folds = IdFolds(lambda data_dir: [{"train": [], "test": []}], fold=1, part="validation")
    with pytest.raises(ValueError, match=r"the folds have no validation ids \(keys \['test', 'train'\]"):
        _speakers(speakers_corpus, folds)
