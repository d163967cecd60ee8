"""Dialogue data and parsing: tagged replies, the question rule, labels, loaders, splits, the embedded set."""

from __future__ import annotations

import json

import pytest

from affectgym.data import dialogues as data
from affectgym.data.dialogues import (
    DIALOGUE_LABELS,
    classifier_label,
    dialogue_label,
    dialogues_from_records,
    load_dialogue_file,
    load_embedded_dialogues,
    load_hub_dialogues,
    split_dialogues,
)
from affectgym.data.speech_sources import DatasetError
from affectgym.emotions import EMOTIONS
from affectgym.envs.dialogue import (
    chatbot_reply,
    count_words,
    open_question,
    parse_chatbot_turn,
    question_kind,
    reply_length,
    tells_emotion,
)

WELL_FORMED = [
    "(SADNESS) Oh no, that hurts. (HAPPINESS) Still, you tried! (NEUTRAL) What happens next?",
    "(sadness) Oh no, that hurts (happiness) Still, you tried (neutral) What happens next?",
    "  (SADNESS)   Oh no,\n that hurts.\n\n(HAPPINESS)Still, you tried!   (NEUTRAL)What happens next?  ",
    "（SADNESS） Oh no, that hurts。 (HAPPINESS) Still, you tried！ （NEUTRAL） What happens next？",
    "[SADNESS] Oh no, that hurts. [HAPPINESS] Still, you tried! [NEUTRAL] What happens next?",
    "Chatbot: (SADNESS) Oh no, that hurts. (JOY) Still, you tried! (NEUTRAL) What happens next?",
    "<think>plan</think>**(SADNESS)** Oh no, that hurts. **(HAPPINESS)** Still, you tried! **(NEUTRAL)** What happens next?",
    "( Sadness ) Oh no, that hurts… ( Happiness ) Still, you tried! ( Neutral ) What happens next?",
]


@pytest.mark.parametrize("reply", WELL_FORMED)
def test_tricky_but_well_formed_replies_parse_to_the_same_tags(reply):
    turn, error = parse_chatbot_turn(reply)
    assert error is None and turn.tags == ("SADNESS", "HAPPINESS", "NEUTRAL")
    assert turn.sentences[0].startswith("Oh no") and turn.sentences[2].startswith("What happens next")
    assert question_kind(turn.sentences[2]) == "open"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("", "the reply is empty"),
        ("Oh no. Still, you tried. What happens next?", "no emotion tags found"),
        ("Sure! (SADNESS) Oh no. (HAPPINESS) Yay. (NEUTRAL) What?", "text before the first tag ('Sure!')"),
        ("(SADNESS) Oh no. (HAPPINESS) Yay.", "found 2 tagged sentences"),
        ("(SADNESS) Oh. (HAPPINESS) Yay. (NEUTRAL) So. (FEAR) What?", "found 4 tagged sentences"),
        ("(SADNESS) Oh no. (CONFUSED) Hm. (NEUTRAL) What?", "unknown tag (CONFUSED)"),
        ("(SADNESS) Oh no. (HAPPINESS) ... (NEUTRAL) What?", "sentence 2 after (HAPPINESS) is empty"),
    ],
)
def test_malformed_replies_get_a_clear_error(reply, error):
    turn, message = parse_chatbot_turn(reply)
    assert turn is None and error in message


