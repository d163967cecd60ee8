"""What the speech envs band a clip against: norms fitted on train audio, and each speaker's own voice.

A band ("[HIGH]") is a z-score against a reference. The corpus reference and every speaker's
baseline are fitted on the train side of the split only, so no held-out clip shapes what an
agent reads of a train clip; and beside the corpus reading, the prosody tool reads each cue
against the speaker's own baseline, so a high-voiced speaker's ordinary line is not "high"
and a low-voiced speaker's raised line is. Both are tested through the tool an agent calls.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile

import affectgym
from affectgym.data.speech_sources import load_embedded

RATE_HZ = 16_000
PROSODY_CALL = '<tool_call>{{"name": "get_prosody_features", "arguments": {{"detail": "{detail}"}}}}</tool_call>'
#: The bands a raised pitch level and a widened pitch range get, against either reference.
HIGH = {"HIGH", "VERY HIGH"}
WIDE = {"WIDE", "VERY WIDE"}


def _prosody_readings(env, clip):
    """What an agent reads of ``clip`` through ``env``'s prosody tool: the full text, the summary and the tool's data."""
    base = env.unwrapped
    env.reset(options={"scenario_id": clip.id})
    full, *_ = env.step(PROSODY_CALL.format(detail="full"))
    summary, *_ = env.step(PROSODY_CALL.format(detail="summary"))
    return full, summary, base.tool_data("get_prosody_features", {})


def _write_manifest(path, rows):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


# ----------------------------------------------------------------------------- fitted without held-out audio
@pytest.mark.parametrize("env_id", ["affectgym/Sarcasm-v0", "affectgym/SpeechEmotion-v0"])
def test_norms_and_speaker_baselines_are_fitted_on_train_clips_sharing_no_id_or_audio_with_eval_or_validation(
    env_id,
):
    eval_env = affectgym.make(env_id, split="eval").unwrapped
    norm_clips = eval_env.norm_clips()
    held_out = [
        *eval_env.scenarios,
        *affectgym.make(env_id, split="validation").unwrapped.scenarios,
    ]
    assert norm_clips and held_out
    assert {c.id for c in norm_clips}.isdisjoint(c.id for c in held_out)
    assert {c.audio_path for c in norm_clips}.isdisjoint(c.audio_path for c in held_out)
    assert [c.id for c in norm_clips] == [
        c.id for c in affectgym.make(env_id, split="train").unwrapped.scenarios
    ]
    assert "(train split)" in eval_env.corpus_norms().name
    # a speaker with fewer than three train clips would be read against all of their clips, eval ones included
    for speaker_clip in {c.speaker: c for c in eval_env.scenarios}.values():
        assert "train clips)" in eval_env.speaker_baseline(speaker_clip).name


@pytest.fixture
def copied_sarcasm_corpus(tmp_path):
    """Two speakers' clips of the embedded v2 Sarcasm corpus, copied into a manifest dataset (grouped by line, as embedded)."""
    clips = [c for c in load_embedded("sarcasm") if c.speaker in ("Nora", "Wen")][:30]
    (tmp_path / "audio").mkdir()
    rows = []
    for clip in clips:
        audio = Path(clip.audio_path)
        (tmp_path / "audio" / audio.name).write_bytes(audio.read_bytes())
        rows.append(
            {
                "path": f"audio/{audio.name}",
                "label": clip.label,
                "transcript": clip.transcript,
                "speaker": clip.speaker,
            }
        )
    return _write_manifest(tmp_path / "manifest.csv", rows)


