"""Render the embedded speech corpus (affectgym/data/speech) with espeak-ng.

A build-time tool only: the package reads the committed FLAC files and manifest and
never needs espeak-ng at run time. Rerunning it with the same espeak-ng version
reproduces the same files (no randomness beyond a fixed seed).

Usage:
    apt-get install -y espeak-ng
    python tools/make_speech_corpus.py [--out affectgym/data/speech]

Two sets:

* ``sarcasm``: every line is rendered twice in the same voice: sincere (even pitch,
  normal rate) and sarcastic (wide pitch range, slower, a pause before and strong
  emphasis on the key phrase). For *pivot* lines the words are the same in both
  renderings and only the delivery tells them apart. For non-pivot lines the words
  themselves signal sarcasm ("Yeah, because that always works."), and their sincere
  partner is a different, plainly sincere line.
* ``emotion``: neutral sentences read with angry / sad / happy / fearful / neutral
  delivery settings, for the generic speech-emotion env.

Audio is 16-bit mono FLAC at 8 kHz (``SAMPLE_RATE_HZ``), so that both sets fit the
package's 10 MB budget for affectgym/data.

Clip ids (``sc0001``, ``em0001``) and file names are assigned in an order shuffled by
a hash, so neither encodes the label; the label lives only in manifest.jsonl. Sarcasm
lines come in releases (``SARCASM_RELEASES``): add new lines as a new release, whose
pairs and clips are numbered after every earlier one, so published ids never move.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

# Committed audio: 16-bit mono FLAC at 8 kHz, which keeps both sets inside the package's
# 10 MB budget; the pitch track is computed at 8 kHz anyway and 4 kHz of bandwidth holds
# every F0 and the loudness contour.
SAMPLE_RATE_HZ = 8000
ID_SALT = "affectgym-speech-v1"  # changes the id shuffle; keep fixed for stable ids

# Speaker name -> espeak-ng voice. Speakers are distinct voices, so a speaker-
# independent split is a voice-independent split.
SPEAKER_VOICES = {
    "Sam": "en-us",
    "Priya": "en-us+f3",
    "Oliver": "en-gb-x-rp+m3",
    "Nora": "en-gb-x-rp+f4",
}
SPEAKERS = tuple(SPEAKER_VOICES)

# Pivot lines: (context lines "Name: text", line, key phrase). The speaker of the line
# is assigned round-robin; context speakers are other people. The words are ambiguous:
# a neutral context leaves both readings open, only the delivery decides.
PIVOT_LINES: list[tuple[list[str], str, str]] = [
    (
        ["Dana: The team lead just added a meeting for four o'clock."],
        "Oh great, another meeting.",
        "another meeting",
    ),
    (["Marco: I finished the report over the weekend."], "Wow, that was fast.", "that was fast"),
    (["Lena: The printer is working again."], "Well, that's wonderful news.", "wonderful news"),
    (
        ["Theo: I booked us the window seats.", "Theo: Right next to the wing."],
        "That's a lovely view.",
        "lovely view",
    ),
    (["Iris: Dinner is ready, I made the casserole."], "I can hardly wait.", "hardly wait"),
    (
        ["Felix: The train will be here in twenty minutes."],
        "Perfect, just perfect.",
        "just perfect",
    ),
    (["Ava: I repainted the kitchen yellow."], "That's a bold choice.", "bold choice"),
    (["Jonas: We're moving the launch to Monday."], "Sounds like a fine plan.", "fine plan"),
    (["Maya: My cousin is staying with us for two weeks."], "How nice for you.", "how nice"),
    (["Ruth: The landlord fixed the heating."], "Finally, what a surprise.", "what a surprise"),
    (["Kai: I signed us up for the charity run."], "I'm so excited.", "so excited"),
    (["Elena: The new manager starts tomorrow."], "Can't wait to meet her.", "can't wait"),
    (
        ["Tom: I'll handle the budget spreadsheet myself."],
        "That makes me feel much better.",
        "much better",
    ),
    (
        ["Grace: It's supposed to rain all weekend."],
        "Lovely weather for a picnic.",
        "lovely weather",
    ),
    (["Hugo: They changed the password rules again."], "That's very helpful.", "very helpful"),
    (["Zoe: I got us tickets for the opera."], "What a treat.", "what a treat"),
    (["Leo: The meeting ran two hours over."], "Time well spent.", "well spent"),
    (["Mina: I made the coffee a little stronger today."], "Just how I like it.", "how I like it"),
    (["Owen: Your flight has been delayed by an hour."], "Oh, fantastic.", "fantastic"),
    (
        ["Clara: I told my mother you'd help with the move."],
        "Thanks for asking me first.",
        "asking me first",
    ),
    (
        ["Nico: The software update finished overnight."],
        "Everything runs so smoothly now.",
        "so smoothly",
    ),
    (
        ["Ines: I'm bringing my new boyfriend to the party."],
        "I'm sure he's delightful.",
        "delightful",
    ),
    (
        ["Paul: We have a surprise inspection at nine."],
        "What a great way to start the day.",
        "great way",
    ),
    (["Hana: I organised the files by colour."], "That's really clever.", "really clever"),
    (
        ["Victor: The restaurant only had one table left, by the kitchen door."],
        "Sounds cosy.",
        "cosy",
    ),
    (["Lucy: I volunteered you for the bake sale."], "Thanks, I love baking.", "love baking"),
    (["Ben: The store was out of the cereal you like."], "Well, that's just great.", "just great"),
    (
        ["Sara: I wrote a ten-page summary of the book."],
        "Short and sweet, then.",
        "short and sweet",
    ),
    (["Omar: We're going camping without a tent."], "That sounds relaxing.", "relaxing"),
    (["Julia: The neighbours are having another party tonight."], "How fun.", "how fun"),
    (["Arjun: I parked the car in the garage."], "Good job.", "good job"),
    (["Mila: I've rearranged the whole office layout."], "I love surprises.", "love surprises"),
    (["Finn: The client asked for one more revision."], "Of course they did.", "of course"),
    (["Tara: I ordered pizza for everyone."], "You're a genius.", "genius"),
    (
        ["Eli: The bus driver skipped our stop again."],
        "Brilliant service, as always.",
        "brilliant service",
    ),
    (
        ["Nadia: I finally fixed the leaky tap.", "Nadia: Took me all afternoon."],
        "Impressive work.",
        "impressive",
    ),
    (
        ["Rosa: They've put me in charge of the holiday party."],
        "This will be memorable.",
        "memorable",
    ),
    (["Karl: The lecture is three hours long today."], "I'm thrilled.", "thrilled"),
    (["Dina: My brother is learning the drums at home."], "Music to my ears.", "music to my ears"),
    (["Sven: I brought my famous fruitcake."], "Everyone's favourite.", "favourite"),
    (["Amy: The Wi-Fi password is on the fridge."], "That's convenient.", "convenient"),
    (["Ravi: I re-wrote your introduction for you."], "How thoughtful of you.", "thoughtful"),
    (
        ["Lila: Your package arrived, the box was open."],
        "Wonderful, just wonderful.",
        "just wonderful",
    ),
    (["Marek: I'm going to fix the car myself this time."], "What could go wrong?", "go wrong"),
    (
        ["Beth: The cat brought you a present, it's on your pillow."],
        "How sweet of her.",
        "how sweet",
    ),
    (
        ["Yusuf: I got you a gym membership for your birthday."],
        "What a lovely gift.",
        "lovely gift",
    ),
    (
        ["Carmen: The team voted to work on Saturday."],
        "Can't think of anything better.",
        "anything better",
    ),
    (
        ["Ivan: I've started learning the bagpipes."],
        "The neighbours will be delighted.",
        "delighted",
    ),
    (
        ["Noor: Your presentation was moved to eight in the morning."],
        "My favourite time of day.",
        "favourite time",
    ),
    (["Pete: I finished all the ice cream."], "Thanks for saving me some.", "saving me some"),
    (["Ella: The traffic report says the highway is clear."], "Good to know.", "good to know"),
    (
        ["Adam: We're doing the quarterly review by hand this year."],
        "Sounds efficient.",
        "efficient",
    ),
    (
        ["Gina: I signed us up for the five a.m. yoga class."],
        "I'm an early bird, you know.",
        "early bird",
    ),
    (
        ["Hal: The vending machine took my coins again."],
        "Best machine in the building.",
        "best machine",
    ),
]

# Non-pivot pairs: (context, sarcastic line whose words signal sarcasm, its key phrase,
# plainly sincere partner line). The sincere partner is rendered sincerely.
TEXT_CUE_PAIRS: list[tuple[list[str], str, str, str]] = [
    (
        ["Dana: Let's just restart the server and hope."],
        "Yeah, because that always works.",
        "always works",
        "Good idea, a restart usually fixes it.",
    ),
    (
        ["Marco: I told the kids to clean their rooms."],
        "Sure, and pigs will fly tomorrow.",
        "pigs will fly",
        "Great, they did a good job last time.",
    ),
    (
        ["Lena: I'll be ready in five minutes."],
        "Right, your famous five minutes, which means an hour.",
        "famous five minutes",
        "Perfect, I'll start the car.",
    ),
    (
        ["Theo: The printer jammed again."],
        "Oh, what a shock, never seen that before.",
        "never seen that before",
        "I'll call the technician to fix it.",
    ),
    (
        ["Iris: My code passed all the tests on the first try."],
        "Sure it did, and I'm the queen of England.",
        "queen of England",
        "Well done, that's a great result.",
    ),
    (
        ["Felix: I'm going to start my diet on Monday."],
        "Like you did the last ten Mondays.",
        "last ten Mondays",
        "I'll join you, let's do it together.",
    ),
    (
        ["Ava: The manager says this is the final deadline."],
        "Oh yes, the final final deadline, I totally believe that.",
        "totally believe that",
        "Then let's plan the week around it.",
    ),
    (
        ["Jonas: I'll definitely remember your birthday this year."],
        "Of course, just like every year, not.",
        "not",
        "Thank you, that means a lot to me.",
    ),
]

# Lines added in the second release (after the first release's pivot and non-pivot
# pairs, so their pair ids and clip ids come after every first-release one).
PIVOT_LINES_2: list[tuple[list[str], str, str]] = [
    (
        ["Wendy: The plumber says he'll come between eight and six."],
        "Nice and precise.",
        "nice and precise",
    ),
    (["Igor: I taught the parrot a new word."], "I'm sure it's charming.", "charming"),
    (["Quinn: The boss wants everyone's feedback by tonight."], "No pressure, then.", "no pressure"),
    (["Bruno: I moved all your books to the attic."], "That frees up some space.", "frees up"),
    (["Fiona: The hotel moved us to a room above the bar."], "Aren't we fortunate.", "fortunate"),
    (["Gabe: My aunt knitted you another sweater."], "I'll wear it with pride.", "with pride"),
    (
        ["Hester: The city is repaving our street all summer."],
        "Finally, a bit of calm.",
        "a bit of calm",
    ),
    (
        ["Alma: I reorganised the spice rack alphabetically."],
        "That changes everything.",
        "changes everything",
    ),
    (["Dev: The conference call has forty people on it."], "Should be productive.", "productive"),
    (["Yara: I told the whole family your news."], "That saves me a few phone calls.", "saves me"),
    (["Cole: The airline lost only one of our bags."], "That's a relief.", "relief"),
    (
        ["Petra: The kids want to make breakfast for us tomorrow."],
        "I'm looking forward to it.",
        "looking forward",
    ),
    (["Rafael: I signed you up for the company talent show."], "You know me so well.", "so well"),
    (
        ["Anya: The meeting notes are forty pages this week."],
        "Light reading for the weekend.",
        "light reading",
    ),
    (["Boris: I'm going to sing at your wedding."], "What an honour.", "what an honour"),
    (["Celia: The heating will be off until Friday."], "We'll manage just fine.", "just fine"),
    (
        ["Dmitri: I painted the fence myself over lunch."],
        "It looks so professional.",
        "so professional",
    ),
    (
        ["Esme: They play the same song at the gym every morning."],
        "Never gets old.",
        "never gets old",
    ),
    (
        ["Fabio: I booked the place with the singing waiters."],
        "How romantic.",
        "romantic",
    ),
    (["Greta: The boss wants Steve to present your idea."], "That's generous of her.", "generous"),
    (["Hamid: My phone battery lasts about an hour now."], "Technology is amazing.", "amazing"),
    (["Ilse: I invited my ex to the barbecue."], "The more the merrier.", "the more the merrier"),
    (
        ["Jasper: They announced a new policy on email signatures."],
        "At last, some real news.",
        "real news",
    ),
    (
        ["Kira: The babysitter can only stay until seven."],
        "That gives us plenty of time.",
        "plenty of time",
    ),
    (["Lars: I'm going to cut my own hair from now on."], "I think it'll suit you.", "suit you"),
    (["Magda: The new printer needs a special app to work."], "How modern.", "how modern"),
    (["Nils: I brought extra homework for the holiday."], "The kids will love that.", "love that"),
    (["Odette: Grandpa wants to tell his war stories again."], "I never tire of them.", "never tire"),
    (["Pablo: We're getting a second dog."], "Just what we needed.", "what we needed"),
    (
        ["Rhea: I cleaned out the fridge, your leftovers too."],
        "You're too kind.",
        "too kind",
    ),
    (["Stefan: The interview is at six on a Sunday."], "Very reasonable.", "very reasonable"),
    (["Tessa: I'm taking up the trumpet this winter."], "That's a great hobby.", "great hobby"),
    (["Ulrich: The delivery window is all day Tuesday."], "That narrows it down.", "narrows it down"),
    (
        ["Vera: My sister wants to give a speech at your party."],
        "That should be interesting.",
        "interesting",
    ),
    (
        ["Walt: The elevator is out, and we're on the ninth floor."],
        "Good exercise, I suppose.",
        "good exercise",
    ),
    (
        ["Xena: I've planned every minute of our holiday."],
        "You've thought of everything.",
        "thought of everything",
    ),
    (["Yvonne: The seminar has a two-hour lunch break."], "Well, that's civilised.", "civilised"),
    (
        ["Zane: I forwarded your email to the whole department."],
        "Much appreciated.",
        "much appreciated",
    ),
    (
        ["Abel: My roommate made soup from whatever was in the cupboard."],
        "Sounds delicious.",
        "delicious",
    ),
    (
        ["Bianca: I wrote you a poem for every day of the month."],
        "I feel so special.",
        "so special",
    ),
    (
        ["Cyrus: Our flight has a layover of nine hours."],
        "We can see the whole airport.",
        "the whole airport",
    ),
    (
        ["Delia: The teacher gave the class a project over the break."],
        "The kids must be overjoyed.",
        "overjoyed",
    ),
    (["Emil: I replaced all the light bulbs with blue ones."], "Very atmospheric.", "atmospheric"),
    (["Farah: The landlord is raising the rent again."], "Right on schedule.", "on schedule"),
    (
        ["Gideon: I've decided to run for the school board."],
        "They're lucky to have you.",
        "lucky to have you",
    ),
    (
        ["Helga: The repair shop says the part arrives in six weeks."],
        "That's not long at all.",
        "not long at all",
    ),
    (
        ["Ignacio: The kids painted the hallway while you were out."],
        "What a lovely welcome home.",
        "welcome home",
    ),
    (["Joy: The gym added a spin class at midnight."], "Just in time for me.", "just in time"),
    (["Kemal: I've memorised every line of the film."], "That's a useful skill.", "useful skill"),
    (
        ["Lorna: They gave us a group project with the interns."],
        "Should be a breeze.",
        "a breeze",
    ),
    (["Milo: I put pineapple on all the pizzas."], "Excellent taste.", "excellent taste"),
    (["Nell: The school play runs for three hours."], "I wouldn't miss it.", "wouldn't miss it"),
    (["Orla: My uncle wants to give you driving lessons."], "I'd be in safe hands.", "safe hands"),
    (
        ["Piet: The council approved the new roundabout."],
        "That'll fix the traffic.",
        "fix the traffic",
    ),
    (["Rosalind: I booked us on the overnight bus."], "We'll arrive well rested.", "well rested"),
    (
        ["Soren: The office is moving to four days a week, ten hours a day."],
        "What a deal.",
        "what a deal",
    ),
    (
        ["Talia: Your mother called, she's coming for the weekend."],
        "She always brightens the place up.",
        "brightens the place up",
    ),
    (["Umar: I've started a podcast about my lawn."], "I'll subscribe right away.", "right away"),
    (["Viola: The photocopier only prints in pink now."], "Very festive.", "very festive"),
    (
        ["Wes: The wardrobe is assembled.", "Wes: There are a few screws left over."],
        "It'll hold up fine.",
        "hold up fine",
    ),
    (
        ["Astrid: I offered to host both families for the holidays.", "Astrid: All twelve of them."],
        "Sounds like a quiet Christmas.",
        "quiet Christmas",
    ),
    (
        ["Basil: I labelled every drawer in the kitchen.", "Basil: Even the empty ones."],
        "Very organised of you.",
        "very organised",
    ),
]

TEXT_CUE_PAIRS_2: list[tuple[list[str], str, str, str]] = [
    (
        ["Ursula: I'll only be on the phone for a second."],
        "Sure, a second, like the three-hour call last week.",
        "three-hour call",
        "No problem, I'll wait here.",
    ),
    (
        ["Gus: This shortcut will save us loads of time."],
        "Oh yes, just like the shortcut that got us lost twice.",
        "got us lost twice",
        "Great, let's take it then.",
    ),
    (
        ["Pia: The weather app says it will be sunny all day."],
        "Sure, and the weather app is never wrong, is it?",
        "never wrong",
        "Good, I'll leave my umbrella at home.",
    ),
    (
        ["Ned: I'll pay you back next week, I promise."],
        "Yeah, I've heard that one before.",
        "heard that one before",
        "No rush, whenever it suits you.",
    ),
]

# Releases in id order: a later release's clips are numbered after every earlier clip,
# so adding lines as a new release never renumbers the clips already published.
SARCASM_RELEASES = ((PIVOT_LINES, TEXT_CUE_PAIRS), (PIVOT_LINES_2, TEXT_CUE_PAIRS_2))

EMOTION_SENTENCES = [
    "The package will arrive on Thursday afternoon.",
    "I put the keys on the kitchen table.",
    "We need to talk about the report.",
    "The meeting starts at ten tomorrow.",
    "She moved to a new apartment last week.",
    "The train leaves from platform four.",
    "I saw your message this morning.",
    "They painted the fence green.",
]
EMOTION_SPEAKERS = ("Sam", "Nora")
EMOTION_SETTINGS: dict[str, dict[str, str]] = {
    "neutral": {"pitch": "+0%", "range": "medium", "rate": "100%", "volume": "medium"},
    "angry": {"pitch": "+5%", "range": "high", "rate": "118%", "volume": "x-loud"},
    "sad": {"pitch": "-15%", "range": "x-low", "rate": "72%", "volume": "soft"},
    "happy": {"pitch": "+20%", "range": "x-high", "rate": "110%", "volume": "loud"},
    "fearful": {"pitch": "+30%", "range": "low", "rate": "130%", "volume": "soft"},
}


def _jitter(key: str, low: float, high: float) -> float:
    """A deterministic per-clip value in [low, high] (seeded by a hash, not an RNG state)."""
    fraction = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return low + fraction * (high - low)


def _sincere_ssml(text: str, key: str) -> tuple[str, dict]:
    settings = {
        "pitch": f"{_jitter(key + 'p', -4, 4):+.0f}%",
        "range": "low",
        "rate": f"{_jitter(key + 'r', 96, 106):.0f}%",
    }
    ssml = (
        f'<speak><prosody pitch="{settings["pitch"]}" range="{settings["range"]}" '
        f'rate="{settings["rate"]}">{escape(text)}</prosody></speak>'
    )
    return ssml, settings


def _sarcastic_ssml(text: str, key_phrase: str, key: str) -> tuple[str, dict]:
    start = text.lower().find(key_phrase.lower())
    if start < 0:
        raise ValueError(f"key phrase {key_phrase!r} not found in line {text!r}")
    before, phrase, after = (
        text[:start],
        text[start : start + len(key_phrase)],
        text[start + len(key_phrase) :],
    )
    settings = {
        "pitch": f"{_jitter(key + 'p', 6, 14):+.0f}%",
        "range": "x-high",
        "rate": f"{_jitter(key + 'r', 72, 82):.0f}%",
        "break_before_key_ms": int(round(_jitter(key + "b", 300, 450), -1)),
        "emphasis": "strong",
        "key_phrase": phrase,
        "key_pitch": "+25%",
        "key_rate": "70%",
    }
    ssml = (
        f'<speak><prosody pitch="{settings["pitch"]}" range="x-high" rate="{settings["rate"]}">'
        f'{escape(before)}<break time="{settings["break_before_key_ms"]}ms"/>'
        f'<emphasis level="strong"><prosody pitch="+25%" rate="70%">{escape(phrase)}</prosody>'
        f"</emphasis>{escape(after)}</prosody></speak>"
    )
    return ssml, settings


def _emotion_ssml(text: str, emotion: str) -> tuple[str, dict]:
    settings = dict(EMOTION_SETTINGS[emotion])
    attributes = " ".join(f'{name}="{value}"' for name, value in settings.items())
    return f"<speak><prosody {attributes}>{escape(text)}</prosody></speak>", settings


def _render(ssml: str, voice: str, out_path: Path) -> float:
    """espeak-ng -> WAV on stdout -> 8 kHz 16-bit FLAC; returns the duration in seconds."""
    import io

    import soundfile
    import soxr

    completed = subprocess.run(
        ["espeak-ng", "-m", "-v", voice, "--stdout", ssml], capture_output=True, check=True
    )
    samples, rate = soundfile.read(io.BytesIO(completed.stdout), dtype="float32")
    if samples.ndim == 2:
        samples = samples.mean(axis=1)
    samples = soxr.resample(samples, rate, SAMPLE_RATE_HZ)
    samples = np.clip(samples, -1.0, 1.0)
    # The highest FLAC compression level: lossless, ~3% smaller than the default.
    soundfile.write(
        str(out_path), samples, SAMPLE_RATE_HZ, format="FLAC", subtype="PCM_16",
        compression_level=1.0,
    )  # fmt: skip
    return round(len(samples) / SAMPLE_RATE_HZ, 3)


def _context(lines: list[str]) -> list[str]:
    """Context lines as ``"SPEAKER: text"`` strings (checked to have that shape)."""
    for line in lines:
        if ": " not in line:
            raise ValueError(f"context line {line!r} must look like 'SPEAKER: text'")
    return list(lines)


def _assign_ids(items: list[dict], prefix: str) -> list[dict]:
    """Give neutral ids in a hash-shuffled order, so position never hints at the label.

    Release by release: a later release's items are numbered after every earlier item,
    so adding a release keeps the ids of the clips already published.
    """
    ordered = sorted(
        items,
        key=lambda item: (
            item.get("_release", 0),
            hashlib.sha256(f"{ID_SALT}|{item['_key']}".encode()).hexdigest(),
        ),
    )
    for number, item in enumerate(ordered, start=1):
        item["id"] = f"{prefix}{number:04d}"
    return sorted(ordered, key=lambda item: item["id"])


def build_items() -> tuple[list[dict], list[dict]]:
    """All clips to render, as manifest records (before ids and audio are filled in).

    Returns:
        (sarcasm items, emotion items).
    """
    sarcasm = []
    number = 0
    for release, (pivot_lines, text_cue_pairs) in enumerate(SARCASM_RELEASES):
        pairs = [(context, text, key_phrase, text, True) for context, text, key_phrase in pivot_lines]
        pairs += [(*pair, False) for pair in text_cue_pairs]
        for context, sarcastic_text, key_phrase, sincere_text, pivot in pairs:
            number += 1
            speaker = SPEAKERS[number % len(SPEAKERS)]
            pair_id = f"p{number:03d}"
            for label, text in (("sincere", sincere_text), ("sarcastic", sarcastic_text)):
                key = f"{pair_id}|{label}"
                if label == "sincere":
                    ssml, settings = _sincere_ssml(text, key)
                else:
                    ssml, settings = _sarcastic_ssml(text, key_phrase, key)
                sarcasm.append(
                    {"_key": key, "_release": release, "kind": "sarcasm", "text": text,
                     "context": _context(context), "speaker": speaker,
                     "voice": SPEAKER_VOICES[speaker], "label": label, "pivot": pivot,
                     "pair_id": pair_id, "delivery": settings, "_ssml": ssml}
                )  # fmt: skip
    emotion = []
    for number, text in enumerate(EMOTION_SENTENCES, start=1):
        for speaker in EMOTION_SPEAKERS:
            for label in EMOTION_SETTINGS:
                ssml, settings = _emotion_ssml(text, label)
                emotion.append(
                    {"_key": f"s{number:02d}|{speaker}|{label}", "kind": "emotion", "text": text,
                     "context": [], "speaker": speaker, "voice": SPEAKER_VOICES[speaker],
                     "label": label, "pivot": None, "pair_id": f"s{number:02d}",
                     "delivery": settings, "_ssml": ssml}
                )  # fmt: skip
    return _assign_ids(sarcasm, "sc"), _assign_ids(emotion, "em")


def main(argv: list[str] | None = None) -> int:
    """Render every clip and write the manifest.

    Args:
        argv: Command-line arguments (``--out DIR``).

    Returns:
        Process exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parents[1] / "affectgym" / "data" / "speech"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        print("espeak-ng not found; install it with: apt-get install -y espeak-ng", file=sys.stderr)
        return 2
    version = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout
    audio_dir = args.out / "audio"
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    audio_dir.mkdir(parents=True)
    sarcasm, emotion = build_items()
    records = []
    for item in sarcasm + emotion:
        relative = f"audio/{item['id']}.flac"
        item["duration_s"] = _render(item["_ssml"], item["voice"], args.out / relative)
        item["audio"] = relative
        item["ssml"] = item.pop("_ssml")
        item.pop("_key")
        item.pop("_release", None)
        order = ["id", "kind", "audio", "duration_s", "text", "context", "speaker", "voice",
                 "label", "pivot", "pair_id", "delivery", "ssml"]  # fmt: skip
        records.append({name: item[name] for name in order})
    with open(args.out / "manifest.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
    size_mb = sum(p.stat().st_size for p in audio_dir.iterdir()) / 1e6
    print(
        f"{len(sarcasm)} sarcasm + {len(emotion)} emotion clips, {size_mb:.1f} MB; {version.strip()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