def test_a_bracketed_lower_case_word_is_text_not_a_tag():
    turn, _ = parse_chatbot_turn("(SADNESS) Oh (honestly) no. (HAPPINESS) Yay. (NEUTRAL) What now?")
    assert turn.sentences[0] == "Oh (honestly) no."


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What happened next?", "open"),
        ("what happened next ?", "open"),
        ("How did that go?", "open"),
        ("Why do you think so?", "open"),
        ("Which trail were you on?", "open"),
        ("What if you called her tomorrow?", "open"),
        ("Tell me more about it?", "open"),
        ("And so, how are you holding up?", "open"),
        ("Could you tell me what happened after that?", "open"),
        ("If you could change one thing, what would it be?", "open"),
        ("Where have you looked so far？", "open"),
        ("How are you holding up?”", "open"),
        ("Do you want to talk about it?", "yes_no"),
        ("Did she call you back?", "yes_no"),
        ("Is it serious?", "yes_no"),
        ("Are you okay?", "yes_no"),
        ("Can you fix it?", "yes_no"),
        ("Will you go?", "yes_no"),
        ("Would you like some advice?", "yes_no"),
        ("Have you tried again?", "yes_no"),
        ("Don't you think so?", "yes_no"),
        ("Isn’t that lovely?", "yes_no"),
        ("So, do you feel better?", "yes_no"),
        ("What do you think, is it worth it?", "yes_no"),
        ("You went there?", "yes_no"),
        ("Do you know why?", "yes_no"),
        ("What happened next.", "not_a_question"),
        ("Tell me more", "not_a_question"),
        ("?", "not_a_question"),
    ],
)
def test_the_open_question_rule(question, kind):
    assert question_kind(question) == kind


def test_open_question_credit_uses_the_third_sentence_or_the_replys_end():
    assert open_question(None, chatbot_reply("(FEAR) Eek. (HAPPINESS) Yay. (NEUTRAL) How did it end?"), []) == 1.0
    assert open_question(None, chatbot_reply("(FEAR) Eek. (HAPPINESS) Yay. (NEUTRAL) Did it end?"), []) == 0.3
    assert open_question(None, chatbot_reply("(FEAR) Eek. (NEUTRAL) How did it end?"), []) == 1.0
    assert open_question(None, chatbot_reply("(FEAR). (HAPPINESS). (NEUTRAL)?"), []) == 0.0


def test_length_counts_the_words_of_the_sentences_not_the_tags():
    reply = "(SADNESS) " + " ".join(["word"] * 10) + " (HAPPINESS) " + " ".join(["word"] * 8) + " (NEUTRAL) What is it?"
    assert count_words("What is it?") == 3 and reply_length(None, chatbot_reply(reply), []) == 1.0


def test_label_mapping_between_dialogue_tags_and_classifier_labels():
    assert [classifier_label(tag) for tag in DIALOGUE_LABELS] == [
        "anger", "fear", "sadness", "disgust", "joy", "surprise", "neutral",
    ]
    assert sorted(classifier_label(tag) for tag in DIALOGUE_LABELS) == sorted(EMOTIONS)
    assert [dialogue_label(s) for s in ("joy", "Happy", "ANGRY", " neutral ", "[FEAR]", "sad")] == [
        "HAPPINESS", "HAPPINESS", "ANGER", "NEUTRAL", "FEAR", "SADNESS",
    ]
    assert dialogue_label("CONFUSED") is None
    with pytest.raises(ValueError, match="none of"):
        classifier_label("pride")


def test_telling_an_emotion_is_caught_but_showing_it_is_not():
    assert tells_emotion("I am so happy for you.", "HAPPINESS")
    assert tells_emotion("You must be terrified.", "FEAR")
    assert not tells_emotion("Whoa, a bear, right there on the path!", "FEAR")


def test_embedded_set_has_40_short_dialogues_with_well_formed_reference_replies():
    dialogues = load_embedded_dialogues()
    assert len(dialogues) >= 40 and len({d.id for d in dialogues}) == len(dialogues)
    assert all(3 <= len(d.turns) <= 4 for d in dialogues)
    assert {t.user_emotion for d in dialogues for t in d.turns} == set(DIALOGUE_LABELS)
    assert len({t.target_emotion for d in dialogues for t in d.turns}) == 7
    for dialogue in dialogues:
        for turn in dialogue.turns:
            parsed, error = parse_chatbot_turn(turn.reference)
            assert error is None, (turn.id, error)
            assert parsed.tags == turn.required_tags, turn.id
            assert 20 <= parsed.words <= 25, (turn.id, parsed.words)
            assert question_kind(parsed.sentences[2]) == "open", turn.id
            assert not any(tells_emotion(s, t) for s, t in zip(parsed.sentences, parsed.tags, strict=True)), turn.id


