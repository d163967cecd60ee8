"""Loading a user's speech data: folder datasets and MUStARD's JSON, against hostile files.

Every problem with a dataset's files is found when the env is made and reported as a
``DatasetError`` naming the file (and, for MUStARD's JSON, the clip id and the field);
a bad audio file is skipped with one warning (``on_bad_clip="skip"``) or refused
(``on_bad_clip="error"``), never a crash of every later prosody call.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data import DatasetError
from affectgym.data.speech_splits import mustard_fold
from affectgym.envs.checker import check_env
from affectgym.envs.sarcasm import SarcasmEnv

RATE_HZ = 16_000
PROSODY = '<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>'


def _sine(path, f0_hz=150.0, duration_s=0.6):
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(duration_s * RATE_HZ)) / RATE_HZ
    soundfile.write(str(path), 0.3 * np.sin(2 * np.pi * f0_hz * t), RATE_HZ)


def _folder(root, labels=("calm", "excited")):
    for label, f0_hz in zip(labels, (120.0, 260.0, 180.0), strict=False):
        for take in range(2):
            _sine(root / label / f"take{take}.wav", f0_hz + 10 * take)
    return root


def _bad_clips(root):
    """One clip of every kind of bad file, each with the words its reason must contain."""
    (root / "calm" / "empty.wav").write_bytes(b"")
    (root / "calm" / "notes.wav").write_text("this is a text file renamed .wav")
    os.symlink(root / "calm" / "gone.wav", root / "calm" / "dangling.wav")
    (root / "calm" / "folder.wav").mkdir()
    _sine(root / "excited" / "blip.wav", duration_s=0.01)
    return {
        "empty.wav": "empty file (0 bytes)",
        "notes.wav": "not a readable audio file",
        "dangling.wav": "dangling symlink",
        "folder.wav": "a folder",
        "blip.wav": "too short: 0.010 s of audio, at least 0.064 s",
    }


# ----------------------------------------------------------------------------- bad audio files
def test_bad_clips_are_skipped_with_one_warning_naming_each_and_the_rest_still_measured(tmp_path, caplog):
    bad = _bad_clips(_folder(tmp_path))
    with caplog.at_level("WARNING", logger="affectgym.data.speech_sources"):
        env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all")
    (warning,) = [r.getMessage() for r in caplog.records if "unusable audio" in r.getMessage()]
    for name, reason in bad.items():
        assert f"{tmp_path / ('calm' if name != 'blip.wav' else 'excited') / name}: {reason}" in warning
    base = env.unwrapped
    assert len(base.scenarios) == 4 and not any(os.path.basename(c.audio_path) in bad for c in base.all_clips)
    for scenario_id in base.scenario_ids:
        env.reset(options={"scenario_id": scenario_id})
        assert "Pitch: mean=" in env.step(PROSODY)[0]


def test_on_bad_clip_error_refuses_the_dataset_listing_every_bad_clip(tmp_path):
    bad = _bad_clips(_folder(tmp_path))
    with pytest.raises(DatasetError, match="5 of 9 clips have unusable audio") as raised:
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), on_bad_clip="error")
    for name, reason in bad.items():
        assert name in str(raised.value) and reason in str(raised.value)


def test_on_bad_clip_accepts_only_skip_or_error(tmp_path):
    with pytest.raises(ValueError, match="on_bad_clip must be one of skip, error, got 'ignore'"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(_folder(tmp_path)), on_bad_clip="ignore")


def test_unmeasurable_audio_found_only_when_decoded_reads_as_no_audio_and_spares_the_norms(tmp_path, caplog):
    _folder(tmp_path)
    (tmp_path / "calm" / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 but no audio follows")
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all")
    base = env.unwrapped
    broken = next(c for c in base.all_clips if c.audio_path.endswith("broken.mp4"))
    good = next(c for c in base.all_clips if c is not broken)
    env.reset(options={"scenario_id": good.id})
    assert "Pitch: mean=" in env.step(PROSODY)[0]
    env.reset(options={"scenario_id": broken.id})
    with caplog.at_level("WARNING", logger="affectgym.envs.speech_emotion"):
        assert env.step(PROSODY)[0].startswith("No audio for this clip")
    assert any("broken.mp4" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------- folder layout
def test_hidden_folders_and_files_are_not_labels_or_clips(tmp_path):
    _folder(tmp_path)
    _sine(tmp_path / ".ipynb_checkpoints" / "take0-checkpoint.wav")
    _sine(tmp_path / ".trash" / "old.wav")
    (tmp_path / "calm" / "._take0.wav").write_bytes(b"\x00\x05\x16\x07AppleDouble resource fork")
    base = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), on_bad_clip="error").unwrapped
    assert base.label_set == ("calm", "excited") and len(base.all_clips) == 4


def test_a_non_utf8_transcript_skips_its_clip_naming_the_file_not_the_dataset(tmp_path, caplog):
    _folder(tmp_path)
    (tmp_path / "calm" / "take0.txt").write_bytes("Ça va très bien.".encode("latin-1"))
    with caplog.at_level("WARNING", logger="affectgym.data.speech_sources"):
        base = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all").unwrapped
    assert len(base.all_clips) == 3 and not any(c.audio_path.endswith("calm/take0.wav") for c in base.all_clips)
    assert any("take0.txt is not UTF-8 text" in r.getMessage() and "save it as UTF-8" in r.getMessage()
               for r in caplog.records)
    with pytest.raises(DatasetError, match=r"take0\.wav: its transcript take0\.txt is not UTF-8 text"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), on_bad_clip="error")


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
def test_fifos_and_links_to_a_device_named_as_clips_or_transcripts_are_named_and_never_read(tmp_path, caplog):
    _folder(tmp_path)
    os.mkfifo(tmp_path / "calm" / "pipe.wav")
    os.symlink("/dev/zero", tmp_path / "calm" / "zeros.wav")
    os.mkfifo(tmp_path / "excited" / "take0.txt")
    os.symlink("/dev/zero", tmp_path / "excited" / "take1.txt")
    _sine(tmp_path / "excited" / "take2.wav", 300.0)
    with caplog.at_level("WARNING", logger="affectgym.data.speech_sources"):
        base = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all").unwrapped
    assert sorted(os.path.basename(c.audio_path) for c in base.all_clips) == ["take0.wav", "take1.wav", "take2.wav"]
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "pipe.wav: not a regular file" in said and "zeros.wav: not a regular file (a link to /dev/zero)" in said
    assert "its transcript take0.txt is not a regular file" in said and "take1.txt is not a regular file" in said


def test_capitalised_label_folders_are_answered_in_any_case_and_never_raise(tmp_path):
    _folder(tmp_path, labels=("Angry", "Sad"))
    for answer in ("json", "word"):
        env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all",
                             task_format={"answer": answer})
        for text in ("Angry", "angry.", '<final>{"label": " ANGRY ", "confidence": 0.9}</final>', "happy"):
            env.reset(seed=0)
            info = env.step(text)[-1]
            read = answer == "word" or text.startswith("<final>")
            assert info.get("outcome", {}).get("prediction") == ("Angry" if read and text != "happy" else None), (answer, text)


def test_labels_that_differ_only_in_case_are_refused_naming_them(tmp_path):
    _folder(tmp_path, labels=("Angry", "angry", "Sad"))
    with pytest.raises(ValueError, match=r"labels \[\['Angry', 'angry'\]\] differ only in case or spacing"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path))


def test_a_groups_csv_names_symlinked_clips_by_their_path_in_the_data_folder(tmp_path):
    store, data = _folder(tmp_path / "store"), tmp_path / "data"
    for label in ("calm", "excited"):
        (data / label).mkdir(parents=True)
        for take in range(2):
            os.symlink(store / label / f"take{take}.wav", data / label / f"take{take}.wav")
    groups = tmp_path / "groups.csv"
    groups.write_text("clip,group\n" + "".join(f"{label}/take{t}.wav,g{t}\n" for label in ("calm", "excited")
                                                for t in range(2)))
    base = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(data), group_by=str(groups), split="all").unwrapped
    assert len(base.all_clips) == 4


def test_dataset_with_one_label_is_refused_when_the_env_is_made(tmp_path):
    _folder(tmp_path, labels=("calm",))
    with pytest.raises(DatasetError, match=r"labels \['calm'\]; a labelling task needs at least two labels"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path))


def test_dataset_left_with_one_label_after_skipping_bad_clips_is_refused(tmp_path):
    _folder(tmp_path, labels=("calm",))
    (tmp_path / "excited").mkdir()
    (tmp_path / "excited" / "take0.wav").write_bytes(b"")
    with pytest.raises(DatasetError, match="at least two labels"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path))


# ----------------------------------------------------------------------------- MUStARD's JSON
def _record(sarcasm=True, **changes):
    record = {
        "utterance": "Oh, that is just great.",
        "speaker": "SHELDON",
        "context": ["The printer is jammed again.", "And the deadline is today."],
        "context_speakers": ["LEONARD", "PENNY"],
        "show": "BBT",
        "sarcasm": sarcasm,
    }
    record.update(changes)
    return record


def _mustard(root, records=None, folds=None):
    """A MUStARD-format folder: 4 clips (2 sarcastic, 2 sincere) with audio, and one fold."""
    root.mkdir(parents=True, exist_ok=True)
    records = records or {f"1_{i}": _record(sarcasm=i % 2 == 0) for i in range(4)}
    (root / "sarcasm_data.json").write_text(json.dumps(records))
    for i, clip_id in enumerate(records):
        _sine(root / "audio" / f"{clip_id}.wav", 140.0 + 20 * i)
    (root / "split_indices.json").write_text(json.dumps(folds or [{"train": [0, 1], "test": [2, 3]}]))
    return root


def test_valid_mustard_folder_loads_with_folds_by_clip_id(tmp_path):
    env = SarcasmEnv(dataset="mustard", data_dir=str(_mustard(tmp_path)), split=mustard_fold(1))
    assert env.scenario_ids == ["1_2", "1_3"] and [c.label for c in env.scenarios] == ["sarcastic", "sincere"]
    assert env.scenarios[0].context == ("LEONARD: The printer is jammed again.", "PENNY: And the deadline is today.")


@pytest.mark.parametrize(
    ("changes", "field", "expected"),
    [
        ({"sarcasm": "false"}, "sarcasm", "true or false"),
        ({"sarcasm": "False"}, "sarcasm", "true or false"),
        ({"sarcasm": "0"}, "sarcasm", "true or false"),
        ({"sarcasm": None}, "sarcasm", "true or false"),
        ({"sarcasm": 0}, "sarcasm", "true or false"),
        ({"context": "The printer is jammed."}, "context", "a list of strings"),
        ({"context": 3}, "context", "a list of strings"),
        ({"context": ["fine", 7], "context_speakers": ["A", "B"]}, "context", "a list of strings"),
        ({"utterance": None}, "utterance", "a non-empty string"),
        ({"utterance": "  "}, "utterance", "a non-empty string"),
        ({"speaker": 12}, "speaker", "a non-empty string"),
        ({"context_speakers": ["LEONARD"]}, "context_speakers", "one speaker per line"),
        ({"show": ["BBT"]}, "show", "a string"),
    ],
)
def test_mustard_record_problems_name_file_clip_and_field(tmp_path, changes, field, expected):
    records = {"1_0": _record(), "1_1": _record(**{"sarcasm": False, **changes})}
    root = _mustard(tmp_path, records, folds=[{"train": [0], "test": [1]}])
    with pytest.raises(DatasetError) as raised:
        SarcasmEnv(dataset="mustard", data_dir=str(root), split="all")
    message = str(raised.value)
    assert "sarcasm_data.json" in message and "clip '1_1'" in message and f"field {field!r}" in message
    assert expected in message


def test_mustard_record_missing_a_field_or_not_an_object_is_named(tmp_path):
    record = _record()
    del record["speaker"]
    with pytest.raises(DatasetError, match=r"clip '1_1': field 'speaker' is missing"):
        SarcasmEnv(dataset="mustard", data_dir=str(_mustard(tmp_path / "a", {"1_0": _record(), "1_1": record})))
    with pytest.raises(DatasetError, match=r"clip '1_1': the record must be a JSON object, got an array"):
        SarcasmEnv(dataset="mustard", data_dir=str(_mustard(tmp_path / "b", {"1_0": _record(), "1_1": []})))


def test_mustard_clip_id_that_is_a_path_is_refused(tmp_path):
    root = _mustard(tmp_path, {"1_0": _record(), "1_1": _record(sarcasm=False)})
    (root / "sarcasm_data.json").write_text(json.dumps({"1_0": _record(), "../../etc/passwd": _record(sarcasm=False)}))
    with pytest.raises(DatasetError, match=r"clip '\.\./\.\./etc/passwd': the clip id must be a plain file name"):
        SarcasmEnv(dataset="mustard", data_dir=str(root))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"1_0": {"context": ' + "[" * 100_000 + "]" * 100_000 + "}}", "nested too deeply"),
        ('{"1_0": {"sarcasm": ' + "1" * 5000 + "}}", "not valid JSON"),
        ('{"1_0": {}, "1_0": {}}', "the key '1_0' appears more than once"),
        ('["1_0"]', "must be a JSON object mapping clip ids to records, got an array"),
        ("{'1_0': nope}", "not valid JSON"),
    ],
    ids=["deep", "huge-int", "duplicate-id", "array", "not-json"],
)
def test_unparsable_mustard_json_is_a_dataset_error_naming_the_file(tmp_path, text, problem):
    root = _mustard(tmp_path)
    (root / "sarcasm_data.json").write_text(text)
    with pytest.raises(DatasetError, match="sarcasm_data.json") as raised:
        SarcasmEnv(dataset="mustard", data_dir=str(root))
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("folds", "problem"),
    [
        ([{"train": [0, 1], "test": [2, 9]}], "fold 1, field 'test': index 9 is not a clip of sarcasm_data.json"),
        ([{"train": [0, 1], "test": [2, -1]}], "fold 1, field 'test': index -1 is not a clip"),
        ([{"train": [0, "1"], "test": [2, 3]}], "fold 1, field 'train': index '1' is not a clip"),
        ([{"train": [0, True], "test": [2, 3]}], "fold 1, field 'train': index True is not a clip"),
        ([{"train": [0, 1, 2], "test": [2, 3]}], "fold 1: clip '1_2' is in both 'train' and 'test'"),
        ([{"train": [0, 1, 1], "test": [2, 3]}], "fold 1, field 'train': clip '1_1' is listed more than once"),
        ([{"train": [0, 1]}], "fold 1, field 'test' is missing"),
        ({"train": [0, 1], "test": [2, 3]}, "must be a JSON array"),
    ],
    ids=["past-the-end", "negative", "string", "bool", "overlap", "repeat", "no-test", "not-a-list"],
)
def test_bad_mustard_folds_are_dataset_errors_naming_file_fold_and_field(tmp_path, folds, problem):
    root = _mustard(tmp_path, folds=folds)
    with pytest.raises(DatasetError, match="split_indices.json") as raised:
        SarcasmEnv(dataset="mustard", data_dir=str(root), split=mustard_fold(1))
    assert problem in str(raised.value)


def test_mustard_clip_with_bad_audio_is_skipped_and_leaves_its_fold(tmp_path, caplog):
    root = _mustard(tmp_path)
    (root / "audio" / "1_3.wav").write_bytes(b"")
    with caplog.at_level("WARNING", logger="affectgym.data.speech_sources"):
        env = SarcasmEnv(dataset="mustard", data_dir=str(root), split=mustard_fold(1))
    assert env.scenario_ids == ["1_2"]
    assert any("1_3.wav: empty file (0 bytes)" in r.getMessage() for r in caplog.records)
    with pytest.raises(DatasetError, match="1_3.wav: empty file"):
        SarcasmEnv(dataset="mustard", data_dir=str(root), split=mustard_fold(1), on_bad_clip="error")


@pytest.mark.parametrize("option", [{"group_by": "speaker"}, {"norms": "speaker"}])
def test_a_speaker_option_on_clips_that_name_no_speaker_fails_naming_what_is_missing(tmp_path, option):
    _folder(tmp_path)
    name, value = next(iter(option.items()))
    with pytest.raises(DatasetError, match=rf"{name}='{value}' needs every clip's speaker, but 4 of 4 clips name none"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), **option)


# ----------------------------------------------------------------------------- manifests
def _manifest_corpus(root):
    """A RAVDESS-like flat folder (label and actor only in the file names) and its manifest."""
    rows = []
    for actor in ("01", "02", "03", "04", "05"):
        for emotion, code, f0_hz in (("calm", "02", 120.0), ("angry", "05", 260.0)):
            name = f"03-01-{code}-01-01-01-{actor}.wav"
            _sine(root / "audio" / name, f0_hz + int(actor))
            rows.append({"path": f"audio/{name}", "label": emotion, "speaker": f"actor{actor}",
                         "transcript": "Kids are talking by the door",
                         "split": "eval" if actor == "05" else "train"})
    return rows


def test_a_csv_manifest_loads_any_layout_with_its_own_split_and_speaker_groups(tmp_path):
    from affectgym.envs.checker import check_env

    rows = _manifest_corpus(tmp_path)
    manifest = tmp_path / "corpus.csv"
    manifest.write_text("path,label,transcript,speaker,split\n" + "".join(
        f"{r['path']},{r['label']},{r['transcript']},{r['speaker']},{r['split']}\n" for r in rows))
    train = affectgym.make("affectgym/SpeechEmotion-v0", dataset="manifest", data_dir=str(manifest)).unwrapped
    held = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split="eval").unwrapped
    assert len(train.scenarios) == 8 and len(held.scenarios) == 2 and train.label_set == ("angry", "calm")
    assert {c.speaker for c in held.scenarios} == {"actor05"}
    assert not {c.speaker for c in held.scenarios} & {c.speaker for c in train.scenarios}
    with pytest.raises(DatasetError, match=r"split 'test' is not one of the dataset's own splits \['eval', 'train'\]"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split="test")
    check_env(affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split="all"))


def test_a_jsonl_manifest_without_splits_is_split_by_speaker_when_asked(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "split"} for r in _manifest_corpus(tmp_path)]
    manifest = tmp_path / "corpus.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    splits = [affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split=name, group_by="speaker",
                             eval_fraction=0.4).unwrapped for name in ("train", "eval")]
    speakers = [{c.speaker for c in env.scenarios} for env in splits]
    assert speakers[0] and speakers[1] and not speakers[0] & speakers[1]


@pytest.mark.parametrize(("text", "problem"), [
    ("path,lable\naudio/a.wav,calm\n", r"corpus\.csv:2: unknown column\(s\) \['lable'\]; accepted: path, label"),
    ("path,label\naudio/a.wav,\n", r"corpus\.csv:2: no label; every row needs a path and a label"),
    ("path,label\n", r"lists no clip"),
])
def test_a_bad_manifest_is_refused_naming_file_line_and_what_is_accepted(tmp_path, text, problem):
    (tmp_path / "corpus.csv").write_text(text)
    with pytest.raises(DatasetError, match=problem):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="manifest", data_dir=str(tmp_path / "corpus.csv"))


# ----------------------------------------------------------------------------- corpora by name
def _ravdess(root):
    """RAVDESS's layout: Actor_NN/03-01-EE-II-SS-RR-NN.wav (plus a song file and a stray file)."""
    for actor in range(1, 6):
        for emotion, f0_hz in (("01", 120.0), ("05", 260.0), ("04", 150.0)):
            for statement in ("01", "02"):
                _sine(root / f"Actor_{actor:02d}" / f"03-01-{emotion}-01-{statement}-01-{actor:02d}.wav",
                      f0_hz + actor + int(statement))
    _sine(root / "Actor_01" / "03-02-03-01-01-01-01.wav")  # song: not the speech set
    _sine(root / "Actor_01" / "notes.wav")
    return root


