"""Specification of the prosody cache and parallel corpus extraction."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from pathlib import Path

import diskcache
import pytest
import soundfile
from synthetic_audio import synthetic_voice, tone

from affectgym import _version
from affectgym.cache_root import DATABASE_FILES
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
    assert len(store.keys()) == 1
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
    (key,) = store.keys()
    with diskcache.Cache(str(tmp_path / "cache")) as raw:
        raw[key] = raw[key][:-40] + b"garbage"
    store.clear_memo()
    assert store.get(key) is None and store.keys() == []
    assert cached_prosody(clip, cache=store) == first
    store.clear_memo()
    assert store.get(key) == first


def test_size_bound_evicts_the_least_recently_used_first(tmp_path):
    store = ProsodyCache(tmp_path, max_bytes=10**9)
    prosody = extract_prosody(_tone_audio())
    keys = [f"{i:064x}" for i in range(100)]
    for key in keys:
        store.put(key, prosody)
    store.clear_memo()
    for key in keys[:5]:  # read again: now the most recently used
        assert store.get(key) == prosody
    bounded = ProsodyCache(tmp_path, max_bytes=store.volume_bytes() * 6 // 10)
    assert bounded.evict() >= 30 and bounded.volume_bytes() <= bounded.max_bytes
    kept = set(bounded.keys())
    assert set(keys[:5]) <= kept and keys[-1] in kept and keys[5] not in kept


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
    assert ProsodyCache(tmp_path).keys() == ["ab" * 32]


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
    assert len(ProsodyCache(tmp_path / "cache").keys()) == 3


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
    warnings = [r for r in caplog.records if r.name == "affectgym.features.cache" and "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and str(blocked) in warnings[0].getMessage()
    assert "AFFECTGYM_CACHE" in warnings[0].getMessage()


def test_full_disk_during_a_cache_write_still_returns_the_computed_features(tmp_path, clip, monkeypatch, caplog):
    def disk_full(self, key, value, *args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")  # what SQLite says on ENOSPC

    monkeypatch.setattr(diskcache.Cache, "set", disk_full)
    store = ProsodyCache(tmp_path / "cache")
    with caplog.at_level("WARNING", logger="affectgym.features.cache"):
        assert cached_prosody(clip, cache=store) == extract_prosody(clip)
        store.clear_memo()
        assert cached_prosody(clip, cache=store) == extract_prosody(clip)
    assert sum("database or disk is full" in r.getMessage() for r in caplog.records) == 1
    assert store.keys() == []


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
    with diskcache.Cache(str(tmp_path)) as raw:
        raw["bb" * 32] = raw["aa" * 32]
    store.clear_memo()
    assert store.get("bb" * 32) is None and store.keys() == ["aa" * 32]
    assert store.get("aa" * 32) == prosody


def test_a_database_file_turned_into_a_folder_is_rebuilt_and_every_later_write_lands(tmp_path, clip, caplog):
    first = cached_prosody(clip, cache=ProsodyCache(tmp_path / "cache"))
    for name in DATABASE_FILES:
        (tmp_path / "cache" / name).unlink(missing_ok=True)
    (tmp_path / "cache" / "cache.db").mkdir()
    (tmp_path / "cache" / "cache.db" / "inside").write_text("x")
    store = ProsodyCache(tmp_path / "cache")  # another run of the program
    with caplog.at_level("WARNING", logger="affectgym.features.cache"):
        assert cached_prosody(clip, cache=store) == first
    assert "cache.db is not a regular file" in caplog.text
    for i in range(3):
        assert store.put(f"{i:064x}", first)
    assert len(store.keys()) == 4 and (tmp_path / "cache" / "cache.db").is_file()


def _prosody_through(root: str, clip: str, out: str) -> None:
    import json

    Path(out).write_text(json.dumps(cached_prosody(clip, cache=ProsodyCache(root)).f0_median_hz))


def test_a_cache_file_replaced_by_a_fifo_is_never_read_and_the_cache_is_rebuilt(tmp_path, clip):
    root = tmp_path / "cache"
    first = cached_prosody(clip, cache=ProsodyCache(root))
    assert set(os.listdir(root)) <= set(DATABASE_FILES), "entries live in the database, not in files of their own"
    for name in DATABASE_FILES:
        (root / name).unlink(missing_ok=True)
        os.mkfifo(root / name)
    out = tmp_path / "f0.json"
    reader = multiprocessing.get_context("spawn").Process(target=_prosody_through, args=(str(root), str(clip), str(out)))
    reader.start()
    reader.join(120)  # a read of a FIFO with no writer would block here for ever
    hung = reader.is_alive()
    if hung:
        reader.kill()
    assert not hung and reader.exitcode == 0 and float(out.read_text()) == first.f0_median_hz
    assert all((root / name).is_file() for name in DATABASE_FILES if (root / name).exists())
    assert len(ProsodyCache(root).keys()) == 1


def _write_for_ever(root: str) -> None:
    store = ProsodyCache(root)
    prosody = extract_prosody(_tone_audio())
    for i in range(10**6):
        store.put(f"{i:064x}", prosody)


def test_a_writer_killed_mid_write_leaves_only_whole_entries(tmp_path):
    import signal
    import time

    writer = multiprocessing.get_context("spawn").Process(target=_write_for_ever, args=(str(tmp_path),))
    writer.start()
    store = ProsodyCache(tmp_path)
    while len(store.keys()) < 50 and writer.is_alive():
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    keys = store.keys()
    assert len(keys) >= 50
    prosody = extract_prosody(_tone_audio())
    assert all(store.get(key) == prosody for key in keys)
    assert store.put("ef" * 32, prosody) and store.get("ef" * 32) == prosody


def test_the_size_bound_holds_while_a_cache_fills(tmp_path):
    prosody = extract_prosody(_tone_audio())
    store = ProsodyCache(tmp_path, max_bytes=200_000)
    for i in range(300):
        store.put(f"{i:064x}", prosody)
    assert store.volume_bytes() <= store.max_bytes * 1.1 and len(store.keys()) < 300


@pytest.mark.parametrize("damage", ["not json", '{"name": "corpus"}', b"\x80\xff", 42])
def test_a_damaged_corpus_norms_entry_is_computed_again_and_replaced(tmp_path, caplog, damage):
    from affectgym.features.norms_cache import cached_norms
    from affectgym.features.render import ProsodyNorms

    norms = ProsodyNorms(name="corpus of 2 utterances", stats={"f0_median_hz": (150.0, 20.0)})
    with diskcache.Cache(str(tmp_path)) as raw:
        raw["k" * 64] = damage
    computed = []
    with caplog.at_level("WARNING", logger="affectgym.features.norms_cache"):
        assert cached_norms("k" * 64, lambda: computed.append(1) or norms, root=tmp_path) == norms
    assert computed == [1] and "unreadable" in caplog.text
    assert cached_norms("k" * 64, lambda: pytest.fail("the replaced entry is read"), root=tmp_path) == norms


def test_a_database_found_damaged_in_use_is_rebuilt_and_later_writes_land(tmp_path, caplog):
    prosody = extract_prosody(_tone_audio())
    writer = ProsodyCache(tmp_path)
    for i in range(200):
        writer.put(f"{i:064x}", prosody)
    database = tmp_path / "cache.db"
    size = database.stat().st_size
    with open(database, "r+b") as handle:  # pages past the schema overwritten: found only when read
        handle.seek(8192)
        handle.write(os.urandom(size - 8192 - 4096))
    store = ProsodyCache(tmp_path)  # another run of the program
    with caplog.at_level("WARNING", logger="affectgym.features.cache"):
        assert store.get(f"{5:064x}") is None
    assert "is not a readable SQLite database (database disk image is malformed); rebuilding it empty" in caplog.text
    assert store.put("ef" * 32, prosody)
    store.clear_memo()
    assert store.get("ef" * 32) == prosody and store.keys() == ["ef" * 32]
