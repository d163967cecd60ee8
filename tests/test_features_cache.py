"""Specification of the prosody cache and parallel corpus extraction."""

from __future__ import annotations

import multiprocessing
import os

import pytest
import soundfile

from affectgym import _version
from affectgym.features.cache import ProsodyCache, cached_prosody, default_cache_dir, extract_many
from affectgym.features.prosody import ProsodyParams, extract_prosody
from affectgym.features.synthetic import synthetic_voice, tone


@pytest.fixture
def clip(tmp_path):
    path = tmp_path / "clip.flac"
    voice = synthetic_voice(1.5, seed=2)
    soundfile.write(str(path), voice.samples, voice.sample_rate_hz, subtype="PCM_16")
    return path


def test_default_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c" / "prosody"


def test_second_extraction_comes_from_disk_and_equals_the_first(tmp_path, clip):
    store = ProsodyCache(tmp_path / "cache")
    first = cached_prosody(clip, cache=store)
    assert len(store.entries()) == 1
    store.clear_memo()
    again = cached_prosody(clip, cache=store)
    assert again == first == extract_prosody(clip)


def test_key_changes_with_backend_params_and_version(tmp_path, monkeypatch):
    store = ProsodyCache(tmp_path)
    base = store.key("d", "praat", ProsodyParams(), 16000)
    assert store.key("d", "librosa", ProsodyParams(), 16000) != base
    assert store.key("d", "praat", ProsodyParams(min_pause_s=0.3), 16000) != base
    monkeypatch.setattr(_version, "__version__", "99.0")
    assert store.key("d", "praat", ProsodyParams(), 16000) != base


def test_corrupted_entry_is_detected_and_recomputed(tmp_path, clip):
    store = ProsodyCache(tmp_path / "cache")
    first = cached_prosody(clip, cache=store)
    (entry,) = store.entries()
    entry.write_bytes(entry.read_bytes()[:-40] + b"garbage")
    store.clear_memo()
    assert store.get(entry.stem) is None and not entry.exists()
    assert cached_prosody(clip, cache=store) == first
    store.clear_memo()
    assert store.get(entry.stem) == first


def test_size_bound_evicts_oldest_first(tmp_path):
    store = ProsodyCache(tmp_path, max_bytes=10**9)
    prosody = extract_prosody(_tone_audio())
    for i in range(5):
        store.put(f"{i:064x}", prosody)
    entries = sorted(store.entries(), key=lambda p: p.stem)
    for age, path in enumerate(entries):
        os.utime(path, ns=(10**18 + age * 10**9, 10**18 + age * 10**9))
    store.max_bytes = 3 * entries[0].stat().st_size
    assert store.evict() >= 2
    kept = {p.stem for p in store.entries()}
    assert f"{4:064x}" in kept and f"{0:064x}" not in kept


def _tone_audio():
    from affectgym.features.audio import load_audio

    return load_audio(tone(180.0, 0.5), input_sample_rate_hz=16000)


def _fill(root: str, n: int) -> None:
    store = ProsodyCache(root)
    prosody = extract_prosody(_tone_audio())
    for _ in range(n):
        store.put("ab" * 32, prosody)
        store.clear_memo()
        assert store.get("ab" * 32) == prosody


def test_concurrent_writers_leave_one_intact_entry(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill, args=(str(tmp_path), 20)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(worker.exitcode == 0 for worker in workers)
    assert [p.name for p in ProsodyCache(tmp_path).entries()] == ["ab" * 32 + ".json"]
    assert not list(tmp_path.rglob("*.tmp"))


def test_extract_many_keeps_order_in_parallel(tmp_path, clip):
    paths = []
    for i, frequency in enumerate((120.0, 200.0, 260.0)):
        path = tmp_path / f"t{i}.wav"
        soundfile.write(str(path), tone(frequency, 0.6), 16000)
        paths.append(path)
    results = extract_many(paths, n_jobs=2, cache=tmp_path / "cache", progress=False)
    assert [round(r.f0_median_hz) for r in results] == [120, 200, 260]
    serial = extract_many(paths, n_jobs=1, cache=False, progress=False)
    assert serial == results
    assert len(ProsodyCache(tmp_path / "cache").entries()) == 3


def test_missing_file_is_named(tmp_path):
    from affectgym.features.audio import AudioLoadError

    with pytest.raises(AudioLoadError, match="nope.wav"):
        cached_prosody(tmp_path / "nope.wav", cache=ProsodyCache(tmp_path))


def test_extract_many_skips_and_records_files_it_cannot_read_when_asked(tmp_path):
    from affectgym.features.audio import AudioLoadError

    good = tmp_path / "good.wav"
    soundfile.write(str(good), tone(150.0, 0.6), 16000)
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio")
    results = extract_many([good, bad, good], n_jobs=1, cache=False, progress=False, on_error="skip")
    assert len(results) == 2 and [(s.index, s.source) for s in results.skipped] == [(1, str(bad))]
    assert results.skipped[0].error.startswith("AudioLoadError")
    assert extract_many([good], n_jobs=1, cache=False, progress=False).skipped == []
    with pytest.raises(AudioLoadError):
        extract_many([good, bad], n_jobs=1, cache=False, progress=False)
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        extract_many([good], on_error="ignore")
