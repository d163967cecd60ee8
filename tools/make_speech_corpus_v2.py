"""Render the embedded speech corpus v2 (affectgym/data/speech_v2) with espeak-ng and Praat.

A build-time tool only: the package reads the committed FLAC files and manifest and never
needs espeak-ng at run time. The same espeak-ng and praat-parselmouth versions reproduce the
same files: every random draw comes from one seeded generator, in a fixed order.

Usage:
    apt-get install -y espeak-ng
    python tools/make_speech_corpus_v2.py [--out affectgym/data/speech_v2]

Why a second corpus: in v1 every sarcastic clip got one bundle of settings, each disjoint
from the sincere one, so one threshold on one feature (pitch range) decided the label. Real
sarcasm has no single tone of voice (Bryant & Fox Tree 2005): speakers mark it by deadpan
flatness or by exaggeration, each relative to their own baseline. In v2:

* Every label is spoken in three *deliveries* (:data:`SARCASM_DELIVERIES`,
  :data:`EMOTION_DELIVERIES`), points in a space of five speaker-relative cues (pitch level,
  pitch range, tempo, loudness, emphasis of the key phrase). Sarcasm is a *contrast* in that
  space (a melody more marked than the energy behind it: wide and high but not fast or loud,
  or slow and soft without being even), sincerity the opposite contrast, and each label's
  deliveries lie at low, middle and high arousal. So every single cue overlaps across the
  labels; only their combination tells them apart.
* Every cue of every clip is drawn at random around its delivery (:data:`CUE_SPREAD`), and so
  are the pauses.
* Eight voices (:data:`SPEAKERS`), each with its own baseline pitch, rate and loudness, so a
  raw value means little until it is read against the speaker's own.
* Sarcasm: the 112 pivot lines of v1, each spoken both ways by one voice (text is at chance),
  with their conversational context. Emotion: 24 neutral sentences, each spoken in all five
  emotions by one voice.

espeak-ng renders the words, the tempo, the pauses and the key phrase's emphasis (SSML);
Praat (parselmouth) then sets pitch level and range precisely (a PSOLA resynthesis of the
pitch tier, range scaled around the clip's own mean in semitones), and the loudness is a gain.
Audio is 16-bit mono FLAC at 8 kHz. Ids are assigned in a hash-shuffled order; labels and
deliveries live only in manifest.jsonl.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_speech_corpus import PIVOT_LINES, PIVOT_LINES_2  # noqa: E402  (the v1 lines, reused)

SAMPLE_RATE_HZ = 8000
SEED = 20261204  # the corpus's one random generator; keep fixed for reproducible files
ID_SALT = "affectgym-speech-v2"
CORPUS_VERSION = "v2"


@dataclass(frozen=True)
class Speaker:
    """A voice with its own baseline: espeak-ng voice, pitch (0-99), words per minute, gain.

    The male voices sit at espeak-ng pitch 62-72 (about 110-125 Hz): lower, a calm delivery's
    shift would take them under the 75 Hz floor of the pitch analysis.
    """

    voice: str
    pitch: int
    words_per_min: int
    gain_db: float


SPEAKERS: dict[str, Speaker] = {
    "Sam": Speaker("en-us", 66, 165, 0.0),
    "Priya": Speaker("en-us+f3", 55, 180, -3.0),
    "Oliver": Speaker("en-gb-x-rp+m3", 72, 150, 2.0),
    "Nora": Speaker("en-gb-x-rp+f4", 65, 170, -1.5),
    "Callum": Speaker("en-gb-scotland+m2", 62, 190, 1.0),
    "Ines": Speaker("en-029+f2", 50, 160, -4.0),
    "Marcus": Speaker("en-us-nyc+m5", 68, 200, 3.0),
    "Wen": Speaker("en-gb-x-gbclan+f5", 60, 155, -2.0),
}

#: The cues, in the order of every delivery vector, and what one unit of each is.
CUES = ("pitch", "range", "tempo", "loudness", "emphasis")
CUE_UNITS = {
    "pitch": 1.2,  # semitones of pitch shift
    "range": 0.28,  # natural log of the factor the pitch excursions are scaled by
    "tempo": 0.12,  # natural log of the rate factor
    "loudness": 2.5,  # dB of gain
    "emphasis": 1.0,  # key-phrase emphasis level: <= -0.5 none, else moderate, >= 1 strong
}
#: The standard deviation, in cue units, of every cue around its delivery, clip by clip.
CUE_SPREAD = 0.4

# Sarcasm deliveries. Arousal moves pitch level, pitch range, tempo and loudness together; a
# label adds a *contrast* of CONTRAST_UNITS on top: sarcasm a melody more marked than the
# energy behind it (+pitch, +range, -tempo, -loudness), sincerity the opposite. Each label is
# spoken at low, middle and high arousal, so on any one cue the labels' deliveries interleave.
AROUSAL_AXIS = np.array([1.0, 1.0, 1.0, 1.0])
CONTRAST_AXIS = np.array([1.0, 1.0, -1.0, -1.0])
CONTRAST_UNITS = 0.8


def _delivery(arousal: float, contrast: float, emphasis: float, pause_before_key: float, pause_mid: float) -> dict:
    cues = arousal * AROUSAL_AXIS + contrast * CONTRAST_UNITS * CONTRAST_AXIS
    return {"cues": (*cues.round(3), emphasis), "pause_before_key": pause_before_key, "pause_mid": pause_mid}


SARCASM_DELIVERIES: dict[str, dict[str, dict]] = {
    "sarcastic": {  # deadpan: flat, low, slow, soft; exaggerated: wide, high, emphasised
        "deadpan": _delivery(-2.0, +1, -1.0, pause_before_key=0.5, pause_mid=0.0),
        "drawn-out": _delivery(0.0, +1, 0.5, pause_before_key=0.5, pause_mid=0.0),
        "exaggerated": _delivery(+2.0, +1, 1.5, pause_before_key=0.3, pause_mid=0.0),
    },
    "sincere": {  # calm: even, slow, thoughtful pauses; animated: wide, high, fast, emphasised
        "calm": _delivery(-2.0, -1, -1.0, pause_before_key=0.0, pause_mid=0.6),
        "warm": _delivery(0.0, -1, 0.5, pause_before_key=0.0, pause_mid=0.4),
        "animated": _delivery(+2.0, -1, 1.5, pause_before_key=0.0, pause_mid=0.3),
    },
}

# Emotions: two or three deliveries each (e.g. hot and cold anger), overlapping across labels.
EMOTION_DELIVERIES: dict[str, dict[str, dict]] = {
    "angry": {
        "hot": {"cues": (1.0, 1.0, 1.2, 2.2, 1.5), "pause_before_key": 0.0, "pause_mid": 0.0},
        "cold": {"cues": (-1.0, -1.0, -0.8, 1.5, 1.0), "pause_before_key": 0.5, "pause_mid": 0.2},
    },
    "happy": {
        "elated": {"cues": (2.0, 1.8, 1.0, 1.2, 1.0), "pause_before_key": 0.0, "pause_mid": 0.0},
        "content": {"cues": (0.8, 1.0, 0.0, 0.0, 0.0), "pause_before_key": 0.1, "pause_mid": 0.2},
    },
    "sad": {
        "low": {"cues": (-1.8, -1.5, -1.5, -1.5, -1.0), "pause_before_key": 0.2, "pause_mid": 0.5},
        "tearful": {"cues": (0.8, 0.2, -1.2, -0.8, 0.0), "pause_before_key": 0.3, "pause_mid": 0.5},
    },
    "fearful": {
        "panicked": {"cues": (2.2, 0.4, 2.0, 0.8, 0.5), "pause_before_key": 0.0, "pause_mid": 0.2},
        "anxious": {"cues": (1.0, -0.8, 0.8, -1.2, -0.5), "pause_before_key": 0.3, "pause_mid": 0.5},
    },
    "neutral": {
        "plain": {"cues": (0.0, -0.3, 0.0, 0.0, -1.0), "pause_before_key": 0.1, "pause_mid": 0.1},
        "matter-of-fact": {"cues": (-0.6, -0.8, 0.6, 0.4, -0.5), "pause_before_key": 0.0, "pause_mid": 0.1},
    },
}

# 24 neutral sentences: (sentence, the phrase an emotional delivery stresses).
EMOTION_SENTENCES: list[tuple[str, str]] = [
    ("The package will arrive on Thursday afternoon.", "Thursday afternoon"),
    ("I put the keys on the kitchen table.", "kitchen table"),
    ("We need to talk about the report.", "the report"),
    ("The meeting starts at ten tomorrow.", "ten tomorrow"),
    ("She moved to a new apartment last week.", "new apartment"),
    ("The train leaves from platform four.", "platform four"),
    ("I saw your message this morning.", "this morning"),
    ("They painted the fence green.", "green"),
    ("The results came back on Monday.", "Monday"),
    ("He left his coat in the car.", "in the car"),
    ("The shop closes at six today.", "at six"),
    ("My brother is coming over tonight.", "tonight"),
    ("The letter was on the doormat.", "on the doormat"),
    ("We are out of milk again.", "out of milk"),
    ("The lights in the hallway are on.", "are on"),
    ("Your phone rang twice while you were out.", "rang twice"),
    ("The dog is sleeping by the door.", "by the door"),
    ("They moved the exam to Friday.", "to Friday"),
    ("The window in the back room is open.", "is open"),
    ("I found the old photographs in the attic.", "in the attic"),
    ("The bus was twenty minutes late.", "twenty minutes"),
    ("She called the doctor this afternoon.", "the doctor"),
    ("The boxes are still in the garage.", "still in the garage"),
    ("We changed the locks last night.", "the locks"),
]


def _draw_delivery(rng: np.random.Generator, deliveries: dict[str, dict], name: str, words: str,
                   key_phrase: str) -> dict:
    """One clip's delivery: its cues drawn around the named delivery, then its pauses."""
    spec = deliveries[name]
    cues = np.asarray(spec["cues"], float) + rng.normal(0.0, CUE_SPREAD, len(CUES))
    pause_before_key = int(rng.uniform(200, 450)) if rng.random() < spec["pause_before_key"] else 0
    pause_mid = int(rng.uniform(250, 500)) if rng.random() < spec["pause_mid"] else 0
    if key_phrase and words.lower().find(key_phrase.lower()) <= 0:
        pause_before_key = 0  # a key phrase that opens the line has nothing to pause after
    return {
        "delivery": name,
        "cues": {cue: round(float(v), 3) for cue, v in zip(CUES, cues, strict=True)},
        "pitch_shift_st": round(float(cues[0] * CUE_UNITS["pitch"]), 2),
        "range_factor": round(float(np.exp(cues[1] * CUE_UNITS["range"])), 3),
        "rate_factor": round(float(np.exp(cues[2] * CUE_UNITS["tempo"])), 3),
        "gain_db": round(float(cues[3] * CUE_UNITS["loudness"]), 2),
        "emphasis": "none" if cues[4] <= -0.5 else ("strong" if cues[4] >= 1.0 else "moderate"),
        "pause_before_key_ms": pause_before_key,
        "pause_mid_ms": pause_mid,
        "lead_s": round(float(rng.uniform(0.03, 0.15)), 3),
        "tail_s": round(float(rng.uniform(0.1, 0.4)), 3),
    }