def _crema_d(root):
    """CREMA-D's layout: AudioWAV/AAAA_SSS_EEE_LL.wav."""
    for actor in (1001, 1002, 1003, 1004, 1005):
        for emotion, f0_hz in (("ANG", 260.0), ("SAD", 130.0)):
            for sentence, level in (("DFA", "XX"), ("IEO", "HI")):
                _sine(root / "AudioWAV" / f"{actor}_{sentence}_{emotion}_{level}.wav", f0_hz + actor % 10)
    return root


@pytest.mark.parametrize(("dataset", "build", "clips", "labels", "transcript"), [
    ("ravdess", _ravdess, 30, ("angry", "neutral", "sad"), "Kids are talking by the door."),
    ("crema-d", _crema_d, 20, ("angry", "sad"), "Don't forget a jacket."),
])
def test_a_named_corpus_loads_in_its_own_layout_with_labels_actors_and_a_speaker_independent_split(
        tmp_path, caplog, dataset, build, clips, labels, transcript):
    from affectgym.envs.checker import check_env

    build(tmp_path)
    with caplog.at_level("WARNING", logger="affectgym.data.corpora"):
        every = affectgym.make("affectgym/SpeechEmotion-v0", dataset=dataset, data_dir=str(tmp_path), split="all")
    base = every.unwrapped
    assert len(base.all_clips) == clips and base.label_set == labels
    assert transcript in {c.transcript for c in base.all_clips}
    assert all(c.speaker.startswith("actor") and c.group == c.speaker for c in base.all_clips)
    assert not any(c.label in c.id or "wav" in c.id for c in base.all_clips), "ids never carry the file name"
    if dataset == "ravdess":
        assert any("notes.wav" in r.getMessage() and "03-02-03" in r.getMessage() for r in caplog.records)
    train, held = (affectgym.make("affectgym/SpeechEmotion-v0", dataset=dataset, data_dir=str(tmp_path), split=name,
                                  eval_fraction=0.4).unwrapped for name in ("train", "eval"))
    train_actors, held_actors = ({c.speaker for c in env.scenarios} for env in (train, held))
    assert held_actors and train_actors and not train_actors & held_actors
    check_env(every)


