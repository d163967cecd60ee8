"""The offline classifier on EmotionStyle-v0's demonstration set, and the noise of its P(target), by scoring option.

Three measurements, each for every scoring option of :data:`OPTIONS`:

1. **Agreement with the intended emotion** on the embedded demonstrations (210 replies, 7
   emotions × 30, written to show the emotion without naming it:
   ``affectgym/data/style_demonstrations``): top-1 accuracy with a 95% Wilson interval,
   per-emotion recall, the macro mean, mean P(target), the discrimination (how far P(e) rises
   when e is intended) and the confusion matrix. This is the classifier's validation on the
   task's own kind of text. Beside it, VADER's valence sign against the intended emotion's (a
   second scorer no reward reads) and the replies' lengths in the policy's tokens.
2. **Noise over paraphrases**: :data:`PARAPHRASE_SETS`, 12 sets of 4 paraphrases written for
   this benchmark, each set one content said four ways with one intended emotion. Per set, the
   standard deviation of P(intended) over its paraphrases (the mean over sets is reported) and
   whether the top label flips between paraphrases (sets with more than one top label).
3. **Noise over samples**: the committed base-model samples
   (``benchmarks/results/emotion_style_headroom_samples.jsonl``: 64 train prompts × 8 replies
   of SmolLM2-135M at temperature 1), rescored; per prompt, the SD and the range of P(target)
   among its 8 replies. This spread is what a GRPO group sees; part of it is real difference
   between the replies, so it is a ceiling on the scorer's noise, not the noise itself.

The options score the visible reply with ``nade`` (:class:`~affectgym.rewards.classifier.EmotionClassifier`):

* ``text@0.25``: the whole reply at the EmotionStyle recipes' calibrated neutral weight (the
  reward the recipes train on); ``text@1``: the same at the default weight 1;
* ``sentences@0.25``: the mean of the reply's sentences' distributions
  (``EmotionClassifier(..., aggregate="sentences")``), each sentence scored alone;
* ``text+sentences@0.25``: the mean of the two above (two views of one reply);
* ``two-weights``: the mean of ``text@0.25`` and ``text@1``;
* ``vader-valence@0.25``: ``text@0.25`` with each emotion's probability times
  ``1 + sign(emotion) × compound`` (VADER's compound score in [-1, 1]; sign +1 joy, -1 anger,
  disgust, fear, sadness, 0 neutral and surprise), renormalised. Measured for the question
  only: a reward that reads VADER leaves the style benchmark's VADER valence agreement no longer a
  check that no reward reads.

Results to ``benchmarks/results/style_demonstrations.json`` (every demonstration's
distribution under the recipes' option included). About a minute on one core.

Usage::

    python benchmarks/bench_style_demos.py
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_FILE = ROOT / "benchmarks" / "results" / "style_demonstrations.json"
SAMPLES_FILE = ROOT / "benchmarks" / "results" / "emotion_style_headroom_samples.jsonl"
CALIBRATED = 0.25  # affectgym.train.recipes.CALIBRATED_NEUTRAL_WEIGHT
POLICY_TOKENS = 40  # affectgym.train.recipes.STYLE_MAX_NEW_TOKENS

#: One content said four ways, with the emotion every paraphrase intends (written for this benchmark).
PARAPHRASE_SETS: tuple[tuple[str, tuple[str, str, str, str]], ...] = (
    ("anger", (
        "I have asked three times for the refund and you keep ignoring me. Fix it today.",
        "Three requests for my refund, and still nothing from you. Sort it out today.",
        "This is the third time I have asked for my money back, and you keep brushing me off. Get it done today.",
        "You have ignored my refund request three times now. I expect it fixed today.",
    )),
    ("anger", (
        "It is two in the morning and your music is still shaking my walls. Turn it off, now.",
        "Your music is rattling my walls at two in the morning. Switch it off right now.",
        "Two a.m., and your speakers are still pounding through my wall. Turn it down this instant.",
        "It's 2 am and I can hear every beat of your music through the wall. Shut it off now.",
    )),
    ("disgust", (
        "The fridge smells of rotten eggs and there is green slime on the bottom shelf.",
        "Something in the fridge has rotted; the bottom shelf is covered in green slime and it stinks of eggs.",
        "Open the fridge and the reek of bad eggs hits you, with green slime pooled on the lowest shelf.",
        "The bottom shelf of the fridge is coated in green slime, and the whole thing stinks of rotten eggs.",
    )),
    ("disgust", (
        "There was a long hair in my soup and the spoon was greasy.",
        "My soup came with a long hair floating in it and a greasy spoon beside it.",
        "I found a long hair in the soup, and the spoon was slick with grease.",
        "A hair was floating in my soup, and the spoon they gave me was coated in grease.",
    )),
    ("fear", (
        "I heard footsteps downstairs, but I live alone and the door was locked.",
        "Someone was walking around downstairs, and I live by myself with the door locked.",
        "There were footsteps on the floor below, though I live alone and had locked the door.",
        "I live alone and the door was locked, yet I could hear footsteps downstairs.",
    )),
    ("fear", (
        "The doctor wants to see me tomorrow about the scan, and she would not say why on the phone.",
        "My doctor asked me to come in tomorrow to discuss the scan and refused to explain over the phone.",
        "Tomorrow I have to see the doctor about my scan results; she wouldn't tell me anything on the phone.",
        "The clinic called: the doctor needs to talk to me about the scan tomorrow, and they wouldn't say why.",
    )),
    ("joy", (
        "I got the job! I start on Monday and I cannot wait.",
        "They offered me the job, and I start Monday. I can't wait!",
        "The job is mine! Monday is my first day, and I'm counting the hours.",
        "I start my new job on Monday; they said yes! I can hardly wait.",
    )),
    ("joy", (
        "We spent the whole day at the beach with friends, swimming and laughing until sunset.",
        "A whole day on the beach with friends: swimming, laughing, staying until the sun went down.",
        "With friends at the beach all day, we swam and laughed right up to sunset.",
        "We swam and laughed with our friends on the beach from morning until sunset.",
    )),
    ("sadness", (
        "Our old dog died last night, and the house feels empty without him.",
        "Last night our old dog passed away, and the house is so empty now.",
        "The house feels empty; our old dog died during the night.",
        "We lost our old dog last night, and without him the house is empty.",
    )),
    ("sadness", (
        "My best friend moved across the world, and now I eat lunch alone every day.",
        "Since my best friend moved to the other side of the world, I have lunch by myself every day.",
        "Every day I eat lunch alone now that my best friend lives on the other side of the world.",
        "My best friend has moved abroad, far away, so lunch is just me, every day.",
    )),
    ("surprise", (
        "Wait, you are telling me the shop on the corner was a bank vault a hundred years ago? I had no idea!",
        "The corner shop used to be a bank vault a century ago? Really? I never knew that!",
        "Hold on, a hundred years ago that corner shop was a bank vault? Who knew!",
        "No way, the little shop on the corner was once a bank vault? That's news to me!",
    )),
    ("neutral", (
        "The meeting is on Tuesday at ten in room four. Please bring the quarterly figures.",
        "We meet on Tuesday at 10 a.m. in room 4; bring the quarterly figures, please.",
        "Tuesday's meeting starts at ten in room four. The quarterly figures are needed.",
        "Please bring the quarterly figures to room four on Tuesday at ten for the meeting.",
    )),
)

Distribution = dict[str, float]
ScoreFn = Callable[[Sequence[str]], list[Distribution]]


def _mean_distributions(*columns: list[Distribution]) -> list[Distribution]:
    return [{label: statistics.fmean(d[label] for d in row) for label in row[0]} for row in zip(*columns, strict=True)]


def scoring_options() -> dict[str, ScoreFn]:
    """The options compared, by name (see the module docstring)."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    from affectgym.eval.style_metrics import EMOTION_VALENCE
    from affectgym.rewards.classifier import EmotionClassifier

    text_calibrated = EmotionClassifier("nade", neutral_weight=CALIBRATED)
    text_default = EmotionClassifier("nade")
    sentences = EmotionClassifier("nade", neutral_weight=CALIBRATED, aggregate="sentences")
    vader = SentimentIntensityAnalyzer()

    def valence_adjusted(texts: Sequence[str]) -> list[Distribution]:
        adjusted = []
        for text, distribution in zip(texts, text_calibrated.scores(list(texts)), strict=True):
            compound = vader.polarity_scores(text)["compound"]
            weights = {label: p * (1 + EMOTION_VALENCE.get(label, 0) * compound) for label, p in distribution.items()}
            total = sum(weights.values())
            adjusted.append({label: w / total for label, w in weights.items()})
        return adjusted

    return {
        "text@0.25": lambda texts: text_calibrated.scores(list(texts)),
        "text@1": lambda texts: text_default.scores(list(texts)),
        "sentences@0.25": lambda texts: sentences.scores(list(texts)),
        "text+sentences@0.25": lambda texts: _mean_distributions(text_calibrated.scores(list(texts)),
                                                                 sentences.scores(list(texts))),
        "two-weights": lambda texts: _mean_distributions(text_calibrated.scores(list(texts)),
                                                         text_default.scores(list(texts))),
        "vader-valence@0.25": valence_adjusted,
    }