def _ssml(text: str, key_phrase: str, delivery: dict) -> str:
    """The words with the delivery's pauses and key-phrase emphasis (tempo and pitch come later)."""
    start = text.lower().find(key_phrase.lower())
    if start < 0:
        raise ValueError(f"key phrase {key_phrase!r} not found in line {text!r}")
    before, phrase, after = text[:start], text[start : start + len(key_phrase)], text[start + len(key_phrase) :]
    words = before.split()
    if delivery["pause_mid_ms"] and len(words) >= 2:  # a thoughtful pause after the first words
        cut = len(words) // 2
        pause = f'<break time="{delivery["pause_mid_ms"]}ms"/>'
        head = f"{escape(' '.join(words[:cut]))} {pause} {escape(' '.join(words[cut:]))} "
    else:
        head = escape(before)
    key = escape(phrase)
    if delivery["emphasis"] == "strong":
        key = f'<emphasis level="strong"><prosody pitch="+20%" rate="75%">{key}</prosody></emphasis>'
    elif delivery["emphasis"] == "moderate":
        key = f'<emphasis level="moderate">{key}</emphasis>'
    pause = f'<break time="{delivery["pause_before_key_ms"]}ms"/>' if delivery["pause_before_key_ms"] else ""
    return f"<speak>{head}{pause}{key}{escape(after)}</speak>"


