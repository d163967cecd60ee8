"""YAML files a user hands in are read within limits: a hostile one is refused in one line, fast.

The four ways a small file exhausts memory or the stack, or silently says two things: a billion
laughs, a swarm of aliases, a key given twice, nesting past the stack. Each is refused naming
the file, by :func:`affectgym.yaml_files.load_yaml_file` and by ``affectgym train --config``
(the material file of ``affectgym redteam`` too), within a second; every config affectgym
writes or ships still loads as ``yaml.safe_load`` reads it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from affectgym.cli import main
from affectgym.redteam.material import material_from_file
from affectgym.train.config import TrainConfig, config_to_yaml
from affectgym.train.recipes import RECIPES, recipe_defaults
from affectgym.yaml_files import YamlFileError, YamlLimits, load_yaml_file

ROOT = Path(__file__).resolve().parents[1]
LIMITS = YamlLimits()


def billion_laughs() -> str:
    """Nine lines, each a list of nine aliases of the line before: 9^9 values in under 500 bytes."""
    lines = ['lol0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"lol{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


#: name -> (file text, what the refusal says was wrong).
ATTACKS = {
    "billion_laughs": (billion_laughs(), f"stands for more than {LIMITS.max_values} values"),
    "many_aliases": ("seed: &v 1\ndemos: [" + ", ".join(["*v"] * 101) + "]\n", f"more than {LIMITS.max_aliases} aliases"),
    "duplicate_key": ("seed: 1\nmax_steps: 3\nseed: 2\n", "key 'seed' is given twice in one mapping (lines 1 and 3)"),
    "deep_nesting": ("env_kwargs: " + "[" * 200 + "]" * 200 + "\n", f"nest deeper than {LIMITS.max_depth} levels"),
    "deeper_than_libyaml_goes": ("env_kwargs: " + "[" * 20_000 + "]" * 20_000 + "\n",
                                 f"nest deeper than {LIMITS.max_depth} levels"),
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_billion_laughs_is_a_small_file():
    assert len(billion_laughs().encode()) < 500


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_loader_refuses_each_attack_in_one_line_naming_the_file_within_a_second(tmp_path, attack):
    text, problem = ATTACKS[attack]
    path = write(tmp_path, attack, text)
    started_s = time.perf_counter()
    with pytest.raises(YamlFileError) as refused:
        load_yaml_file(path, what="config file")
    assert time.perf_counter() - started_s < 1.0
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"config file {str(path)!r}: ")
    assert problem in message and re.search(r"at most \d+ are accepted|each key may be given once", message)


@pytest.mark.parametrize("attack", ATTACKS)
def test_affectgym_train_refuses_each_attack_in_one_error_line_naming_the_file(tmp_path, capsys, attack):
    text, problem = ATTACKS[attack]
    path = write(tmp_path, attack, text)
    main(["train", "--config", str(write(tmp_path, "warm", "max_steps: 3\n")), "--print-config"])  # imports done
    capsys.readouterr()
    started_s = time.perf_counter()
    assert main(["train", "affectgym/Sarcasm-v0", "--config", str(path), "--print-config"]) == 1
    assert time.perf_counter() - started_s < 1.0
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"affectgym: error: config file {str(path)!r}: ") and problem in err


def test_the_redteam_material_file_is_read_within_the_same_limits(tmp_path):
    path = write(tmp_path, "material", billion_laughs())
    with pytest.raises(ValueError, match=rf"^material file {re.escape(repr(str(path)))}: the document stands for more"):
        material_from_file(path)
    path = write(tmp_path, "material", "label_words: [wütend]\nlabel_words: [traurig]\n")
    with pytest.raises(ValueError, match="key 'label_words' is given twice in one mapping"):
        material_from_file(path)


def test_a_value_that_contains_itself_is_refused(tmp_path):
    path = write(tmp_path, "loop", "demos: &d [a, *d]\n")
    with pytest.raises(YamlFileError, match=r"alias \*d at line 1 is inside the value it names"):
        load_yaml_file(path)


def test_a_file_past_the_size_limit_is_refused_before_it_is_parsed(tmp_path):
    path = write(tmp_path, "big", "seed: 1\n" + "# padding\n" * 20)
    with pytest.raises(YamlFileError, match=rf"{re.escape(repr(str(path)))}: more than 100 bytes; at most 100 are"):
        load_yaml_file(path, limits=YamlLimits(max_bytes=100))


def test_shared_values_and_merge_keys_within_the_limits_load_as_safe_load_reads_them(tmp_path):
    text = ("base: &base {lora_r: 8, seed: 1}\nrun:\n  <<: *base\n  seed: 2\n"
            "demos: &demos [a, b]\nmore_demos: *demos\n")
    path = write(tmp_path, "shared", text)
    assert load_yaml_file(path) == yaml.safe_load(text)
    assert load_yaml_file(path)["run"] == {"lora_r": 8, "seed": 2}  # a merged key may be overridden


def test_keys_that_read_as_the_same_value_are_the_same_key(tmp_path):
    with pytest.raises(YamlFileError, match=r"key 1 is given twice in one mapping \(lines 1 and 2\)"):
        load_yaml_file(write(tmp_path, "ints", "1: a\n0x1: b\n"))


def test_a_file_that_is_not_yaml_is_left_to_pyyaml_to_describe(tmp_path):
    with pytest.raises(yaml.YAMLError, match="torn.yaml"):
        load_yaml_file(write(tmp_path, "torn", "env_id: [unclosed\n"))


def shipped_configs() -> dict[str, str]:
    """Every config affectgym writes for a recipe (GRPO, SFT, DPO) or Stable-Baselines3, and the YAML it ships."""
    configs = {f"recipe {name}": config_to_yaml(recipe_defaults(name)) for name in RECIPES}
    for algo in ("ppo", "sac"):
        configs[f"--algo {algo}"] = config_to_yaml(TrainConfig(env_id="affectgym/EmotionState-v0", algo=algo))
    configs["examples/accelerate/zero2.yaml"] = (ROOT / "examples/accelerate/zero2.yaml").read_text(encoding="utf-8")
    return configs


@pytest.mark.parametrize("name", shipped_configs())
def test_every_shipped_config_loads_as_safe_load_reads_it(tmp_path, name):
    text = shipped_configs()[name]
    assert load_yaml_file(write(tmp_path, "shipped", text)) == yaml.safe_load(text)


def test_a_recipe_config_written_by_print_config_is_read_back_by_train_config(tmp_path, capsys):
    assert main(["train", "--recipe", "sarcasm-cpu", "--print-config"]) == 0
    path = write(tmp_path, "run", capsys.readouterr().out)
    assert main(["train", "--config", str(path), "--print-config"]) == 0
    assert capsys.readouterr().out == path.read_text(encoding="utf-8")


def test_the_material_example_of_the_evaluation_guide_loads(tmp_path):
    page = (ROOT / "docs/evaluation.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.DOTALL)
    assert blocks, "docs/evaluation.md has no YAML example"
    for index, block in enumerate(blocks):
        assert material_from_file(write(tmp_path, f"material{index}", block)) == yaml.safe_load(block)