def test_a_named_corpus_without_its_files_says_what_it_expected(tmp_path):
    with pytest.raises(DatasetError, match=r"no ravdess clip found .* expected files such as Actor_01/03-01-05"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="ravdess", data_dir=str(_folder(tmp_path)))
    with pytest.raises(DatasetError, match=r"dataset='crema-d' needs data_dir"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="crema-d")


def test_a_corpus_plugs_in_through_the_entry_point_without_touching_affectgym(tmp_path):
    import subprocess
    import sys
    import textwrap

    for label, f0_hz in (("calm", 120.0), ("tense", 260.0)):
        for take in range(3):
            _sine(tmp_path / "corpus" / f"{label}-{take}.wav", f0_hz + take)
    (tmp_path / "my_corpus_plugin.py").write_text(textwrap.dedent('''
        from pathlib import Path
        from affectgym.data.speech_datasets import SpeechDataset
        from affectgym.data.speech_sources import SpeechClip

        def load(data_dir, on_bad_clip):  # the label is the file name's prefix
            return [SpeechClip(id=f"c{i}", transcript="", label=path.stem.split("-")[0], audio_path=str(path))
                    for i, path in enumerate(sorted(Path(data_dir).glob("*.wav")))]

        MY_CORPUS = SpeechDataset("my-corpus", load, "labels from file-name prefixes")
    '''))
    dist_info = tmp_path / "my_corpus_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-corpus-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[affectgym.datasets]\nmy-corpus = my_corpus_plugin:MY_CORPUS\n")
    variables = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = ("import affectgym; env = affectgym.make('affectgym/SpeechEmotion-v0', dataset='my-corpus', "
            f"data_dir={str(tmp_path / 'corpus')!r}, split='all'); print(env.unwrapped.label_set, len(env.unwrapped.scenarios))")
    made = subprocess.run([sys.executable, "-c", code], env=variables, capture_output=True, text=True, timeout=300)
    assert made.stdout.strip() == "('calm', 'tense') 6", made.stderr
    listed = subprocess.run([sys.executable, "-m", "affectgym", "list", "--datasets"], env=variables,
                            capture_output=True, text=True, timeout=300)
    assert "my-corpus" in listed.stdout and "labels from file-name prefixes" in listed.stdout