def _espeak(ssml: str, speaker: Speaker, rate_factor: float) -> tuple[np.ndarray, int]:
    import soundfile

    words_per_min = int(round(speaker.words_per_min * rate_factor))
    completed = subprocess.run(
        ["espeak-ng", "-m", "-v", speaker.voice, "-p", str(speaker.pitch), "-s", str(words_per_min),
         "--stdout", ssml],
        capture_output=True, check=True,
    )  # fmt: skip
    samples, rate = soundfile.read(io.BytesIO(completed.stdout), dtype="float64")
    return (samples.mean(axis=1) if samples.ndim == 2 else samples), rate


def _set_pitch(samples: np.ndarray, rate: int, shift_st: float, range_factor: float) -> np.ndarray:
    """Shift the pitch by ``shift_st`` and scale its excursions around the clip's mean (in semitones)."""
    import parselmouth
    from parselmouth.praat import call

    sound = parselmouth.Sound(samples, sampling_frequency=rate)
    manipulation = call(sound, "To Manipulation", 0.01, 60, 600)
    tier = call(manipulation, "Extract pitch tier")
    n_points = call(tier, "Get number of points")
    if n_points < 2:
        return samples
    times = [call(tier, "Get time from index", i) for i in range(1, n_points + 1)]
    st = 12 * np.log2(np.array([call(tier, "Get value at index", i) for i in range(1, n_points + 1)]))
    mean_st = st.mean()
    new_st = mean_st + shift_st + range_factor * (st - mean_st)
    call(tier, "Remove points between", 0, sound.duration)
    for time, value in zip(times, new_st, strict=True):
        call(tier, "Add point", time, float(2 ** (value / 12)))
    call([tier, manipulation], "Replace pitch tier")
    return call(manipulation, "Get resynthesis (overlap-add)").values[0]


