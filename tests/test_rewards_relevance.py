"""ConditionalRelevance: how much what the user said makes a sentence likelier, read by a language model."""

from __future__ import annotations

import pytest

from affectgym.rewards.relevance import ConditionalRelevance, dialogue_context


def test_a_sentence_the_user_makes_likelier_has_a_positive_pmi_and_one_that_follows_anything_none():
    def log_prob(context, sentence):
        return [(word, -1.0 if "marathon" in context and "kilometres" in sentence else -2.0) for word in sentence.split()]

    relevance = ConditionalRelevance(log_prob)
    assert relevance.scores(["I just ran my first marathon!"] * 2, ["Forty-two kilometres!", "Tell me more."]) == [1.0, 0.0]


def test_ignored_words_are_read_but_not_counted_so_repeating_the_user_earns_nothing():
    def log_prob(context, sentence):  # the user's word is likelier after it; the rest is not
        return [(word, -1.0 if word.strip("?.!").lower() == "marathon" and "marathon" in context else -2.0)
                for word in sentence.split()]

    relevance = ConditionalRelevance(log_prob)
    user = ["I just ran my first marathon!"] * 2
    assert relevance.scores(user, ["What happened after that marathon?"] * 2, ignored=[set(), {"marathon"}]) == [0.2, 0.0]
    assert relevance.scores(user[:1], ["Marathon"], ignored=[{"marathon"}]) == [0.0]  # nothing left to count


def test_the_offline_model_reads_the_user_words_in_a_stock_sentence_as_not_listening_once_they_are_left_out():
    relevance = ConditionalRelevance("smollm2-135m")
    user = ["My novel got rejected by the tenth publisher."] * 2
    stock = "The report lists the meeting times for the novel publisher next week."
    whole, own = (relevance.scores(user[:1], [stock], ignored=words)[0] for words in (None, [{"novel", "publisher"}]))
    assert own < whole and own < 0.2


def test_each_sentence_is_read_once_after_the_user_and_once_after_the_neutral_opening_then_remembered():
    reads = []

    def log_prob(context, sentence):
        reads.append((context, sentence))
        return [(sentence, -1.0)]

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
        ConditionalRelevance(lambda context, sentence: []).scores(["a", "b"], ["c"])


def test_ignored_word_sets_of_another_length_than_the_sentences_are_refused():
    with pytest.raises(ValueError, match="2 ignored word sets for 1 sentences"):
        ConditionalRelevance(lambda context, sentence: []).scores(["a"], ["c"], ignored=[set(), set()])


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


def test_against_other_users_stories_a_sentence_that_suits_any_story_gains_nothing():
    def log_prob(context, sentence):  # any story makes a reply likelier than a greeting does
        return [(word, -2.0 if "Hello." in context else -1.0) for word in sentence.split()]

    user, stock = ["I won the lottery."], ["What wonderful news!"]
    assert ConditionalRelevance(log_prob).scores(user, stock) == [1.0]
    assert ConditionalRelevance(log_prob, contrasts=["My sister got married.", "I fixed the fence."]).scores(user, stock) == [0.0]


def test_the_gain_is_over_the_mean_of_the_contrasts():
    def log_prob(context, sentence):
        return [(sentence, {"lottery": -1.0, "wedding": -2.0, "fence": -4.0}[next(w for w in ("lottery", "wedding", "fence") if w in context)])]

    relevance = ConditionalRelevance(log_prob, contrasts=["A wedding.", "A fence."])
    assert relevance.scores(["The lottery."], ["Yes."]) == [2.0]


@pytest.mark.parametrize("contrasts", [[], [""], "Hello.", ["ok", "  "]])
def test_contrasts_must_be_lines_another_user_might_say(contrasts):
    with pytest.raises(ValueError, match="contrasts must be"):
        ConditionalRelevance(lambda context, sentence: [], contrasts=contrasts)