def _iemocap(root):
    """IEMOCAP's layout: labels in EmoEvaluation, transcripts in transcriptions, wavs per dialog."""
    codes = {"F000": ("neu", 140.0), "F001": ("exc", 250.0), "M000": ("ang", 270.0), "M001": ("fru", 200.0),
             "M002": ("sad", 110.0), "F002": ("xxx", 180.0)}
    for n in range(1, 6):
        dialog = f"Ses0{n}F_impro01"
        session = root / f"Session{n}"
        labels, lines = ["% [START_TIME - END_TIME] TURN_NAME EMOTION [V, A, D]", ""], []
        for k, (turn, (code, f0_hz)) in enumerate(codes.items()):
            utterance = f"{dialog}_{turn}"
            _sine(session / "sentences" / "wav" / dialog / f"{utterance}.wav", f0_hz + n)
            labels += [f"[{k}.0000 - {k}.9000]\t{utterance}\t{code}\t[2.5000, 2.5000, 2.5000]", "C-E1:\tNeutral;\t()"]
            lines.append(f"{utterance} [00{k}.0000-00{k}.9000]: Line {k} of session {n}.")
        (session / "dialog" / "EmoEvaluation").mkdir(parents=True)
        (session / "dialog" / "EmoEvaluation" / f"{dialog}.txt").write_text("\n".join(labels) + "\n")
        (session / "dialog" / "transcriptions").mkdir(parents=True)
        (session / "dialog" / "transcriptions" / f"{dialog}.txt").write_text("\n".join(lines) + "\n")
    return root