def test_replacing_every_eval_and_validation_clip_with_a_tone_leaves_what_a_train_clip_reads_unchanged(
    copied_sarcasm_corpus,
):
    kwargs = {"dataset": "manifest", "data_dir": str(copied_sarcasm_corpus), "group_by": "transcript"}

    def sides():
        return {
            part: affectgym.make("affectgym/Sarcasm-v0", split=part, **kwargs)
            for part in ("train", "validation", "eval")
        }

    before = sides()
    held_out = [
        c.audio_path for part in ("validation", "eval") for c in before[part].unwrapped.scenarios
    ]
    train = before["train"].unwrapped.scenarios
    rendered = next(c for c in train if c.speaker == "Nora")
    other_train_clip = next(c for c in train if c.speaker == "Nora" and c is not rendered)
    assert held_out and before["validation"].unwrapped.scenarios
    # every speaker's baseline comes from train clips (with fewer it would read all of theirs)
    assert all(sum(c.speaker == speaker for c in train) >= 3 for speaker in ("Nora", "Wen"))
    reading = _prosody_readings(before["train"], rendered)
    assert "Relative to speaker Nora's own baseline" in reading[0]

    t_s = np.arange(int(1.5 * RATE_HZ)) / RATE_HZ
    loud_tone = 0.8 * np.sin(2 * np.pi * 440.0 * t_s)
    for path in held_out:
        soundfile.write(path, loud_tone, RATE_HZ)
    after = sides()
    assert sorted(
        c.audio_path for part in ("validation", "eval") for c in after[part].unwrapped.scenarios
    ) == sorted(held_out)

    def held_out_ids(envs):
        return {c.id for part in ("validation", "eval") for c in envs[part].unwrapped.scenarios}

    # ids hash the audio: the tones were read, not the old files
    assert held_out_ids(after).isdisjoint(held_out_ids(before))
    assert (
        _prosody_readings(after["train"], after["train"].unwrapped.get_scenario(rendered.id))
        == reading
    )

    # the same tone in place of one train clip of the speaker does change what the clip reads
    soundfile.write(other_train_clip.audio_path, loud_tone, RATE_HZ)
    changed_env = affectgym.make("affectgym/Sarcasm-v0", split="train", **kwargs)
    changed = _prosody_readings(changed_env, changed_env.unwrapped.get_scenario(rendered.id))
    assert changed[0] != reading[0] and changed[2] != reading[2]


# ----------------------------------------------------------------------------- a corpus with known speaker shifts
#: Speaker -> ordinary pitch (Hz): Ana an octave above Ben, Cai two semitones above Ben.
SPEAKER_F0_HZ = {"Ana": 220.0, "Ben": 110.0, "Cai": 123.5}
ORDINARY_OFFSETS_ST = (-0.2, -0.1, 0.0, 0.1, 0.2)  # take-to-take variation of an ordinary line
ORDINARY_RANGE_ST = 3.0
RAISED_SHIFT_ST = 5.0  # the marked line: this much above the speaker's own level ...
RAISED_RANGE_ST = 8.0  # ... with this much pitch range


def _voiced_tone(f0_hz, range_st, duration_s=1.6):
    """A voice-like tone: ten harmonics falling as 1/k, the pitch swinging over ``range_st``, loudness pulsing at syllable rate."""
    t_s = np.arange(int(duration_s * RATE_HZ)) / RATE_HZ
    f0_track_hz = f0_hz * 2 ** (0.5 * range_st * np.sin(2 * np.pi * 0.8 * t_s) / 12)
    phase = 2 * np.pi * np.cumsum(f0_track_hz) / RATE_HZ
    syllable_envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4.0 * t_s) ** 2
    return 0.1 * syllable_envelope * sum(np.sin(k * phase) / k for k in range(1, 11))


