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


def test_sarcasm_set_loads_offline_with_absolute_existing_audio(sarcasm):
    assert len(sarcasm) >= 120
    for record in sarcasm:
        path = Path(record["audio_path"])
        assert path.is_absolute() and path.is_file()
        assert 1 <= len(record["context"]) <= 3
    assert len({r["voice"] for r in sarcasm}) >= 4


def test_every_pair_has_one_sincere_and_one_sarcastic_rendering(sarcasm):
    pairs = defaultdict(list)
    for record in sarcasm:
        pairs[record["pair_id"]].append(record)
    assert len(pairs) >= 60
    for members in pairs.values():
        assert sorted(r["label"] for r in members) == ["sarcastic", "sincere"]
        assert len({r["voice"] for r in members}) == 1
        if members[0]["pivot"]:
            assert members[0]["text"] == members[1]["text"]
    pivot_pairs = sum(members[0]["pivot"] for members in pairs.values())
    assert pivot_pairs > len(pairs) / 2 and pivot_pairs < len(pairs)


def test_ids_and_file_names_do_not_reveal_the_label(sarcasm):
    for record in sarcasm:
        assert record["label"] not in record["id"] and record["label"] not in record["audio"]
    by_parity = Counter((int(r["id"][2:]) % 2, r["label"]) for r in sarcasm)
    assert min(by_parity.values()) > len(sarcasm) / 8  # order is shuffled, not alternating


def test_emotion_set_covers_five_labels_and_two_voices():
    emotion = load_speech_manifest("emotion")
    assert {r["label"] for r in emotion} == {"angry", "sad", "happy", "fearful", "neutral"}
    assert len({r["voice"] for r in emotion}) >= 2
    assert len({r["text"] for r in emotion}) >= 8


def test_corpus_stays_under_ten_megabytes():
    total = sum(p.stat().st_size for p in (speech_root() / "audio").iterdir())
    assert total <= 10_000_000


def test_sarcastic_renderings_have_wider_f0_range_in_nine_of_ten_pairs(sarcasm):
    ranges = defaultdict(dict)
    for record in sarcasm:
        prosody = extract_prosody(load_audio(record["audio_path"]))
        ranges[record["pair_id"]][record["label"]] = prosody.f0_range_st
    wider = sum(r["sarcastic"] > r["sincere"] for r in ranges.values())
    assert wider >= 0.9 * len(ranges)


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
    with pytest.raises(SpeechManifestError, match="not valid JSON"):
        load_speech_manifest("sarcasm", root=tmp_path)
    with pytest.raises(ValueError, match="accepted: sarcasm, emotion"):
        load_speech_manifest("music")