def top(distribution: Distribution) -> str:
    """The label of highest probability."""
    return max(distribution, key=distribution.get)


def agreement(distributions: Sequence[Distribution], intended: Sequence[str]) -> dict[str, object]:
    """Top-1 accuracy (95% Wilson interval), per-emotion recall, macro recall, mean P(intended), confusion."""
    from scipy.stats import binomtest

    from affectgym.emotions import EMOTIONS

    hits = [top(d) == label for d, label in zip(distributions, intended, strict=True)]
    wilson = binomtest(sum(hits), len(hits)).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = float(wilson.low), float(wilson.high)
    recall = {label: statistics.fmean(hit for hit, want in zip(hits, intended, strict=True) if want == label)
              for label in EMOTIONS if label in intended}
    confusion = {label: {predicted: 0 for predicted in EMOTIONS} for label in EMOTIONS if label in intended}
    for d, label in zip(distributions, intended, strict=True):
        confusion[label][top(d)] += 1
    return {
        "accuracy": statistics.fmean(hits), "accuracy_ci95": [low, high], "macro_recall": statistics.fmean(recall.values()),
        "recall": recall, "target_probability": statistics.fmean(d[label] for d, label in zip(distributions, intended, strict=True)),
        "discrimination": discrimination(distributions, intended), "confusion": confusion,
    }


