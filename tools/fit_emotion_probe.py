"""Fit the offline emotion probe's head on the shipped training replies and write it.

The replies are the 210 EmotionStyle-v0 demonstrations and the 420 of
``affectgym/data/emotion_training/`` (all answers to train-split instructions); the features
are SmolLM2-135M's mean hidden state at :data:`~affectgym.rewards.emotion_probe.PROBE_LAYER`.

    python tools/fit_emotion_probe.py                 # affectgym/data/emotion_probe/head.npz
    python tools/fit_emotion_probe.py --out /tmp/head.npz
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from affectgym.data.emotion_training_set import load_emotion_training
from affectgym.data.style_demonstrations import load_style_demonstrations
from affectgym.rewards.emotion_probe import (
    PROBE_C,
    PROBE_HEAD,
    PROBE_LAYER,
    fit_head,
    probe_features,
)


def training_replies() -> tuple[list[str], list[str]]:
    """The shipped training replies and their emotions: the demonstrations, then ``emotion_training``."""
    pairs = [(d.reply, d.emotion) for d in load_style_demonstrations()]
    pairs += [(r.reply, r.emotion) for r in load_emotion_training()]
    return [text for text, _ in pairs], [label for _, label in pairs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROBE_HEAD, help=f"where the head goes (default: {PROBE_HEAD})")
    args = parser.parse_args(argv)
    texts, labels = training_replies()
    head = fit_head(probe_features(texts), labels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    head.save(args.out)
    print(f"fitted on {len(texts)} replies, layer {PROBE_LAYER}, C={PROBE_C}: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
