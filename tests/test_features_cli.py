"""Specification of the `affectgym features` subcommand and its plot."""

from __future__ import annotations

import argparse
import json

import soundfile

from affectgym.features.commands import register
from affectgym.features.synthetic import synthetic_voice


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
