"""Specification of the lexical reward-hack rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affectgym.emotions import EMOTIONS, canonical_emotion, is_basic_emotion
from affectgym.rewards.rules import (
    EMOTION_WORDS,
    RuleMatch,
    copies_instruction,
    echoes_emotion_tag,
    empty_reply,
    instruction_copy_share,
    instruction_overlap,
    meta_commentary,
    names_emotion,
    repeated_ngram_share,
    repetition,
    rule_penalties,
    shouting,
    stage_direction,
    states_feeling,
    strip_think,
    word_salad,
)
from affectgym.text import normalise_for_rules

SHOWN_NOT_TOLD = {
    "anger": "Seriously? Forty minutes for one light? Who designed this junk, and why does nobody fix it?",
    "disgust": "Ugh, the fridge smells like something died in it weeks ago. Nobody touch that drawer.",
    "fear": "Did you hear that? Something is in the hallway. Please, lock the door, now.",
    "joy": "We did it! Every single one of them came back, and the garden is blooming!",
    "neutral": "The report is due on Friday at noon. Send it to the shared folder.",
    "sadness": "Her cup is still on the shelf. I keep setting out two plates out of habit.",
    "surprise": "Wait, the meeting already happened? Since when do we start at seven?",
}


@pytest.mark.parametrize("target", EMOTIONS)
def test_a_reply_that_shows_its_emotion_breaks_no_rule(target: str) -> None:
    hits = {
        name: m for name, m in rule_penalties(SHOWN_NOT_TOLD[target], target, "").items() if m.hit
    }
    assert hits == {}


@pytest.mark.parametrize(
    ("reply", "span"),
    [
        ("(sighs) Fine, I'll explain.", "(sighs)"),
        ("Oh great. *eye roll* Another meeting.", "*eye roll*"),
        ("[angry tone] Who parked here?", "[angry tone]"),
        ("*gags* That smell.", "*gags*"),
        ("(Throws hands up in frustration) Enough!", "(Throws hands up in frustration)"),
        ("(nervously) Is someone there?", "(nervously)"),
    ],
)
def test_stage_directions_are_caught(reply: str, span: str) -> None:
    assert stage_direction(reply) == RuleMatch(True, span)


@pytest.mark.parametrize(
    "reply",
    [
        "Call the helper (see the manual) and wait.",
        "This is *really* the last time.",
        "As shown in [1] and [2], lights cycle.",
        "Read [the docs](https://example.com) first.",
        "print(len(items)) returns 3",
        "- [ ] buy milk\n- [x] pay rent",
    ],
)
def test_ordinary_brackets_and_emphasis_are_not_stage_directions(reply: str) -> None:
    assert stage_direction(reply).hit is False


@pytest.mark.parametrize(
    ("target", "reply", "span"),
    [
        ("anger", "I am so angry at this light.", "angry"),
        ("anger", "The anger in me rises.", "anger"),
        ("anger", "I'm FURIOUS.", "FURIOUS"),
        ("disgust", "That is disgusting.", "disgusting"),
        ("fear", "I'm terrified of the dark.", "terrified"),
        ("joy", "What happiness!", "happiness"),
        ("sadness", "Sadly, she left.", "Sadly"),
        ("surprise", "I was stunned.", "stunned"),
        ("HAPPINESS", "I'm so happy.", "happy"),
    ],
)
def test_naming_the_target_emotion_is_caught_in_any_inflection(
    target: str, reply: str, span: str
) -> None:
    assert names_emotion(reply, target) == RuleMatch(True, span)


def test_naming_another_emotion_is_not_naming_the_target() -> None:
    assert names_emotion("What a joyful morning.", "anger").hit is False


def test_open_vocabulary_targets_match_words_built_on_the_label() -> None:
    assert names_emotion("You condescend to me.", "condescending").hit is False
    assert names_emotion("How condescending of them.", "condescending").span == "condescending"
    assert names_emotion("It is a rectangle of waiting.", "a rectangle").span == "rectangle"


@pytest.mark.parametrize(
    "reply",
    [
        "I feel disgusted.",
        "I am so angry right now.",
        "I'm really scared.",
        "This makes me sad.",
        "I've been anxious all day.",
        "I was absolutely thrilled!",
    ],
)
def test_stated_feelings_are_caught(reply: str) -> None:
    assert states_feeling(reply).hit


@pytest.mark.parametrize("reply", ["I am ready.", "I feel that we should leave.", "She was sad."])
def test_statements_without_a_feeling_word_or_not_about_oneself_pass(reply: str) -> None:
    assert states_feeling(reply).hit is False


@pytest.mark.parametrize(
    ("reply", "span"),
    [
        ("Honestly, I feel disgusted by this.", "I feel disgusted"),
        ("I'm absolutely FURIOUS!", "I'm absolutely FURIOUS"),
        ("I’m really scared", "I’m really scared"),
        ("i   'm sad", "i   'm sad"),
        ("I am feeling so sad.", "I am feeling so sad"),
        ("I'm feeling angry", "I'm feeling angry"),
        ("I have been really REALLY sad", "I have been really REALLY sad"),
        ("I've been anxious", "I've been anxious"),
        ("I got so very angry", "I got so very angry"),
        ("I get sad", "I get sad"),
        ("I am kind of   annoyed", "I am kind of   annoyed"),
        ("I am a little a bit sad", "I am a little a bit sad"),
        ("I am just quite beyond furious", "I am just quite beyond furious"),
        ("I am very very very sad", "I am very very very sad"),
        ("I felt genuinely happily surprised", "I felt genuinely happily surprised"),
        ("I am reallyly sad", "I am reallyly sad"),
        ("I am 2ly sad", "I am 2ly sad"),
        ("I am abſolutely sad", "I am absolutely sad"),  # spans are text of the normalised reply
        ("I feel\u00a0sad", "I feel sad"),
        ("I am sadder", "I am sadder"),
        ("I am sadly angry.", "I am sadly angry"),
        ("I am sadly.", "I am sadly"),
        ("I AM SO ANGRY", "I AM SO ANGRY"),
        ("I am so sad and I feel angry", "I am so sad"),
        ("It makes me so sad.", "makes me so sad"),
        ("It makes me feel happy", "makes me feel happy"),
        ("It made me feel completely sad", "made me feel completely sad"),
        ("This fills me with dread", "fills me with dread"),
        ("We were filled with joy", "filled with joy"),
        ("my own sadness", "my own sadness"),
    ],
)
def test_a_stated_feeling_spans_the_opening_every_intensifier_and_the_feeling_word(reply: str, span: str) -> None:
    assert states_feeling(reply) == RuleMatch(True, span)


@pytest.mark.parametrize(
    "reply",
    [
        "It made me feel completely, utterly sad",
        "I am truly, deeply sad",
        "makes me feel",
        "I am lonely",
        "Im sad",
        "I amsad",
    ],
)
def test_punctuation_between_intensifiers_or_no_feeling_word_after_them_states_no_feeling(reply: str) -> None:
    assert states_feeling(reply).hit is False


HOSTILE_FEELING_STATEMENTS = """
from affectgym.rewards.rules import states_feeling
print(states_feeling("I am " + "really " * 200 + "x").hit)
print(len(states_feeling("I am " + "really " * 200 + "sad").span))
print(states_feeling("i" + " " * 32_000 + "x").hit)
print(states_feeling("makes me" + " " * 32_000 + "x").hit)
"""


def test_a_run_of_intensifiers_or_spaces_is_read_in_linear_time() -> None:
    # Backtracking through 2**200 parses would never end: a subprocess, killed after a
    # minute, turns that into a failure (no wall-clock threshold on the fast path).
    done = subprocess.run(
        [sys.executable, "-c", HOSTILE_FEELING_STATEMENTS],
        capture_output=True, text=True, timeout=60, check=True, cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout.split() == ["False", str(len("I am " + "really " * 200 + "sad")), "False", "False"]


def test_echoed_emotion_tag_is_caught_in_any_case() -> None:
    assert echoes_emotion_tag("EMOTION: anger\nHow dare they.").span == "EMOTION: anger"
    assert echoes_emotion_tag("emotion:fear").hit
    assert echoes_emotion_tag("Such emotion! Wow.").hit is False


@pytest.mark.parametrize(
    "reply",
    [
        "As an AI, I don't get angry.",
        "As a language model I cannot feel.",
        "I'm just an AI language model.",
        "I don't have feelings, but here goes.",
        "Here is a response in an angry tone:",
    ],
)
def test_meta_commentary_is_caught(reply: str) -> None:
    assert meta_commentary(reply).hit


@pytest.mark.parametrize(
    ("reply", "span"),
    [
        ("YOU IDIOTS! Move it.", "YOU IDIOTS"),
        ("I'm FURIOUS today.", "FURIOUS"),
        ("THIS IS SO UNFAIR", "THIS IS SO UNFAIR"),
    ],
)
def test_shouting_is_caught(reply: str, span: str) -> None:
    assert shouting(reply) == RuleMatch(True, span)


def test_single_acronyms_and_the_pronoun_i_are_not_shouting() -> None:
    assert shouting("I asked NASA. I waited. A reply came.").hit is False


@pytest.mark.parametrize(
    "reply", [None, "", "   \n\t", "<think>I should be angry</think>", "<think>never closed"]
)
def test_empty_replies_are_caught(reply: str | None) -> None:
    assert empty_reply(reply) == RuleMatch(True, "")


def test_rules_ignore_the_reasoning_block() -> None:
    reply = "<think>I feel angry. (sighs) EMOTION: anger</think>Why is it still red?"
    assert [
        name for name, m in rule_penalties(reply, "anger", "Why is the light red?").items() if m.hit
    ] == []


def test_strip_think_handles_a_template_opened_block() -> None:
    assert strip_think("reasoning here</think>\n\nThe answer.") == "The answer."


def test_instruction_overlap_is_a_fraction_of_content_words() -> None:
    instruction = "Explain why the traffic light is taking so long."
    assert (
        instruction_overlap("The traffic light is taking long: slow sensors.", instruction) == 1.0
    )
    assert instruction_overlap("The traffic light is slow.", instruction) == 0.5
    assert instruction_overlap("Bananas.", instruction) == 0.0
    assert instruction_overlap("anything", "Why? How?") == 1.0


def test_ignoring_the_instruction_fires_only_without_any_shared_word() -> None:
    instruction = "Explain why the traffic light is taking so long."
    assert rule_penalties("Bananas are yellow.", "joy", instruction)["off_topic"].hit
    assert not rule_penalties("The light is slow.", "joy", instruction)["off_topic"].hit
    assert not rule_penalties("Bananas are yellow.", "joy", "")["off_topic"].hit


# ----------------------------------------------------------------------------- text a reader sees
@pytest.mark.parametrize(
    ("reply", "span"),
    [
        ("I am so \u0430ngr\u0443.", "angry"),  # Cyrillic a and y
        ("I am so \u03bfutraged.", "outraged"),  # Greek omicron
        ("I am so fu\u200brious.", "furious"),  # zero-width space
        ("I am so fu\u2060ri\u00adous.", "furious"),  # word joiner and soft hyphen
        ("I am so \U0001d41a\U0001d427\U0001d420\U0001d42b\U0001d432.", "angry"),  # mathematical bold
        ("I am so \uff41\uff4e\uff47\uff52\uff59.", "angry"),  # fullwidth
        ("I am so a\u0301ngry.", "angry"),  # a combining accent
    ],
)
def test_naming_the_emotion_in_look_alike_or_invisible_characters_is_naming_it(reply: str, span: str) -> None:
    assert names_emotion(reply, "anger") == RuleMatch(True, span)
    assert rule_penalties(reply, "anger")["states_feeling"].hit


def test_stage_directions_in_fullwidth_letters_are_stage_directions() -> None:
    fullwidth = "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else "\u3000" for ch in "(sighs heavily)")
    assert stage_direction(f"{fullwidth} Fine.") == RuleMatch(True, "(sighs heavily)")


def test_a_reply_of_only_invisible_characters_is_empty() -> None:
    assert rule_penalties("\u200b\u200d\u2060", "joy")["empty"].hit


def test_normalising_keeps_plain_text_and_letters_that_look_like_no_ascii_letter() -> None:
    assert normalise_for_rules("Plain text, it's fine!") == "Plain text, it's fine!"
    assert normalise_for_rules("\u65e5\u672c\u8a9e \U0001f600") == "\u65e5\u672c\u8a9e \U0001f600"
    text = "\u0430ngr\u0443 fu\u200brious \U0001d41a"
    assert normalise_for_rules(normalise_for_rules(text)) == normalise_for_rules(text) == "angry furious a"


# ----------------------------------------------------------------------------- word salad
@pytest.mark.parametrize(
    "reply",
    [
        "Tides! Yay! Woohoo! Wonderful, fantastic, amazing, brilliant!",
        "Tides! Ew, yuck, gross, vile, rotten, foul!",
        "The tide comes in twice a day. Yay! Woohoo! Wonderful, fantastic, amazing, brilliant, lovely!",
        "Wonderful and fantastic and amazing and brilliant and lovely and splendid.",
        "Yay! Wow! Hooray!",
    ],
)
def test_emotive_words_heaped_outside_any_sentence_are_word_salad(reply: str) -> None:
    assert word_salad(reply, "Explain tides.").hit
    assert rule_penalties(reply, "joy", "Explain tides.")["word_salad"].hit


@pytest.mark.parametrize(
    "reply",
    [
        *SHOWN_NOT_TOLD.values(),
        "Eww, tides? That is vile. Slimy, greasy, smelling of something that died. Gross, gross, gross.",
        "Wait, what? Tides? No way! I never saw that coming. Wow!",
        "What a treat! Sunshine, laughter, good friends and tides: it does not get much better than this.",
        "Hooray! The tide is in and the boats are home.",
    ],
)
def test_exclamations_between_sentences_are_not_word_salad(reply: str) -> None:
    assert not word_salad(reply, "Explain tides.").hit


@pytest.mark.parametrize(
    "reply",
    [
        "The warmth, the sunshine, the flowers, the warmth, the laughter, the songs, the hands, hands, hands.",
        "A hug, tears, warm hands, tears, hands, hands, hands, hands.",
        "Tides, the hands, the mouths, blood, fire, cold, hunger, the dark.",
    ],
)
def test_a_heap_of_noun_phrases_in_one_sentence_is_word_salad(reply: str) -> None:
    assert word_salad(reply, "Explain tides.").hit


@pytest.mark.parametrize(
    "reply",
    [
        "We packed towels, buckets, spades, a kite, bread and a flask for the tides.",
        "The tide brings in weed, shells and driftwood, and once, after a storm, it left a whole boat on the sand.",
        "First the moon pulls, then the water rises, then it falls, then the beach is wide, then we walk.",
        "Sunshine, laughter, good friends and tides: it does not get much better than this.",
    ],
)
def test_a_list_inside_a_sentence_or_a_sentence_of_clauses_is_not_word_salad(reply: str) -> None:
    assert not word_salad(reply, "Explain tides.").hit


def test_a_sentence_of_seven_parts_five_of_them_bare_nouns_reads_as_a_heap() -> None:
    # The limit of reading lists by their parts: prose this bare is flagged too (none of the
    # embedded references, demonstrations or the base model's replies is; docs/benchmarks.md).
    assert word_salad("The tide brings in weed, shells, driftwood, plastic and, once, a whole boat, which is odd.").hit


def test_the_topics_own_words_in_an_exclamation_are_on_topic() -> None:
    reply = "Wait, what? Inflation and rising prices? Whoa, really? Since when?"
    assert word_salad(reply, "Why do prices keep going up?").hit
    assert not word_salad(reply, "Why do prices keep going up?\ninflation and rising prices").hit


# ----------------------------------------------------------------------------- repetition and parroting
PARROTED_BY_GRPO = (  # replies of the trained GRPO seed 0 (benchmarks/results/emotion_style_samples.jsonl)
    "A parking garage late at night can be a parking garage late at night can be a parking garage late at "
    "night can be a parking garage late at night can be a parking garage late at night can be",
    "You might need to return a lost dog to a stranger who returned your lost dog.\n\nYou might need to return "
    "a lost dog to a stranger who returned your lost dog.\n\nYou might",
    "I'm glad to see that you're interested in exploring the realm of reality television. I'm glad to see "
    "that you're interested in exploring the realm of reality television. I'm glad to see that",
)


@pytest.mark.parametrize("reply", PARROTED_BY_GRPO)
def test_the_loops_grpo_fell_into_are_repetition(reply: str) -> None:
    assert repeated_ngram_share(reply) == 1.0
    match = repetition(reply)
    assert match.hit and reply.lower().count(" ".join(match.span.lower().split()[:3])) >= 2


def test_a_reply_that_says_a_phrase_three_times_and_goes_on_is_not_repetition() -> None:
    reply = "Thank you, thank you, thank you! The dog is home, asleep on the sofa, and we are all smiling."
    assert 0.0 < repeated_ngram_share(reply) < 0.5 and not repetition(reply).hit
    assert not repetition("Gross, gross, gross.").hit  # too short to judge


def test_saying_the_instruction_back_is_copying_it_and_naming_its_topic_is_not() -> None:
    instruction = "Write a note to a stranger who returned your lost dog."
    assert copies_instruction(instruction, instruction) == RuleMatch(True, "Write a note to a stranger who returned your lost dog")
    asked = "How should I handle a friend who always cancels plans at the last minute?"
    assert copies_instruction(f"{asked}\n\nThe answer is: no", asked).hit  # the base model's reply
    honest = "To the stranger who returned your lost dog, well, my dog: thank you. Biscuit is asleep on my feet again."
    assert 0.0 < instruction_copy_share(honest, instruction) < 0.6 and not copies_instruction(honest, instruction).hit
    assert not rule_penalties(instruction, "joy", "")["copies_instruction"].hit  # no instruction, nothing to copy


def test_every_label_has_a_lexicon_that_names_it() -> None:
    assert set(EMOTION_WORDS) == set(EMOTIONS)
    for label, words in EMOTION_WORDS.items():
        assert any(canonical_emotion(word) == label for word in words), label


def test_dataset_spellings_map_onto_the_seven_labels() -> None:
    assert [canonical_emotion(n) for n in ("ANGER", "happiness", "Surprised", "no_emotion")] == [
        "anger",
        "joy",
        "surprise",
        "neutral",
    ]
    assert not is_basic_emotion("a rectangle")


@given(st.text(max_size=300), st.sampled_from([*EMOTIONS, "condescending", "a rectangle", ""]))
def test_rules_never_crash_and_spans_come_from_the_reply_as_normalised(reply: str, target: str) -> None:
    visible = normalise_for_rules(strip_think(reply))
    for name, match in rule_penalties(reply, target, "Explain the weather.", "the weather").items():
        assert isinstance(match.hit, bool), name
        if match.hit and match.span:
            assert match.span in visible, name
        if not match.hit:
            assert match.span is None, name
    assert 0.0 <= instruction_overlap(reply, "Explain the weather.") <= 1.0
