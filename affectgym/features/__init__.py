"""Audio features for affectgym: loading, prosody (praat and librosa backends),
LLM-readable rendering, an on-disk cache and plots.

Heavy libraries (parselmouth, librosa, matplotlib) are imported only inside the
functions that use them, so importing this package is cheap.

>>> from affectgym.features import extract_prosody, load_audio, render_contour
"""

from __future__ import annotations

from affectgym.features.audio import Audio, AudioLoadError, load_audio
from affectgym.features.cache import ProsodyCache, cached_prosody, extract_many
from affectgym.features.prosody import Prosody, ProsodyParams, extract_prosody
from affectgym.features.render import ProsodyNorms, render_contour, render_prosody

__all__ = [
    "Audio",
    "AudioLoadError",
    "Prosody",
    "ProsodyCache",
    "ProsodyNorms",
    "ProsodyParams",
    "cached_prosody",
    "extract_many",
    "extract_prosody",
    "load_audio",
    "render_contour",
    "render_prosody",
]
