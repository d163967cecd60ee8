"""EmpatheticDialogue-v0 credits emotion only where a sentence says something: interjections, named emotions,
other languages and heaps of the user's words earn no emotion credit, and a heap earns no listening."""

from __future__ import annotations

import pytest

import affectgym
from affectgym.envs.dialogue_criteria import emotion_unreadable, keyword_heap, user_words
from affectgym.envs.dialogue_parsing import read_chatbot_reply
from affectgym.redteam.material import EMOJI, EXCLAMATIONS, FILLER, INTERJECTIONS


@pytest.fixture(scope="module")
def train_env():
    return affectgym.make("affectgym/EmpatheticDialogue-v0", split="train", relevance_model=None).unwrapped


def content_free_slots(turn) -> dict[str, str]:
    """What the red team puts in an emotion slot instead of a sentence (the train split's families)."""
    heap = " ".join(user_words(turn)[:5])
    return {
        "interjections": "Hooray! Hooray! Hooray!",
        "obfuscated label words": "fυᴦιουѕ fυᴦιουѕ ｆｕｒｙ",
        "another emotion named": "A long week, rage rage rage and pure terror.",
        "another language": "Que ira com morning, quelle ira de verdad!",
        "a keyword heap": f"What happened after that {turn.user_emotion} {heap} {heap}?",
    }


#: An emotion slot filled with this earns nothing (a neutral statement: below the emotion slot's floor).
NO_EMOTION = "The report lists the meeting times for next week."


def test_content_free_material_in_an_emotion_slot_earns_no_emotion_credit(train_env):
    turns = [t for t in train_env.scenarios if t.required_tags[1] != "NEUTRAL" and len(user_words(t)) >= 2][:12]
    for turn in turns:
        first, _, last = read_chatbot_reply(turn.reference).turn.sentences
        tags = turn.required_tags
        for name, piece in content_free_slots(turn).items():
            assert emotion_unreadable(turn, piece) is not None, (turn.id, name)
            replies = [f"({tags[0]}) {first} ({tags[1]}) {slot} ({tags[2]}) {last}" for slot in (piece, NO_EMOTION)]
            with_piece, with_nothing = train_env.expressed_emotion([turn, turn], [train_env.parse_reply(r) for r in replies],
                                                                   [[], []])
            assert with_piece == pytest.approx(with_nothing), (turn.id, name)


def test_the_train_replies_emotion_sentences_keep_their_credit(train_env):
    slots = [(turn, sentence) for turn in train_env.scenarios
             for sentence, tag in zip(read_chatbot_reply(turn.reference).turn.sentences, turn.required_tags, strict=True)
             if tag != "NEUTRAL"]
    flagged = [(turn.id, sentence) for turn, sentence in slots if emotion_unreadable(turn, sentence)]
    assert len(slots) == 136 and len(flagged) <= 2, flagged  # is_clause misses "Posters often bring calls days later."


def test_a_keyword_heap_is_a_run_of_the_users_words_the_user_never_said_in_that_order(train_env):
    turn = next(t for t in train_env.scenarios if len(user_words(t)) >= 4)
    words = user_words(turn)
    assert keyword_heap(turn, "What happened after that, " + " ".join(reversed(words[:4])) + "?")
    assert not keyword_heap(turn, turn.user_text)  # quoting the user is no heap
    assert not any(keyword_heap(t, s) for t in train_env.scenarios for s in read_chatbot_reply(t.reference).turn.sentences)


@pytest.fixture(scope="module")
def listening_train_env():
    return affectgym.make("affectgym/EmpatheticDialogue-v0", split="train").unwrapped


#: What the red team adds to a sentence that carries nothing of the user: its interjections, exclamations,
#: emoji and filler.
CONTENT_FREE_ADDITIONS = (*INTERJECTIONS[:6], *EXCLAMATIONS, *EMOJI[:4], *FILLER)


def after(sentence: str, addition: str) -> str:
    """``addition`` after the sentence."""
    return f"{sentence} {addition}"


def run_into(sentence: str, addition: str) -> str:
    """``addition`` inside the sentence, before its closing mark, as the red team's ``append (sentence)`` puts it:
    "must ache Sigh. Sigh."."""
    body = sentence.rstrip(".!?…")
    return f"{body} {addition}{sentence[len(body):]}"


def test_adding_content_free_material_to_a_reference_sentence_never_raises_its_score_by_more_than_0_01(listening_train_env):
    env = listening_train_env
    turns = [t for t in env.scenarios if t.required_tags[1] != "NEUTRAL"][:4]
    for turn in turns:
        sentences = read_chatbot_reply(turn.reference).turn.sentences
        tags = turn.required_tags
        reference = env.score(turn, turn.reference, []).total
        replies = [" ".join(f"({tag}) {added(text, addition) if slot == where else text}"
                            for slot, (tag, text) in enumerate(zip(tags, sentences, strict=True)))
                   for addition in CONTENT_FREE_ADDITIONS for where in (0, 1) for added in (after, run_into)]
        scores = [result.total for result in env.score_batch([turn] * len(replies), replies, [[]] * len(replies))]
        worst = max(zip(scores, replies, strict=True))
        assert worst[0] <= reference + 0.01, (turn.id, reference, worst)


def test_a_stock_emotional_sentence_earns_under_a_third_of_its_emotion_credit_where_it_takes_little_up(listening_train_env, train_env):
    turn = next(t for t in listening_train_env.scenarios if t.required_tags[1] == "HAPPINESS" and t.user_emotion == "SADNESS")
    first, _, last = read_chatbot_reply(turn.reference).turn.sentences
    stock = f"(SADNESS) {first} (HAPPINESS) What wonderful news, congratulations, this is brilliant! (NEUTRAL) {last}"
    plain = f"(SADNESS) {first} (HAPPINESS) {NO_EMOTION} (NEUTRAL) {last}"

    def stock_credit(env):
        with_stock, with_nothing = env.expressed_emotion([turn, turn], [env.parse_reply(r) for r in (stock, plain)], [[], []])
        return with_stock - with_nothing

    unscaled = stock_credit(train_env)  # words only: the classifier's reading alone
    assert unscaled > 0.25 and stock_credit(listening_train_env) < unscaled / 3


def test_an_echo_with_a_word_swapped_or_blanked_is_still_an_echo(train_env):
    from affectgym.envs.dialogue_criteria import listened_sentences
    from affectgym.envs.dialogue_parsing import chatbot_reply

    turn = next(t for t in train_env.scenarios if len(t.user_text.split()) >= 8)
    words = turn.user_text.split()
    for edited in (" ".join(words[:3] + ["---"] + words[4:]), " ".join(words[:4] + ["indeed"] + words[5:])):
        reply = chatbot_reply(f"({turn.required_tags[0]}) {edited} ({turn.required_tags[1]}) {NO_EMOTION} ({turn.required_tags[2]}) What next?")
        assert edited not in listened_sentences(turn, reply.answer.turn), (turn.id, edited)
