"""Specification of the emotion classifier scorer (tiny random models, real nade)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tiny_emotion_model import save_random_emotion_model

from affectgym.emotions import EMOTIONS
from affectgym.rewards.classifier import (
    EmotionClassifier,
    default_precision,
    plutchik_to_basic,
)

TEXTS = [
    "why is this traffic light taking so long to change",
    "the food smelled rotten",
    "",
    "we won the game and everyone cheered in the street " * 3,
    "wait what",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_emotion_model(
        tmp_path_factory.mktemp("tiny-emotion"), max_position_embeddings=34
    )


def _assert_distribution(scores: dict[str, float]) -> None:
    assert tuple(scores) == EMOTIONS
    assert all(0.0 <= p <= 1.0 for p in scores.values())
    assert math.isclose(sum(scores.values()), 1.0, abs_tol=1e-6)


def test_transformers_backend_gives_a_distribution_over_the_seven_labels(tiny_model: Path) -> None:
    scores = EmotionClassifier(model=tiny_model, precision="fp32").scores(TEXTS)
    assert len(scores) == len(TEXTS)
    for distribution in scores:
        _assert_distribution(distribution)
    assert len({round(s["joy"], 6) for s in scores}) > 1, "different texts should score differently"


def test_length_bucketing_gives_the_same_scores_as_one_text_at_a_time(tiny_model: Path) -> None:
    batched = EmotionClassifier(model=tiny_model, precision="fp32", batch_size=2).scores(TEXTS)
    single = [
        EmotionClassifier(model=tiny_model, precision="fp32", batch_size=1).scores([t])[0]
        for t in TEXTS
    ]
    for a, b in zip(batched, single, strict=True):
        assert all(math.isclose(a[k], b[k], abs_tol=1e-5) for k in EMOTIONS)


def test_reasoning_is_removed_before_scoring(tiny_model: Path) -> None:
    classifier = EmotionClassifier(model=tiny_model, precision="fp32")
    with_think, plain = classifier.scores(
        ["<think>i am furious and disgusted</think>wait what", "wait what"]
    )
    assert with_think == plain


def test_texts_longer_than_the_model_limit_are_truncated(tiny_model: Path) -> None:
    classifier = EmotionClassifier(model=tiny_model, precision="fp32")
    long_text = "the report is due on friday at noon " * 50  # far beyond 32 positions
    (scores,) = classifier.scores([long_text])
    _assert_distribution(scores)
    (cut,) = EmotionClassifier(model=tiny_model, precision="fp32", max_length=8).scores([long_text])
    (prefix,) = classifier.scores(["the report is due on friday"])  # 6 words + <s> </s>
    assert all(math.isclose(cut[k], prefix[k], abs_tol=1e-5) for k in EMOTIONS)


def test_the_model_is_loaded_once_and_shared_by_instances(tiny_model: Path) -> None:
    first = EmotionClassifier(model=tiny_model, precision="fp32")
    second = EmotionClassifier(model=tiny_model, precision="fp32", batch_size=4)
    assert first._loaded()[1] is second._loaded()[1]
    assert (
        EmotionClassifier(model=tiny_model, precision="bf16")._loaded()[1] is not first._loaded()[1]
    )


@pytest.mark.parametrize(("precision", "tolerance"), [("bf16", 0.01), ("int8-dynamic", 0.05)])
def test_lower_precisions_stay_close_to_fp32(
    tiny_model: Path, precision: str, tolerance: float
) -> None:
    targets = [EMOTIONS[i % 7] for i in range(len(TEXTS))]
    reference = EmotionClassifier(model=tiny_model, precision="fp32").target_probability(
        TEXTS, targets
    )
    lower = EmotionClassifier(model=tiny_model, precision=precision).target_probability(
        TEXTS, targets
    )
    assert max(abs(a - b) for a, b in zip(reference, lower, strict=True)) <= tolerance


def test_label_names_come_from_the_model_config(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    directory = save_random_emotion_model(tmp_path / "m", max_position_embeddings=34)
    model = AutoModelForSequenceClassification.from_pretrained(directory)
    spellings = ["ANGRY", "disgust", "fear", "happiness", "neutral", "sad", "surprise"]
    order = [6, 5, 4, 3, 2, 1, 0]  # columns in reverse order, dataset spellings
    model.config.id2label = {i: spellings[j] for i, j in enumerate(order)}
    model.config.label2id = {name: i for i, name in model.config.id2label.items()}
    model.save_pretrained(directory)

    text = "we won the game"
    tokenizer = AutoTokenizer.from_pretrained(directory)
    with torch.inference_mode():
        expected = torch.softmax(model(**tokenizer([text], return_tensors="pt")).logits, -1)[0]
    scores = EmotionClassifier(model=directory, precision="fp32").scores([text])[0]
    for column, label_index in enumerate(order):
        assert math.isclose(scores[EMOTIONS[label_index]], float(expected[column]), abs_tol=1e-5)


def test_a_model_without_emotion_labels_is_refused(tmp_path: Path) -> None:
    from transformers import AutoModelForSequenceClassification

    directory = save_random_emotion_model(tmp_path / "m", max_position_embeddings=34)
    model = AutoModelForSequenceClassification.from_pretrained(directory)
    model.config.id2label = {i: f"LABEL_{i}" for i in range(7)}
    model.config.label2id = {f"LABEL_{i}": i for i in range(7)}
    model.save_pretrained(directory)
    with pytest.raises(ValueError, match="none of which is one of the seven"):
        EmotionClassifier(model=directory, precision="fp32").scores(["hi"])


def test_target_probability_reads_each_texts_target(tiny_model: Path) -> None:
    classifier = EmotionClassifier(model=tiny_model, precision="fp32")
    scores = classifier.scores(TEXTS[:2])
    assert classifier.target_probability(TEXTS[:2], ["Angry", "fear"]) == [
        scores[0]["anger"],
        scores[1]["fear"],
    ]


def test_open_vocabulary_targets_are_refused_with_the_accepted_labels(tiny_model: Path) -> None:
    classifier = EmotionClassifier(model=tiny_model, precision="fp32")
    with pytest.raises(ValueError, match="condescending.*not one of"):
        classifier.target_probability(["hi"], ["condescending"])
    with pytest.raises(ValueError, match="one target per text"):
        classifier.target_probability(["hi", "ho"], ["joy"])


def test_a_callable_backend_is_mapped_onto_the_seven_labels() -> None:
    def score(texts: list[str]) -> list[dict[str, float]]:
        return [{"HAPPINESS": 2.0, "angry": 1.0, "pride": 5.0, "neutral": 1.0} for _ in texts]

    (scores,) = EmotionClassifier(score).scores(["yay"])
    _assert_distribution(scores)
    assert scores["joy"] == 0.5 and scores["anger"] == 0.25 and scores["neutral"] == 0.25


def test_a_callable_returning_the_wrong_number_of_results_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 0 results for 1 texts"):
        EmotionClassifier(lambda texts: []).scores(["hi"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "onnx"}, "unknown emotion classifier backend"),
        ({"precision": "fp8"}, "unknown precision"),
        ({"precision": "int8-dynamic", "device": "cuda"}, "cpu. only"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EmotionClassifier(**kwargs)


def test_default_precision_is_chosen_per_device() -> None:
    assert default_precision("cuda:0") == "bf16"
    assert default_precision("mps") == "fp32"
    assert default_precision("cpu") in ("bf16", "fp32")


def test_plutchik_trust_and_anticipation_do_not_count_as_joy() -> None:
    only_trust = plutchik_to_basic({"trust": 0.9, "anticipation": 0.8})
    assert only_trust["neutral"] == 1.0


def test_nade_backend_scores_offline() -> None:
    pytest.importorskip("nade")
    classifier = EmotionClassifier("nade")
    texts = [
        "I am so happy today, what a wonderful surprise party!",
        "",
        "line one\nline two",
        "This is disgusting.",
    ]
    scores = classifier.scores(texts)
    for distribution in scores:
        _assert_distribution(distribution)
    assert max(scores[0], key=scores[0].get) == "joy"
    assert scores[3]["disgust"] > scores[0]["disgust"]


def test_a_lower_neutral_weight_lets_a_mildly_rated_emotion_outrank_neutral() -> None:
    mild = {"sadness": 0.3, "joy": 0.1}
    at_one, calibrated = plutchik_to_basic(mild), plutchik_to_basic(mild, neutral_weight=0.25)
    assert max(at_one, key=at_one.get) == "neutral" and max(calibrated, key=calibrated.get) == "sadness"
    assert math.isclose(sum(calibrated.values()), 1.0)
    flat = plutchik_to_basic({}, neutral_weight=0.25)
    assert flat["neutral"] == 1.0, "a text rated for no emotion stays neutral at any weight"


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5, float("nan"), True, "0.5"])
def test_a_neutral_weight_outside_zero_to_one_is_refused_naming_it(weight: object) -> None:
    with pytest.raises(ValueError, match=r"neutral_weight must be a number in \(0, 1\], got"):
        EmotionClassifier("nade", neutral_weight=weight)  # type: ignore[arg-type]


def test_the_neutral_weight_reaches_nade_through_the_envs_classifier_options_and_is_recorded() -> None:
    pytest.importorskip("nade")
    import affectgym
    from affectgym.rewards.factories import make_classifier
    from affectgym.train.recipes import CALIBRATED_NEUTRAL_WEIGHT, emotion_style_grpo_config

    assert make_classifier("nade", options={"neutral_weight": 0.5}).neutral_weight == 0.5
    config = emotion_style_grpo_config("runs/unused", neutral_weight=CALIBRATED_NEUTRAL_WEIGHT)
    assert config.env_kwargs["classifier_options"] == {"neutral_weight": CALIBRATED_NEUTRAL_WEIGHT}
    assert "classifier_options" not in emotion_style_grpo_config("runs/unused").env_kwargs
    env = affectgym.make("affectgym/EmotionStyle-v0", **config.env_kwargs).unwrapped
    assert env.scorers["classifier"] == f"nade:neutral_weight={CALIBRATED_NEUTRAL_WEIGHT:g}"
    text = "We finally won the cup and the whole street was singing all night!"
    calibrated, plain = env.classifier.scores([text])[0], EmotionClassifier("nade").scores([text])[0]
    assert calibrated["neutral"] < plain["neutral"] and calibrated["joy"] > plain["joy"]


def test_the_sentences_aggregate_averages_each_sentence_scored_alone_in_one_backend_call() -> None:
    calls: list[list[str]] = []

    def by_mark(texts: list[str]) -> list[dict[str, float]]:
        calls.append(list(texts))
        return [{"surprise": 1.0} if text.endswith("?") else {"sadness": 1.0} for text in texts]

    whole, by_sentence = EmotionClassifier(by_mark), EmotionClassifier(by_mark, aggregate="sentences")
    texts = ["Since when? It rained. It is over.", "<think>plan</think>Really?", ""]
    assert whole.aggregate == "text" and [d["surprise"] for d in whole.scores(texts)] == [0.0, 1.0, 0.0]
    scores = by_sentence.scores(texts)
    assert [round(d["surprise"], 3) for d in scores] == [0.333, 1.0, 0.0]
    assert calls[-1] == ["Since when?", "It rained.", "It is over.", "Really?", ""]
    for distribution in scores:
        _assert_distribution(distribution)


def test_an_unknown_aggregate_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown aggregate 'mean'; use one of \('text', 'sentences'\)"):
        EmotionClassifier("nade", aggregate="mean")


def test_the_sentences_aggregate_reaches_nade_through_the_envs_classifier_options() -> None:
    pytest.importorskip("nade")
    import affectgym

    env = affectgym.make("affectgym/EmotionStyle-v0", classifier="nade",
                         classifier_options={"neutral_weight": 0.25, "aggregate": "sentences"}).unwrapped
    said = ["The number nine bus is late again this morning.", "Who plans these useless city timetables?",
            "I want every penny of my money back today!"]
    reply = " ".join(said)
    sentences = EmotionClassifier("nade", neutral_weight=0.25).scores(said)
    assert env.classifier.aggregate == "sentences"
    assert math.isclose(env.distributions([reply])[0]["anger"], sum(d["anger"] for d in sentences) / 3)


def test_an_env_scoring_each_sentence_alone_records_it_in_its_scorer_name() -> None:
    import affectgym

    options = {"neutral_weight": 0.25, "aggregate": "sentences"}
    env = affectgym.make("affectgym/EmotionStyle-v0", classifier="nade", classifier_options=options).unwrapped
    assert env.scorers["classifier"] == "nade:neutral_weight=0.25,aggregate=sentences"