def discrimination(distributions: Sequence[Distribution], intended: Sequence[str]) -> float:
    """How far P(e) rises when e is the intended emotion: the mean over emotions of
    mean P(e) on replies intending e minus mean P(e) on replies intending another (0: blind)."""
    gaps = []
    for label in sorted(set(intended)):
        mine = [d[label] for d, want in zip(distributions, intended, strict=True) if want == label]
        others = [d[label] for d, want in zip(distributions, intended, strict=True) if want != label]
        gaps.append(statistics.fmean(mine) - statistics.fmean(others))
    return statistics.fmean(gaps)


def paired_against(option: Sequence[float], baseline: Sequence[float], groups: Sequence[str]) -> dict[str, Any]:
    """``option - baseline`` on the same items, with the 95% bootstrap interval over the items' groups
    (:func:`~affectgym.eval.stats.paired_difference`; a demonstration's group is its instruction)."""
    from affectgym.eval.stats import Observation, paired_difference

    def arm(values: Sequence[float]) -> list[Observation]:
        return [Observation(0, index, group, float(value)) for index, (group, value) in enumerate(zip(groups, values, strict=True))]

    return paired_difference(arm(baseline), arm(option)).to_dict()


def paraphrase_noise(score: ScoreFn) -> dict[str, object]:
    """Mean within-set SD of P(intended), sets whose top label flips, and top-1 accuracy over every paraphrase."""
    texts = [text for _, group in PARAPHRASE_SETS for text in group]
    found = iter(score(texts))
    sds, flips, hits = [], 0, []
    for label, group in PARAPHRASE_SETS:
        distributions = [next(found) for _ in group]
        sds.append(statistics.pstdev(d[label] for d in distributions))
        flips += len({top(d) for d in distributions}) > 1
        hits += [top(d) == label for d in distributions]
    return {"sets": len(PARAPHRASE_SETS), "mean_sd": statistics.fmean(sds), "max_sd": max(sds), "sds": sds,
            "top_label_flips": flips, "accuracy": statistics.fmean(hits)}


