"""Specification of the embedded espeak-ng speech corpus and its loader."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from affectgym.data.speech_corpus import SpeechManifestError, load_speech_manifest, speech_root
from affectgym.features.audio import load_audio
from affectgym.features.prosody import extract_prosody


@pytest.fixture(scope="module")
def sarcasm():
    return load_speech_manifest("sarcasm")


@pytest.fixture(scope="module")
def sarcasm_v1():
    return load_speech_manifest("sarcasm", version="v1")


def _pairs(records):
    pairs = defaultdict(list)
    for record in records:
        pairs[record["pair_id"]].append(record)
    return pairs


def test_sarcasm_set_loads_offline_with_absolute_existing_audio(sarcasm):
    assert len(sarcasm) >= 120
    for record in sarcasm:
        path = Path(record["audio_path"])
        assert path.is_absolute() and path.is_file()
        assert 1 <= len(record["context"]) <= 3


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_pair_has_one_sincere_and_one_sarcastic_rendering_in_one_voice(version):
    pairs = _pairs(load_speech_manifest("sarcasm", version=version))
    assert len(pairs) >= 60
    for members in pairs.values():
        assert sorted(r["label"] for r in members) == ["sarcastic", "sincere"]
        assert len({r["voice"] for r in members}) == 1
        if members[0]["pivot"]:
            assert members[0]["text"] == members[1]["text"]


def test_v2_says_every_line_both_ways_so_the_words_never_tell(sarcasm):
    pairs = _pairs(sarcasm)
    assert len(pairs) >= 60 and all(members[0]["pivot"] for members in pairs.values())
    assert len({r["text"] for r in sarcasm}) == len(pairs)


def test_v2_has_eight_voices_each_speaking_both_labels(sarcasm):
    by_speaker = defaultdict(Counter)
    for record in sarcasm:
        by_speaker[record["speaker"]][record["label"]] += 1
    assert len(by_speaker) >= 8 and len({r["voice"] for r in sarcasm}) >= 8
    assert all(counts["sarcastic"] == counts["sincere"] > 0 for counts in by_speaker.values())


def test_v2_speaks_each_label_in_several_deliveries_drawn_clip_by_clip(sarcasm):
    deliveries = defaultdict(set)
    for record in sarcasm:
        deliveries[record["label"]].add(record["delivery"]["delivery"])
    assert all(len(names) >= 2 for names in deliveries.values())
    assert not deliveries["sarcastic"] & deliveries["sincere"]
    assert len({tuple(r["delivery"]["cues"].values()) for r in sarcasm}) == len(sarcasm)  # every clip its own draw


def test_ids_and_file_names_do_not_reveal_the_label(sarcasm):
    for record in sarcasm:
        assert record["label"] not in record["id"] and record["label"] not in record["audio"]
    by_parity = Counter((int(r["id"][2:]) % 2, r["label"]) for r in sarcasm)
    assert min(by_parity.values()) > len(sarcasm) / 8  # order is shuffled, not alternating


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_emotion_set_covers_five_labels_and_several_voices(version):
    emotion = load_speech_manifest("emotion", version=version)
    assert {r["label"] for r in emotion} == {"angry", "sad", "happy", "fearful", "neutral"}
    assert len({r["voice"] for r in emotion}) >= 2
    assert len({r["text"] for r in emotion}) >= 8


def test_v2_emotions_come_in_several_deliveries_and_eight_voices():
    emotion = load_speech_manifest("emotion")
    deliveries = defaultdict(set)
    for record in emotion:
        deliveries[record["label"]].add(record["delivery"]["delivery"])
    assert all(len(names) >= 2 for names in deliveries.values())
    assert len({r["voice"] for r in emotion}) >= 8 and len({r["text"] for r in emotion}) >= 24


def test_committed_audio_stays_under_twenty_megabytes():
    sizes = {v: sum(p.stat().st_size for p in (speech_root(v) / "audio").iterdir()) for v in ("v1", "v2")}
    assert all(size <= 10_000_000 for size in sizes.values()) and sum(sizes.values()) <= 20_000_000


def _f0_range_by_pair(records):
    ranges = defaultdict(dict)
    for record in records:
        ranges[record["pair_id"]][record["label"]] = extract_prosody(load_audio(record["audio_path"])).f0_range_st
    return [r["sarcastic"] > r["sincere"] for r in ranges.values()]


def test_v1_sarcastic_renderings_have_the_wider_f0_range_in_nine_of_ten_pairs(sarcasm_v1):
    wider = _f0_range_by_pair(sarcasm_v1)
    assert sum(wider) >= 0.9 * len(wider)


def test_v2_pitch_range_does_not_tell_the_pair_apart(sarcasm):
    wider = _f0_range_by_pair(sarcasm)
    assert 0.3 * len(wider) <= sum(wider) <= 0.8 * len(wider)


def test_unknown_corpus_version_names_the_accepted_ones():
    with pytest.raises(ValueError, match="v1, v2"):
        speech_root("v3")


def _write_manifest(tmp_path, records):
    (tmp_path / "audio").mkdir(exist_ok=True)
    (tmp_path / "audio" / "x0001.flac").write_bytes(b"fLaC")
    (tmp_path / "manifest.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8"
    )
    return tmp_path


def _good_record(**overrides):
    record = {
        "id": "x0001", "kind": "sarcasm", "audio": "audio/x0001.flac", "duration_s": 1.0,
        "text": "Oh great.", "context": ["Dana: The meeting moved."], "speaker": "Sam",
        "voice": "en-us", "label": "sincere", "pivot": True, "pair_id": "p001", "delivery": {},
    }  # fmt: skip
    record.update(overrides)
    return record


def test_local_root_with_valid_manifest_loads(tmp_path):
    records = load_speech_manifest("sarcasm", root=_write_manifest(tmp_path, [_good_record()]))
    assert records[0]["audio_path"] == str((tmp_path / "audio" / "x0001.flac").resolve())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"label": "ironic"}, "label 'ironic'"),
        ({"pivot": "yes"}, "field 'pivot' is str"),
        ({"audio": "audio/missing.flac"}, "does not exist"),
        ({"audio": "../../etc/passwd"}, "leaves"),
        ({"context": ["no speaker here"]}, "SPEAKER: text"),
        ({"id": "x0001_sincere"}, "contains the label"),
    ],
)
def test_malformed_manifest_is_rejected_with_line_and_field(tmp_path, overrides, message):
    root = _write_manifest(tmp_path, [_good_record(**overrides)])
    with pytest.raises(SpeechManifestError, match=message) as info:
        load_speech_manifest("sarcasm", root=root)
    assert "manifest.jsonl:1" in str(info.value)


def test_missing_field_and_bad_json_are_named(tmp_path):
    record = _good_record()
    del record["speaker"]
    with pytest.raises(SpeechManifestError, match="missing field 'speaker'"):
        load_speech_manifest("sarcasm", root=_write_manifest(tmp_path, [record]))
    (tmp_path / "manifest.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(SpeechManifestError, match=r"manifest.jsonl:1: not JSON \("):
        load_speech_manifest("sarcasm", root=tmp_path)
    with pytest.raises(ValueError, match="accepted: sarcasm, emotion"):
        load_speech_manifest("music")
