"""Prosody speed and accuracy, measured side by side in one run (``make bench``).

Prints ratios, asserts nothing. Speed is per core: the process pins itself to one CPU
(like ``taskset -c 0``) for the timing sections and compares methods on the same clips.

Sections:
1. Speed on 10-60 s clips made by concatenating embedded corpus clips: affectgym praat
   backend vs a librosa pyin + RMS + pause pipeline (affectgym's librosa backend) vs
   openSMILE eGeMAPS functionals (only if the ``opensmile`` package is installed; it is
   a yardstick, never a dependency: ``pip install opensmile``).
2. Pitch accuracy against a synthetic voice with known F0 (80-300 Hz glides, formants,
   silent gaps): MAE in semitones on voiced frames, voicing recall, false voicing.
3. Cache: first extraction vs a repeated one (in-process memo) vs a disk hit.
4. extract_many over 500 clips: peak resident memory of the whole process tree.

Usage: python benchmarks/bench_prosody.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for synthetic_audio


def _pin_to_one_core() -> str:
    try:
        core = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"pinned to CPU {core}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def _best_time(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


_CPU_SECONDS: dict[str, float] = {}


def _timed(name: str, function, repeats: int) -> float:
    """Best wall time of ``function``; its best CPU time is kept in _CPU_SECONDS[name]."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    _CPU_SECONDS[name] = _CPU_SECONDS.get(name, 0.0) + best_cpu
    return best_wall


def _long_clips(out_dir: Path, lengths_s: tuple[float, ...]) -> list[Path]:
    """Concatenate corpus clips (cycling through them) into clips of the given lengths."""
    import soundfile

    from affectgym.data.speech_corpus import load_speech_manifest
    from affectgym.features.audio import load_audio

    records = load_speech_manifest("sarcasm") + load_speech_manifest("emotion")
    paths, cursor = [], 0
    for length_s in lengths_s:
        pieces, total = [], 0
        while total < length_s * 16000:
            audio = load_audio(records[cursor % len(records)]["audio_path"])
            pieces.append(audio.samples)
            total += len(audio.samples)
            cursor += 1
        samples = np.concatenate(pieces)[: int(length_s * 16000)]
        path = out_dir / f"long_{int(length_s)}s.flac"
        soundfile.write(str(path), samples, 16000, subtype="PCM_16")
        paths.append(path)
    return paths


def bench_speed(paths: list[Path], repeats: int) -> None:
    from affectgym.features.audio import load_audio
    from affectgym.features.prosody import extract_prosody

    audios = [load_audio(p) for p in paths]
    total_s = sum(a.duration_s for a in audios)
    print(f"\n## Speed, one core, {len(audios)} clips, {total_s:.0f} s of audio")
    print(f"   clip lengths: {', '.join(f'{a.duration_s:.0f}s' for a in audios)}")

    extract_prosody(audios[0])  # import + first-call costs are not per-clip costs
    praat_name, decode_name = (
        "affectgym praat (extract_prosody)",
        "affectgym praat incl. FLAC decode",
    )
    librosa_name = "librosa pyin + RMS + pauses (librosa backend)"
    smile_name = "openSMILE eGeMAPSv02 functionals"
    praat_s = sum(_timed(praat_name, lambda a=a: extract_prosody(a), repeats) for a in audios)
    praat_with_decode_s = sum(
        _timed(decode_name, lambda p=p: extract_prosody(load_audio(p)), repeats) for p in paths
    )
    rows = [(praat_name, praat_s), (decode_name, praat_with_decode_s)]

    start = time.perf_counter()
    extract_prosody(audios[0].__class__(audios[0].samples[:16000], 16000), backend="librosa")
    warmup_s = time.perf_counter() - start
    librosa_s = sum(
        _timed(librosa_name, lambda a=a: extract_prosody(a, backend="librosa"), 1) for a in audios
    )
    rows.append((librosa_name, librosa_s))

    try:
        import opensmile

        smile = opensmile.Smile(
            feature_set=opensmile.FeatureSet.eGeMAPSv02,
            feature_level=opensmile.FeatureLevel.Functionals,
        )
        smile.process_signal(audios[0].samples[:16000], 16000)
        smile_s = sum(
            _timed(smile_name, lambda a=a: smile.process_signal(a.samples, 16000), repeats)
            for a in audios
        )
        rows.append((smile_name, smile_s))
    except ImportError:
        smile_s = None

    print(
        f"   {'':48s} {'x real time':>12s} {'praat is':>9s} {'x real time':>12s} {'praat is':>9s}"
    )
    print(f"   {'method':48s} {'(wall)':>12s} {'(wall)':>9s} {'(CPU time)':>12s} {'(CPU)':>9s}")
    praat_cpu_s = _CPU_SECONDS[praat_name]
    for name, seconds in rows:
        cpu_s = _CPU_SECONDS[name]
        print(
            f"   {name:48s} {total_s / seconds:12.0f} {seconds / praat_s:8.1f}x "
            f"{total_s / cpu_s:12.0f} {cpu_s / praat_cpu_s:8.1f}x"
        )
    if smile_s is None:
        print(f"   {smile_name:48s} not available (pip install opensmile to compare)")
    print(f"   (librosa first call in this process, numba warm-up: {warmup_s:.1f} s, excluded)")


