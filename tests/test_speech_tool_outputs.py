"""What the speech envs' tools say about a user's folder dataset: where norms come from, missing transcripts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

import affectgym


def call(name: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>'


@pytest.fixture
def folder_env(tmp_path):
    rate = 16_000
    t = np.arange(int(0.6 * rate)) / rate
    root = tmp_path / "my_corpus"
    for label, f0 in (("calm", 120.0), ("excited", 260.0)):
        (root / label).mkdir(parents=True)
        for take in range(6):
            soundfile.write(root / label / f"take{take}.wav", 0.3 * np.sin(2 * np.pi * f0 * t), rate)
        (root / label / "take0.txt").write_text("We are leaving now.")
    return affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(root), split="all")


def test_prosody_bands_of_a_folder_dataset_name_the_users_clips_as_their_norms(folder_env):
    clip = folder_env.unwrapped.scenarios[0]
    folder_env.reset(options={"scenario_id": clip.id})
    header = folder_env.step(call("get_prosody_features"))[0].splitlines()[0]
    train_clips = len(affectgym.make("affectgym/SpeechEmotion-v0", data_dir=folder_env.unwrapped.data_dir,
                                     split="train").unwrapped.scenarios)
    assert f"bands vs the clips of my_corpus (train split), {train_clips} clips" in header and "embedded" not in header


def test_a_clip_without_a_transcript_file_is_not_shown_as_a_spoken_line(folder_env):
    clip = next(c for c in folder_env.unwrapped.scenarios if not c.transcript)
    folder_env.reset(options={"scenario_id": clip.id})
    line = folder_env.step(call("get_transcript"))[0].splitlines()[-1]
    assert '"' not in line and "no transcript for this clip" in line



def test_the_tools_results_come_as_data_beside_their_text_the_numbers_the_text_shows_unrounded():
    env = affectgym.make("affectgym/Sarcasm-v0")
    env.reset(seed=0)
    prosody_text, *_, info = env.step(call("get_prosody_features"))
    measured = info["tool_data"]["get_prosody_features"]
    assert f"range={measured['f0_range_st']:.1f}st" in prosody_text
    assert f"Pauses: {measured['pause_count']}" in prosody_text or measured["pause_count"] == 0
    transcript_text, *_, info = env.step(call("get_transcript"))
    words = info["tool_data"]["get_transcript"]
    assert f'Line ({words["speaker"]}): "{words["line"]}"' in transcript_text
    assert all(line in transcript_text for line in words["context"])
    assert env.unwrapped.trace[-1]["data"] == words
    *_, info = env.step(call("get_pitch_contour"))
    assert set(info["tool_data"]) == {"get_prosody_features", "get_transcript"}  # the contour has no data


def test_a_clip_whose_audio_cannot_be_measured_gives_its_prosody_tool_no_data(folder_env):
    env = folder_env
    env.reset(seed=0)
    Path(env.unwrapped.scenario.audio_path).write_bytes(b"not audio")
    *_, info = env.step(call("get_prosody_features"))
    assert "get_prosody_features" not in info["tool_data"]
