"""Prosody as text a language model can read: a compact feature block and a pitch sparkline.

Both renderers are deterministic (same :class:`~affectgym.features.prosody.Prosody`,
same bytes) so prompts built from them are stable and cacheable. Qualitative bands
(``[HIGH]``, ``[WIDE]``, ``[SLOW]`` ...) come from z-scores against
:class:`ProsodyNorms`: built-in adult-speech defaults, or norms computed from a corpus,
or from one speaker's own utterances (pass that speaker's list). Given a speaker's own
baseline as well, both renderers add what each cue is *relative to that speaker*, since a
delivery is marked against the speaker's usual voice, not against everyone's:

>>> speaker = ProsodyNorms(name="speaker Wen", stats={"f0_mean_st": (40.0, 1.0)})
>>> speaker.zscore("f0_mean_st", 42.0), speaker.band("f0_mean_st", 42.0)
(2.0, ' [VERY HIGH]')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from affectgym.features.prosody import Prosody, hz_to_st

SPARK_LEVELS = "▁▂▃▄▅▆▇█"
UNVOICED_MARK = "·"
CONTOUR_POINTS = 30  # characters of the sparkline the speech envs' pitch tool shows an agent

# What each banded feature is called at each end of its scale.
_BAND_WORDS = {
    "f0_mean_st": ("LOW", "HIGH"),
    "f0_sd_st": ("NARROW", "WIDE"),
    "f0_range_st": ("NARROW", "WIDE"),
    "intensity_mean_db": ("SOFT", "LOUD"),
    "intensity_sd_db": ("NARROW", "WIDE"),
    "intensity_range_db": ("NARROW", "WIDE"),
    "jitter_local_pct": ("LOW", "HIGH"),
    "shimmer_local_pct": ("LOW", "HIGH"),
    "hnr_db": ("LOW", "HIGH"),
    "speaking_rate_syl_per_s": ("SLOW", "FAST"),
    "articulation_rate_syl_per_s": ("SLOW", "FAST"),
    "pause_fraction": ("FEW", "MANY"),
}

# Rough adult conversational speech, both sexes pooled (mean, sd). Loudness level is
# left out on purpose: it depends on the recording chain, not the speaker.
DEFAULT_NORMS_STATS: dict[str, tuple[float, float]] = {
    "f0_mean_st": (29.5, 4.5),  # ~150 Hz; men ~110 Hz, women ~200 Hz
    "f0_sd_st": (2.5, 1.0),
    "f0_range_st": (8.0, 3.0),
    "intensity_sd_db": (7.0, 2.5),
    "intensity_range_db": (20.0, 6.0),
    "jitter_local_pct": (1.0, 0.6),
    "shimmer_local_pct": (4.0, 2.0),
    "hnr_db": (14.0, 5.0),
    "speaking_rate_syl_per_s": (4.0, 1.0),
    "articulation_rate_syl_per_s": (4.8, 1.0),
    "pause_fraction": (0.08, 0.10),
}


def _feature_values(prosody: Prosody) -> dict[str, float | None]:
    values: dict[str, float | None] = {
        name: getattr(prosody, name) for name in _BAND_WORDS if hasattr(prosody, name)
    }
    values["pause_fraction"] = (
        prosody.pause_total_s / prosody.duration_s if prosody.duration_s > 0 else None
    )
    return values


@dataclass(frozen=True)
class ProsodyNorms:
    """Reference mean and standard deviation per feature, for qualitative bands.

    Attributes:
        name: Shown in the rendered block so a reader knows what "HIGH" is relative to.
        stats: Feature name -> (mean, sd). Features without an entry get no band.
    """

    name: str = "built-in adult speech defaults"
    stats: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: dict(DEFAULT_NORMS_STATS)
    )

    @classmethod
    def from_corpus(cls, prosodies: Sequence[Prosody], name: str | None = None) -> ProsodyNorms:
        """Norms from a list of utterances (a corpus, or one speaker's utterances).

        Args:
            prosodies: At least two :class:`Prosody` records.
            name: Label for the rendered block; defaults to "corpus of N utterances".

        Returns:
            Norms over every feature measured in at least two utterances. An sd below
            a tenth of the default sd is raised to it, so a near-constant corpus does
            not turn small differences into VERY HIGH.

        Raises:
            ValueError: Fewer than two utterances.
        """
        if len(prosodies) < 2:
            raise ValueError(
                f"ProsodyNorms.from_corpus needs at least 2 utterances, got {len(prosodies)}."
            )
        stats: dict[str, tuple[float, float]] = {}
        rows = [_feature_values(p) for p in prosodies]
        for feature in _BAND_WORDS:
            values = np.array([r[feature] for r in rows if r.get(feature) is not None], float)
            if values.size < 2:
                continue
            floor = 0.1 * DEFAULT_NORMS_STATS.get(feature, (0.0, 1.0))[1]
            stats[feature] = (float(values.mean()), max(float(values.std(ddof=1)), floor))
        return cls(name=name or f"corpus of {len(prosodies)} utterances", stats=stats)

    def zscore(self, feature: str, value: float | None) -> float | None:
        """How many of the reference's standard deviations ``value`` lies from its mean (``None``: no norm or value)."""
        if value is None or feature not in self.stats:
            return None
        mean, sd = self.stats[feature]
        return (value - mean) / sd if sd > 0 else 0.0

    def band(self, feature: str, value: float | None) -> str:
        """The qualitative band of ``value`` for ``feature``.

        Args:
            feature: A feature name such as ``"f0_mean_st"``.
            value: Its measured value.

        Returns:
            ``" [HIGH]"``-style text (with a leading space), or ``""`` when there is
            no norm for the feature or no value.

        >>> ProsodyNorms().band("speaking_rate_syl_per_s", 6.5)
        ' [VERY FAST]'
        """
        z = self.zscore(feature, value)
        if z is None:
            return ""
        low, high = _BAND_WORDS.get(feature, ("LOW", "HIGH"))
        if abs(z) < 1.0:
            return " [NORMAL]"
        word = high if z > 0 else low
        return f" [VERY {word}]" if abs(z) >= 2.0 else f" [{word}]"


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def render_prosody(prosody: Prosody, norms: ProsodyNorms | None = None,
                   speaker_norms: ProsodyNorms | None = None) -> str:
    """Render the features as a compact block, one line per feature group.

    Args:
        prosody: The measured prosody.
        norms: Reference for the bands; built-in adult-speech defaults if ``None``.
        speaker_norms: The speaker's own baseline; when given, a last line says where each
            cue lies relative to it (:func:`render_speaker_relative`).

    Returns:
        Multi-line text, no trailing newline.
    """
    norms = norms or ProsodyNorms()
    p = prosody
    values = _feature_values(p)
    lines = [f"Prosody (backend: {p.backend}; bands vs {norms.name})"]
    lines.append(
        f"Duration: {p.duration_s:.2f}s, voiced {100 * p.voiced_fraction:.0f}%, "
        f"syllables {p.syllable_count}"
    )
    if p.f0_mean_hz is None:
        lines.append("Pitch: no voiced frames")
    else:
        lines.append(
            f"Pitch: mean={p.f0_mean_hz:.0f}Hz ({p.f0_mean_st:.1f}st)"
            f"{norms.band('f0_mean_st', p.f0_mean_st)}, median={p.f0_median_hz:.0f}Hz, "
            f"sd={p.f0_sd_hz:.0f}Hz ({p.f0_sd_st:.1f}st){norms.band('f0_sd_st', p.f0_sd_st)}, "
            f"range={p.f0_range_st:.1f}st ({p.f0_p5_hz:.0f}-{p.f0_p95_hz:.0f}Hz)"
            f"{norms.band('f0_range_st', p.f0_range_st)}"
        )
        lines.append(
            f"Pitch movement: slope={_num(p.f0_slope_st_per_s, '+.1f', 'st/s')}, "
            f"rising={_num(p.f0_rising_slope_mean_st_per_s, '+.1f', 'st/s')}, "
            f"falling={_num(p.f0_falling_slope_mean_st_per_s, '+.1f', 'st/s')}"
        )
    lines.append(
        f"Loudness: mean={_num(p.intensity_mean_db, '.1f', 'dB')}"
        f"{norms.band('intensity_mean_db', p.intensity_mean_db)}, "
        f"sd={_num(p.intensity_sd_db, '.1f', 'dB')}{norms.band('intensity_sd_db', p.intensity_sd_db)}, "
        f"range={_num(p.intensity_range_db, '.1f', 'dB')}"
        f"{norms.band('intensity_range_db', p.intensity_range_db)}"
    )
    if p.jitter_local_pct is None and p.shimmer_local_pct is None and p.hnr_db is None:
        lines.append(f"Voice quality: n/a ({p.backend} backend)")
    else:
        lines.append(
            f"Voice quality: jitter={_num(p.jitter_local_pct, '.2f', '%')}"
            f"{norms.band('jitter_local_pct', p.jitter_local_pct)}, "
            f"shimmer={_num(p.shimmer_local_pct, '.2f', '%')}"
            f"{norms.band('shimmer_local_pct', p.shimmer_local_pct)}, "
            f"HNR={_num(p.hnr_db, '.1f', 'dB')}{norms.band('hnr_db', p.hnr_db)}"
        )
    lines.append(
        f"Tempo: speaking rate={p.speaking_rate_syl_per_s:.1f}syl/s"
        f"{norms.band('speaking_rate_syl_per_s', p.speaking_rate_syl_per_s)}, "
        f"articulation rate={_num(p.articulation_rate_syl_per_s, '.1f', 'syl/s')}"
        f"{norms.band('articulation_rate_syl_per_s', p.articulation_rate_syl_per_s)}"
    )
    if p.pause_count:
        where = ", ".join(f"{start:.2f}s" for start, _ in p.pause_intervals_s)
        pause_text = (
            f"{p.pause_count} (total {p.pause_total_s:.2f}s, longest {p.pause_longest_s:.2f}s; "
            f"starting at {where})"
        )
    else:
        pause_text = "none"
    lines.append(
        f"Pauses: {pause_text}{norms.band('pause_fraction', values['pause_fraction'])}; "
        f"leading silence {p.leading_silence_s:.2f}s, trailing silence {p.trailing_silence_s:.2f}s"
    )
    if speaker_norms is not None:
        lines.append(render_speaker_relative(prosody, speaker_norms))
    return "\n".join(lines)


#: The cues :func:`render_speaker_relative` reads against a speaker's baseline: feature -> name.
SPEAKER_CUES: dict[str, str] = {
    "f0_mean_st": "pitch level",
    "f0_range_st": "pitch range",
    "f0_sd_st": "pitch movement",
    "intensity_mean_db": "loudness",
    "speaking_rate_syl_per_s": "tempo",
    "pause_fraction": "pauses",
}


def speaker_relative_values(prosody: Prosody, speaker_norms: ProsodyNorms) -> dict[str, float]:
    """Every banded feature as a z-score against the speaker's own baseline, keyed ``<feature>_vs_speaker``."""
    values = _feature_values(prosody)
    scores = {feature: speaker_norms.zscore(feature, value) for feature, value in values.items()}
    return {f"{feature}_vs_speaker": round(z, 4) for feature, z in scores.items() if z is not None}


def render_speaker_relative(prosody: Prosody, speaker_norms: ProsodyNorms) -> str:
    """One line: each cue of :data:`SPEAKER_CUES` in standard deviations from the speaker's own baseline, with its band.

    Args:
        prosody: The measured prosody.
        speaker_norms: The speaker's baseline (its ``name`` says whose, and from which clips).

    Returns:
        ``"Relative to speaker X: pitch level +1.2 sd [HIGH], ..."``; cues with no value are left out.
    """
    values = _feature_values(prosody)
    cues = []
    for feature, name in SPEAKER_CUES.items():
        z = speaker_norms.zscore(feature, values.get(feature))
        if z is not None:
            cues.append(f"{name} {z:+.1f} sd{speaker_norms.band(feature, values[feature])}")
    return f"Relative to {speaker_norms.name}: " + (", ".join(cues) if cues else "no cue measured") + "."


#: The cues of :func:`render_delivery_summary`: feature -> (name, word below the norm, word above).
DELIVERY_CUES: dict[str, tuple[str, str, str]] = {
    "f0_range_st": ("pitch range", "narrow", "wide"),
    "f0_sd_st": ("pitch movement", "flat", "lively"),
    "intensity_mean_db": ("loudness", "soft", "loud"),
    "speaking_rate_syl_per_s": ("tempo", "slow", "fast"),
    "pause_fraction": ("pauses", "few", "many"),
}


def render_delivery_summary(prosody: Prosody, norms: ProsodyNorms | None = None,
                            speaker_norms: ProsodyNorms | None = None) -> str:
    """Render the delivery as one short line: each cue above or below the norm, in words.

    The compact view of :func:`render_prosody` for short prompts (single-shot training on a
    CPU): five cues, each named by the side of the norm mean its value lies on. A cue with
    no value or no norm is left out.

    Args:
        prosody: The measured prosody.
        norms: Reference for the sides; built-in adult-speech defaults if ``None``.
        speaker_norms: The speaker's own baseline; when given, the same cues follow again,
            each on its side of the speaker's mean.

    Returns:
        One line, e.g. ``"Delivery vs corpus: pitch range wide, ..., pauses many."``, then
        ``" Vs speaker X: pitch range narrow, ..."`` with a speaker baseline.
    """
    text = f"Delivery vs {(norms or ProsodyNorms()).name}: {_sides(prosody, norms or ProsodyNorms())}."
    if speaker_norms is not None:
        text += f" Vs {speaker_norms.name}: {_sides(prosody, speaker_norms)}."
    return text


def _sides(prosody: Prosody, norms: ProsodyNorms) -> str:
    values = _feature_values(prosody)
    cues = []
    for feature, (name, below, above) in DELIVERY_CUES.items():
        value = values.get(feature)
        if value is None or feature not in norms.stats:
            continue
        mean, _ = norms.stats[feature]
        cues.append(f"{name} {above if value > mean else below}")
    return ", ".join(cues) if cues else "no cue measured"


def render_contour(prosody: Prosody, points: int = CONTOUR_POINTS, flat_st: float = 2.0) -> str:
    """Render the F0 contour as a Unicode sparkline with unvoiced gaps.

    Args:
        prosody: The measured prosody (its ``contour_*`` fields are used).
        points: Number of characters, each covering an equal slice of the utterance.
        flat_st: A fitted change smaller than this many semitones over the voiced span
            is called flat.

    Returns:
        Two lines: the sparkline (``▁``..``█``, ``·`` = mostly unvoiced) and the
        range in Hz and semitones with the overall trend.

    Raises:
        ValueError: ``points`` is not positive.
    """
    if points < 1:
        raise ValueError(f"render_contour: points={points}; accepted: an integer >= 1.")
    times = np.asarray(prosody.contour_times_s, dtype=float)
    f0 = np.asarray(prosody.contour_f0_hz, dtype=float)
    header = (
        f"Pitch contour ({points} steps over {prosody.duration_s:.2f}s, "
        f"{UNVOICED_MARK} = unvoiced):"
    )
    voiced = f0 > 0
    if not voiced.any():
        return f"{header}\n{UNVOICED_MARK * points}\nno voiced frames"
    st = np.where(voiced, hz_to_st(np.where(voiced, f0, 1.0)), np.nan)
    end_s = max(prosody.duration_s, float(times[-1]))
    edges = np.linspace(0.0, end_s, points + 1)
    slot = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, points - 1)
    levels: list[float | None] = []
    for i in range(points):
        in_slot = slot == i
        n_frames = int(in_slot.sum())
        n_voiced = int((in_slot & voiced).sum())
        if n_frames == 0 or 2 * n_voiced < n_frames:
            levels.append(None)
        else:
            levels.append(float(np.median(st[in_slot & voiced])))
    known = [v for v in levels if v is not None]
    if not known:
        # voiced frames exist but never dominate a slot: show the voiced ones anyway
        levels = [
            float(np.median(st[(slot == i) & voiced])) if ((slot == i) & voiced).any() else None
            for i in range(points)
        ]
        known = [v for v in levels if v is not None]
    lo, hi = min(known), max(known)
    chars = []
    for v in levels:
        if v is None:
            chars.append(UNVOICED_MARK)
        elif hi - lo < 1e-9:
            chars.append(SPARK_LEVELS[3])
        else:
            chars.append(SPARK_LEVELS[int(round((v - lo) / (hi - lo) * (len(SPARK_LEVELS) - 1)))])
    t_voiced = times[voiced]
    change_st = 0.0
    if prosody.f0_slope_st_per_s is not None and t_voiced.size >= 2:
        change_st = prosody.f0_slope_st_per_s * float(t_voiced[-1] - t_voiced[0])
    if math.isclose(change_st, 0.0) or abs(change_st) < flat_st:
        trend = "flat"
    else:
        trend = "rising" if change_st > 0 else "falling"
    summary = (
        f"range {prosody.f0_p5_hz:.0f}-{prosody.f0_p95_hz:.0f}Hz ({prosody.f0_range_st:.1f}st, "
        f"5th-95th percentile); "
        f"trend: {trend} ({change_st:+.1f}st over the voiced span)"
    )
    return f"{header}\n{''.join(chars)}\n{summary}"
