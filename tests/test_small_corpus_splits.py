"""Small corpora split sensibly by default: every side gets a group, a manifest's speakers are its groups."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data.splits import assign_splits

RATE_HZ = 16_000
SIDES = ("train", "validation", "eval")
#: Six actors, each with emotions of their own (RAVDESS codes 01 neutral, 04 sad, 05 angry): no two share a label set.
ACTOR_EMOTIONS = {1: ("01",), 2: ("05",), 3: ("04",), 4: ("01", "05"), 5: ("05", "04"), 6: ("01", "04")}


def sine(path, f0_hz: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(0.5 * RATE_HZ)) / RATE_HZ
    soundfile.write(str(path), 0.3 * np.sin(2 * np.pi * f0_hz * t), RATE_HZ)


def ravdess_of_six_actors(root):
    for actor, emotions in ACTOR_EMOTIONS.items():
        for emotion in emotions:
            for statement in ("01", "02"):
                sine(root / f"Actor_{actor:02d}" / f"03-01-{emotion}-01-{statement}-01-{actor:02d}.wav",
                     100.0 + 30 * int(emotion) + actor + int(statement))
    return root


def crema_d_of_six_actors(root):
    codes = {"01": "NEU", "04": "SAD", "05": "ANG"}
    for actor, emotions in ACTOR_EMOTIONS.items():
        for emotion in emotions:
            for sentence in ("DFA", "IEO"):
                sine(root / "AudioWAV" / f"{1000 + actor}_{sentence}_{codes[emotion]}_XX.wav",
                     100.0 + 30 * int(emotion) + actor + len(sentence))
    return root


def speakers_of_each_side(sides=SIDES, **env_kwargs) -> list[set[str]]:
    return [{clip.speaker for clip in affectgym.make("affectgym/SpeechEmotion-v0", split=side, **env_kwargs).unwrapped.scenarios}
            for side in sides]


@pytest.mark.parametrize(("dataset", "build"), [("ravdess", ravdess_of_six_actors), ("crema-d", crema_d_of_six_actors)])
def test_a_corpus_folder_of_six_actors_gives_each_split_its_own_actors_by_default(tmp_path, dataset, build):
    sides = speakers_of_each_side(dataset=dataset, data_dir=str(build(tmp_path)))
    assert all(sides), dict(zip(SIDES, sides, strict=True))
    assert set().union(*sides) == {f"actor{n:02d}" if dataset == "ravdess" else f"actor{1000 + n}" for n in ACTOR_EMOTIONS}
    assert sum(len(s) for s in sides) == len(set().union(*sides)), "an actor on two sides"


def test_a_manifest_with_a_speaker_column_is_split_by_speaker_by_default(tmp_path):
    rows = []
    for speaker in range(5):
        for label, f0_hz in (("calm", 120.0), ("angry", 260.0)):
            for take in range(2):
                name = f"audio/s{speaker}-{label}-{take}.wav"
                sine(tmp_path / name, f0_hz + 7 * speaker + take)
                rows.append({"path": name, "label": label, "speaker": f"s{speaker}", "transcript": f"line {take}"})
    manifest = tmp_path / "corpus.jsonl"
    manifest.write_text("".join(json.dumps(row) + "\n" for row in rows))
    train, validation, held_out = speakers_of_each_side(data_dir=str(manifest))
    assert train and validation and held_out
    assert not train & held_out and not train & validation and not validation & held_out
    by_line = speakers_of_each_side(("train", "eval"), data_dir=str(manifest), group_by="transcript")
    assert by_line[0] & by_line[1], "group_by='transcript' still groups by line, sharing speakers"


def test_strata_too_small_to_hold_a_group_out_still_give_eval_and_validation_one_each():
    # three speakers, each with a label set of their own: every stratum has one group
    items = [("a1", "calm"), ("b1", "angry"), ("c1", "sad"), ("c2", "calm")]
    speakers = {"a1": "a", "b1": "b", "c1": "c", "c2": "c"}
    sides = assign_splits(items, groups=speakers)
    assert sorted({side for side in sides.values()}) == ["eval", "train", "validation"]
    assert sides["c1"] == sides["c2"]
    two = assign_splits(items[:2], groups=speakers)
    assert sorted(two.values()) == ["eval", "train"]
    assert set(assign_splits(items[:1], groups=speakers).values()) == {"train"}, "one group: nothing to hold out"


def test_a_corpus_of_one_actor_has_no_eval_side_and_the_error_names_leave_one_group_out(tmp_path):
    root = tmp_path / "ravdess"
    for emotion in ("01", "05"):
        for statement in ("01", "02"):
            sine(root / "Actor_01" / f"03-01-{emotion}-01-{statement}-01-01.wav", 100.0 + 30 * int(emotion))
    assert affectgym.make("affectgym/SpeechEmotion-v0", dataset="ravdess", data_dir=str(root), split="train")
    with pytest.raises(ValueError, match=r"split 'eval' has no scenarios: the 4 clips .* one group.*LeaveOneGroupOut"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="ravdess", data_dir=str(root), split="eval")
