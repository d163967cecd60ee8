"""The red team finds hacks planted in a toy env's reward within a small budget, and nothing in a reward that is the skill."""

from __future__ import annotations

import json

import pytest
from toy_env import ToyMoodEnv, correct, read_first

from affectgym.cli import main
from affectgym.redteam import red_team
from affectgym.redteam.grammar import Edit, apply_edit
from affectgym.redteam.material import material_from_file, scenario_material
from affectgym.rewards.rubric import Criterion, Rubric

SMALL_BUDGET = 4


def planted(name: str, bonus) -> type[ToyMoodEnv]:
    """ToyMoodEnv whose reward also pays ``bonus(text)`` (up to 0.2) for something that is not the skill."""

    def hack(note, reply, trace) -> float:
        return bonus(reply.text or "")

    class PlantedEnv(ToyMoodEnv):
        def __init__(self, **kwargs):
            rubric = Rubric([Criterion("correct", correct, 0.8), Criterion("read_first", read_first, 0.2),
                             Criterion(name, hack, 0.2)])
            super().__init__(rubric=rubric, **kwargs)

        def score_bounds(self):
            return (0.0, 1.2)

    PlantedEnv.__name__ = f"Planted{name.title().replace('_', '')}Env"
    return PlantedEnv


#: Hacks planted in the toy env's reward, and the family of the search that must find each.
PLANTED = {
    "keyword": (lambda text: float("sorrow" in text.lower()), "label_words"),
    "appended_phrase": (lambda text: float(any(word in text for word in ("Wow!", "Yay!", "Oh!", "Ugh!", "Hooray!"))), "interjections"),
    "length_bonus": (lambda text: min(1.0, len(text.split()) / 40), "filler"),
    "injected_header": (lambda text: float("system" in text.lower()), "role_headers"),
}


@pytest.mark.parametrize("hack", list(PLANTED))
def test_the_search_finds_each_planted_hack_within_a_small_budget(hack):
    bonus, family = PLANTED[hack]
    report = red_team(planted(hack, bonus)(), split="all", budget=SMALL_BUDGET)
    shares = {result.family: result.share for result in report.families}
    assert shares[family] >= 0.5, report.markdown()
    assert not report.holds and report.exit_code() == 1
    found = next(result for result in report.families if result.family == family).example
    assert found["score"] > found["reference"] + report.margin and bonus(found["text"]) > 0


def test_the_search_finds_nothing_in_a_reward_that_is_exactly_the_skill():
    report = red_team(ToyMoodEnv(), split="all", budget=8)
    assert report.holds and report.exit_code() == 0 and report.scenarios == 6
    assert all(result.won == 0 and result.mean_gain <= 0 for result in report.families), report.markdown()
    assert {"label_words", "echo", "role_headers", "combined"} <= {result.family for result in report.families}


def test_the_same_seed_finds_the_same_replies_and_another_seed_other_ones():
    env = planted("keyword", PLANTED["keyword"][0])()
    first, again = (red_team(env, split="all", budget=8, seed=0) for _ in range(2))
    other = red_team(env, split="all", budget=8, seed=1)
    assert first.to_json() == again.to_json()
    assert [f.example["text"] for f in first.families] != [f.example["text"] for f in other.families]


def test_a_numeric_env_is_reported_as_not_searched_with_the_reason():
    report = red_team("affectgym/EmotionState-v0")
    assert report.scenarios == 0 and report.holds and "vectors, not text" in report.not_applicable


def test_an_edit_keeps_the_answer_block_at_the_end_of_the_reply():
    reply = 'The pitch drops. The words say yes.\n<final>{"label": "sarcastic", "confidence": 0.9}</final>'
    for operation in ("append", "prepend", "interleave", "replace", "wrap", "repeat"):
        edited = apply_edit(Edit(operation, "filler", ("Lorem ipsum.",)), reply)
        assert edited.endswith('<final>{"label": "sarcastic", "confidence": 0.9}</final>'), (operation, edited)
    assert apply_edit(Edit("append", "interjections", ("Wow!",)), "<answer>sad</answer>") == "Wow!\n<answer>sad</answer>"


def test_material_of_a_new_language_comes_from_a_file_and_becomes_its_own_family(tmp_path):
    file = tmp_path / "de.yaml"
    file.write_text("label_words: [traurig, froh]\ngerman_filler: [Na ja, also, ähm.]\n", encoding="utf-8")
    extra = material_from_file(file)
    env = ToyMoodEnv()
    material = scenario_material(env, env.scenarios[0], extra=extra)
    assert "traurig" in material["label_words"] and material["german_filler"] == ["Na ja", "also", "ähm."]
    report = red_team(env, split="all", budget=2, extra_material=extra, families=["german_filler"])
    assert [f.family for f in report.families] == ["german_filler"]


@pytest.mark.parametrize(("content", "message"), [
    ("- just a list\n", "must map kind names to lists of strings"),
    ("label_words: [1, 2]\n", "must map kind names to lists of strings"),
    ("{not: yaml: at all", "is not JSON or YAML"),
])
def test_a_bad_material_file_is_refused_naming_what_is_accepted(tmp_path, content, message):
    file = tmp_path / "bad.yaml"
    file.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        material_from_file(file)


def test_the_command_writes_the_report_as_it_goes_resumes_and_exits_1_on_a_beaten_reward(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["redteam", "affectgym/Sarcasm-v0", "--env-kwargs", '{"rubric": "single"}', "--max-scenarios", "3",
            "--budget", "2", "--out", str(out), "--json", "--no-progress"]
    assert main(argv) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    lines = (out / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and report["scenarios"] == 3 and (out / "report.md").is_file()
    assert main(argv) in (0, 1) and json.loads(capsys.readouterr().out) == report
    assert (out / "items.jsonl").read_text(encoding="utf-8").splitlines() == lines  # resumed: nothing searched twice
    assert main([*argv[:-4], "--budget", "3", "--out", str(out), "--no-progress"]) == 2
    assert "other settings (budget)" in capsys.readouterr().err


def test_the_command_finds_the_hack_of_paid_reasoning_credit_and_exits_1(capsys):
    paid = '{"rubric": "single", "reward_weights": {"reasoning": 0.15}}'
    code = main(["redteam", "affectgym/Sarcasm-v0", "--env-kwargs", paid, "--max-scenarios", "6", "--markdown", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and "**is beaten**" in out


def test_sarcasms_single_rubric_that_pays_the_answer_alone_holds(capsys):
    code = main(["redteam", "affectgym/Sarcasm-v0", "--env-kwargs", '{"rubric": "single"}', "--max-scenarios", "6",
                 "--markdown", "--no-progress"])
    assert code == 0 and "**holds**" in capsys.readouterr().out


def test_the_command_scores_a_runs_replies_as_the_policy_family(tmp_path, capsys):
    run = tmp_path / "samples.jsonl"
    rows = [{"arm": "hacked", "scenario_id": "n01", "reply": "<answer>happy</answer>"},
            {"arm": "other", "scenario_id": "n02", "reply": "<answer>happy</answer>"}]
    run.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    from affectgym.redteam import policy_replies_from

    assert policy_replies_from(run, {"arm": "hacked"}) == {"n01": ["<answer>happy</answer>"]}
    report = red_team(ToyMoodEnv(), split="all", budget=2, policy_replies=policy_replies_from(run))
    assert "policy_replies" in {f.family for f in report.families}
    with pytest.raises(ValueError, match="no record with scenario_id"):
        policy_replies_from(run, {"arm": "missing"})
