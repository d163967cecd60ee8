"""Prosody extraction: pitch, loudness, voice quality, pauses and tempo of one utterance.

Two backends produce the same :class:`Prosody` record:

``praat`` (default, praat-parselmouth)
    Each analysis runs once and is reused, which is what makes it fast (~300x real time
    on one core): one autocorrelation pitch track (``To Pitch (ac)``, 10 ms step) gives
    the F0 statistics and the contour, feeds ``To PointProcess (cc)`` (Sound + Pitch)
    for jitter and shimmer, and its per-frame autocorrelation strength ``r`` gives the
    harmonics-to-noise ratio as ``10*log10(r / (1 - r))`` without a second harmonicity
    analysis. One intensity track gives loudness, pauses and syllable nuclei (de Jong &
    Wempe 2009: intensity peaks standing out by >= 2 dB from the dips around them,
    above the silence threshold, and voiced).

``librosa`` (pure librosa/numpy, no GPL dependency)
    F0 and voicing from ``librosa.pyin``; loudness from ``librosa.feature.rms`` in dB on
    the same scale as Praat's intensity (re 2e-5); pauses and syllable nuclei from that
    loudness track with the same rules as the praat backend. It has no glottal-pulse
    analysis and no harmonicity measure, so ``jitter_local_pct``, ``shimmer_local_pct``
    and ``hnr_db`` are ``None``. pyin is ~20x slower than Praat's pitch and its first
    call in a fresh process compiles numba code (seconds).

Conventions: semitones are relative to 27.5 Hz (as in eGeMAPS); every range is the
5th-95th percentile span; intensity is in dB re 2e-5 with samples taken as pascals
(Praat's convention: a full-scale sine reads ~91 dB). Fields that cannot be measured
(e.g. F0 statistics of an unvoiced clip) are ``None``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from affectgym.features.audio import Audio, AudioLoadError, AudioSource, load_audio

SEMITONE_REFERENCE_HZ = 27.5  # A0; eGeMAPS expresses F0 in semitones from here
INTENSITY_REFERENCE = 2e-5  # 20 micropascal, Praat's intensity reference
BACKENDS = ("praat", "librosa")
PRAAT_SILENCE_THRESHOLD = 0.03  # Praat's pitch silence threshold: share of the loudest frame's level


@dataclass(frozen=True)
class ProsodyParams:
    """Analysis settings; part of the cache key.

    Attributes:
        time_step_s: Frame step of the pitch and intensity tracks.
        pitch_sample_rate_hz: The pitch track is computed on the audio resampled to this
            rate (when it is lower than the audio's): 8 kHz keeps 4 kHz of bandwidth, far
            above any F0 ceiling, and makes the autocorrelation about 20% cheaper.
        pitch_floor_hz: Lowest F0 searched.
        pitch_ceiling_hz: Highest F0 searched.
        intensity_min_pitch_hz: Praat's intensity window is 6.4 / this long (64 ms at 100 Hz),
            smooth enough that one syllable gives one peak.
        silence_threshold_db: A frame is silent below the 99th-percentile intensity
            plus this (negative) offset ...
        absolute_silence_db: ... or below this absolute level (digital silence).
        min_pause_s: Shortest silent stretch inside speech counted as a pause.
        min_sounding_s: Sounding blips shorter than this inside silence are ignored.
        min_dip_db: A syllable peak must rise this much above the dip to the next peak.
    """

    time_step_s: float = 0.01
    pitch_sample_rate_hz: int = 8_000
    pitch_floor_hz: float = 75.0
    pitch_ceiling_hz: float = 600.0
    intensity_min_pitch_hz: float = 100.0
    silence_threshold_db: float = -25.0
    absolute_silence_db: float = 20.0
    min_pause_s: float = 0.2
    min_sounding_s: float = 0.05
    min_dip_db: float = 2.0

    def to_dict(self) -> dict[str, float]:
        """The settings as a plain dict (stable key order)."""
        return dataclasses.asdict(self)

    @property
    def min_duration_s(self) -> float:
        """Shortest clip these settings can analyse: one intensity window (6.4 periods of
        ``intensity_min_pitch_hz``) and one pitch window (3 periods of ``pitch_floor_hz``).

        >>> ProsodyParams().min_duration_s
        0.064
        """
        return round(max(6.4 / self.intensity_min_pitch_hz, 3.0 / self.pitch_floor_hz), 6)


@dataclass(frozen=True)
class Prosody:
    """Prosodic description of one utterance. Every field carries its unit in its name.

    ``*_st`` are semitones re 27.5 Hz; ``*_range_*`` are 5th-95th percentile spans;
    slopes are over voiced frames; ``None`` means not measurable (or, for jitter,
    shimmer and HNR, not provided by the backend).
    """

    backend: str
    duration_s: float
    voiced_fraction: float
    f0_mean_hz: float | None
    f0_median_hz: float | None
    f0_sd_hz: float | None
    f0_p5_hz: float | None
    f0_p95_hz: float | None
    f0_range_hz: float | None
    f0_mean_st: float | None
    f0_median_st: float | None
    f0_sd_st: float | None
    f0_p5_st: float | None
    f0_p95_st: float | None
    f0_range_st: float | None
    f0_slope_st_per_s: float | None
    f0_rising_slope_mean_st_per_s: float | None
    f0_falling_slope_mean_st_per_s: float | None
    intensity_mean_db: float | None
    intensity_sd_db: float | None
    intensity_range_db: float | None
    jitter_local_pct: float | None
    shimmer_local_pct: float | None
    hnr_db: float | None
    pause_count: int
    pause_total_s: float
    pause_longest_s: float
    pause_intervals_s: tuple[tuple[float, float], ...]
    leading_silence_s: float
    trailing_silence_s: float
    syllable_count: int
    speaking_rate_syl_per_s: float
    articulation_rate_syl_per_s: float | None
    contour_times_s: tuple[float, ...]
    contour_f0_hz: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (tuples become lists).

        Returns:
            Field name -> value, in field order.
        """
        out = dataclasses.asdict(self)
        out["pause_intervals_s"] = [list(pair) for pair in self.pause_intervals_s]
        out["contour_times_s"] = list(self.contour_times_s)
        out["contour_f0_hz"] = list(self.contour_f0_hz)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Prosody:
        """Rebuild a :class:`Prosody` from :meth:`to_dict` output.

        Args:
            data: A dict as produced by :meth:`to_dict` (e.g. after a JSON round trip).

        Returns:
            The equal :class:`Prosody`.

        Raises:
            ValueError: Keys are missing or unknown.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        missing = sorted(set(names) - set(data))
        unknown = sorted(set(data) - set(names))
        if missing or unknown:
            raise ValueError(
                f"Prosody.from_dict: missing keys {missing}, unknown keys {unknown}; "
                f"expected exactly the fields {names}."
            )
        values = dict(data)
        values["pause_intervals_s"] = tuple(
            (float(a), float(b)) for a, b in values["pause_intervals_s"]
        )
        # numpy converts a few thousand contour frames far faster than a Python loop
        values["contour_times_s"] = tuple(np.asarray(values["contour_times_s"], float).tolist())
        values["contour_f0_hz"] = tuple(np.asarray(values["contour_f0_hz"], float).tolist())
        return cls(**{name: values[name] for name in names})


def extract_prosody(
    audio: AudioSource,
    backend: str = "praat",
    params: ProsodyParams | None = None,
) -> Prosody:
    """Measure the prosody of one utterance.

    Args:
        audio: An :class:`Audio`, or anything :func:`load_audio` accepts (a path, bytes).
        backend: ``"praat"`` (parselmouth; complete and fast) or ``"librosa"`` (no
            jitter, shimmer or HNR).
        params: Analysis settings; defaults to :class:`ProsodyParams()`.

    Returns:
        The :class:`Prosody` record.

    Raises:
        ValueError: Unknown backend.
        AudioLoadError: The audio could not be loaded, or is shorter than
            ``params.min_duration_s`` (the message names the clip and the minimum).

    >>> t = np.arange(16000) / 16000  # one second at 16 kHz
    >>> tone = (0.5 * np.sin(2 * np.pi * 200.0 * t)).astype(np.float32)  # a 200 Hz sine
    >>> p = extract_prosody(load_audio(tone, input_sample_rate_hz=16000))
    >>> round(p.f0_median_hz)
    200
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown prosody backend {backend!r}; accepted: {', '.join(BACKENDS)}.")
    params = params or ProsodyParams()
    if not isinstance(audio, Audio):
        audio = load_audio(audio)
    if audio.duration_s + 1e-9 < params.min_duration_s:
        raise AudioLoadError(
            f"{audio.source}: {audio.duration_s:.3f} s of audio is too short for prosody analysis; "
            f"clips need at least {params.min_duration_s:.3f} s (ProsodyParams.min_duration_s)."
        )
    if backend == "praat":
        return _extract_praat(audio, params)
    return _extract_librosa(audio, params)


def _extract_praat(audio: Audio, params: ProsodyParams) -> Prosody:
    import parselmouth
    from parselmouth.praat import call

    sound = parselmouth.Sound(audio.samples.astype(np.float64), float(audio.sample_rate_hz))
    pitch_sound = sound
    if audio.sample_rate_hz > params.pitch_sample_rate_hz:
        import soxr

        narrow = soxr.resample(audio.samples, audio.sample_rate_hz, params.pitch_sample_rate_hz)
        pitch_sound = parselmouth.Sound(narrow.astype(np.float64), float(params.pitch_sample_rate_hz))
    pitch = pitch_sound.to_pitch_ac(
        time_step=params.time_step_s,
        pitch_floor=params.pitch_floor_hz,
        pitch_ceiling=params.pitch_ceiling_hz,
    )
    selected = pitch.selected_array
    f0_hz = np.asarray(selected["frequency"], dtype=float)
    strength = np.asarray(selected["strength"], dtype=float)
    pitch_times_s = np.asarray(pitch.xs(), dtype=float)

    jitter_pct = shimmer_pct = None
    if np.count_nonzero(f0_hz) >= 3:
        points = call([sound, pitch], "To PointProcess (cc)")
        jitter = call(points, "Get jitter (local)", 0.0, 0.0, 0.0001, 0.02, 1.3)
        shimmer = call([sound, points], "Get shimmer (local)", 0.0, 0.0, 0.0001, 0.02, 1.3, 1.6)
        jitter_pct = _finite_or_none(100.0 * jitter)
        shimmer_pct = _finite_or_none(100.0 * shimmer)

    hnr_db = None
    voiced = f0_hz > 0
    if voiced.any():
        r = np.clip(strength[voiced], 1e-4, 1.0 - 1e-4)
        hnr_db = float(np.mean(10.0 * np.log10(r / (1.0 - r))))

    intensity = sound.to_intensity(
        minimum_pitch=params.intensity_min_pitch_hz, time_step=params.time_step_s
    )
    intensity_db = np.asarray(intensity.values[0], dtype=float)
    intensity_times_s = np.asarray(intensity.xs(), dtype=float)
    return _assemble(
        "praat",
        audio.duration_s,
        pitch_times_s,
        f0_hz,
        intensity_times_s,
        intensity_db,
        jitter_pct,
        shimmer_pct,
        hnr_db,
        params,
    )


def _extract_librosa(audio: Audio, params: ProsodyParams) -> Prosody:
    import librosa

    sr = audio.sample_rate_hz
    hop = max(1, int(round(params.time_step_s * sr)))
    frame = 1 << int(math.ceil(math.log2(max(2.0 / params.pitch_floor_hz * sr, 2 * hop))))
    y = audio.samples
    f0, voiced_flag, _ = librosa.pyin(
        y,
        fmin=params.pitch_floor_hz,
        fmax=params.pitch_ceiling_hz,
        sr=sr,
        frame_length=frame,
        hop_length=hop,
        center=True,
    )
    # pyin finds a "pitch" in dither and inaudible hum; as Praat does, frames quieter than
    # 3% of the loudest frame, or below the level of digital silence, have no voice
    frame_rms = librosa.feature.rms(y=y, frame_length=frame, hop_length=hop, center=True)[0][: len(f0)]
    frame_db = 20.0 * np.log10(np.maximum(frame_rms, 1e-10) / INTENSITY_REFERENCE)
    audible = (frame_rms >= PRAAT_SILENCE_THRESHOLD * frame_rms.max(initial=0.0)) & (
        frame_db >= params.absolute_silence_db
    )
    f0_hz = np.where(voiced_flag & np.isfinite(f0) & audible, f0, 0.0)
    times_s = librosa.frames_to_time(np.arange(len(f0_hz)), sr=sr, hop_length=hop)
    window = max(hop, int(round(3.2 / params.intensity_min_pitch_hz * sr / 2)) * 2)
    rms = librosa.feature.rms(y=y, frame_length=window, hop_length=hop, center=True)[0]
    intensity_db = 20.0 * np.log10(np.maximum(rms, 1e-10) / INTENSITY_REFERENCE)
    intensity_times_s = librosa.frames_to_time(np.arange(len(rms)), sr=sr, hop_length=hop)
    return _assemble(
        "librosa",
        audio.duration_s,
        times_s,
        f0_hz,
        intensity_times_s,
        intensity_db,
        None,
        None,
        None,
        params,
    )


def _finite_or_none(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def hz_to_st(f0_hz: np.ndarray | float) -> np.ndarray | float:
    """Convert Hz to semitones re 27.5 Hz.

    Args:
        f0_hz: Frequencies in Hz (> 0).

    Returns:
        Semitones above 27.5 Hz.

    >>> round(float(hz_to_st(55.0)), 6)
    12.0
    """
    return 12.0 * np.log2(np.asarray(f0_hz, dtype=float) / SEMITONE_REFERENCE_HZ)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open index runs where ``mask`` is True."""
    if mask.size == 0:
        return []
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _segment_slopes(times_s: np.ndarray, st: np.ndarray, voiced: np.ndarray):
    """Mean slopes (st/s) of rising and of falling monotone stretches within voiced runs."""
    rising, falling = [], []
    for lo, hi in _runs(voiced):
        if hi - lo < 3:
            continue
        run = st[lo:hi]
        smooth = np.convolve(run, np.ones(3) / 3.0, mode="valid")  # 3-frame mean, as eGeMAPS
        t = times_s[lo + 1 : hi - 1]
        direction = np.sign(np.diff(smooth))
        start = 0
        for i in range(1, len(direction) + 1):
            if i == len(direction) or direction[i] != direction[start]:
                if direction[start] != 0:
                    slope = (smooth[i] - smooth[start]) / (t[i] - t[start])
                    (rising if slope > 0 else falling).append(slope)
                start = i
    rising_mean = float(np.mean(rising)) if rising else None
    falling_mean = float(np.mean(falling)) if falling else None
    return rising_mean, falling_mean


def _assemble(
    backend: str,
    duration_s: float,
    pitch_times_s: np.ndarray,
    f0_hz: np.ndarray,
    intensity_times_s: np.ndarray,
    intensity_db: np.ndarray,
    jitter_pct: float | None,
    shimmer_pct: float | None,
    hnr_db: float | None,
    params: ProsodyParams,
) -> Prosody:
    """Turn one pitch track and one intensity track into a :class:`Prosody`."""
    voiced = f0_hz > 0
    f0_stats: dict[str, float | None] = dict.fromkeys(
        [
            "f0_mean_hz", "f0_median_hz", "f0_sd_hz", "f0_p5_hz", "f0_p95_hz", "f0_range_hz",
            "f0_mean_st", "f0_median_st", "f0_sd_st", "f0_p5_st", "f0_p95_st", "f0_range_st",
            "f0_slope_st_per_s", "f0_rising_slope_mean_st_per_s",
            "f0_falling_slope_mean_st_per_s",
        ]
    )  # fmt: skip
    if voiced.any():
        hz = f0_hz[voiced]
        st_all = np.where(voiced, hz_to_st(np.where(voiced, f0_hz, 1.0)), 0.0)
        st = st_all[voiced]
        for unit, values in (("hz", hz), ("st", st)):
            p5, p95 = np.percentile(values, [5, 95])
            f0_stats[f"f0_mean_{unit}"] = float(values.mean())
            f0_stats[f"f0_median_{unit}"] = float(np.median(values))
            f0_stats[f"f0_sd_{unit}"] = float(values.std())
            f0_stats[f"f0_p5_{unit}"] = float(p5)
            f0_stats[f"f0_p95_{unit}"] = float(p95)
            f0_stats[f"f0_range_{unit}"] = float(p95 - p5)
        t_voiced = pitch_times_s[voiced]
        if len(st) >= 2 and np.ptp(t_voiced) > 0:
            f0_stats["f0_slope_st_per_s"] = float(np.polyfit(t_voiced, st, 1)[0])
        rising, falling = _segment_slopes(pitch_times_s, st_all, voiced)
        f0_stats["f0_rising_slope_mean_st_per_s"] = rising
        f0_stats["f0_falling_slope_mean_st_per_s"] = falling

    step_s = params.time_step_s
    finite_db = np.where(np.isfinite(intensity_db), intensity_db, -300.0)
    if finite_db.size:
        threshold_db = max(
            float(np.percentile(finite_db, 99)) + params.silence_threshold_db,
            params.absolute_silence_db,
        )
    else:
        threshold_db = params.absolute_silence_db
    sounding = finite_db >= threshold_db
    min_blip = max(1, int(round(params.min_sounding_s / step_s)))
    for lo, hi in _runs(sounding):
        if hi - lo < min_blip:
            sounding[lo:hi] = False

    sounding_runs = _runs(sounding)
    pauses: list[tuple[float, float]] = []
    if sounding_runs:
        first_s = max(0.0, intensity_times_s[sounding_runs[0][0]] - step_s / 2)
        last_s = min(duration_s, intensity_times_s[sounding_runs[-1][1] - 1] + step_s / 2)
        leading_s, trailing_s = first_s, max(0.0, duration_s - last_s)
        for (_, end_a), (start_b, _) in zip(sounding_runs[:-1], sounding_runs[1:], strict=True):
            start_s = intensity_times_s[end_a - 1] + step_s / 2
            end_s = intensity_times_s[start_b] - step_s / 2
            if end_s - start_s >= params.min_pause_s - 1e-9:
                pauses.append((round(float(start_s), 3), round(float(end_s), 3)))
        phonation_s = sum((hi - lo) * step_s for lo, hi in sounding_runs)
        loud = finite_db[sounding]
        p5, p95 = np.percentile(loud, [5, 95])
        intensity_mean, intensity_sd = float(loud.mean()), float(loud.std())
        intensity_range = float(p95 - p5)
    else:
        leading_s, trailing_s, phonation_s = duration_s, 0.0, 0.0
        intensity_mean = intensity_sd = intensity_range = None

    nuclei = _syllable_nuclei(
        intensity_times_s, finite_db, sounding, threshold_db, pitch_times_s, f0_hz, params
    )
    syllable_count = len(nuclei)
    pause_durations = [b - a for a, b in pauses]
    return Prosody(
        backend=backend,
        duration_s=round(float(duration_s), 4),
        voiced_fraction=round(float(voiced.mean()) if voiced.size else 0.0, 4),
        **{name: _round(value) for name, value in f0_stats.items()},
        intensity_mean_db=_round(intensity_mean),
        intensity_sd_db=_round(intensity_sd),
        intensity_range_db=_round(intensity_range),
        jitter_local_pct=_round(jitter_pct),
        shimmer_local_pct=_round(shimmer_pct),
        hnr_db=_round(hnr_db),
        pause_count=len(pauses),
        pause_total_s=round(float(sum(pause_durations)), 3),
        pause_longest_s=round(float(max(pause_durations, default=0.0)), 3),
        pause_intervals_s=tuple(pauses),
        leading_silence_s=round(float(leading_s), 3),
        trailing_silence_s=round(float(trailing_s), 3),
        syllable_count=syllable_count,
        speaking_rate_syl_per_s=round(syllable_count / duration_s, 4) if duration_s > 0 else 0.0,
        articulation_rate_syl_per_s=(
            round(syllable_count / phonation_s, 4) if phonation_s > 0 else None
        ),
        contour_times_s=tuple(np.round(pitch_times_s, 4).tolist()),
        contour_f0_hz=tuple(np.round(f0_hz, 2).tolist()),
    )


def _syllable_nuclei(
    times_s: np.ndarray,
    db: np.ndarray,
    sounding: np.ndarray,
    threshold_db: float,
    pitch_times_s: np.ndarray,
    f0_hz: np.ndarray,
    params: ProsodyParams,
) -> list[float]:
    """Syllable nuclei after de Jong & Wempe (2009): prominent, voiced intensity peaks."""
    if db.size < 3:
        return []
    is_peak = (db[1:-1] > db[:-2]) & (db[1:-1] >= db[2:])
    peaks = np.flatnonzero(is_peak) + 1
    peaks = peaks[(db[peaks] > threshold_db) & sounding[peaks]]
    kept = []
    for i, peak in enumerate(peaks):
        following = peaks[i + 1] if i + 1 < len(peaks) else len(db)
        dip = db[peak:following].min()
        if db[peak] - dip >= params.min_dip_db:
            kept.append(peak)
    if not kept or pitch_times_s.size == 0:
        return []
    nuclei = []
    step_s = params.time_step_s
    for peak in kept:
        t = times_s[peak]
        j = int(np.argmin(np.abs(pitch_times_s - t)))
        if abs(pitch_times_s[j] - t) <= step_s and f0_hz[j] > 0:
            nuclei.append(float(t))
    return nuclei
