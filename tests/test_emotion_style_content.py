"""EmotionStyle-v0 credits emotion only where the reply carries content: what a reply says of its own.

The classifier reads the reply's content sentences (:mod:`affectgym.envs.style_content`), so the
material of the red team that says nothing (interjections, stock exclamations, emoji, markup,
filler, other languages, repeats of the reply's own sentences) cannot raise the score.
"""

from __future__ import annotations

import pytest

from affectgym.envs.emotion_style import FULL_CREDIT_PROBABILITY, EmotionStyleEnv
from affectgym.envs.style_content import (
    content_sentences,
    content_text,
    in_requested_language,
    plain_text,
)
from affectgym.redteam.material import scenario_material

CONTENT_FREE = ("interjections", "exclamations", "emoji", "filler", "other_language")
#: Pieces of other languages appended per scenario (the material holds hundreds: every language, label and echo).
OTHER_LANGUAGE_PIECES = 8
MOST_GAIN = 0.01
#: Each scenario appends every PIECE_SHARDS-th piece, in turn, so every piece meets a quarter of the references.
PIECE_SHARDS = 4


@pytest.fixture(scope="module")
def env() -> EmotionStyleEnv:
    return EmotionStyleEnv(classifier="probe", split="eval")


def _content_free_sentences(env: EmotionStyleEnv, scenario, reference: str, index: int) -> list[str]:
    """A quarter of the content-free material (each scenario its own quarter), and the reference's own sentences."""
    material = scenario_material(env, scenario)
    pieces = [piece for kind in CONTENT_FREE for piece in material[kind][: OTHER_LANGUAGE_PIECES if kind == "other_language" else None]]
    pieces += [markup.format(piece) for markup in material["markup"] for piece in material["exclamations"][:2]]
    return pieces[index % PIECE_SHARDS::PIECE_SHARDS] + list(content_sentences(reference, env.first_observation(scenario)))


def test_appending_a_content_free_sentence_never_raises_an_eval_reference_by_more_than_a_hundredth(env) -> None:
    for index, scenario in enumerate(env.scenarios):
        reference, _ = env.reference_answer(scenario)
        honest = env.score(scenario, reference, []).total
        appended = [f"{reference} {sentence}" for sentence in _content_free_sentences(env, scenario, reference, index)]
        results = env.score_batch([scenario] * len(appended), appended, [[] for _ in appended])
        worst = max(range(len(appended)), key=lambda i: results[i].total)
        assert results[worst].total <= honest + MOST_GAIN, (scenario.id, appended[worst][len(reference):], honest)


def test_the_eval_references_are_read_as_their_target_and_earn_the_full_credit(env) -> None:
    references = [env.reference_answer(scenario)[0] for scenario in env.scenarios]
    results = env.score_batch(env.scenarios, references, [[] for _ in references])
    tops = [max(d, key=d.get) for d in env.distributions(references, [env.first_observation(s) for s in env.scenarios])]
    read = sum(top == scenario.emotion for top, scenario in zip(tops, env.scenarios, strict=True))
    full = sum(result.components["emotion_probability"] >= FULL_CREDIT_PROBABILITY for result in results)
    assert read / len(results) >= 0.95 and full / len(results) >= 0.9, (read, full, len(results))


def test_markup_asides_emoji_and_repeated_marks_are_read_as_plain_text() -> None:
    assert plain_text("**Wow**, the *harbour* (sighs) was <b>full</b> of boats!!! 🎉 *grins*") == "Wow, the harbour was full of boats!"
    assert plain_text("- one\n- two") == "one\ntwo"
    assert plain_text("\uff37\uff4f\uff57 \U0001d41b\U0001d428\U0001d41a\U0001d42d\U0001d42c") == "Wow boats"


def test_a_sentence_counts_when_it_brings_three_words_of_its_own_once_and_in_english() -> None:
    prompt = "EMOTION: fear\n\nDescribe the cellar of an old house."
    reply = ("The cellar of an old house. Oh no, no, no! The cellar door creaked open by itself at midnight. "
             "The cellar door creaked open by itself at midnight! La puerta del sótano se abrió sola a medianoche.")
    assert content_sentences(reply, prompt) == ("The cellar door creaked open by itself at midnight.",)
    assert content_text("Wow! Yay! Hooray!", prompt) == ""


def test_a_reply_in_another_language_breaks_the_wrong_language_rule(env) -> None:
    scenario = env.scenarios[0]
    spanish = f"¡Qué alegría! Hablemos de {scenario.topic}, es maravilloso de verdad y me hace muy feliz."
    assert not in_requested_language(spanish) and in_requested_language("Yuck.")
    result = env.score(scenario, spanish, [])
    assert result.components["wrong_language"] == 1.0 and result.components["emotion"] == 0.0


def test_an_off_topic_reply_earns_no_emotion_credit(env) -> None:
    scenario = next(s for s in env.scenarios if s.emotion == "joy")
    result = env.score(scenario, "Bananas ripen faster in a paper bag, and penguins waddle happily across the warm sunny beach.", [])
    assert result.components["off_topic"] == 1.0 and result.components["emotion"] == 0.0
    assert result.components["emotion_probability"] > 0.0
