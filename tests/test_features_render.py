"""Specification of the LLM-readable prosody text (golden files in tests/golden/features).

Regenerate the golden files with AFFECTGYM_UPDATE_GOLDEN=1 after an intended change.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from synthetic_audio import synthetic_voice

from affectgym.features.audio import load_audio
from affectgym.features.prosody import Prosody, extract_prosody
from affectgym.features.render import ProsodyNorms, render_contour, render_prosody

GOLDEN = Path(__file__).parent / "golden" / "features"
UPDATE = os.environ.get("AFFECTGYM_UPDATE_GOLDEN") == "1"


def _fixture() -> Prosody:
    path = GOLDEN / "prosody_synthetic_voice.json"
    if UPDATE:
        voice = synthetic_voice(4.0, seed=7)
        p = extract_prosody(load_audio(voice.samples, input_sample_rate_hz=voice.sample_rate_hz))
        path.write_text(json.dumps(p.to_dict(), indent=1) + "\n", encoding="utf-8")
    return Prosody.from_dict(json.loads(path.read_text(encoding="utf-8")))


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")


def test_block_with_default_norms_matches_golden():
    _check_golden("block_default_norms.txt", render_prosody(_fixture()))


def test_contour_matches_golden():
    _check_golden("contour_30.txt", render_contour(_fixture(), points=30))


def test_block_without_voice_quality_matches_golden():
    librosa_like = dataclasses.replace(
        _fixture(), backend="librosa", jitter_local_pct=None, shimmer_local_pct=None, hnr_db=None
    )
    _check_golden("block_librosa_like.txt", render_prosody(librosa_like))


def test_speaker_norms_are_named_and_change_bands():
    base = _fixture()
    higher = dataclasses.replace(base, f0_mean_st=base.f0_mean_st + 3.0)
    lower = dataclasses.replace(base, f0_mean_st=base.f0_mean_st - 3.0)
    norms = ProsodyNorms.from_corpus([base, higher, lower], name="speaker Maya (3 utterances)")
    text = render_prosody(higher, norms)
    assert "bands vs speaker Maya (3 utterances)" in text
    assert "[NORMAL]" in text.splitlines()[2] or "[HIGH]" in text.splitlines()[2]
    assert norms.band("f0_mean_st", base.f0_mean_st + 10.0) == " [VERY HIGH]"
    with pytest.raises(ValueError, match="at least 2"):
        ProsodyNorms.from_corpus([base])


def test_contour_shows_unvoiced_gaps_and_has_requested_width():
    line = render_contour(_fixture(), points=40).splitlines()[1]
    assert len(line) == 40
    assert "·" in line and set(line) <= set("▁▂▃▄▅▆▇█·")


def test_rendering_is_byte_stable_across_extractions():
    voice = synthetic_voice(2.0, seed=1)
    first = extract_prosody(load_audio(voice.samples, input_sample_rate_hz=16000))
    second = extract_prosody(load_audio(voice.samples, input_sample_rate_hz=16000))
    assert render_prosody(first) == render_prosody(second)
    assert render_contour(first) == render_contour(second)


def test_unvoiced_contour_is_all_gaps():
    silent = dataclasses.replace(
        _fixture(), contour_f0_hz=tuple(0.0 for _ in _fixture().contour_f0_hz)
    )
    assert render_contour(silent, points=10).splitlines()[1] == "·" * 10
