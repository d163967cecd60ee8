"""The ``affectgym features FILE`` subcommand: prosody of one audio file, as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from affectgym.cli_arguments import add_dataclass_command
from affectgym.features.prosody import BACKENDS
from affectgym.features.render import CONTOUR_POINTS

DESCRIPTION = (
    "Print the prosody block and the pitch contour of FILE in the form the speech envs' tools "
    "give an agent (get_prosody_features and get_pitch_contour, 30 points). The bands ([HIGH], "
    "[WIDE], ...) are against built-in adult-speech norms: one file has no corpus, whereas an "
    "env bands a clip against the clips of its dataset. With --backend librosa, the first run "
    "after installing compiles librosa's numba code (20-40 s); numba caches it on disk "
    "(set NUMBA_CACHE_DIR where site-packages is read-only), so later runs start in about a second."
)


@dataclass
class FeaturesOptions:
    """The arguments of ``affectgym features``, one per field."""

    file: str = field(metadata={
        "positional": True, "metavar": "FILE",
        "help": "one audio file (wav, flac, ogg, mp3, m4a, mp4...), or 'precompute' followed by a dataset name",
    })
    dataset: str | None = field(default=None, metadata={
        "positional": True, "metavar": "DATASET",
        "help": "with 'precompute': the dataset (affectgym list --datasets) whose every clip is measured and cached, "
                "with its corpus norms, ahead of a run",
    })
    data_dir: str | None = field(default=None, metadata={"help": "with 'precompute': the dataset's data_dir"})
    workers: int = field(default=1, metadata={"metavar": "N", "help": "with 'precompute': worker processes (default 1)"})
    json: bool = field(default=False, metadata={
        "help": "print the full measurements as JSON, one field per line (the contour arrays on one line each)",
    })
    plot: str | None = field(default=None, metadata={"metavar": "OUT.png", "help": "also draw waveform, pitch and intensity"})
    backend: str = field(default="praat", metadata={
        "choices": BACKENDS, "help": "analysis backend (librosa: the first run after installing compiles numba code, 20-40 s)",
    })
    points: int = field(default=CONTOUR_POINTS, metadata={
        "help": f"width of the pitch sparkline (default {CONTOUR_POINTS}, what an agent sees)",
    })
    no_cache: bool = field(default=False, metadata={"help": "do not read or write the cache"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``features`` subcommand, its options those of :class:`FeaturesOptions`.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.
    """
    add_dataclass_command(
        subparsers, "features", [FeaturesOptions], run_features,
        help="measure the prosody of an audio file, as the speech envs' tools show it", description=DESCRIPTION,
    )


def run_features(args: argparse.Namespace) -> int:
    """Handle ``affectgym features``.

    Args:
        args: Parsed arguments from :func:`register`'s parser.

    Returns:
        Exit status: 0 on success, 2 when the audio cannot be read or measured.
    """
    from affectgym.features.audio import AudioLoadError, load_audio
    from affectgym.features.cache import cached_prosody
    from affectgym.features.prosody import extract_prosody
    from affectgym.features.render import render_contour, render_prosody

    if args.file == "precompute":
        return run_precompute(args)
    if Path(args.file).is_dir():
        print(
            f"affectgym features: {args.file} is a folder; pass one audio file "
            "(for a folder of clips use affectgym.features.extract_many, or SpeechEmotion-v0 with data_dir=)",
            file=sys.stderr,
        )
        return 2
    try:
        audio = load_audio(args.file)
    except AudioLoadError as err:
        print(f"affectgym features: {err}", file=sys.stderr)
        return 2
    try:
        if args.no_cache:
            prosody = extract_prosody(audio, backend=args.backend)
        else:
            prosody = cached_prosody(args.file, backend=args.backend)
    except (RuntimeError, ValueError) as err:  # Praat's errors are RuntimeErrors (parselmouth.PraatError)
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0].rstrip(".")
        print(
            f"affectgym features: cannot measure {args.file} ({audio.duration_s:.3f} s) with the {args.backend} "
            f"backend: {reason}; a clip must be longer than the analysis window (about 0.07 s)",
            file=sys.stderr,
        )
        return 2
    if args.json:
        print(compact_json(prosody.to_dict()), flush=True)
    else:
        print(render_prosody(prosody))
        print(render_contour(prosody, points=args.points), flush=True)
    if args.plot:
        from affectgym.features.plot import plot_prosody

        written = plot_prosody(audio, prosody, args.plot)
        print(f"plot written to {written}", file=sys.stderr)
    return 0


def run_precompute(args: argparse.Namespace) -> int:
    """``affectgym features precompute DATASET``: every clip's prosody into the cache, then the corpus norms.

    With a progress bar, in ``--workers`` processes; the caches make it resumable (a rerun
    measures only what is not cached yet).
    """
    import time

    import affectgym
    from affectgym.features.cache import extract_many

    if not args.dataset:
        print("affectgym features precompute: name the dataset (affectgym list --datasets), e.g. "
              "affectgym features precompute folder --data-dir my_corpus", file=sys.stderr)
        return 2
    if args.workers < 1:
        print(f"affectgym features precompute: --workers must be a positive integer, got {args.workers}", file=sys.stderr)
        return 2
    env = affectgym.make("affectgym/SpeechEmotion-v0", dataset=args.dataset, data_dir=args.data_dir, split="all",
                         prosody_backend=args.backend).unwrapped
    clips = [clip for clip in env.all_clips if clip.audio_path]
    start_s = time.perf_counter()
    measured = extract_many([clip.audio_path for clip in clips], n_jobs=args.workers, backend=args.backend,
                            on_error="skip")
    norms = env.corpus_norms()
    print(f"{len(measured)} of {len(clips)} clips measured and cached ({len(measured.skipped)} could not be), "
          f"corpus norms over {norms.name} cached, in {time.perf_counter() - start_s:.1f} s")
    return 0


def compact_json(data: dict[str, Any]) -> str:
    """A JSON object with one field per line and each value (arrays included) on its line.

    >>> print(compact_json({"duration_s": 1.5, "contour_f0_hz": [0.0, 120.5]}))
    {
     "duration_s": 1.5,
     "contour_f0_hz": [0.0, 120.5]
    }
    """
    fields = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in data.items()]
    return "{\n" + ",\n".join(fields) + "\n}"
