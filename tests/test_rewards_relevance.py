"""ConditionalRelevance: how much what the user said makes a sentence likelier, read by a language model."""

from __future__ import annotations

import pytest

from affectgym.rewards.relevance import ConditionalRelevance, dialogue_context


def test_a_sentence_the_user_makes_likelier_has_a_positive_pmi_and_one_that_follows_anything_none():
    def log_prob(context, sentence):
        return -1.0 if "marathon" in context and "kilometres" in sentence else -2.0

    relevance = ConditionalRelevance(log_prob)
    assert relevance.scores(["I just ran my first marathon!"] * 2, ["Forty-two kilometres!", "Tell me more."]) == [1.0, 0.0]


def test_each_sentence_is_read_once_after_the_user_and_once_after_the_neutral_opening_then_remembered():
    reads = []

    def log_prob(context, sentence):
        reads.append((context, sentence))
        return -1.0

    relevance = ConditionalRelevance(log_prob)
    relevance.scores(["It broke."], ["Oh no."])
    relevance.scores(["It broke."], ["Oh no."])
    assert reads == [(dialogue_context("It broke."), "Oh no."), (dialogue_context("Hello."), "Oh no.")]


def test_an_empty_sentence_scores_zero_without_a_model_read():
    relevance = ConditionalRelevance(lambda context, sentence: pytest.fail("no read for an empty sentence"))
    assert relevance.scores(["It broke."], [""]) == [0.0]


@pytest.mark.parametrize("model", ["", "   ", None, 3])
def test_a_model_that_is_neither_a_name_nor_a_callable_is_refused_naming_what_is_accepted(model):
    with pytest.raises(ValueError, match="model alias such as 'smollm2-135m', a local model folder, or a callable"):
        ConditionalRelevance(model)


def test_user_texts_and_sentences_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="2 user texts for 1 sentences"):
        ConditionalRelevance(lambda context, sentence: 0.0).scores(["a", "b"], ["c"])


def test_the_offline_model_reads_a_paraphrase_of_the_user_as_listening_and_a_stock_question_as_not():
    relevance = ConditionalRelevance("smollm2-135m")
    paraphrase, stock = relevance.scores(["My novel got rejected by the tenth publisher."] * 2,
                                         ["Ten rejections would sting anyone.", "The report lists the meeting times for next week."])
    assert paraphrase > 0.5 > stock


def test_scorers_of_one_folder_in_many_threads_share_one_model_and_score_alike(tmp_path):
    # An eval of 16 concurrent episodes builds 16 envs, each asking for its relevance model on its first score.
    from concurrent.futures import ThreadPoolExecutor

    from tiny_models import tiny_causal_lm

    folder = str(tiny_causal_lm(tmp_path))
    scorers = [ConditionalRelevance(folder) for _ in range(16)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        scores = list(pool.map(lambda scorer: scorer.scores(["My dog died."], ["Losing a dog hurts."]), scorers))
    assert len({round(s[0], 6) for s in scores}) == 1
    assert len({id(scorer._model()[1]) for scorer in scorers}) == 1  # one model in memory, not sixteen
