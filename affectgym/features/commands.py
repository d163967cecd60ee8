"""The ``affectgym features FILE`` subcommand: prosody of one audio file, as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from affectgym.features.prosody import BACKENDS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``features`` subcommand.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.
    """
    parser = subparsers.add_parser(
        "features",
        help="measure the prosody of an audio file",
        description="Print the prosody block and pitch contour an agent would see for FILE.",
    )
    parser.add_argument(
        "file", metavar="FILE", help="audio file (wav, flac, ogg, mp3, m4a, mp4...)"
    )
    parser.add_argument("--json", action="store_true", help="print the full measurements as JSON")
    parser.add_argument("--plot", metavar="OUT.png", help="also draw waveform, pitch and intensity")
    parser.add_argument("--backend", choices=BACKENDS, default="praat", help="analysis backend")
    parser.add_argument("--points", type=int, default=40, help="width of the pitch sparkline")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.set_defaults(func=run_features)


def run_features(args: argparse.Namespace) -> int:
    """Handle ``affectgym features``.

    Args:
        args: Parsed arguments from :func:`register`'s parser.

    Returns:
        Exit status: 0 on success, 2 when the audio cannot be read.
    """
    from affectgym.features.audio import AudioLoadError, load_audio
    from affectgym.features.cache import cached_prosody
    from affectgym.features.prosody import extract_prosody
    from affectgym.features.render import render_contour, render_prosody

    try:
        audio = load_audio(args.file)
        if args.no_cache:
            prosody = extract_prosody(audio, backend=args.backend)
        else:
            prosody = cached_prosody(args.file, backend=args.backend)
    except AudioLoadError as err:
        print(f"affectgym features: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(prosody.to_dict(), indent=1), flush=True)
    else:
        print(render_prosody(prosody))
        print(render_contour(prosody, points=args.points), flush=True)
    if args.plot:
        from affectgym.features.plot import plot_prosody

        written = plot_prosody(audio, prosody, args.plot)
        print(f"plot written to {written}", file=sys.stderr)
    return 0
