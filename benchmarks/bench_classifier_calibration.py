"""How often does the offline emotion classifier name the emotion a human tagged? By neutral weight.

The labelled text is the embedded EmpatheticDialogue corpus: every sentence of a reference
reply carries the tag its writer gave it (``(JOY) ...``, ``(NEUTRAL) ...?``). Each sentence is
scored by the ``nade`` backend of :class:`~affectgym.rewards.classifier.EmotionClassifier`
at several ``neutral_weight`` values (how much neutral weighs against the six emotions; see
:func:`~affectgym.rewards.classifier.plutchik_to_basic`), and the table gives, per weight:
top-1 accuracy on every sentence, on the emotional ones, on the neutral ones, and the macro
mean over the seven tags (each tag's recall). The weight is chosen on the train split's
dialogues (highest macro mean) and reported on the eval split's, which no choice saw.

Results to ``benchmarks/results/classifier_calibration.json``. Under a minute on one core.

Usage::

    python benchmarks/bench_classifier_calibration.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_FILE = ROOT / "benchmarks" / "results" / "classifier_calibration.json"
WEIGHTS = (1.0, 0.7, 0.5, 0.35, 0.25, 0.15)


def tagged_sentences(split: str) -> list[tuple[str, str]]:
    """``(sentence, emotion)`` of every tagged sentence of the split's reference replies."""
    import affectgym
    from affectgym.emotions import canonical_emotion
    from affectgym.envs.dialogue_parsing import read_chatbot_reply

    env = affectgym.make("affectgym/EmpatheticDialogue-v0", split=split, classifier="nade").unwrapped
    sentences = []
    for turn in env.scenarios:
        for segment in read_chatbot_reply(turn.reference or "").segments:
            emotion = canonical_emotion(segment.label) if segment.label else None
            if emotion and segment.text:
                sentences.append((segment.text, emotion))
    return sentences


def accuracies(sentences: list[tuple[str, str]], neutral_weight: float) -> dict[str, float]:
    """Top-1 accuracy overall, on emotional and on neutral sentences, and the macro mean of per-tag recall."""
    from affectgym.rewards.classifier import EmotionClassifier

    scores = EmotionClassifier("nade", neutral_weight=neutral_weight).scores([text for text, _ in sentences])
    hits = [(max(score, key=score.get) == tag, tag) for score, (_, tag) in zip(scores, sentences, strict=True)]
    by_tag: dict[str, list[bool]] = {}
    for hit, tag in hits:
        by_tag.setdefault(tag, []).append(hit)
    return {
        "accuracy": statistics.fmean(hit for hit, _ in hits),
        "emotional_accuracy": statistics.fmean(hit for hit, tag in hits if tag != "neutral"),
        "neutral_accuracy": statistics.fmean(hit for hit, tag in hits if tag == "neutral"),
        "macro_recall": statistics.fmean(statistics.fmean(tag_hits) for tag_hits in by_tag.values()),
    }


def main() -> None:
    splits = {split: tagged_sentences(split) for split in ("train", "eval")}
    table = {split: {str(w): accuracies(sentences, w) for w in WEIGHTS} for split, sentences in splits.items()}
    chosen = max(WEIGHTS, key=lambda w: table["train"][str(w)]["macro_recall"])
    result = {"sentences": {split: len(s) for split, s in splits.items()}, "weights": list(WEIGHTS),
              "chosen_on_train": chosen, "table": table}
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"nade's top emotion vs the writer's tag, on the embedded dialogue references "
          f"({len(splits['train'])} train / {len(splits['eval'])} eval sentences)")
    print(f"{'neutral weight':>15}  {'split':<6}{'all':>7}{'emotional':>11}{'neutral':>9}{'macro':>8}")
    for w in WEIGHTS:
        for split in splits:
            row = table[split][str(w)]
            print(f"{w:>15g}  {split:<6}{row['accuracy']:>7.3f}{row['emotional_accuracy']:>11.3f}"
                  f"{row['neutral_accuracy']:>9.3f}{row['macro_recall']:>8.3f}")
    print(f"chosen on train (highest macro recall): neutral_weight={chosen:g}; eval macro recall "
          f"{table['eval'][str(chosen)]['macro_recall']:.3f} vs {table['eval']['1.0']['macro_recall']:.3f} at weight 1 "
          f"(chance {1 / 7:.3f})")


if __name__ == "__main__":
    main()