def test_iemocap_loads_four_classes_with_excited_as_happy_or_every_label_and_holds_session_5_out(tmp_path):
    from affectgym.envs.checker import check_env

    _iemocap(tmp_path)
    make = lambda dataset, split: affectgym.make(  # noqa: E731
        "affectgym/SpeechEmotion-v0", dataset=dataset, data_dir=str(tmp_path), split=split).unwrapped
    four = make("iemocap", "all")
    assert four.label_set == ("angry", "happy", "neutral", "sad") and len(four.all_clips) == 20
    assert {c.transcript for c in four.all_clips if c.speaker == "Ses01F"} >= {"Line 0 of session 1."}
    assert make("iemocap-all", "all").label_set == ("angry", "excited", "frustrated", "neutral", "sad")
    train, held = make("iemocap", "train"), make("iemocap", "eval")
    assert {c.speaker for c in held.scenarios} == {"Ses05F", "Ses05M"} and len(train.scenarios) == 16
    assert not {c.speaker for c in held.scenarios} & {c.speaker for c in train.scenarios}
    check_env(affectgym.make("affectgym/SpeechEmotion-v0", dataset="iemocap", data_dir=str(tmp_path), split="all"))


def test_iemocap_folds_hold_each_session_out_once(tmp_path):
    from affectgym.data.speech_datasets import iemocap

    _iemocap(tmp_path)
    held_out = {}
    for fold in range(1, 6):
        env = affectgym.make("affectgym/SpeechEmotion-v0", dataset=iemocap(fold=fold), data_dir=str(tmp_path), split="eval")
        held_out[fold] = {c.speaker for c in env.unwrapped.scenarios}
    assert held_out == {k: {f"Ses0{k}F", f"Ses0{k}M"} for k in range(1, 6)}
    with pytest.raises(ValueError, match="fold must be an IEMOCAP session number 1-5, got 6"):
        iemocap(fold=6)