def _pad(samples: np.ndarray, lead_s: float, tail_s: float) -> np.ndarray:
    """The speech with espeak-ng's own silences cut (its final pause grows with the rate) and new ones of the given lengths."""
    import librosa

    speech, _ = librosa.effects.trim(samples, top_db=45)
    return np.concatenate([np.zeros(int(lead_s * SAMPLE_RATE_HZ)), speech, np.zeros(int(tail_s * SAMPLE_RATE_HZ))])


def render(text: str, key_phrase: str, speaker: Speaker, delivery: dict, out_path: Path) -> tuple[float, str]:
    """One clip: espeak-ng, then Praat's pitch, then the gain; 8 kHz FLAC. Returns (duration s, SSML)."""
    import soundfile
    import soxr

    ssml = _ssml(text, key_phrase, delivery)
    samples, rate = _espeak(ssml, speaker, delivery["rate_factor"])
    samples = _set_pitch(samples, rate, delivery["pitch_shift_st"], delivery["range_factor"])
    samples = soxr.resample(samples, rate, SAMPLE_RATE_HZ)
    samples = _pad(samples, delivery["lead_s"], delivery["tail_s"])
    samples = samples * 10 ** ((speaker.gain_db + delivery["gain_db"] - 6.0) / 20)  # 6 dB headroom
    samples = np.clip(samples, -1.0, 1.0)
    soundfile.write(str(out_path), samples, SAMPLE_RATE_HZ, format="FLAC", subtype="PCM_16",
                    compression_level=1.0)  # fmt: skip
    return round(len(samples) / SAMPLE_RATE_HZ, 3), ssml