def test_split_is_stable_disjoint_and_by_dialogue():
    dialogues = load_embedded_dialogues()
    sides = [{d.id for d in split_dialogues(dialogues, split)} for split in ("train", "validation", "eval")]
    train, validation, held_out = sides
    assert sum(map(len, sides)) == len(dialogues) and set.union(*sides) == {d.id for d in dialogues}
    assert validation and held_out
    held_out = split_dialogues(dialogues, "eval")
    assert [d.id for d in split_dialogues(list(reversed(dialogues)), "eval")] == [d.id for d in reversed(held_out)]
    with pytest.raises(ValueError, match="unknown split"):
        split_dialogues(dialogues, "test")


def _record(dialogue_id, turns):
    pairs = [[f"({emotion}) {text}", reply] for emotion, text, reply in turns]
    return {"system": "s", "history": pairs[:-1], "instruction": pairs[-1][0], "input": "",
            "output": pairs[-1][1], "dialogue_id": dialogue_id, "set": "train"}


TURNS = [
    ("SADNESS", "Not yet, results come Friday.", "(SADNESS) Waiting is hard. (HAPPINESS) You studied a lot! (NEUTRAL) Which subject?"),
    ("HAPPINESS", "I passed!", "(HAPPINESS) Wonderful! (SURPRISE) Already? (NEUTRAL) How will you celebrate?"),
]


def test_llama_factory_json_and_jsonl_files_load_into_episodes(tmp_path):
    path = tmp_path / "dialogues.json"
    path.write_text(json.dumps([_record(12, TURNS)]))
    (dialogue,) = load_dialogue_file(path)
    assert dialogue.id == "12" and dialogue.source_split == "train"
    first, second = dialogue.turns
    assert (first.user_emotion, first.user_text, first.target_emotion) == ("SADNESS", "Not yet, results come Friday.", "HAPPINESS")
    assert second.history == ((first.user_line, first.reference),) and second.target_emotion == "SURPRISE"
    lines = tmp_path / "dialogues.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in [_record(12, TURNS[:1]), _record(12, TURNS)]) + "\n")
    (merged,) = load_dialogue_file(lines)
    assert len(merged.turns) == 2


def test_records_without_a_dialogue_id_get_a_stable_one():
    record = _record(None, TURNS)
    assert dialogues_from_records([record])[0].id == dialogues_from_records([dict(record)])[0].id


def test_bad_files_and_records_are_named_in_the_error(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dialogue_file(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(DatasetError, match="neither a JSON list"):
        load_dialogue_file(broken)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"history": "x", "instruction": "(FEAR) hi", "output": "o"}]))
    with pytest.raises(DatasetError, match="record 0.*history"):
        load_dialogue_file(bad)


def test_the_env_loads_a_data_file(tmp_path):
    from affectgym.envs.dialogue import DialogueEnv

    path = tmp_path / "d.json"
    path.write_text(json.dumps([_record(f"d{i}", TURNS) for i in range(10)]))
    env = DialogueEnv(data_file=str(path), split="all", classifier=lambda texts: [{"neutral": 1.0}] * len(texts))
    assert env.dataset == "file" and len(env.scenarios) == 20


def test_hub_loading_without_network_fails_in_one_line_naming_data_file(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'mario-rc/aif-emotional-generation' on the Hub (LocalEntryNotFoundError)\nmore")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DatasetError) as raised:
        load_hub_dialogues()
    message = str(raised.value)
    assert "\n" not in message and "data_file=PATH" in message and data.HUB_DATASET in message


def test_hub_rows_become_dialogues(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None: {"train": [_record(1, TURNS)], "test": [_record(2, TURNS)]})
    assert [d.id for d in load_hub_dialogues()] == ["1", "2"]
