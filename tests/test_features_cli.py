"""Specification of the `affectgym features` subcommand and its plot."""

from __future__ import annotations

import argparse
import json

import soundfile
from synthetic_audio import synthetic_voice

from affectgym.features.commands import register


def _parse(argv):
    parser = argparse.ArgumentParser(prog="affectgym")
    register(parser.add_subparsers())
    return parser.parse_args(argv)


def _clip(tmp_path):
    voice = synthetic_voice(2.0, seed=4)
    path = tmp_path / "voice.wav"
    soundfile.write(str(path), voice.samples, voice.sample_rate_hz)
    return path


def test_features_prints_block_and_contour(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path / "cache"))
    args = _parse(["features", str(_clip(tmp_path))])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("Prosody (backend: praat") and "Pitch contour" in out


def test_features_json_and_plot(tmp_path, capsys):
    png = tmp_path / "out.png"
    args = _parse(["features", str(_clip(tmp_path)), "--json", "--no-cache", "--plot", str(png)])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backend"] == "praat" and data["f0_mean_hz"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unreadable_file_exits_2_with_its_name(tmp_path, capsys):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"nope" * 20)
    args = _parse(["features", str(bad), "--no-cache"])
    assert args.func(args) == 2
    assert "bad.wav" in capsys.readouterr().err


# ----------------------------------------------------------------------------- what an agent sees, readable errors
def test_features_shows_the_contour_an_agent_sees_and_says_which_norms_it_bands_against(tmp_path, capsys):
    from affectgym.envs.speech_emotion import SpeechEmotionEnv
    from affectgym.features.commands import DESCRIPTION

    args = _parse(["features", str(_clip(tmp_path)), "--no-cache"])
    assert args.points == 30
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "Pitch contour (30 steps" in out
    env = SpeechEmotionEnv(split="all")
    env.reset(seed=0)
    assert "Pitch contour (30 steps" in env.step('<tool_call>{"name": "get_pitch_contour", "arguments": {}}</tool_call>')[0]
    assert "built-in adult-speech norms" in DESCRIPTION and "clips of its dataset" in DESCRIPTION
    assert "numba" in DESCRIPTION


def test_features_json_has_one_line_per_field(tmp_path, capsys):
    args = _parse(["features", str(_clip(tmp_path)), "--json", "--no-cache"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert len(out.strip().splitlines()) == len(data) + 2


def test_features_on_a_folder_says_it_takes_one_file(tmp_path, capsys):
    args = _parse(["features", str(tmp_path)])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "is a folder; pass one audio file" in err and "no such file" not in err


def test_features_on_a_clip_too_short_to_measure_says_so_in_one_line(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "blip.wav"
    soundfile.write(str(path), 0.3 * np.sin(2 * np.pi * 150 * np.arange(800) / 16000), 16000)
    args = _parse(["features", str(path), "--no-cache"])
    assert args.func(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot measure" in err and "0.050 s" in err and "analysis window" in err


def test_the_plot_labels_its_shading_and_median_line(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    drawn = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (drawn.append(self), save(self, *a, **k))[1])
    args = _parse(["features", str(_clip(tmp_path)), "--no-cache", "--plot", str(tmp_path / "p.png")])
    assert args.func(args) == 0
    labels = [text.get_text() for legend in drawn[0].legends for text in legend.get_texts()]
    assert any(label.startswith("median F0") for label in labels) and "pause or leading/trailing silence" in labels


def test_precompute_measures_a_whole_dataset_and_its_norms_so_a_new_envs_first_tool_call_measures_only_its_clip(
        tmp_path, capsys, monkeypatch):
    import affectgym
    from affectgym.features import cache, norms_cache

    monkeypatch.setenv("AFFECTGYM_CACHE", str(tmp_path / "cache"))
    for label, seed in (("calm", 1), ("tense", 2)):
        for take in range(3):
            voice = synthetic_voice(1.0, seed=seed * 10 + take)
            (tmp_path / "corpus" / label).mkdir(parents=True, exist_ok=True)
            soundfile.write(str(tmp_path / "corpus" / label / f"t{take}.wav"), voice.samples, voice.sample_rate_hz)
    args = _parse(["features", "precompute", "folder", "--data-dir", str(tmp_path / "corpus"), "--workers", "2"])
    assert args.func(args) == 0
    said = capsys.readouterr().out
    # three takes a label: one each to eval, validation and train, so the norms are the 2 train takes
    assert "6 of 6 clips measured and cached" in said and "corpus norms over the clips of corpus (train split), 2 clips" in said
    assert len(norms_cache.norms_store(tmp_path / "cache" / "norms").keys()) == 1

    measured, computed = [], []
    monkeypatch.setattr(cache, "extract_prosody", lambda *a, **k: measured.append(a) or None)
    original = norms_cache.cached_norms
    monkeypatch.setattr(norms_cache, "cached_norms", lambda key, compute, root=None: original(
        key, lambda: computed.append(key) or compute(), root))
    env = affectgym.make("affectgym/SpeechEmotion-v0", data_dir=str(tmp_path / "corpus"), split="all")
    env.reset(seed=0)
    observation = env.step('<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>')[0]
    assert "bands vs the clips of corpus (train split), 2 clips" in observation
    assert measured == [] and computed == [], "nothing was measured or computed again"
