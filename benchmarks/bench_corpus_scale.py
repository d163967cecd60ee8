"""What the first prosody call costs on a 10,000-clip corpus, against a later call, with and without precompute.

A folder corpus of ``--clips`` synthetic clips (two labels, 0.5 s tones at 8 kHz, each its
own pitch) is written under ``runs/bench_corpus/``. Each measurement runs in a fresh process
(no in-process memo) against its own cache folder (``AFFECTGYM_CACHE``):

* ``cold``: nothing cached. The first ``get_prosody_features`` measures every clip of the
  corpus for the corpus norms (the bands of the rendering are relative to them);
* ``prosody cached``: every clip's prosody in the disk cache, the norms not: the first call
  reads every entry back and computes the norms;
* ``precomputed``: ``affectgym features precompute folder --data-dir DIR --workers N`` was
  run first (prosody and norms cached): the first call costs what any later call costs.

Per case: ``make`` time, the first call, and the median of ten later calls (other clips),
in seconds; the ratio first / later. Results to ``benchmarks/results/corpus_scale.json``.

Usage::

    python benchmarks/bench_corpus_scale.py --clips 10000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "runs" / "bench_corpus"
RESULTS_FILE = ROOT / "benchmarks" / "results" / "corpus_scale.json"
PROSODY = '<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>'
RATE_HZ = 8000
LATER_CALLS = 10


def write_corpus(folder: Path, clips: int) -> None:
    """``clips`` tones in ``folder/<label>/``, each its own pitch (so every file's bytes differ)."""
    import numpy as np
    import soundfile

    if folder.is_dir() and sum(1 for _ in folder.rglob("*.wav")) == clips:
        return
    shutil.rmtree(folder, ignore_errors=True)
    t_s = np.arange(int(0.5 * RATE_HZ)) / RATE_HZ
    for k in range(clips):
        label = ("calm", "excited")[k % 2]
        f0_hz = (110.0 if label == "calm" else 220.0) + 60.0 * k / clips
        (folder / label).mkdir(parents=True, exist_ok=True)
        tone = 0.3 * np.sin(2 * np.pi * f0_hz * t_s) * (1 + 0.1 * np.sin(2 * np.pi * 3 * t_s))
        soundfile.write(str(folder / label / f"clip{k:05d}.wav"), tone, RATE_HZ)


def measure(data_dir: str) -> dict[str, float]:
    """In this process: seconds to make the env, of its first prosody call, and the median of later ones."""
    import affectgym

    started = time.perf_counter()
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=data_dir, split="all")
    make_s = time.perf_counter() - started
    ids = env.unwrapped.scenario_ids
    times_s = []
    for episode in range(LATER_CALLS + 1):
        env.reset(options={"scenario_id": ids[episode * (len(ids) // (LATER_CALLS + 1))]})
        started = time.perf_counter()
        observation = env.step(PROSODY)[0]
        times_s.append(time.perf_counter() - started)
        assert "Pitch: mean=" in observation, observation[:200]
    return {"make_s": make_s, "first_call_s": times_s[0], "later_call_s": statistics.median(times_s[1:])}


def precompute(data_dir: Path, cache: Path, workers: int) -> float:
    """Seconds of ``affectgym features precompute`` of the corpus into an empty ``cache``."""
    shutil.rmtree(cache, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "affectgym", "features", "precompute", "folder", "--data-dir", str(data_dir),
                    "--workers", str(workers)], check=True, env={**os.environ, "AFFECTGYM_CACHE": str(cache)})
    return time.perf_counter() - started


def run_case(case: str, data_dir: Path, cache: Path, precompute_s: float | None) -> dict[str, float | str | None]:
    """One case of the module docstring, measured in a fresh process against ``cache``."""
    done = subprocess.run([sys.executable, __file__, "--measure", str(data_dir)], check=True, capture_output=True,
                          text=True, env={**os.environ, "AFFECTGYM_CACHE": str(cache)})
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {"case": case, "precompute_s": precompute_s, **row, "first_over_later": row["first_call_s"] / row["later_call_s"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="processes of the precompute")
    parser.add_argument("--measure", metavar="DATA_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    data_dir = WORK / f"corpus-{args.clips}"
    write_corpus(data_dir, args.clips)
    cold, cached, full = (WORK / f"cache-{args.clips}-{name}" for name in ("cold", "prosody", "precomputed"))
    shutil.rmtree(cold, ignore_errors=True)
    rows = [run_case("cold", data_dir, cold, None)]
    precompute_s = precompute(data_dir, full, args.workers)
    shutil.rmtree(cached, ignore_errors=True)
    shutil.copytree(full, cached)
    shutil.rmtree(cached / "norms")
    rows += [run_case("prosody cached", data_dir, cached, precompute_s), run_case("precomputed", data_dir, full, precompute_s)]
    print(f"{args.clips} clips | make s | precompute s | first call s | later call s | first / later")
    for row in rows:
        precomputed_s = f"{row['precompute_s']:.1f}" if row["precompute_s"] is not None else "-"
        print(f"{row['case']:<15} | {row['make_s']:.1f} | {precomputed_s} | {row['first_call_s']:.3f} | "
              f"{row['later_call_s']:.4f} | {row['first_over_later']:.1f}x")
    RESULTS_FILE.write_text(json.dumps({"clips": args.clips, "workers": args.workers, "cases": rows}, indent=2) + "\n",
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
