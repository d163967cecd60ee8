"""Held-out splits by group, the text-only memoriser check, and label-free clip ids."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data.speech_sources import DatasetError
from affectgym.envs.leakage import TextMemoriser, check_leakage
from affectgym.envs.sarcasm import SarcasmEnv

pytest.importorskip("sklearn")


def _lines(env):
    return {" ".join(c.transcript.lower().split()) for c in env.scenarios}


def test_no_embedded_sarcasm_line_is_heard_in_two_of_train_validation_and_eval():
    train, validation, evaluation = (SarcasmEnv(split=split) for split in ("train", "validation", "eval"))
    assert not _lines(train) & _lines(evaluation)
    assert not _lines(train) & _lines(validation) and not _lines(validation) & _lines(evaluation)
    assert len(train.scenarios) + len(validation.scenarios) + len(evaluation.scenarios) == len(train.all_clips)


def test_eval_keeps_pivot_pairs_whole_so_text_alone_cannot_beat_chance_there():
    evaluation = SarcasmEnv(split="eval")
    pivots = [c for c in evaluation.scenarios if c.pivot]
    by_line: dict[str, set[str]] = {}
    for clip in pivots:
        by_line.setdefault(clip.transcript, set()).add(clip.label)
    assert by_line and all(labels == {"sarcastic", "sincere"} for labels in by_line.values())


@pytest.mark.parametrize("env_id", ["affectgym/Sarcasm-v0", "affectgym/SpeechEmotion-v0"])
def test_leakage_check_passes_on_the_embedded_line_grouped_splits(env_id):
    report = check_leakage(affectgym.make(env_id, split="train"), affectgym.make(env_id, split="eval"))
    assert report.passed, str(report)
    assert report.exact_twins == 0


def test_leakage_check_fails_on_a_clip_level_split_of_pivot_pairs():
    kwargs = {"group_by": "clip"}
    report = check_leakage(
        affectgym.make("affectgym/Sarcasm-v0", split="train", **kwargs),
        affectgym.make("affectgym/Sarcasm-v0", split="eval", **kwargs),
    )
    assert not report.passed
    assert report.accuracy_by_rule["flip"] > 0.7 and report.exact_twins > 0


def test_check_env_reports_the_leakage_check_and_flags_a_leaky_split():
    good = affectgym.check_env(affectgym.make("affectgym/Sarcasm-v0", split="eval"), fuzz_actions=20)
    eval_result, validation_result = good.leakage.split(" | ")
    assert eval_result.startswith("eval: ") and eval_result.endswith(": OK")
    assert validation_result.startswith("validation: ") and validation_result.endswith(": OK")
    leaky = affectgym.check_env(
        affectgym.make("affectgym/Sarcasm-v0", split="eval", group_by="clip"), fuzz_actions=20, raise_on_problem=False
    )
    assert any(problem.startswith("leakage (eval vs train):") and "LEAKY" in problem for problem in leaky.problems)


def test_check_env_says_why_it_skips_the_leakage_check_on_an_env_without_labels():
    report = affectgym.check_env(affectgym.make("affectgym/EmotionStyle-v0", classifier="nade"), fuzz_actions=20,
                                 raise_on_problem=False)
    assert report.leakage.startswith("skipped:")


def test_text_memoriser_flip_rule_needs_two_labels():
    with pytest.raises(ValueError, match="exactly two labels"):
        TextMemoriser(["a", "b", "c"], ["x", "y", "z"], rule="flip")


def _write_folder(root, names_by_label, f0_hz=(120.0, 260.0)):
    rate = 16_000
    t = np.arange(int(0.6 * rate)) / rate
    for (label, names), f0 in zip(names_by_label.items(), f0_hz, strict=True):
        (root / label).mkdir(parents=True, exist_ok=True)
        for k, name in enumerate(names):
            soundfile.write(root / label / f"{name}.wav", 0.3 * np.sin(2 * np.pi * (f0 + 7 * k) * t), rate)


def test_folder_clip_ids_depend_on_the_audio_not_on_label_or_file_name(tmp_path):
    _write_folder(tmp_path / "a", {"angry": ["take01"], "calm": ["take01"]})
    _write_folder(tmp_path / "b", {"angry": ["zz"], "calm": ["yy"]})
    ids_a = {c.label: c.id for c in affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path / "a"), split="all").unwrapped.scenarios}
    ids_b = {c.label: c.id for c in affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path / "b"), split="all").unwrapped.scenarios}
    assert ids_a == ids_b  # same audio, other names: same ids
    assert ids_a["angry"] != ids_a["calm"]  # same name, other audio: other ids


def test_group_by_file_keeps_each_group_on_one_side_and_names_missing_clips(tmp_path):
    names = {"angry": [f"s{k}_a" for k in range(10)], "calm": [f"s{k}_c" for k in range(10)]}
    _write_folder(tmp_path / "data", names)
    mapping = {f"{label}/{name}.wav": name.split("_")[0] for label, clip_names in names.items() for name in clip_names}
    groups_file = tmp_path / "speakers.json"
    groups_file.write_text(json.dumps(mapping))
    kwargs = {"data_dir": str(tmp_path / "data"), "group_by": str(groups_file)}
    evaluation = affectgym.make("affectgym/SpeechEmotion-v0", split="eval", **kwargs).unwrapped
    train = affectgym.make("affectgym/SpeechEmotion-v0", split="train", **kwargs).unwrapped
    speaker_of = {c.id: mapping[str(c.audio_path).split("data/")[-1]] for c in evaluation.all_clips}
    eval_speakers = {speaker_of[c.id] for c in evaluation.scenarios}
    assert eval_speakers and not eval_speakers & {speaker_of[c.id] for c in train.scenarios}
    groups_file.write_text(json.dumps(dict(list(mapping.items())[1:])))
    with pytest.raises(DatasetError, match="gives no group for 1 clip"):
        affectgym.make("affectgym/SpeechEmotion-v0", split="eval", **kwargs)


def test_unknown_group_by_names_the_accepted_values():
    with pytest.raises(DatasetError, match="transcript, speaker, group, clip"):
        SarcasmEnv(split="eval", group_by="voice")


def test_compact_flat_prompt_holds_the_line_and_one_delivery_line_and_wrong_answers_score_below_none():
    env = SarcasmEnv(split="eval", rubric="label", task_format={"answer": "word", "flat_prompt": "compact"})
    clip = next(c for c in env.scenarios if c.pivot)
    user = env.flat_prompt(clip)[1]["content"]
    assert clip.transcript in user and "Delivery vs" in user and "Pitch contour" not in user
    assert user.endswith("Is the line sarcastic or sincere? Answer with one word.")
    trace = env.flat_trace(clip)
    other = next(label for label in env.label_set if label != clip.label)
    assert env.score(clip, clip.label.capitalize() + ".", trace).total == pytest.approx(1.0)
    assert env.score(clip, f"I think it is {clip.label}", trace).total == pytest.approx(1.0)  # read leniently
    assert env.score(clip, other, trace).total == pytest.approx(-0.70 + 0.30)  # wrong scores below unanswered
    assert env.score(clip, None, trace).total == 0.0


def test_yes_no_answers_mean_the_first_label_or_the_other_and_need_two_labels():
    env = SarcasmEnv(split="eval", rubric="label", task_format="short-yesno")
    clip = next(c for c in env.scenarios if c.label == "sincere")
    trace = env.flat_trace(clip)
    assert env.flat_prompt(clip)[-1]["content"].endswith("Is the line sarcastic? Answer yes or no.")
    assert env.score(clip, "No.", trace).total == pytest.approx(1.0)
    assert env.score(clip, "Yes", trace).components["correctness"] == -1.0
    with pytest.raises(ValueError, match="needs exactly two labels"):
        affectgym.make("affectgym/SpeechEmotion-v0", task_format="yesno")