def test_msp_podcast_reads_its_consensus_labels_speakers_and_own_partitions(tmp_path):
    records = {}
    for k, (code, f0_hz) in enumerate([("A", 260.0), ("N", 130.0), ("X", 180.0), ("S", 110.0)] * 3):
        name = f"MSP-PODCAST_{k:04d}_0001.wav"
        _sine(tmp_path / "Audios" / name, f0_hz + k)
        records[name] = {"EmoClass": code, "EmoAct": 4.0, "SpkrID": str(100 + k % 3), "Gender": "Female",
                         "Split_Set": ("Train", "Development", "Test1")[k // 4]}
    (tmp_path / "Labels").mkdir()
    (tmp_path / "Labels" / "labels_consensus.json").write_text(json.dumps(records))
    every = affectgym.make("affectgym/SpeechEmotion-v0", dataset="msp-podcast", data_dir=str(tmp_path), split="all").unwrapped
    assert every.label_set == ("angry", "neutral", "sad") and len(every.all_clips) == 9, "X (no agreement) is left out"
    test = affectgym.make("affectgym/SpeechEmotion-v0", dataset="msp-podcast", data_dir=str(tmp_path), split="test1").unwrapped
    assert len(test.scenarios) == 3 and {c.speaker for c in test.scenarios} <= {"speaker100", "speaker101", "speaker102"}
    check_env(every)


def test_meld_reads_its_csvs_mp4_clips_and_the_dialogue_context(tmp_path):
    import subprocess

    import imageio_ffmpeg

    header = "Sr No.,Utterance,Speaker,Emotion,Sentiment,Dialogue_ID,Utterance_ID,Season,Episode,StartTime,EndTime\n"
    for split, (table, folder) in {"train": ("train_sent_emo.csv", "train_splits"),
                                   "dev": ("dev_sent_emo.csv", "dev_splits_complete")}.items():
        rows = []
        for dialogue in range(2):
            for utterance, (speaker, emotion, f0_hz) in enumerate([("Joey", "joy", 250.0), ("Ross", "sadness", 120.0)]):
                wav = tmp_path / "wav" / f"{split}{dialogue}{utterance}.wav"
                _sine(wav, f0_hz + dialogue, duration_s=0.8)
                (tmp_path / folder).mkdir(exist_ok=True)
                subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(wav), "-c:a", "aac",
                                str(tmp_path / folder / f"dia{dialogue}_utt{utterance}.mp4")], check=True)
                rows.append(f"{len(rows) + 1},{split} line {utterance} of {dialogue},{speaker},{emotion},neutral,{dialogue},"
                            f"{utterance},1,1,00:00:01,000,00:00:02,000\n")
        (tmp_path / table).write_text(header + "".join(rows))
    every = affectgym.make("affectgym/SpeechEmotion-v0", dataset="meld", data_dir=str(tmp_path), split="all").unwrapped
    assert every.label_set == ("joy", "sadness") and len(every.all_clips) == 8
    answer = next(c for c in every.all_clips if c.transcript == "train line 1 of 0")
    assert answer.split == "train" and answer.context == ("Joey: train line 0 of 0",) and answer.speaker == "Ross"
    dev = affectgym.make("affectgym/SpeechEmotion-v0", dataset="meld", data_dir=str(tmp_path), split="dev")
    dev.reset(seed=0)
    assert "Pitch: mean=" in dev.step(PROSODY)[0], "the audio is decoded from the mp4"
    report = check_env(every, raise_on_problem=False)
    # the leakage check runs on the corpus's own train and dev partitions (in this fixture the
    # speaker decides the emotion, so a text memoriser beats chance: the check says so)
    assert report.leakage.startswith("eval: text memoriser on 4 eval scenarios")
    assert [p for p in report.problems if not p.startswith("leakage (")] == []


def _emobox(root, folds=2):
    """An EmoBox checkout: data/cafe/ metadata over downloads/cafe/ audio, speaker k tested in fold k."""
    meta = root / "data" / "cafe"
    meta.mkdir(parents=True)
    (meta / "label_map.json").write_text(json.dumps({"c": "Angry", "t": "Sad", "n": "Neutral"}))
    rows = {}
    for speaker in range(1, folds + 1):
        for k, (code, f0_hz) in enumerate([("c", 260.0), ("t", 110.0), ("n", 150.0)]):
            wav = f"downloads/cafe/{speaker:02d}-{code}-{k}.wav"
            _sine(root / wav, f0_hz + speaker)
            rows.setdefault(speaker, []).append({"key": f"cafe-{speaker}-{k}", "dataset": "cafe", "wav": wav,
                                                 "type": "raw", "sample_rate": 16000, "emo": code, "channel": 1})
    for fold in range(1, folds + 1):
        (meta / f"fold_{fold}").mkdir()
        for split, speakers in (("train", [s for s in rows if s != fold]), ("test", [fold])):
            lines = [json.dumps(row) for s in speakers for row in rows[s]]
            (meta / f"fold_{fold}" / f"cafe_{split}_fold_{fold}.jsonl").write_text("\n".join(lines) + "\n")
    return meta


def test_emobox_metadata_gives_each_fold_its_own_train_and_test_clips_with_the_label_maps_names(tmp_path):
    from affectgym.data.speech_datasets import emobox

    meta = _emobox(tmp_path)
    test = affectgym.make("affectgym/SpeechEmotion-v0", dataset="emobox", data_dir=str(meta), split="test").unwrapped
    assert test.label_set == ("angry", "neutral", "sad")
    assert {os.path.basename(c.audio_path)[:2] for c in test.scenarios} == {"01"}, "fold 1 tests speaker 1"
    fold2 = affectgym.make("affectgym/SpeechEmotion-v0", dataset=emobox(fold=2), data_dir=str(meta), split="train")
    assert {os.path.basename(c.audio_path)[:2] for c in fold2.unwrapped.scenarios} == {"01"}
    fold2.reset(seed=0)
    assert "Pitch: mean=" in fold2.step(PROSODY)[0]
    check_env(affectgym.make("affectgym/SpeechEmotion-v0", dataset="emobox", data_dir=str(meta), split="all"))


