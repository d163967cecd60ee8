"""Specification of affectgym.features.prosody on signals with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synthetic_audio import click_train, syllable_train, synthetic_voice, tone

from affectgym.features.audio import load_audio
from affectgym.features.prosody import Prosody, extract_prosody, hz_to_st

SR = 16000


def _audio(samples):
    return load_audio(samples, input_sample_rate_hz=SR)


def test_pure_tone_f0_is_its_frequency():
    p = extract_prosody(_audio(tone(200.0, 1.0)))
    assert p.f0_median_hz == pytest.approx(200.0, abs=0.5)
    assert p.f0_median_st == pytest.approx(hz_to_st(200.0), abs=0.01)
    assert p.f0_sd_st < 0.05
    assert p.voiced_fraction > 0.9


def test_silence_between_tones_is_one_pause_of_about_its_length():
    samples = np.concatenate([tone(200.0, 1.0), np.zeros(SR // 2, np.float32), tone(200.0, 1.0)])
    p = extract_prosody(_audio(samples))
    assert p.pause_count == 1
    start_s, end_s = p.pause_intervals_s[0]
    assert start_s == pytest.approx(1.0, abs=0.06) and end_s == pytest.approx(1.5, abs=0.06)
    assert p.pause_longest_s == pytest.approx(0.5, abs=0.1)
    assert p.leading_silence_s < 0.05 and p.trailing_silence_s < 0.05


def test_leading_and_trailing_silence_are_not_pauses():
    samples = np.concatenate(
        [np.zeros(SR // 2, np.float32), tone(200.0, 1.0), np.zeros(SR, np.float32)]
    )
    p = extract_prosody(_audio(samples))
    assert p.pause_count == 0
    assert p.leading_silence_s == pytest.approx(0.5, abs=0.06)
    assert p.trailing_silence_s == pytest.approx(1.0, abs=0.06)


def test_click_train_gives_its_rate_as_f0_with_negligible_jitter():
    p = extract_prosody(_audio(click_train(125.0, 2.0)))
    assert p.f0_median_hz == pytest.approx(125.0, abs=1.0)
    assert p.jitter_local_pct is not None and p.jitter_local_pct < 1.0


@pytest.mark.parametrize("rate", [3.0, 5.0])
def test_syllable_train_rate_is_counted(rate):
    p = extract_prosody(_audio(syllable_train(rate, 4.0)))
    assert p.speaking_rate_syl_per_s == pytest.approx(rate, abs=0.5)


def test_synthetic_voice_pitch_tracks_known_f0():
    voice = synthetic_voice(4.0, seed=3)
    p = extract_prosody(_audio(voice.samples))
    times = np.array(p.contour_times_s)
    f0 = np.array(p.contour_f0_hz)
    truth = voice.true_f0_at(times)
    scored = ~np.isnan(truth)
    voiced_truth = scored & (truth > 0)
    both = voiced_truth & (f0 > 0)
    assert both.sum() / voiced_truth.sum() > 0.95
    assert np.mean(np.abs(hz_to_st(f0[both]) - hz_to_st(truth[both]))) < 0.1
    assert p.pause_count >= 2
    assert p.hnr_db is not None and p.hnr_db > 15


def test_silence_has_no_pitch_but_is_valid():
    p = extract_prosody(_audio(np.zeros(SR, np.float32)))
    assert p.f0_mean_hz is None and p.voiced_fraction == 0.0 and p.syllable_count == 0


def test_to_dict_round_trips_through_json():
    p = extract_prosody(_audio(synthetic_voice(2.0).samples))
    again = Prosody.from_dict(json.loads(json.dumps(p.to_dict())))
    assert again == p
    with pytest.raises(ValueError, match="unknown keys"):
        Prosody.from_dict({**p.to_dict(), "bogus_hz": 1.0})


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="accepted: praat, librosa"):
        extract_prosody(_audio(tone(200.0, 0.2)), backend="opensmile")


@pytest.mark.slow
def test_librosa_backend_agrees_on_a_tone_and_leaves_voice_quality_empty():
    p = extract_prosody(_audio(syllable_train(4.0, 3.0, f0_hz=150.0)), backend="librosa")
    assert p.backend == "librosa"
    assert p.f0_median_hz == pytest.approx(150.0, abs=3.0)
    assert p.jitter_local_pct is None and p.shimmer_local_pct is None and p.hnr_db is None
    assert p.speaking_rate_syl_per_s == pytest.approx(4.0, abs=0.7)


def _written(tmp_path, name, samples):
    import soundfile

    path = tmp_path / name
    soundfile.write(str(path), samples, SR, subtype="PCM_16")
    return path


@pytest.mark.parametrize("backend", ["praat", "librosa"])
@pytest.mark.parametrize(
    "make",
    [
        lambda n: np.zeros(n),
        # one-LSB dither of 16-bit silence; with this seed pyin used to find 77 Hz in 11% of frames
        lambda n: np.random.default_rng(10).integers(-1, 2, n) / 32768,
        lambda n: 1e-5 * np.sin(2 * np.pi * 50.0 * np.arange(n) / SR),  # mains hum at -100 dBFS
    ],
    ids=["zeros", "dither", "inaudible-hum"],
)
def test_digital_silence_has_no_pitch_in_either_backend(tmp_path, make, backend):
    p = extract_prosody(_written(tmp_path, "silence.wav", make(SR)), backend=backend)
    assert p.voiced_fraction == 0.0 and p.f0_median_hz is None
    assert not any(p.contour_f0_hz)


@pytest.mark.parametrize("backend", ["praat", "librosa"])
def test_clip_shorter_than_the_analysis_window_is_refused_naming_file_and_minimum(tmp_path, backend):
    from affectgym.features.audio import AudioLoadError
    from affectgym.features.prosody import ProsodyParams

    one_ms = 0.3 * np.sin(2 * np.pi * 200.0 * np.arange(SR // 1000) / SR)
    with pytest.raises(AudioLoadError, match=r"blip\.wav: 0\.001 s .*too short.* at least 0\.064 s"):
        extract_prosody(_written(tmp_path, "blip.wav", one_ms), backend=backend)
    shortest = 0.3 * np.sin(2 * np.pi * 200.0 * np.arange(int(ProsodyParams().min_duration_s * SR)) / SR)
    assert extract_prosody(_audio(shortest.astype(np.float32)), backend=backend).f0_median_hz == pytest.approx(200, abs=3)