def _balanced_deliveries(rng: np.random.Generator, names: list[str], count: int) -> list[str]:
    """``count`` delivery names, each used as evenly as possible, in a random order."""
    repeated = (names * (count // len(names) + 1))[:count]
    return [repeated[i] for i in rng.permutation(count)]


def build_items(rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """Every clip to render as a manifest record (before ids and audio), drawn in a fixed order."""
    speakers = list(SPEAKERS)
    sarcasm = []
    lines = PIVOT_LINES + PIVOT_LINES_2
    for label in SARCASM_DELIVERIES:  # per label, the deliveries are spread evenly over the lines
        SARCASM_DELIVERIES[label]["_order"] = _balanced_deliveries(rng, list(SARCASM_DELIVERIES[label]), len(lines))
    for number, (context, text, key_phrase) in enumerate(lines, start=1):
        speaker = speakers[number % len(speakers)]
        pair_id = f"p{number:03d}"
        for label, deliveries in SARCASM_DELIVERIES.items():
            name = deliveries["_order"][number - 1]
            delivery = _draw_delivery(rng, {k: v for k, v in deliveries.items() if k != "_order"}, name, text, key_phrase)
            sarcasm.append({"_key": f"{pair_id}|{label}", "kind": "sarcasm", "text": text, "context": list(context),
                            "speaker": speaker, "voice": SPEAKERS[speaker].voice, "label": label, "pivot": True,
                            "pair_id": pair_id, "delivery": delivery, "_key_phrase": key_phrase})  # fmt: skip
    for deliveries in SARCASM_DELIVERIES.values():
        deliveries.pop("_order")
    emotion = []
    orders = {label: _balanced_deliveries(rng, list(d), len(EMOTION_SENTENCES)) for label, d in EMOTION_DELIVERIES.items()}
    for number, (text, key_phrase) in enumerate(EMOTION_SENTENCES, start=1):
        speaker = speakers[number % len(speakers)]
        for label, deliveries in EMOTION_DELIVERIES.items():
            delivery = _draw_delivery(rng, deliveries, orders[label][number - 1], text, key_phrase)
            emotion.append({"_key": f"s{number:02d}|{label}", "kind": "emotion", "text": text, "context": [],
                            "speaker": speaker, "voice": SPEAKERS[speaker].voice, "label": label, "pivot": None,
                            "pair_id": f"s{number:02d}", "delivery": delivery, "_key_phrase": key_phrase})  # fmt: skip
    return _assign_ids(sarcasm, "sd"), _assign_ids(emotion, "ed")


def _assign_ids(items: list[dict], prefix: str) -> list[dict]:
    """Neutral ids in a hash-shuffled order, so position never hints at the label."""
    ordered = sorted(items, key=lambda item: hashlib.sha256(f"{ID_SALT}|{item['_key']}".encode()).hexdigest())
    for number, item in enumerate(ordered, start=1):
        item["id"] = f"{prefix}{number:04d}"
    return sorted(ordered, key=lambda item: item["id"])


def main(argv: list[str] | None = None) -> int:
    """Render every clip and write the manifest.

    Args:
        argv: Command-line arguments (``--out DIR``).

    Returns:
        Process exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parents[1] / "affectgym" / "data" / "speech_v2"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        print("espeak-ng not found; install it with: apt-get install -y espeak-ng", file=sys.stderr)
        return 2
    version = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip()
    audio_dir = args.out / "audio"
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    audio_dir.mkdir(parents=True)
    sarcasm, emotion = build_items(np.random.default_rng(SEED))
    order = ["id", "kind", "audio", "duration_s", "text", "context", "speaker", "voice", "label", "pivot",
             "pair_id", "delivery", "ssml"]  # fmt: skip
    with open(args.out / "manifest.jsonl", "w", encoding="utf-8") as handle:
        for item in sarcasm + emotion:
            item["audio"] = f"audio/{item['id']}.flac"
            speaker = SPEAKERS[item["speaker"]]
            item["duration_s"], item["ssml"] = render(item["text"], item["_key_phrase"], speaker, item["delivery"],
                                                      args.out / item["audio"])  # fmt: skip
            handle.write(json.dumps({name: item[name] for name in order}, ensure_ascii=False) + "\n")
    size_mb = sum(p.stat().st_size for p in audio_dir.iterdir()) / 1e6
    print(f"corpus {CORPUS_VERSION}: {len(sarcasm)} sarcasm + {len(emotion)} emotion clips, {size_mb:.1f} MB; {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
