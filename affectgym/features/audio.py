"""Audio loading: any file, bytes or array in, mono float32 at one sample rate out.

Lossless formats (wav, flac, ogg, aiff) are read with ``soundfile``; compressed
container formats (mp4, m4a, aac, mp3, webm, ...) are decoded by the ffmpeg binary
that ``imageio-ffmpeg`` ships, streamed through a pipe as raw 32-bit float PCM, so no
temporary file is ever written. Resampling uses ``soxr``.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np

DEFAULT_SAMPLE_RATE_HZ = 16000  # analysis rate used across affectgym
DEFAULT_MAX_DURATION_S = 600.0  # refuse anything longer than 10 minutes unless asked

SOUNDFILE_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".oga", ".aiff", ".aif", ".au", ".w64"})
FFMPEG_SUFFIXES = frozenset(
    {".mp4", ".m4a", ".aac", ".mp3", ".webm", ".mkv", ".mov", ".opus", ".wma", ".3gp", ".amr"}
)

AudioSource = Union[str, os.PathLike, bytes, bytearray, np.ndarray, "Audio"]


class AudioLoadError(ValueError):
    """An audio input could not be turned into usable samples.

    The message names the input (file name or ``<bytes>``/``<array>``), what was
    wrong with it and what is accepted.
    """


@dataclass(frozen=True, eq=False)
class Audio:
    """Mono audio ready for analysis.

    Attributes:
        samples: 1-D float32 samples, nominally in [-1, 1].
        sample_rate_hz: Sample rate of ``samples``.
        source: Where the audio came from (a file name, ``<bytes>`` or ``<array>``).
    """

    samples: np.ndarray = field(repr=False)
    sample_rate_hz: int
    source: str = "<array>"

    @property
    def duration_s(self) -> float:
        """Length of the audio in seconds."""
        return len(self.samples) / float(self.sample_rate_hz)

    def __repr__(self) -> str:
        return (
            f"Audio(source={self.source!r}, sample_rate_hz={self.sample_rate_hz}, "
            f"duration_s={self.duration_s:.3f})"
        )


def load_audio(
    source: AudioSource,
    sr: int | None = DEFAULT_SAMPLE_RATE_HZ,
    *,
    input_sample_rate_hz: int | None = None,
    max_duration_s: float | None = DEFAULT_MAX_DURATION_S,
) -> Audio:
    """Load audio as mono float32 at ``sr`` Hz.

    Args:
        source: A path (wav/flac/ogg/aiff via soundfile; mp4/m4a/aac/mp3/webm/... via
            ffmpeg), the encoded bytes of such a file, a numpy array of samples
            (1-D, or 2-D as frames x channels) together with ``input_sample_rate_hz``,
            or an :class:`Audio` (resampled if needed).
        sr: Target sample rate in Hz; ``None`` keeps the input's own rate.
        input_sample_rate_hz: Sample rate of ``source`` when it is a numpy array.
        max_duration_s: Refuse inputs longer than this many seconds (``None``: no cap).

    Returns:
        The loaded :class:`Audio`.

    Raises:
        AudioLoadError: The input is unreadable, empty, zero-length, contains NaN or
            infinite samples, or is longer than ``max_duration_s``.

    >>> a = load_audio(np.zeros(8000, dtype=np.float32), input_sample_rate_hz=8000)
    >>> a.sample_rate_hz, a.duration_s
    (16000, 1.0)
    """
    if sr is not None and sr <= 0:
        raise AudioLoadError(f"sr={sr!r} is not a valid sample rate; pass a positive int or None.")
    if isinstance(source, Audio):
        name, samples, rate = source.source, source.samples, source.sample_rate_hz
    elif isinstance(source, np.ndarray):
        name = "<array>"
        if input_sample_rate_hz is None or input_sample_rate_hz <= 0:
            raise AudioLoadError(
                "<array>: a numpy array needs input_sample_rate_hz=<its sample rate in Hz>."
            )
        samples, rate = source, int(input_sample_rate_hz)
    elif isinstance(source, (bytes, bytearray)):
        name = "<bytes>"
        if len(source) == 0:
            raise AudioLoadError("<bytes>: empty input (0 bytes); pass the bytes of an audio file.")
        samples, rate = _decode_bytes(bytes(source), sr, max_duration_s)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = str(path)
        samples, rate = _decode_path(path, sr, max_duration_s)
    else:
        raise AudioLoadError(
            f"cannot load audio from a {type(source).__name__}; accepted: a path, bytes, "
            "a numpy array with input_sample_rate_hz, or an Audio."
        )
    return _finish(samples, rate, name, sr, max_duration_s)


def audio_file_problem(
    path: str | os.PathLike, min_duration_s: float = 0.0, max_duration_s: float | None = DEFAULT_MAX_DURATION_S
) -> str | None:
    """Why a file cannot serve as a clip, or ``None``: fast checks of the file and its header.

    Nothing is decoded. Formats libsndfile reads (wav, flac, ogg, aiff, mp3, ...) have their
    header read for the length; container formats only ffmpeg decodes (mp4, m4a, ...) are
    checked as files only, and a broken one is found when it is decoded.

    Args:
        path: The audio file.
        min_duration_s: Shortest usable length (e.g. :attr:`ProsodyParams.min_duration_s
            <affectgym.features.prosody.ProsodyParams.min_duration_s>`).
        max_duration_s: Longest usable length (:func:`load_audio` refuses longer audio;
            ``None``: no cap).

    Returns:
        The reason (e.g. ``"empty file (0 bytes)"``), or ``None`` when the file looks usable.

    >>> audio_file_problem("/nonexistent/clip.wav")
    'no such file'
    """
    path = Path(path)
    if path.is_symlink() and not path.exists():
        return f"dangling symlink to {os.readlink(path)}"
    if not path.exists():
        return "no such file"
    if path.is_dir():
        return "a folder, not an audio file"
    if not path.is_file():
        target = f" (a link to {path.resolve()})" if path.is_symlink() else ""
        return f"not a regular file{target}: a FIFO, a device or a socket is never read"
    try:
        size = path.stat().st_size
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    if size == 0:
        return "empty file (0 bytes)"
    import soundfile

    try:
        info = soundfile.info(str(path))
    except Exception as err:  # noqa: BLE001 - libsndfile raises several types for one cause
        if path.suffix.lower() in FFMPEG_SUFFIXES:
            return None
        reason = str(err).rpartition(": ")[2] or type(err).__name__
        return f"not a readable audio file ({reason.rstrip('.')})"
    if info.frames <= 0 or info.samplerate <= 0:
        return "zero-length audio (no samples)"
    duration_s = info.frames / float(info.samplerate)
    if duration_s + 1e-9 < min_duration_s:
        return f"too short: {duration_s:.3f} s of audio, at least {min_duration_s:.3f} s needed"
    if max_duration_s is not None and duration_s > max_duration_s:
        return f"too long: {duration_s:.1f} s of audio, at most {max_duration_s:g} s are measured"
    return None


def _finish(
    samples: np.ndarray, rate: int, name: str, sr: int | None, max_duration_s: float | None
) -> Audio:
    samples = np.asarray(samples)
    if samples.ndim == 2:
        samples = samples.mean(axis=1)
    elif samples.ndim != 1:
        raise AudioLoadError(
            f"{name}: samples have shape {samples.shape}; accepted: 1-D, or 2-D frames x channels."
        )
    if samples.size == 0:
        raise AudioLoadError(f"{name}: zero-length audio (no samples).")
    if not np.issubdtype(samples.dtype, np.floating):
        if np.issubdtype(samples.dtype, np.integer):
            samples = samples.astype(np.float32) / float(np.iinfo(samples.dtype).max)
        else:
            raise AudioLoadError(f"{name}: samples of dtype {samples.dtype} are not audio.")
    samples = samples.astype(np.float32, copy=False)
    if not np.isfinite(samples).all():
        raise AudioLoadError(f"{name}: audio contains NaN or infinite samples.")
    duration_s = samples.size / float(rate)
    if max_duration_s is not None and duration_s > max_duration_s:
        raise AudioLoadError(
            f"{name}: audio is {duration_s:.1f} s long, over the max_duration_s={max_duration_s:g} "
            "cap; trim it or raise max_duration_s."
        )
    if sr is not None and rate != sr:
        import soxr

        samples = soxr.resample(samples, rate, sr).astype(np.float32, copy=False)
        rate = sr
    return Audio(samples=np.ascontiguousarray(samples), sample_rate_hz=int(rate), source=name)


def _decode_path(
    path: Path, sr: int | None, max_duration_s: float | None
) -> tuple[np.ndarray, int]:
    if not path.is_file():
        raise AudioLoadError(f"{path}: no such file.")
    if path.stat().st_size == 0:
        raise AudioLoadError(f"{path}: empty file (0 bytes).")
    suffix = path.suffix.lower()
    if suffix in FFMPEG_SUFFIXES:
        return _ffmpeg_decode(str(path), None, str(path), max_duration_s)
    try:
        return _soundfile_decode(path, str(path), max_duration_s)
    except AudioLoadError:
        raise
    except Exception as err:  # noqa: BLE001 - libsndfile raises several types; fall back to ffmpeg
        if suffix in SOUNDFILE_SUFFIXES:
            raise AudioLoadError(f"{path}: unreadable {suffix} file ({err}).") from err
        return _ffmpeg_decode(str(path), None, str(path), max_duration_s)


def _decode_bytes(
    data: bytes, sr: int | None, max_duration_s: float | None
) -> tuple[np.ndarray, int]:
    try:
        return _soundfile_decode(io.BytesIO(data), "<bytes>", max_duration_s)
    except AudioLoadError:
        raise
    except Exception:  # noqa: BLE001 - not a libsndfile format; let ffmpeg try
        return _ffmpeg_decode("pipe:0", data, "<bytes>", max_duration_s)


def _soundfile_decode(
    file: Path | io.BytesIO, name: str, max_duration_s: float | None
) -> tuple[np.ndarray, int]:
    import soundfile

    with soundfile.SoundFile(file) as handle:
        rate = int(handle.samplerate)
        if max_duration_s is not None and handle.frames > (max_duration_s * rate) + 1:
            raise AudioLoadError(
                f"{name}: audio is {handle.frames / rate:.1f} s long, over the "
                f"max_duration_s={max_duration_s:g} cap; trim it or raise max_duration_s."
            )
        samples = handle.read(dtype="float32", always_2d=True)
    return samples, rate


_RATE_PATTERN = re.compile(r"Audio: [^,]+, (\d+) Hz")


def _ffmpeg_decode(
    input_arg: str, data: bytes | None, name: str, max_duration_s: float | None
) -> tuple[np.ndarray, int]:
    """Decode with the imageio-ffmpeg binary; PCM comes back through stdout."""
    try:
        import imageio_ffmpeg

        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as err:
        raise AudioLoadError(
            f"{name}: decoding this format needs ffmpeg from the imageio-ffmpeg package "
            f"({err}); install affectgym[audio] or convert the file to wav/flac."
        ) from err
    # -nostdin keeps ffmpeg off the terminal; bytes input arrives on stdin instead
    command = [exe, "-hide_banner"] + (["-nostdin"] if data is None else [])
    command += ["-i", input_arg, "-vn", "-ac", "1"]
    if max_duration_s is not None:
        # decode a little past the cap so an over-long input is detected, not truncated
        command += ["-t", f"{max_duration_s + 1.0:.3f}"]
    command += ["-f", "f32le", "-acodec", "pcm_f32le", "pipe:1"]
    completed = subprocess.run(
        command,
        input=data,
        stdin=None if data is not None else subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    log = completed.stderr.decode("utf-8", errors="replace")
    if completed.returncode != 0:
        last = log.strip().splitlines()[-1] if log.strip() else "no message"
        raise AudioLoadError(f"{name}: ffmpeg could not decode it ({last}).")
    rates = _RATE_PATTERN.findall(log)
    if not rates:
        raise AudioLoadError(f"{name}: ffmpeg found no audio stream in it.")
    samples = np.frombuffer(completed.stdout, dtype="<f4")
    return samples, int(rates[-1])