def test_emobox_reads_audio_from_another_root_and_counts_the_rows_it_leaves_out(tmp_path, caplog):
    from affectgym.data.speech_datasets import emobox

    meta = _emobox(tmp_path / "checkout", folds=1)
    (tmp_path / "checkout" / "downloads").rename(tmp_path / "audio")
    (tmp_path / "audio" / "downloads").mkdir()
    (tmp_path / "audio" / "cafe").rename(tmp_path / "audio" / "downloads" / "cafe")
    with pytest.raises(DatasetError, match="pass the folder the rows' 'wav' paths are relative to as audio_root"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="emobox", data_dir=str(meta))
    table = meta / "fold_1" / "cafe_test_fold_1.jsonl"
    table.write_text(table.read_text() + json.dumps({"wav": "downloads/cafe/gone.wav", "emo": "c"}) + "\n"
                     + json.dumps({"wav": "downloads/cafe/01-c-0.wav", "emo": "c", "start_time": 0.1, "end_time": 0.3}) + "\n")
    env = affectgym.make("affectgym/SpeechEmotion-v0", dataset=emobox(audio_root=tmp_path / "audio"),
                         data_dir=str(meta), split="all").unwrapped
    assert len(env.all_clips) == 3
    assert "2 row(s) left out (1 with no audio file" in caplog.text and "1 segments" in caplog.text


@pytest.mark.parametrize("change, problem", [
    (lambda meta: (meta / "label_map.json").unlink(), "no label_map.json"),
    (lambda meta: (meta / "fold_1" / "cafe_test_fold_1.jsonl").write_text('{"wav": "x.wav", "emo": "z"}\n'),
     "emo 'z' is not in label_map.json"),
    (lambda meta: (meta / "fold_1" / "cafe_test_fold_1.jsonl").write_text("not json\n"), "cafe_test_fold_1.jsonl:1: not JSON"),
])
def test_bad_emobox_metadata_is_refused_naming_the_file_and_what_is_expected(tmp_path, change, problem):
    meta = _emobox(tmp_path, folds=1)
    change(meta)
    with pytest.raises(DatasetError, match=problem):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset="emobox", data_dir=str(meta))


def test_an_emobox_fold_that_does_not_exist_lists_the_folds_found(tmp_path):
    from affectgym.data.speech_datasets import emobox

    meta = _emobox(tmp_path, folds=1)
    with pytest.raises(DatasetError, match="folds found: fold_1"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset=emobox(fold=4), data_dir=str(meta))
    with pytest.raises(ValueError, match="fold must be an EmoBox fold number >= 1, got 0"):
        emobox(fold=0)


def test_dataset_must_be_a_name_a_speech_dataset_or_a_loaded_one():
    with pytest.raises(ValueError, match="dataset must be a registered name .*, a SpeechDataset or a LoadedSpeechDataset, got int"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset=3)


# --------------------------------------------------------------------------- a dataset loaded once, shared
def test_envs_given_a_loaded_dataset_read_no_file_again_and_share_its_clips_and_norms(tmp_path, caplog):
    from affectgym.data.speech_datasets import load_speech_dataset

    loaded = load_speech_dataset("folder", _folder(tmp_path))
    first = affectgym.make("affectgym/SpeechEmotion-v0", dataset=loaded, split="all")
    norms = first.unwrapped.corpus_norms()
    damaged = first.unwrapped.norm_clips()[0]
    with open(damaged.audio_path, "wb") as audio:
        audio.write(b"not audio any more")
    with caplog.at_level("WARNING"):
        later = affectgym.make("affectgym/SpeechEmotion-v0", dataset=loaded, split="all")
    assert "skipping" not in caplog.text, "the clips were checked once, when loaded"
    assert later.unwrapped.all_clips == first.unwrapped.all_clips == list(loaded.clips) and len(loaded.clips) == 4
    assert later.unwrapped.corpus_norms() is norms
    later.reset(options={"scenario_id": damaged.id})
    observation, _, terminated, _, _ = later.step(PROSODY)
    assert observation.startswith("No audio for this clip") and not terminated


def test_a_loaded_dataset_is_never_copied_and_a_pickled_one_carries_its_clips_and_norms(tmp_path):
    import copy
    import pickle

    first = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(_folder(tmp_path)), split="all").unwrapped
    loaded, norms = first.loaded_dataset, first.corpus_norms()
    assert copy.copy(loaded) is loaded and copy.deepcopy(loaded) is loaded
    unpickled = pickle.loads(pickle.dumps(loaded))
    with open(first.norm_clips()[0].audio_path, "wb") as audio:  # refitted now, the norms would change
        audio.write(b"not audio any more")
    worker = affectgym.make("affectgym/SpeechEmotion-v0", dataset=unpickled, split="all").unwrapped
    assert unpickled.clips == loaded.clips and worker.data_dir == str(tmp_path)
    assert worker.corpus_norms() == norms and worker.corpus_norms().name == norms.name