def bench_accuracy(duration_s: float) -> None:
    from synthetic_audio import synthetic_voice

    from affectgym.features.audio import load_audio
    from affectgym.features.prosody import extract_prosody, hz_to_st

    print(f"\n## Pitch accuracy, synthetic voice ({duration_s:.0f} s, F0 80-300 Hz, gaps)")
    print(f"   {'method':30s} {'MAE (st)':>9s} {'recall':>8s} {'false voicing':>14s}")
    for seed in (0,):
        voice = synthetic_voice(duration_s, seed=seed)
        audio = load_audio(voice.samples, input_sample_rate_hz=voice.sample_rate_hz)
        for name, backend in (("affectgym praat (ac)", "praat"), ("librosa pyin", "librosa")):
            p = extract_prosody(audio, backend=backend)
            times, f0 = np.array(p.contour_times_s), np.array(p.contour_f0_hz)
            truth = voice.true_f0_at(times)
            scored = ~np.isnan(truth)
            voiced_truth, unvoiced_truth = scored & (truth > 0), scored & (truth == 0)
            both = voiced_truth & (f0 > 0)
            mae = float(np.mean(np.abs(hz_to_st(f0[both]) - hz_to_st(truth[both]))))
            recall = both.sum() / max(voiced_truth.sum(), 1)
            false = (unvoiced_truth & (f0 > 0)).sum() / max(unvoiced_truth.sum(), 1)
            print(f"   {name:30s} {mae:9.3f} {100 * recall:7.1f}% {100 * false:13.1f}%")


def bench_cache(path: Path, cache_dir: Path) -> None:
    from affectgym.features import cache as cache_module
    from affectgym.features.cache import ProsodyCache, cached_prosody

    store = ProsodyCache(cache_dir)
    start = time.perf_counter()
    cached_prosody(path, cache=store)
    first_s = time.perf_counter() - start
    memo_s = _best_time(lambda: cached_prosody(path, cache=store), 20)

    def disk_hit():
        store.clear_memo()
        cache_module._FILE_DIGESTS.clear()
        cached_prosody(path, cache=store)

    disk_s = _best_time(disk_hit, 5)
    print(f"\n## Cache ({path.name})")
    print(f"   first extraction (decode + analysis + write)  {1000 * first_s:9.2f} ms")
    print(
        f"   repeated, same process (stat + memo)          {1000 * memo_s:9.3f} ms"
        f"  -> {first_s / memo_s:,.0f}x faster"
    )
    print(
        f"   disk hit, as in a new process (hash + read)   {1000 * disk_s:9.3f} ms"
        f"  -> {first_s / disk_s:,.0f}x faster"
    )


def bench_memory(n_clips: int, n_jobs: int) -> None:
    """Measure in a fresh interpreter, so this script's own imports do not count."""
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, __file__, "--memory-only", str(n_clips), str(n_jobs)], check=True
    )


def _measure_memory(n_clips: int, n_jobs: int) -> None:
    import psutil

    from affectgym.data.speech_corpus import load_speech_manifest
    from affectgym.features.cache import extract_many

    records = load_speech_manifest("sarcasm") + load_speech_manifest("emotion")
    sources = [records[i % len(records)]["audio_path"] for i in range(n_clips)]
    me = psutil.Process()
    peak = {"total": 0, "parent": 0}
    done = threading.Event()

    def watch():
        while not done.is_set():
            try:
                tree = [me] + me.children(recursive=True)
                total = sum(p.memory_info().rss for p in tree if p.is_running())
            except psutil.Error:
                continue
            peak["total"] = max(peak["total"], total)
            peak["parent"] = max(peak["parent"], me.memory_info().rss)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    results = extract_many(sources, n_jobs=n_jobs, cache=False, progress=False)
    elapsed_s = time.perf_counter() - start
    done.set()
    watcher.join()
    audio_s = sum(r.duration_s for r in results)
    print(f"\n## extract_many over {n_clips} clips ({audio_s:.0f} s of audio), n_jobs={n_jobs}")
    print(
        f"   wall time {elapsed_s:.1f} s ({audio_s / elapsed_s:.0f}x real time incl. worker start)"
    )
    print(
        f"   peak RSS, parent + workers: {peak['total'] / 2**20:.0f} MB "
        f"(parent alone {peak['parent'] / 2**20:.0f} MB)"
    )


def main() -> None:
    """Run every section and print the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter clips, fewer repeats")
    parser.add_argument("--memory-only", nargs=2, type=int, metavar=("N_CLIPS", "N_JOBS"))
    args = parser.parse_args()
    if args.memory_only:
        _measure_memory(*args.memory_only)
        return
    all_cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    print("# affectgym prosody benchmark")
    if hasattr(os, "getloadavg"):
        print(f"   load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"   {_pin_to_one_core()} for the speed, accuracy and cache sections")
    with tempfile.TemporaryDirectory() as scratch:
        scratch_dir = Path(scratch)
        lengths = (10.0, 20.0) if args.quick else (10.0, 30.0, 60.0)
        paths = _long_clips(scratch_dir, lengths)
        bench_speed(paths, repeats=1 if args.quick else 3)
        bench_accuracy(20.0 if args.quick else 60.0)
        bench_cache(paths[-1], scratch_dir / "cache")
        if all_cores:
            os.sched_setaffinity(0, all_cores)
        bench_memory(100 if args.quick else 500, n_jobs=min(2, len(all_cores or [0, 1])))


if __name__ == "__main__":
    main()