def sample_noise(score: ScoreFn, samples: Sequence[dict[str, str]]) -> dict[str, object]:
    """Per prompt, the SD and range of P(target) over its replies; their means, and top-1 accuracy over all."""
    by_prompt: dict[str, list[dict[str, str]]] = {}
    for sample in samples:
        by_prompt.setdefault(sample["scenario_id"], []).append(sample)
    distributions = iter(score([sample["reply"] or "" for sample in samples]))
    scored = {s_id: [] for s_id in by_prompt}
    for sample in samples:
        scored[sample["scenario_id"]].append(next(distributions)[sample["target"]])
    sds = [statistics.pstdev(ps) for ps in scored.values()]
    return {
        "prompts": len(by_prompt), "samples_per_prompt": max(len(group) for group in by_prompt.values()),
        "mean_sd": statistics.fmean(sds), "sds": sds, "prompt_ids": list(scored),
        "mean_range": statistics.fmean(max(ps) - min(ps) for ps in scored.values()),
        "mean_target_probability": statistics.fmean(p for ps in scored.values() for p in ps),
    }


def valence_agreement(replies: Sequence[str], intended: Sequence[str]) -> dict[str, float]:
    """VADER's valence sign against the intended emotion's, overall and per emotion with a clear valence
    (:func:`~affectgym.eval.style_metrics.valence_agrees`: a second scorer that no reward reads)."""
    from affectgym.eval.style_metrics import valence_agrees

    agreeing: dict[str, list[bool]] = {}
    for reply, label in zip(replies, intended, strict=True):
        agrees = valence_agrees(reply, label)
        if agrees is not None:
            agreeing.setdefault(label, []).append(agrees)
    overall = [a for values in agreeing.values() for a in values]
    return {"all": statistics.fmean(overall), **{label: statistics.fmean(values) for label, values in sorted(agreeing.items())}}


def sentence_counts(replies: Sequence[str]) -> dict[str, int]:
    """How many replies have 1, 2, 3... sentences (by the classifier's own splitting)."""
    from affectgym.rewards.classifier import split_sentences

    counts: dict[str, int] = {}
    for reply in replies:
        n = str(len(split_sentences(reply)))
        counts[n] = counts.get(n, 0) + 1
    return dict(sorted(counts.items()))


def policy_token_lengths(replies: Sequence[str]) -> dict[str, float] | None:
    """Token counts of the replies under the SmolLM2 policy's tokenizer (``None`` when it cannot load)."""
    try:
        from transformers import AutoTokenizer

        from affectgym.models import resolve_model

        tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    except (ImportError, OSError) as error:
        print(f"(token lengths skipped: {error})")
        return None
    lengths = [len(tokenizer(reply)["input_ids"]) for reply in replies]
    return {"mean": statistics.fmean(lengths), "max": max(lengths), "budget": POLICY_TOKENS}


