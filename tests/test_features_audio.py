"""Specification of affectgym.features.audio.load_audio."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import soundfile
from synthetic_audio import tone

from affectgym.features.audio import Audio, AudioLoadError, load_audio


def _write_wav(path, samples, sample_rate_hz=16000):
    soundfile.write(str(path), samples, sample_rate_hz, subtype="PCM_16")
    return path


def test_wav_loads_as_mono_float32_at_target_rate(tmp_path):
    stereo = np.stack([tone(200.0, 0.5, 44100), tone(200.0, 0.5, 44100)], axis=1)
    path = _write_wav(tmp_path / "stereo.wav", stereo, 44100)
    audio = load_audio(path)
    assert isinstance(audio, Audio)
    assert audio.samples.dtype == np.float32 and audio.samples.ndim == 1
    assert audio.sample_rate_hz == 16000
    assert audio.duration_s == pytest.approx(0.5, abs=1e-3)
    assert audio.source == str(path)


def test_sr_none_keeps_native_rate(tmp_path):
    path = _write_wav(tmp_path / "a.flac", tone(300.0, 0.25, 22050), 22050)
    assert load_audio(path, sr=None).sample_rate_hz == 22050


def test_bytes_and_array_inputs(tmp_path):
    path = _write_wav(tmp_path / "a.wav", tone(200.0, 0.3))
    from_bytes = load_audio(path.read_bytes())
    assert from_bytes.source == "<bytes>" and from_bytes.duration_s == pytest.approx(0.3, abs=1e-3)
    from_array = load_audio(tone(200.0, 1.0, 8000), input_sample_rate_hz=8000)
    assert from_array.sample_rate_hz == 16000 and len(from_array.samples) == 16000


def test_m4a_made_with_the_bundled_ffmpeg_decodes(tmp_path):
    import imageio_ffmpeg

    wav = _write_wav(tmp_path / "speech.wav", tone(220.0, 1.0))
    m4a = tmp_path / "speech.m4a"
    subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-v",
            "error",
            "-y",
            "-i",
            str(wav),
            "-c:a",
            "aac",
            str(m4a),
        ],
        check=True,
    )
    before = set(tmp_path.iterdir())
    audio = load_audio(m4a)
    assert audio.duration_s == pytest.approx(1.0, abs=0.05)
    spectrum = np.abs(np.fft.rfft(audio.samples))
    assert np.fft.rfftfreq(len(audio.samples), 1 / 16000)[spectrum.argmax()] == pytest.approx(
        220, abs=3
    )
    assert set(tmp_path.iterdir()) == before  # nothing left behind
    assert load_audio(m4a.read_bytes()).duration_s == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b""), "empty"),
        (lambda p: p.write_bytes(b"this is not audio at all" * 10), "unreadable"),
    ],
)
def test_bad_files_raise_naming_the_file(tmp_path, make, message):
    path = tmp_path / "broken.wav"
    make(path)
    with pytest.raises(AudioLoadError, match=message) as info:
        load_audio(path)
    assert "broken.wav" in str(info.value)


def test_unreadable_m4a_names_the_file(tmp_path):
    path = tmp_path / "junk.m4a"
    path.write_bytes(b"\x00\x01garbage" * 50)
    with pytest.raises(AudioLoadError, match="junk.m4a"):
        load_audio(path)


def test_missing_zero_length_nan_and_too_long_are_refused(tmp_path):
    with pytest.raises(AudioLoadError, match="no such file"):
        load_audio(tmp_path / "nope.wav")
    with pytest.raises(AudioLoadError, match="zero-length"):
        load_audio(np.zeros(0, np.float32), input_sample_rate_hz=16000)
    bad = tone(200.0, 0.1)
    bad[10] = np.nan
    with pytest.raises(AudioLoadError, match="NaN"):
        load_audio(bad, input_sample_rate_hz=16000)
    long_path = _write_wav(tmp_path / "long.wav", tone(200.0, 3.0))
    with pytest.raises(AudioLoadError, match="max_duration_s"):
        load_audio(long_path, max_duration_s=2.0)
    with pytest.raises(AudioLoadError, match="input_sample_rate_hz"):
        load_audio(tone(200.0, 0.1))