@pytest.fixture(scope="module")
def shifted_speakers(tmp_path_factory):
    """Each clip of a three-speaker corpus, as the prosody tool reads it: file stem -> (full text, summary, data).

    Every speaker has five ordinary train clips at their own pitch and one raised eval clip
    (``<speaker>_raised``): higher and wider than their own baseline.
    """
    root = tmp_path_factory.mktemp("shifted-speakers")
    rows = []
    for speaker, f0_hz in SPEAKER_F0_HZ.items():
        for take, offset_st in enumerate(ORDINARY_OFFSETS_ST):
            soundfile.write(
                root / f"{speaker}{take}.wav",
                _voiced_tone(f0_hz * 2 ** (offset_st / 12), ORDINARY_RANGE_ST + offset_st),
                RATE_HZ,
            )
            rows.append(
                {
                    "path": f"{speaker}{take}.wav",
                    "label": "neutral",
                    "transcript": f"Line {take}.",
                    "speaker": speaker,
                    "split": "train",
                }
            )
        soundfile.write(
            root / f"{speaker}_raised.wav",
            _voiced_tone(f0_hz * 2 ** (RAISED_SHIFT_ST / 12), RAISED_RANGE_ST),
            RATE_HZ,
        )
        rows.append(
            {
                "path": f"{speaker}_raised.wav",
                "label": "excited",
                "transcript": "Line 9.",
                "speaker": speaker,
                "split": "eval",
            }
        )
    manifest = _write_manifest(root / "manifest.csv", rows)
    # module-scoped, so made before the per-test cache folder is set: give it its own
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AFFECTGYM_CACHE", str(root / "cache"))
        env = affectgym.make(
            "affectgym/SpeechEmotion-v0", dataset="manifest", data_dir=str(manifest), split="all"
        )
        return {
            Path(clip.audio_path).stem: _prosody_readings(env, clip)
            for clip in env.unwrapped.scenarios
        }


def _corpus_pitch_level_band(full_text):
    """The pitch level's band against the corpus, from the tool's Pitch line."""
    level = re.search(r"^Pitch: mean=\d+Hz \([\d.]+st\) \[([A-Z ]+)\]", full_text, re.MULTILINE)
    return level.group(1)


def _speaker_pitch_bands(full_text):
    """The pitch level's and the pitch range's bands against the speaker's own baseline, from the tool's last line."""
    level = re.search(r"pitch level [+-][\d.]+ sd \[([A-Z ]+)\]", full_text)
    pitch_range = re.search(r"pitch range [+-][\d.]+ sd \[([A-Z ]+)\]", full_text)
    return level.group(1), pitch_range.group(1)


def test_against_the_corpus_every_clip_of_the_high_voiced_speaker_is_high(shifted_speakers):
    for stem in (*(f"Ana{take}" for take in range(len(ORDINARY_OFFSETS_ST))), "Ana_raised"):
        assert _corpus_pitch_level_band(shifted_speakers[stem][0]) in HIGH, stem


@pytest.mark.parametrize("speaker", list(SPEAKER_F0_HZ))
def test_against_their_own_baseline_a_speakers_ordinary_clips_are_normal_and_their_raised_clip_high_and_wide(
    shifted_speakers, speaker
):
    for take in range(len(ORDINARY_OFFSETS_ST)):
        full, _, data = shifted_speakers[f"{speaker}{take}"]
        assert _speaker_pitch_bands(full) == ("NORMAL", "NORMAL")
        assert (
            abs(data["f0_mean_st_vs_speaker"]) < 1.0 and abs(data["f0_range_st_vs_speaker"]) < 1.0
        )
    full, _, data = shifted_speakers[f"{speaker}_raised"]
    level, pitch_range = _speaker_pitch_bands(full)
    assert level in HIGH and pitch_range in WIDE
    assert data["f0_mean_st_vs_speaker"] >= 2.0 and data["f0_range_st_vs_speaker"] >= 2.0


@pytest.mark.parametrize("speaker", ["Ben", "Cai"])
def test_a_low_voiced_speakers_raised_clip_is_normal_for_the_corpus_and_high_only_for_their_own_voice(
    shifted_speakers, speaker
):
    full, _, _ = shifted_speakers[f"{speaker}_raised"]
    assert _corpus_pitch_level_band(full) == "NORMAL"
    assert _speaker_pitch_bands(full)[0] in HIGH


def test_the_tool_says_which_reference_each_band_is_relative_to(shifted_speakers):
    full, summary, _ = shifted_speakers["Ana0"]
    corpus = "the clips of manifest.csv (train split), 15 clips"
    speaker = "speaker Ana's own baseline (5 train clips)"
    assert full.splitlines()[0] == f"Prosody (backend: praat; bands vs {corpus})"
    assert full.splitlines()[-1].startswith(f"Relative to {speaker}: pitch level ")
    assert summary.startswith(f"Delivery vs {corpus}: ") and f" Vs {speaker}: " in summary
