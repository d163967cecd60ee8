"""A hostile manifest (CSV or JSONL) is named row by row and never read whole.

One clip listed twice under two spellings of its path is refused, naming both rows; two files
with the same bytes and different labels load with a warning naming both rows; an over-long
field is refused naming the file, the line, the column and the limit, and the file is read a
line at a time; a label of the wrong JSON type is named as such, with what is accepted.
"""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest
import soundfile
from synthetic_audio import tone

from affectgym.data.speech_sources import (
    MAX_MANIFEST_FIELD_CHARS,
    MAX_MANIFEST_LINE_CHARS,
    DatasetError,
    load_manifest,
)

RATE_HZ = 16000


def write_clip(path, frequency_hz: float) -> None:
    """A 0.3 s tone as FLAC (its bytes depend on the frequency only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), tone(frequency_hz, duration_s=0.3, sample_rate_hz=RATE_HZ), RATE_HZ, format="FLAC")


def csv_manifest(tmp_path, rows: list[str], header: str = "path,label") -> str:
    (tmp_path / "corpus.csv").write_text(header + "\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return str(tmp_path / "corpus.csv")


# ----------------------------------------------------------------------------- one clip, two rows
@pytest.mark.parametrize("second", ["clips/../clips/a.flac", "./clips/a.flac", "clips//a.flac", "link.flac", "ABSOLUTE"])
def test_one_audio_file_listed_under_two_spellings_is_refused_naming_both_rows(tmp_path, second):
    write_clip(tmp_path / "clips" / "a.flac", 220.0)
    write_clip(tmp_path / "clips" / "b.flac", 330.0)
    os.symlink(tmp_path / "clips" / "a.flac", tmp_path / "link.flac")
    second = str(tmp_path / "clips" / "a.flac") if second == "ABSOLUTE" else second
    manifest = csv_manifest(tmp_path, ["clips/a.flac,angry", "clips/b.flac,calm", f"{second},sad"])
    with pytest.raises(DatasetError) as refused:
        load_manifest(manifest)
    message = str(refused.value)
    assert message.startswith(f"{manifest}:4: ") and f"{second!r}" in message
    assert "line 2 ('clips/a.flac')" in message and "the same audio file" in message


def test_byte_identical_clips_with_different_labels_load_with_a_warning_naming_both_rows(tmp_path, caplog):
    write_clip(tmp_path / "clips" / "a.flac", 220.0)
    (tmp_path / "clips" / "copy.flac").write_bytes((tmp_path / "clips" / "a.flac").read_bytes())
    write_clip(tmp_path / "clips" / "b.flac", 330.0)
    (tmp_path / "clips" / "b-again.flac").write_bytes((tmp_path / "clips" / "b.flac").read_bytes())
    manifest = csv_manifest(tmp_path, ["clips/a.flac,angry", "clips/b.flac,calm", "clips/copy.flac,sad",
                                       "clips/b-again.flac,calm"])  # fmt: skip
    with caplog.at_level("WARNING", logger="affectgym.data.speech_sources"):
        clips = load_manifest(manifest)
    assert [c.label for c in clips] == ["angry", "calm", "sad", "calm"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert manifest in warnings[0] and "1 clip(s)" in warnings[0]
    assert "line 4 ('clips/copy.flac', 'sad') has the same bytes as line 2 ('clips/a.flac', 'angry')" in warnings[0]
    assert "b-again" not in warnings[0]  # a copy with the same label is only a copy


# ----------------------------------------------------------------------------- over-long fields, streaming
def test_a_csv_field_over_the_limit_is_refused_naming_file_line_column_and_limit(tmp_path):
    write_clip(tmp_path / "clips" / "a.flac", 220.0)
    write_clip(tmp_path / "clips" / "b.flac", 330.0)
    long_line = "x" * (MAX_MANIFEST_FIELD_CHARS + 1)
    manifest = csv_manifest(tmp_path, ["clips/a.flac,angry,fine,anna", f'clips/b.flac,calm,"{long_line}",ben'],
                            header="path,label,transcript,speaker")  # fmt: skip
    with pytest.raises(DatasetError) as refused:
        load_manifest(manifest)
    assert str(refused.value).startswith(f"{manifest}:3: the 'transcript' field is longer than {MAX_MANIFEST_FIELD_CHARS} characters")
    assert "field larger than field limit" not in str(refused.value)


def test_a_csv_field_at_the_limit_loads(tmp_path):
    write_clip(tmp_path / "clips" / "a.flac", 220.0)
    manifest = csv_manifest(tmp_path, [f"clips/a.flac,angry,{'x' * MAX_MANIFEST_FIELD_CHARS}"], header="path,label,transcript")
    assert len(load_manifest(manifest)[0].transcript) == MAX_MANIFEST_FIELD_CHARS


def test_a_multi_line_quoted_csv_field_is_named_by_the_line_its_row_starts_on(tmp_path):
    write_clip(tmp_path / "clips" / "a.flac", 220.0)
    write_clip(tmp_path / "clips" / "b.flac", 330.0)
    lines = "\n".join(["y" * 1000] * (MAX_MANIFEST_FIELD_CHARS // 1000 + 1))
    manifest = csv_manifest(tmp_path, ['clips/a.flac,angry,"two\nlines"', f'clips/b.flac,"{lines}",x'],
                            header="path,speaker,label")  # fmt: skip
    with pytest.raises(DatasetError, match=rf"corpus\.csv:4: the 'speaker' field is longer than {MAX_MANIFEST_FIELD_CHARS}"):
        load_manifest(manifest)


def test_a_jsonl_field_over_the_limit_is_refused_naming_its_column(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"path": "a.flac", "label": "angry", "transcript": "x" * (MAX_MANIFEST_FIELD_CHARS + 1)}) + "\n")
    with pytest.raises(DatasetError, match=rf"corpus\.jsonl:1: the 'transcript' field is longer than {MAX_MANIFEST_FIELD_CHARS} characters"):
        load_manifest(tmp_path / "corpus.jsonl")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_huge_manifest_line_is_refused_without_reading_the_file_whole(tmp_path, suffix):
    huge = 16 * MAX_MANIFEST_LINE_CHARS  # 16 Mi characters on one line
    manifest = tmp_path / f"corpus{suffix}"
    with manifest.open("w") as handle:
        handle.write("path,label,transcript\n" if suffix == ".csv" else "")
        handle.write('a.flac,angry,"' if suffix == ".csv" else '{"path": "a.flac", "label": "angry", "transcript": "')
        for _ in range(huge // (1 << 20)):
            handle.write("z" * (1 << 20))
        handle.write('"\n' if suffix == ".csv" else '"}\n')
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as refused:
            load_manifest(manifest)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    where = f"{manifest}:2: the 'transcript' field" if suffix == ".csv" else f"{manifest}:1: the line is longer than"
    assert str(refused.value).startswith(where)
    assert peak_bytes < huge // 4  # a bounded share of it, never the whole file


# ----------------------------------------------------------------------------- JSON types
@pytest.mark.parametrize(
    ("label", "named"),
    [("NaN", "the number nan"), ("3", "the number 3"), ('["angry"]', "an array"), ('{"x": 1}', "an object"), ("true", "a boolean")],
)
def test_a_jsonl_label_of_the_wrong_type_is_named_with_what_is_accepted(tmp_path, label, named):
    (tmp_path / "corpus.jsonl").write_text('{"path": "a.flac", "label": ' + label + "}\n")
    with pytest.raises(DatasetError) as refused:
        load_manifest(tmp_path / "corpus.jsonl")
    assert str(refused.value) == (
        f"{tmp_path / 'corpus.jsonl'}:1: label is {named}, not text; every manifest column holds a JSON string, "
        'e.g. {"path": "clips/a.wav", "label": "angry"}'
    )


def test_a_jsonl_row_without_a_label_still_says_no_label(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"path": "a.flac"}\n{"path": "b.flac", "label": null}\n')
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:1: no label; every row needs a path and a label"):
        load_manifest(tmp_path / "corpus.jsonl")