def test_a_loaded_dataset_with_another_data_dir_or_none_is_refused_naming_the_folder(tmp_path):
    from affectgym.data.speech_datasets import load_speech_dataset

    loaded = load_speech_dataset("folder", _folder(tmp_path / "a"))
    with pytest.raises(ValueError, match=r"data_dir='.*/b' differs from the folder the loaded dataset was read from \('.*/a'\)"):
        affectgym.make("affectgym/SpeechEmotion-v0", dataset=loaded, data_dir=str(tmp_path / "b"))
    assert affectgym.make("affectgym/SpeechEmotion-v0", dataset=loaded, data_dir=str(tmp_path / "a")).unwrapped.loaded_dataset is loaded
    with pytest.raises(DatasetError, match=r"dataset='folder' needs data_dir=<DIR/<label>/<clip>"):
        load_speech_dataset("folder")
    with pytest.raises(ValueError, match="on_bad_clip must be one of skip, error, got 'keep'"):
        load_speech_dataset("folder", tmp_path / "a", on_bad_clip="keep")


def test_a_clip_too_long_to_measure_is_named_when_the_env_is_made_not_served_as_no_audio(tmp_path, caplog):
    from affectgym.features.audio import DEFAULT_MAX_DURATION_S

    _folder(tmp_path)
    rate_hz = 1000
    soundfile.write(str(tmp_path / "calm" / "lecture.wav"), np.zeros(int((DEFAULT_MAX_DURATION_S + 1) * rate_hz)), rate_hz)
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all").unwrapped
    assert len(env.all_clips) == 4 and "lecture.wav: too long: 601.0 s of audio, at most 600 s are measured" in caplog.text
    with pytest.raises(DatasetError, match="lecture.wav: too long"):
        affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), on_bad_clip="error")


# --------------------------------------------------------------------------- splits as objects
def test_leave_one_speaker_out_holds_that_speaker_out_whole_and_check_env_tests_its_two_sides(tmp_path):
    from affectgym.data.speech_splits import LeaveOneGroupOut

    _ravdess(tmp_path)
    split = LeaveOneGroupOut("speaker", "actor03")
    held = affectgym.make("affectgym/SpeechEmotion-v0", dataset="ravdess", data_dir=str(tmp_path), split=split)
    base = held.unwrapped
    assert {c.speaker for c in base.scenarios} == {"actor03"} and len(base.scenarios) == 6
    assert base.split == "speaker=actor03/eval" and held.reset(seed=0)[1]["split"] == "speaker=actor03/eval"
    train = affectgym.make("affectgym/SpeechEmotion-v0", dataset="ravdess", data_dir=str(tmp_path),
                           split=split.with_part("train")).unwrapped
    assert "actor03" not in {c.speaker for c in train.scenarios} and len(train.scenarios) == 24
    assert base.split_parts() == (split.with_part("train"), split)
    report = check_env(held, max_scenarios=4, fuzz_actions=100, raise_on_problem=False)
    eval_result, validation_result = report.leakage.split(" | ")
    assert eval_result.endswith(": OK"), report.leakage
    assert validation_result.startswith("validation: none (") and "validation_held_out" in validation_result


def test_a_split_object_that_cannot_apply_names_what_the_dataset_has(tmp_path):
    from affectgym.data.speech_splits import LeaveOneGroupOut, Partition

    _ravdess(tmp_path)
    kwargs = {"dataset": "ravdess", "data_dir": str(tmp_path)}
    with pytest.raises(DatasetError, match=r"no clip has speaker 'actor99'; the dataset's are actor01, actor02"):
        affectgym.make("affectgym/SpeechEmotion-v0", split=LeaveOneGroupOut("speaker", "actor99"), **kwargs)
    with pytest.raises(DatasetError, match=r"needs every clip's show, but 30 of 30 clips name none"):
        affectgym.make("affectgym/SpeechEmotion-v0", split=LeaveOneGroupOut("show", "FRIENDS"), **kwargs)
    with pytest.raises(DatasetError, match="is a partition of the dataset, but 30 of 30 clips have none"):
        affectgym.make("affectgym/SpeechEmotion-v0", split=Partition("test"), **kwargs)
    with pytest.raises(ValueError, match="field must be one of speaker, show, group, got 'actor'"):
        LeaveOneGroupOut("actor", "01")
    with pytest.raises(ValueError, match="part must be one of train, validation, eval, got 'dev'"):
        LeaveOneGroupOut("speaker", "actor01", part="dev")


def test_a_manifests_own_partitions_are_partition_objects_whose_sides_check_env_remakes(tmp_path):
    from affectgym.data.speech_splits import Partition

    rows = _manifest_corpus(tmp_path)
    manifest = tmp_path / "corpus.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split="eval").unwrapped
    assert env.clip_split == Partition("eval", "train") and env.split_parts() == (Partition("eval", "train", part="train"),
                                                                                   Partition("eval", "train"))
    train = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(manifest), split="train").unwrapped
    assert train.clip_split.with_part("eval") == env.clip_split  # the train side's other side is the eval partition


def test_a_mustard_fold_is_a_split_object_and_a_fold_string_is_refused_naming_the_objects(tmp_path):
    root = _mustard(tmp_path)
    env = SarcasmEnv(dataset="mustard", data_dir=str(root), split=mustard_fold(1, part="train"))
    assert env.scenario_ids == ["1_0", "1_1"] and env.split == "fold-1/train"
    with pytest.raises(ValueError, match=r"unknown split 'fold-1/train'; .*mustard_fold"):
        SarcasmEnv(dataset="mustard", data_dir=str(root), split="fold-1/train")
    with pytest.raises(ValueError, match=r"split 'fold-2': fold must be 1..1, got 2"):
        SarcasmEnv(dataset="mustard", data_dir=str(root), split=mustard_fold(2))
