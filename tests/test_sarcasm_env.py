"""affectgym/Sarcasm-v0 and affectgym/SpeechEmotion-v0 on the embedded corpora and MUStARD."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data.speech_sources import DatasetError
from affectgym.data.speech_splits import mustard_fold
from affectgym.envs.checker import check_env
from affectgym.envs.sarcasm import SPEAKER_INDEPENDENT, SarcasmEnv
from affectgym.envs.speech_emotion import SpeechEmotionEnv

MUSTARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "mustard"
needs_mustard = pytest.mark.skipif(
    not (MUSTARD / "sarcasm_data.json").exists(),
    reason=f"MUStARD annotations not found at {MUSTARD} (shared/data/mustard is only on dev machines)",
)


def call(name: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>'


def answer(label: str, confidence: float = 0.9) -> str:
    return f'<final>{{"label": "{label}", "confidence": {confidence}}}</final>'


@pytest.mark.parametrize("rubric", ["multi", "single"])
def test_sarcasm_env_passes_check_env_offline(rubric):
    report = check_env(affectgym.make("affectgym/Sarcasm-v0", split="all", rubric=rubric), max_scenarios=40)
    assert report.fuzzed_actions >= 2_000 and report.label_flip_scenarios == 40


def test_speech_emotion_env_passes_check_env_offline():
    report = check_env(affectgym.make("affectgym/SpeechEmotion-v0", split="eval"))
    assert report.canaries_checked > 0


def test_step_rewards_sum_to_rubric_total_even_beyond_the_parsimony_budget():
    env = SarcasmEnv(split="all")
    clip = env.scenarios[0]
    env.reset(options={"scenario_id": clip.id})
    tools = ["get_transcript", "get_prosody_features", "get_pitch_contour"] * 2
    rewards = [env.step(call(name))[1] for name in tools]
    assert rewards[:3] == [0.0, 0.0, 0.0]
    assert rewards[3] == pytest.approx(-0.15 * 0.4) and rewards[5] == pytest.approx(-0.15 * 0.6)
    observation, reward, *_ = env.step(call("get_transcript"))
    assert "tool budget of 6 calls is spent" in observation and reward == pytest.approx(-0.05)
    _, reward, terminated, _, info = env.step(answer(clip.label))
    rewards += [-0.05, reward]
    assert terminated and info["reward_components"]["parsimony"] == 0.0
    assert sum(rewards) == pytest.approx(info["episode_reward"])


def test_pivot_clip_without_audio_tool_gets_no_grounding_credit():
    env = SarcasmEnv(split="all")
    pivot = next(c for c in env.scenarios if c.pivot)
    env.reset(options={"scenario_id": pivot.id})
    env.step(call("get_transcript"))
    *_, info = env.step(answer(pivot.label))
    assert info["reward_components"]["grounding"] == 0.0
    env.reset(options={"scenario_id": pivot.id})
    env.step(call("get_pitch_contour"))
    *_, info = env.step(answer(pivot.label))
    assert info["reward_components"]["grounding"] == 1.0


def test_final_answer_is_read_from_final_tags_or_the_last_json_object():
    env = SarcasmEnv(split="all")
    clip = env.scenarios[0]
    for text in (answer(clip.label, 0.7), f'I hear it. {{"label": "{clip.label}", "confidence": 0.7}}'):
        env.reset(options={"scenario_id": clip.id})
        *_, terminated, _, info = env.step(text)
        assert terminated and info["outcome"]["correct"] and info["outcome"]["confidence"] == 0.7


def test_malformed_final_answer_explains_the_accepted_format():
    env = SarcasmEnv(split="all")
    env.reset(seed=0)
    observation, reward, terminated, *_ = env.step('<final>{"label": "ironic", "confidence": 0.5}</final>')
    assert not terminated and reward < 0
    assert "label must be one of ['sarcastic', 'sincere'], got 'ironic'" in observation


def test_tool_outputs_never_name_the_clip_or_its_label():
    env = SarcasmEnv(split="all")
    for clip in env.scenarios[:10]:
        env.reset(options={"scenario_id": clip.id})
        outputs = [env.step(call(n))[0] for n in ("get_transcript", "get_prosody_features", "get_pitch_contour")]
        text = "\n".join(outputs).lower()
        assert clip.id not in text and Path(clip.audio_path).stem not in text
        assert "sarcastic" not in text and "sincere" not in text


def test_train_and_eval_splits_are_disjoint_stable_and_class_balanced():
    train, evaluation = SarcasmEnv(split="train"), SarcasmEnv(split="eval")
    train_ids, eval_ids = set(train.scenario_ids), set(evaluation.scenario_ids)
    validation_ids = set(SarcasmEnv(split="validation").scenario_ids)
    assert not train_ids & eval_ids and len(train_ids | validation_ids | eval_ids) == len(train.all_clips)
    assert eval_ids == set(SarcasmEnv(split="eval").scenario_ids)
    labels = [c.label for c in evaluation.scenarios]
    assert labels.count("sarcastic") == labels.count("sincere")
    assert 0.15 <= len(eval_ids) / len(train.all_clips) <= 0.25


def test_unknown_arguments_fail_with_the_accepted_values():
    with pytest.raises(ValueError, match="accepted: 'train', 'validation', 'eval', 'all', or a ClipSplit"):
        SarcasmEnv(split="dev")
    with pytest.raises(ValueError, match="rubric must be a Rubric or one of multi, single, label"):
        SarcasmEnv(rubric="dense")
    with pytest.raises(ValueError, match="task_format answer must be one of json, word, yesno"):
        SarcasmEnv(task_format={"answer": "dense"})
    with pytest.raises(DatasetError, match="data_dir"):
        SarcasmEnv(dataset="mustard")


def test_hub_source_fails_offline_with_one_line_naming_data_dir(monkeypatch):
    monkeypatch.setattr("affectgym.data.speech_sources.MUSTARD_JSON_URL", "http://127.0.0.1:9/sarcasm_data.json")
    with pytest.raises(DatasetError, match="data_dir=DIR") as error:
        SarcasmEnv(dataset="hub")
    assert "\n" not in str(error.value)


def test_speech_emotion_env_loads_a_plain_label_folder(tmp_path):
    rate = 16_000
    t = np.arange(int(0.6 * rate)) / rate
    for label, f0 in (("calm", 120.0), ("excited", 260.0)):
        for take in range(2):
            (tmp_path / label).mkdir(exist_ok=True)
            soundfile.write(tmp_path / label / f"take{take}.wav", 0.3 * np.sin(2 * np.pi * f0 * t), rate)
        (tmp_path / label / "take0.txt").write_text("We are leaving now.")
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path), split="all")
    base = env.unwrapped
    assert base.label_set == ("calm", "excited")
    assert all(c.id.startswith("clip-") and c.label not in c.id for c in base.scenarios)
    clip = next(c for c in base.scenarios if c.label == "excited" and c.transcript)
    env.reset(options={"scenario_id": clip.id})
    assert "We are leaving now." in env.step(call("get_transcript"))[0]
    assert "Pitch: mean=260Hz" in env.step(call("get_prosody_features"))[0]


@needs_mustard
def test_mustard_folds_and_speaker_independent_split_match_the_published_setup():
    kwargs = {"dataset": "mustard", "data_dir": str(MUSTARD)}
    folds = json.loads((MUSTARD / "split_indices.json").read_text())
    for k in (1, 5):
        test = SarcasmEnv(split=mustard_fold(k), **kwargs)
        train = SarcasmEnv(split=mustard_fold(k, part="train"), **kwargs)
        assert len(test.scenarios) == len(folds[k - 1]["test"]) and not set(test.scenario_ids) & set(train.scenario_ids)
    independent = SarcasmEnv(split=SPEAKER_INDEPENDENT, **kwargs)
    assert {c.show for c in independent.scenarios} == {"FRIENDS"} and len(independent.scenarios) == 356
    rest = SarcasmEnv(split=SPEAKER_INDEPENDENT.with_part("train"), **kwargs)
    assert "FRIENDS" not in {c.show for c in rest.scenarios} and len(rest.scenarios) == len(rest.all_clips) - 356


@needs_mustard
def test_mustard_clip_without_audio_says_so_plainly_and_passes_check_env():
    env = SarcasmEnv(dataset="mustard", data_dir=str(MUSTARD), split=mustard_fold(1))
    env.reset(seed=0)
    assert env.step(call("get_prosody_features"))[0].startswith("No audio for this clip")
    check_env(env, fuzz_actions=500, max_scenarios=20)


def test_speech_emotion_reference_answer_beats_every_canary_for_each_label():
    env = SpeechEmotionEnv(split="all")
    for label in env.label_set:
        clip = next(c for c in env.scenarios if c.label == label)
        reference = env.score(clip, *env.reference_answer(clip)).total
        assert all(env.score(clip, text, trace).total < reference for text, trace in env.canaries(clip).values())
