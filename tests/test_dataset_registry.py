"""One dataset seam for every env: named datasets of each kind, built-ins as entries, plug-ins by entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import affectgym
from affectgym.data.dialogues import Dialogue, DialogueTurn, load_dialogues
from affectgym.data.instructions import Instruction, InstructionDataError, load_instructions
from affectgym.data.registry import KINDS, datasets, register_dataset
from affectgym.data.speech_datasets import speech_dataset
from affectgym.data.speech_sources import DatasetError


def neutral_classifier(texts):
    return [{"neutral": 1.0}] * len(texts)


def one_dialogue(dialogue_id: str) -> Dialogue:
    turn = DialogueTurn(id=f"{dialogue_id}/t0", dialogue_id=dialogue_id, index=0, n_turns=1, user_emotion="FEAR",
                        user_text="My exam is tomorrow.", target_emotion="HAPPINESS",
                        reference="(FEAR) That is close. (HAPPINESS) You prepared well! (NEUTRAL) Which subject?")
    return Dialogue(dialogue_id, (turn,))


def test_embedded_file_and_hub_are_entries_of_their_kind_not_branches_of_the_env():
    assert {"embedded", "file", "hub"} <= set(datasets("dialogue"))
    assert {"embedded", "file", "wizardlm"} <= set(datasets("instructions"))
    assert {"folder", "manifest", "ravdess"} <= set(datasets("speech"))
    assert KINDS["dialogue"].group == "affectgym.datasets.dialogue"
    assert KINDS["instructions"].group == "affectgym.datasets.instructions"
    assert KINDS["speech"].group == "affectgym.datasets"


def test_an_unknown_name_is_refused_naming_the_accepted_datasets_and_the_plug_in_way():
    with pytest.raises(ValueError, match=r"unknown dialogue dataset 'empathy'; dataset= accepts: .*embedded, file, hub") as raised:
        affectgym.make("affectgym/EmpatheticDialogue-v0", dataset="empathy", classifier=neutral_classifier)
    assert "entry-point group affectgym.datasets.dialogue" in str(raised.value)
    assert "register_dataset('dialogue', NAME, loader)" in str(raised.value)
    with pytest.raises(ValueError, match=r"unknown instructions dataset 'alpaca'; instructions= accepts: .*wizardlm"):
        affectgym.make("affectgym/EmotionStyle-v0", instructions="alpaca", classifier="nade")
    with pytest.raises(ValueError, match=r"unknown speech dataset 'ravdes'; dataset= accepts: .*ravdess"):
        speech_dataset("ravdes")
    with pytest.raises(ValueError, match=r"unknown dataset kind 'video'; kinds: speech, dialogue, instructions"):
        register_dataset("video", "clips", lambda **arguments: [])


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_env_a_kind_names_reads_that_kind_through_the_argument_it_names(kind):
    declared = KINDS[kind]
    assert declared.envs
    for env_id in declared.envs:
        with pytest.raises(ValueError, match=f"unknown {kind} dataset 'no-such-set'; {declared.argument}= accepts"):
            affectgym.make(env_id, **{declared.argument: "no-such-set"})


def test_a_dialogue_dataset_registered_in_the_process_is_what_the_env_plays():
    register_dataset("dialogue", "registry-test-exams", lambda *, data_file, hub_name: [one_dialogue("x1"), one_dialogue("x2")])
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", dataset="registry-test-exams", split="all",
                         classifier=neutral_classifier).unwrapped
    assert env.dataset == "registry-test-exams" and [turn.id for turn in env.scenarios] == ["x1/t0", "x2/t0"]


def test_the_data_arguments_reach_a_registered_loader_unchanged(tmp_path):
    given = []
    register_dataset("instructions", "registry-test-echo",
                     lambda *, data_file: given.append(data_file) or [Instruction("e1", "Describe rain.", "rain")])
    env = affectgym.make("affectgym/EmotionStyle-v0", instructions="registry-test-echo", data_file=tmp_path / "x.jsonl",
                         split="all", classifier="nade").unwrapped
    assert given == [tmp_path / "x.jsonl"] and env.instruction_source == "registry-test-echo"
    assert {scenario.id for scenario in env.scenarios} >= {"e1:joy", "e1:anger"}


def test_a_loader_that_returns_no_dialogues_or_instructions_is_refused_naming_it():
    register_dataset("dialogue", "registry-test-empty", lambda **arguments: [])
    with pytest.raises(DatasetError, match=r"dialogue dataset 'registry-test-empty' gave list '\[\]'; its loader must be a "
                                           r"function of data_file=, hub_name= returning a list of Dialogue, and the list not empty"):
        load_dialogues("registry-test-empty")
    register_dataset("instructions", "registry-test-text", lambda **arguments: ["Describe rain."])
    with pytest.raises(InstructionDataError, match=r"instructions dataset 'registry-test-text' gave list .*returning a list of Instruction"):
        load_instructions("registry-test-text")
    register_dataset("instructions", "registry-test-path", "instructions.jsonl")
    with pytest.raises(InstructionDataError, match=r"instructions dataset 'registry-test-path' is a str, not a loader \(a function of data_file="):
        load_instructions("registry-test-path")


def test_file_needs_a_data_file_and_a_data_file_alone_still_means_file(tmp_path):
    with pytest.raises(DatasetError, match=r"dataset='file' needs data_file=PATH"):
        load_dialogues("file")
    with pytest.raises(InstructionDataError, match=r"instructions='file' needs data_file=PATH"):
        load_instructions("file")
    path = tmp_path / "instructions.jsonl"
    path.write_text(json.dumps({"id": "i1", "instruction": "Explain tides.", "topic": "tides"}) + "\n")
    env = affectgym.make("affectgym/EmotionStyle-v0", data_file=path, split="all", classifier="nade").unwrapped
    assert env.instruction_source == "file" and [item.id for item in env.all_instructions] == ["i1"]


def test_hub_given_a_data_file_reads_it_as_its_local_copy_without_the_network(tmp_path):
    path = tmp_path / "copy.jsonl"
    path.write_text(json.dumps({"history": [], "instruction": "(FEAR) Exams soon.", "dialogue_id": "h1",
                                "output": "(FEAR) Oof. (HAPPINESS) You got this. (NEUTRAL) Which one?"}) + "\n")
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", dataset="hub", data_file=str(path), split="all",
                         classifier=neutral_classifier).unwrapped
    assert env.dataset == "hub" and [turn.id for turn in env.scenarios] == ["h1/t0"]


def test_a_dialogue_dataset_and_an_instruction_set_plug_in_through_their_entry_points(tmp_path):
    (tmp_path / "toy_text_plugin.py").write_text(textwrap.dedent('''
        from affectgym.data.dialogues import dialogue_from_record
        from affectgym.data.instructions import Instruction

        def toy_dialogues(*, data_file, hub_name):
            record = {"history": [], "instruction": "(SADNESS) My cat is ill.", "dialogue_id": "toy1",
                      "output": "(SADNESS) I am sorry. (HAPPINESS) Vets work wonders! (NEUTRAL) What did they say?"}
            return [dialogue_from_record(record)]

        def toy_instructions(*, data_file):
            return [Instruction("toy-i1", "Describe a storm at sea.", "a storm at sea", source="toy")]
    '''))
    dist_info = tmp_path / "toy_text_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-text-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[affectgym.datasets.dialogue]\ntoy-chats = toy_text_plugin:toy_dialogues\n\n"
        "[affectgym.datasets.instructions]\ntoy-prompts = toy_text_plugin:toy_instructions\n"
    )
    code = textwrap.dedent('''
        import affectgym
        chat = affectgym.make("affectgym/EmpatheticDialogue-v0", dataset="toy-chats", split="all",
                              classifier=lambda texts: [{"neutral": 1.0}] * len(texts)).unwrapped
        style = affectgym.make("affectgym/EmotionStyle-v0", instructions="toy-prompts", split="all",
                               classifier="nade", labels=["joy", "fear"]).unwrapped
        print([turn.id for turn in chat.scenarios], sorted(s.id for s in style.scenarios))
    ''')
    made = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert made.stdout.strip() == "['toy1/t0'] ['toy-i1:fear', 'toy-i1:joy']", made.stderr


def test_a_speech_plug_in_naming_a_function_gets_what_it_returns_and_a_broken_one_is_refused_by_name(tmp_path):
    (tmp_path / "speech_factory_plugin.py").write_text(textwrap.dedent('''
        from affectgym.data.speech_datasets import SpeechDataset

        def made_corpus():
            return SpeechDataset("made-corpus", lambda data_dir, on_bad_clip: [], "made by a function")

        def broken_corpus():
            return "not a dataset"
    '''))
    dist_info = tmp_path / "speech_factory_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: speech-factory-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[affectgym.datasets]\nmade-corpus = speech_factory_plugin:made_corpus\nbroken-corpus = speech_factory_plugin:broken_corpus\n"
    )
    code = textwrap.dedent('''
        from affectgym.data.speech_datasets import speech_dataset, speech_datasets
        print(speech_dataset("made-corpus").summary, "broken-corpus" in speech_datasets())
        try:
            speech_dataset("broken-corpus")
        except ValueError as error:
            print(error)
    ''')
    made = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    lines = made.stdout.strip().splitlines()
    assert lines[0] == "made by a function False", made.stderr
    assert lines[1].startswith("dataset 'broken-corpus' is a plug-in that failed to load"), made.stdout
    assert made.stderr.count("'broken-corpus' failed to load: it is a str") == 1, made.stderr