def main() -> None:
    from affectgym.data.style_demonstrations import load_style_demonstrations

    demos = load_style_demonstrations()
    replies, intended = [d.reply for d in demos], [d.emotion for d in demos]
    samples = [json.loads(line) for line in SAMPLES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    options = scoring_options()
    table, hits = {}, {}
    for name, score in options.items():
        distributions = score(replies)
        hits[name] = [float(top(d) == label) for d, label in zip(distributions, intended, strict=True)]
        table[name] = {"demonstrations": agreement(distributions, intended), "paraphrases": paraphrase_noise(score),
                       "samples": sample_noise(score, samples)}
        row = table[name]
        # Signal over noise: how far P(e) separates the intended emotion, per unit of its spread over paraphrases.
        row["paraphrases"]["discrimination_per_sd"] = row["demonstrations"]["discrimination"] / row["paraphrases"]["mean_sd"]
    instructions = [d.instruction_id for d in demos]
    sets = [f"set{index}" for index in range(len(PARAPHRASE_SETS))]
    prompts = [prompt.partition(":")[0] for prompt in table["text@0.25"]["samples"]["prompt_ids"]]
    for name, row in table.items():  # each option against the recipes' reward, paired
        row["vs_text@0.25"] = {
            "accuracy": paired_against(hits[name], hits["text@0.25"], instructions),
            "paraphrase_sd": paired_against(row["paraphrases"]["sds"], table["text@0.25"]["paraphrases"]["sds"], sets),
            "sample_sd": paired_against(row["samples"]["sds"], table["text@0.25"]["samples"]["sds"], prompts),
        }
    recipes = options["text@0.25"](replies)
    result = {
        "demonstrations": len(demos), "chance": 1 / 7, "paraphrase_sets": [[label, list(group)] for label, group in PARAPHRASE_SETS],
        "samples_file": SAMPLES_FILE.relative_to(ROOT).as_posix(), "sentences_per_demonstration": sentence_counts(replies),
        "policy_tokens": policy_token_lengths(replies), "vader_valence_agreement": valence_agreement(replies, intended),
        "options": table,
        "per_demonstration_text@0.25": [
            {"scenario_id": d.scenario_id, "emotion": d.emotion, "top": top(dist), "target_probability": dist[d.emotion],
             "distribution": {label: round(p, 4) for label, p in dist.items()}}
            for d, dist in zip(demos, recipes, strict=True)
        ],
    }
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"nade on {len(demos)} demonstrations (7 x 30; chance 0.143), {len(PARAPHRASE_SETS)} paraphrase sets of 4, "
          f"{table['text@0.25']['samples']['prompts']} prompts x 8 base-model samples")
    print(f"{'option':<22}{'acc (95% CI)':>20}{'P(tgt)':>8}{'discr.':>8}{'para SD':>9}{'discr/SD':>9}{'flips':>7}"
          f"{'para acc':>9}{'sample SD':>10}{'range':>7}")
    for name, row in table.items():
        demo, para, sample = row["demonstrations"], row["paraphrases"], row["samples"]
        low, high = demo["accuracy_ci95"]
        print(f"{name:<22}{demo['accuracy']:>8.3f} ({low:.2f}-{high:.2f}){demo['target_probability']:>8.3f}"
              f"{demo['discrimination']:>8.3f}{para['mean_sd']:>9.3f}{para['discrimination_per_sd']:>9.2f}"
              f"{para['top_label_flips']:>4d}/12{para['accuracy']:>9.3f}{sample['mean_sd']:>10.3f}{sample['mean_range']:>7.3f}")
    print("paired against text@0.25 (95% bootstrap CI): accuracy on the demonstrations, SD over paraphrases, SD over samples")
    for name, row in table.items():
        if name != "text@0.25":
            print(f"  {name:<20}" + "  ".join(f"{key} {d['mean']:+.3f} ({d['ci95_low']:+.3f} to {d['ci95_high']:+.3f})"
                                             for key, d in row["vs_text@0.25"].items()))
    valence = result["vader_valence_agreement"]
    print("VADER valence agrees with the intended emotion's sign on " + ", ".join(f"{k} {v:.2f}" for k, v in valence.items()))
    for name in ("text@0.25", "sentences@0.25"):
        recall = table[name]["demonstrations"]["recall"]
        print(f"recall per emotion, {name}: " + ", ".join(f"{label} {value:.2f}" for label, value in recall.items()))


if __name__ == "__main__":
    main()
