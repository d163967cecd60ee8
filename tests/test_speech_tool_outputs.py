"""What the speech envs' tools say about a user's folder dataset: where norms come from, missing transcripts."""

from __future__ import annotations

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
        for take in range(2):
            soundfile.write(root / label / f"take{take}.wav", 0.3 * np.sin(2 * np.pi * f0 * t), rate)
        (root / label / "take0.txt").write_text("We are leaving now.")
    return affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(root), split="all")


def test_prosody_bands_of_a_folder_dataset_name_the_users_clips_as_their_norms(folder_env):
    clip = folder_env.unwrapped.scenarios[0]
    folder_env.reset(options={"scenario_id": clip.id})
    header = folder_env.step(call("get_prosody_features"))[0].splitlines()[0]
    assert "bands vs the clips of my_corpus, 4 clips" in header and "embedded" not in header


def test_a_clip_without_a_transcript_file_is_not_shown_as_a_spoken_line(folder_env):
    clip = next(c for c in folder_env.unwrapped.scenarios if not c.transcript)
    folder_env.reset(options={"scenario_id": clip.id})
    line = folder_env.step(call("get_transcript"))[0].splitlines()[-1]
    assert '"' not in line and "no transcript for this clip" in line

