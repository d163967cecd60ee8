"""A picture of one utterance's prosody: waveform, pitch contour, intensity with pauses."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from affectgym.features.audio import Audio
from affectgym.features.prosody import INTENSITY_REFERENCE, Prosody


def _intensity_db(audio: Audio, window_s: float = 0.064, step_s: float = 0.01):
    """Frame RMS in dB re 2e-5 (the scale of Prosody.intensity_*_db)."""
    sr = audio.sample_rate_hz
    window, hop = max(1, int(window_s * sr)), max(1, int(step_s * sr))
    padded = np.pad(audio.samples.astype(np.float64), (window // 2, window // 2))
    n_frames = 1 + max(0, (len(padded) - window) // hop)
    squares = np.concatenate([[0.0], np.cumsum(padded**2)])
    starts = np.arange(n_frames) * hop
    rms = np.sqrt((squares[starts + window] - squares[starts]) / window)
    times_s = starts / sr
    return times_s, 20.0 * np.log10(np.maximum(rms, 1e-10) / INTENSITY_REFERENCE)


def plot_prosody(audio: Audio, prosody: Prosody, out_path: str | Path) -> Path:
    """Draw waveform, F0 (voiced frames only) and intensity with pauses shaded.

    A legend above the panels names the grey shading (pauses and leading/trailing
    silence, as the prosody block counts them) and the line at the median F0.

    Args:
        audio: The analysed audio.
        prosody: Its prosody (from either backend).
        out_path: Image file to write (format from the suffix, e.g. ``.png``).

    Returns:
        The written path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    out_path = Path(out_path)
    times = np.arange(len(audio.samples)) / audio.sample_rate_hz
    figure, (wave_ax, pitch_ax, loud_ax) = plt.subplots(3, 1, figsize=(10, 6.5), sharex=True)
    wave_ax.plot(times, audio.samples, linewidth=0.4, color="0.3")
    wave_ax.set_ylabel("amplitude")
    wave_ax.set_title(f"{Path(audio.source).name}: {prosody.duration_s:.2f} s, {prosody.backend} backend")

    f0 = np.asarray(prosody.contour_f0_hz, dtype=float)
    f0_times = np.asarray(prosody.contour_times_s, dtype=float)
    pitch_ax.plot(f0_times, np.where(f0 > 0, f0, np.nan), ".", markersize=2.5, color="tab:blue", label="F0, voiced frames")
    pitch_ax.set_ylabel("F0 (Hz)")
    if prosody.f0_median_hz is not None:
        pitch_ax.axhline(prosody.f0_median_hz, color="tab:blue", linewidth=0.8, alpha=0.6, linestyle="--",
                         label=f"median F0 ({prosody.f0_median_hz:.0f} Hz)")

    loud_times, loud_db = _intensity_db(audio)
    loud_ax.plot(loud_times, loud_db, linewidth=0.8, color="tab:orange")
    top_db = float(np.max(loud_db))
    loud_ax.set_ylim(max(float(np.min(loud_db)), top_db - 60.0) - 2.0, top_db + 3.0)
    loud_ax.set_ylabel("intensity (dB)")
    loud_ax.set_xlabel("time (s)")
    silences = list(prosody.pause_intervals_s)
    if prosody.leading_silence_s > 0:
        silences.append((0.0, prosody.leading_silence_s))
    if prosody.trailing_silence_s > 0:
        silences.append((prosody.duration_s - prosody.trailing_silence_s, prosody.duration_s))
    for ax in (wave_ax, pitch_ax, loud_ax):
        for start_s, end_s in silences:
            ax.axvspan(start_s, end_s, color="0.85", zorder=0)
    loud_ax.set_xlim(0.0, max(prosody.duration_s, 1e-3))
    handles, _ = pitch_ax.get_legend_handles_labels()
    handles.append(Patch(color="0.85", label="pause or leading/trailing silence"))
    figure.legend(handles=handles, loc="upper right", ncols=len(handles), fontsize="small", frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 0.96))  # the top strip holds the legend
    figure.savefig(out_path, dpi=110)
    plt.close(figure)
    return out_path
