"""Specification of the prosody cache and parallel corpus extraction."""

from __future__ import annotations

import multiprocessing
import os

import pytest
import soundfile
from synthetic_audio import synthetic_voice, tone

from affectgym import _version
from affectgym.features.cache import ProsodyCache, cached_prosody, default_cache_dir, extract_many
from affectgym.features.prosody import ProsodyParams, extract_prosody


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


# ----------------------------------------------------------------------------- faults
def _write_tone(path, frequency_hz):
    soundfile.write(str(path), tone(frequency_hz, 0.6), 16000, subtype="PCM_16")


def test_prosody_tool_answers_and_warns_once_when_the_cache_folder_cannot_be_written(tmp_path, monkeypatch, caplog):
    import affectgym

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be: nothing can be created below it")
    monkeypatch.setenv("AFFECTGYM_CACHE", str(blocked))
    env = affectgym.make("affectgym/SpeechEmotion-v0", split="all")
    call = '<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>'
    with caplog.at_level("WARNING", logger="affectgym.features.cache"):
        for scenario_id in env.unwrapped.scenario_ids[:2]:
            env.reset(options={"scenario_id": scenario_id})
            observation = env.step(call)[0]
            assert "Pitch: mean=" in observation
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and str(blocked) in warnings[0].getMessage()
    assert "AFFECTGYM_CACHE" in warnings[0].getMessage()


def test_full_disk_during_a_cache_write_still_returns_the_computed_features(tmp_path, clip, monkeypatch, caplog):
    import errno
    from pathlib import Path

    real_write_bytes = Path.write_bytes

    def disk_full(self, data):
        if self.suffix == ".tmp":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", disk_full)
    store = ProsodyCache(tmp_path / "cache")
    with caplog.at_level("WARNING", logger="affectgym.features.cache"):
        assert cached_prosody(clip, cache=store) == extract_prosody(clip)
        store.clear_memo()
        assert cached_prosody(clip, cache=store) == extract_prosody(clip)
    assert sum("No space left on device" in r.getMessage() for r in caplog.records) == 1
    assert store.entries() == [] and not list((tmp_path / "cache").rglob("*.tmp"))


def test_file_rewritten_with_same_size_and_mtime_gives_the_new_features(tmp_path):
    path = tmp_path / "take.wav"
    _write_tone(path, 150.0)
    store = ProsodyCache(tmp_path / "cache")
    assert round(cached_prosody(path, cache=store).f0_median_hz) == 150
    before = path.stat()
    _write_tone(path, 300.0)  # what `cp -p other.wav take.wav` does: new bytes, old mtime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert round(cached_prosody(path, cache=store).f0_median_hz) == 300


def test_file_digest_memo_keys_on_the_ctime_that_cp_p_cannot_restore(tmp_path, monkeypatch):
    import time

    from affectgym.features import cache as cache_module

    monkeypatch.setattr(cache_module, "_RACY_WINDOW_NS", -(10**18))  # memoise even fresh files
    path = tmp_path / "take.wav"
    _write_tone(path, 150.0)
    first = cache_module._file_digest(path)
    assert first in cache_module._FILE_DIGESTS.values()
    before = path.stat()
    time.sleep(0.05)  # past the file system's timestamp granularity
    _write_tone(path, 300.0)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cache_module._file_digest(path) != first


def test_entry_copied_to_another_key_is_refused(tmp_path):
    store = ProsodyCache(tmp_path)
    prosody = extract_prosody(_tone_audio())
    store.put("aa" * 32, prosody)
    (entry,) = store.entries()
    copy = tmp_path / "bb" / ("bb" * 32 + ".json")
    copy.parent.mkdir()
    copy.write_bytes(entry.read_bytes())
    store.clear_memo()
    assert store.get("bb" * 32) is None and not copy.exists()
    assert store.get("aa" * 32) == prosody


def test_entry_replaced_by_a_folder_is_recomputed(tmp_path, clip):
    store = ProsodyCache(tmp_path / "cache")
    first = cached_prosody(clip, cache=store)
    (entry,) = store.entries()
    entry.unlink()
    entry.mkdir()
    (entry / "inside").write_text("x")
    store.clear_memo()
    assert cached_prosody(clip, cache=store) == first
    assert store.entries() == [] and store.evict() == 0


def test_eviction_removes_temporary_files_of_killed_writers_only(tmp_path):
    import time

    from affectgym.features.cache import ORPHAN_TMP_AGE_S

    store = ProsodyCache(tmp_path)
    store.put("cd" * 32, extract_prosody(_tone_audio()))
    shard = tmp_path / "cd"
    orphan = shard / f".{'cd' * 32}.4242.dead.tmp"
    live = shard / f".{'cd' * 32}.4243.live.tmp"
    for path in (orphan, live):
        path.write_bytes(b"half an entry")
    old_ns = time.time_ns() - int((ORPHAN_TMP_AGE_S + 60) * 1e9)
    os.utime(orphan, ns=(old_ns, old_ns))
    store.evict()
    assert not orphan.exists() and live.exists()
    assert len(store.entries()) == 1


def test_filling_a_cache_scans_its_folder_far_fewer_times_than_once_every_32_writes(tmp_path, monkeypatch):
    store = ProsodyCache(tmp_path, max_bytes=10**9)
    prosody = extract_prosody(_tone_audio())
    scans = []
    scan = store.entries
    monkeypatch.setattr(store, "entries", lambda: scans.append(1) or scan())
    for i in range(2_000):
        store.put(f"{i:064x}", prosody)
    # a scan every 32 writes would be 63 scans of up to 2,000 entries; a quarter of the entries apart: ~17
    assert len(scans) <= 20 and len(scan()) == 2_000


def test_the_size_bound_holds_while_a_cache_fills_between_scans(tmp_path):
    prosody = extract_prosody(_tone_audio())
    probe = ProsodyCache(tmp_path / "probe")
    probe.put("0" * 64, prosody)
    entry_bytes = probe.entries()[0].stat().st_size
    store = ProsodyCache(tmp_path / "bounded", max_bytes=50 * entry_bytes)
    for i in range(300):
        store.put(f"{i:064x}", prosody)
    assert sum(p.stat().st_size for p in store.entries()) <= 51 * entry_bytes
