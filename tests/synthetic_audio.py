"""Synthetic signals with known prosody, for tests and benchmarks.

The main one is :func:`synthetic_voice`: a band-limited glottal pulse train (a sum of
harmonics with a -12 dB/octave source slope) whose F0 glides between 80 and 300 Hz,
passed through three formant resonators, with silent gaps. Because the harmonics are
generated from the integrated instantaneous frequency, the true F0 is known exactly at
every instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SEMITONE_REFERENCE_HZ = 27.5  # A0, the eGeMAPS semitone reference


@dataclass(frozen=True, eq=False)
class SyntheticVoice:
    """A synthetic utterance with its ground truth.

    Attributes:
        samples: float32 mono samples.
        sample_rate_hz: Sample rate.
        f0_hz: True F0 per sample (0 where the voice is silent).
        voiced_intervals_s: (start, end) of each voiced stretch.
    """

    samples: np.ndarray = field(repr=False)
    sample_rate_hz: int
    f0_hz: np.ndarray = field(repr=False)
    voiced_intervals_s: tuple[tuple[float, float], ...]

    def true_f0_at(self, times_s: np.ndarray, guard_s: float = 0.03) -> np.ndarray:
        """True F0 at analysis frame times.

        Args:
            times_s: Frame centre times in seconds.
            guard_s: Frames within this many seconds of a voicing boundary are
                ambiguous and returned as NaN (excluded from scoring).

        Returns:
            F0 in Hz per frame: > 0 voiced, 0 unvoiced, NaN near a boundary.
        """
        times_s = np.asarray(times_s, dtype=float)
        index = np.clip((times_s * self.sample_rate_hz).astype(int), 0, len(self.f0_hz) - 1)
        truth = self.f0_hz[index].astype(float)
        for start, end in self.voiced_intervals_s:
            for edge in (start, end):
                truth[np.abs(times_s - edge) < guard_s] = np.nan
        return truth


def _formant_filter(signal: np.ndarray, sample_rate_hz: int, formants_hz, bandwidths_hz):
    from scipy.signal import lfilter

    out = signal
    for centre_hz, bandwidth_hz in zip(formants_hz, bandwidths_hz, strict=True):
        radius = np.exp(-np.pi * bandwidth_hz / sample_rate_hz)
        theta = 2 * np.pi * centre_hz / sample_rate_hz
        a = [1.0, -2 * radius * np.cos(theta), radius**2]
        b = [1.0 - radius]  # rough unity-gain normalisation
        out = lfilter(b, a, out)
    return out


def synthetic_voice(
    duration_s: float = 3.0,
    sample_rate_hz: int = 16000,
    f0_min_hz: float = 80.0,
    f0_max_hz: float = 300.0,
    gaps_s: tuple[tuple[float, float], ...] | None = None,
    seed: int = 0,
) -> SyntheticVoice:
    """Render a vowel-like voice whose F0 glides between ``f0_min_hz`` and ``f0_max_hz``.

    Args:
        duration_s: Length of the signal in seconds.
        sample_rate_hz: Sample rate.
        f0_min_hz: Lowest F0 of the glide.
        f0_max_hz: Highest F0 of the glide.
        gaps_s: Silent (start, end) intervals; by default one gap of 0.35 s every
            1.2 s, plus 0.15 s of silence at both ends.
        seed: Seed for the glide shape and the faint noise floor.

    Returns:
        A :class:`SyntheticVoice` with samples and ground truth.

    >>> voice = synthetic_voice(1.0)
    >>> voice.samples.dtype, voice.sample_rate_hz
    (dtype('float32'), 16000)
    """
    rng = np.random.default_rng(seed)
    n = int(round(duration_s * sample_rate_hz))
    t = np.arange(n) / sample_rate_hz
    # smooth glide: a few slow sinusoids in the log-frequency domain
    log_lo, log_hi = np.log(f0_min_hz), np.log(f0_max_hz)
    shape = np.zeros(n)
    for _ in range(3):
        rate_hz = rng.uniform(0.15, 0.8)
        shape += np.sin(2 * np.pi * rate_hz * t + rng.uniform(0, 2 * np.pi))
    shape = (shape - shape.min()) / max(shape.max() - shape.min(), 1e-9)
    f0 = np.exp(log_lo + shape * (log_hi - log_lo))
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate_hz
    source = np.zeros(n)
    nyquist_hz = sample_rate_hz / 2
    for k in range(1, int(nyquist_hz // f0_min_hz) + 1):
        below = k * f0 < 0.9 * nyquist_hz
        if not below.any():
            break
        source += np.where(below, np.sin(k * phase) / k**2, 0.0)
    voice = _formant_filter(source, sample_rate_hz, (600.0, 1400.0, 2600.0), (80.0, 120.0, 180.0))

    if gaps_s is None:
        edge_s = 0.15
        gaps = [(0.0, edge_s), (duration_s - edge_s, duration_s)]
        start = 1.2
        while start + 0.35 < duration_s - edge_s - 0.3:
            gaps.append((start, start + 0.35))
            start += 1.2
        gaps_s = tuple(sorted(gaps))
    envelope = np.ones(n)
    for start, end in gaps_s:
        envelope[int(start * sample_rate_hz) : int(end * sample_rate_hz)] = 0.0
    ramp = int(0.005 * sample_rate_hz)  # 5 ms fades avoid clicks at gap edges
    envelope = np.convolve(envelope, np.ones(ramp) / ramp, mode="same")
    voiced = envelope > 0.5

    signal = voice * envelope
    signal = 0.5 * signal / max(np.abs(signal).max(), 1e-9)
    signal += rng.normal(0.0, 1e-4, n)  # faint noise floor, as in a real recording
    intervals = []
    edges = np.flatnonzero(np.diff(voiced.astype(np.int8)))
    bounds = np.concatenate([[0], edges + 1, [n]])
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if voiced[lo]:
            intervals.append((lo / sample_rate_hz, hi / sample_rate_hz))
    return SyntheticVoice(
        samples=signal.astype(np.float32),
        sample_rate_hz=sample_rate_hz,
        f0_hz=np.where(voiced, f0, 0.0),
        voiced_intervals_s=tuple(intervals),
    )


def tone(
    frequency_hz: float,
    duration_s: float = 1.0,
    sample_rate_hz: int = 16000,
    amplitude: float = 0.5,
) -> np.ndarray:
    """A pure sine tone.

    Args:
        frequency_hz: Tone frequency.
        duration_s: Length in seconds.
        sample_rate_hz: Sample rate.
        amplitude: Peak amplitude.

    Returns:
        float32 samples.
    """
    t = np.arange(int(round(duration_s * sample_rate_hz))) / sample_rate_hz
    return (amplitude * np.sin(2 * np.pi * frequency_hz * t)).astype(np.float32)


def click_train(
    rate_hz: float, duration_s: float = 1.0, sample_rate_hz: int = 16000, amplitude: float = 0.5
) -> np.ndarray:
    """Unit impulses at ``rate_hz`` (a periodic pulse train, F0 = ``rate_hz``).

    Args:
        rate_hz: Clicks per second.
        duration_s: Length in seconds.
        sample_rate_hz: Sample rate.
        amplitude: Click height.

    Returns:
        float32 samples.
    """
    n = int(round(duration_s * sample_rate_hz))
    out = np.zeros(n, dtype=np.float32)
    positions = np.round(np.arange(0, duration_s, 1.0 / rate_hz) * sample_rate_hz).astype(int)
    out[positions[positions < n]] = amplitude
    return out


def syllable_train(
    syllables_per_s: float,
    duration_s: float = 3.0,
    sample_rate_hz: int = 16000,
    f0_hz: float = 140.0,
) -> np.ndarray:
    """Voiced 'syllables' (a harmonic tone under a raised-cosine envelope) at a fixed rate.

    Args:
        syllables_per_s: Syllable nuclei per second.
        duration_s: Length in seconds.
        sample_rate_hz: Sample rate.
        f0_hz: F0 of the voiced carrier.

    Returns:
        float32 samples.
    """
    t = np.arange(int(round(duration_s * sample_rate_hz))) / sample_rate_hz
    carrier = sum(np.sin(2 * np.pi * k * f0_hz * t) / k for k in range(1, 8))
    envelope = 0.5 - 0.5 * np.cos(2 * np.pi * syllables_per_s * t)
    return (0.3 * carrier * envelope**2).astype(np.float32)
