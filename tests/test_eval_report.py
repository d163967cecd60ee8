"""`affectgym eval` and `affectgym report` through the argparse wiring; figures and report.md."""

from __future__ import annotations

import argparse
import json

import pytest
from test_eval_runner import TOY_ID, happy_reader

from affectgym.agents.base import FunctionAgent
from affectgym.agents.registry import register_agent
from affectgym.eval import commands
from affectgym.eval.report import register_report_plot, write_report


def cli(*argv):
    parser = argparse.ArgumentParser(prog="affectgym")
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    register_agent("happy-reader", lambda **kw: FunctionAgent(happy_reader, name="happy-reader"))
    register_agent("always-sad", lambda **kw: FunctionAgent(lambda o, i: "<answer>sad</answer>", name="always-sad"))
    root = tmp_path_factory.mktemp("runs")
    for agent in ("happy-reader", "always-sad"):
        code = cli("eval", TOY_ID, "--agent", agent, "-n", 6, "-r", 2, "-c", 2, "--out", root / agent,
                   "--env-kwargs", '{"max_turns": 3}', "--no-progress")
        assert code == 0
    return root / "happy-reader", root / "always-sad"


def test_eval_command_writes_the_run_with_its_exact_settings(two_runs):
    metadata = json.loads((two_runs[0] / "metadata.json").read_text())
    assert metadata["env_kwargs"] == {"max_turns": 3} and metadata["rollouts"] == 2 and metadata["split"] == "eval"
    assert len((two_runs[0] / "results.jsonl").read_text().splitlines()) == 12


def test_eval_command_resumes_a_finished_run_without_new_episodes(two_runs, capsys):
    assert cli("eval", TOY_ID, "--agent", "happy-reader", "-n", 6, "-r", 2, "--out", two_runs[0],
               "--env-kwargs", '{"max_turns": 3}', "--resume", "--no-progress") == 0
    assert len((two_runs[0] / "results.jsonl").read_text().splitlines()) == 12


def test_bad_env_kwargs_are_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        cli("eval", TOY_ID, "--agent", "x", "--env-kwargs", "[1]")
    assert "expected a JSON object" in capsys.readouterr().err


def test_report_of_one_run_has_every_figure(two_runs, tmp_path):
    assert cli("report", two_runs[0], "--out", tmp_path / "one") == 0
    text = (tmp_path / "one" / "report.md").read_text()
    for name in ("confusion", "per-label", "reliability", "rewards"):
        figure = tmp_path / "one" / f"happy-reader-{name}.png"
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"({figure.name})" in text
    assert "| accuracy | 0.500 |" in text


def test_report_of_two_runs_puts_them_side_by_side(two_runs, tmp_path):
    report = write_report(list(two_runs), tmp_path / "both")
    text = report.read_text()
    assert "| metric | happy-reader | always-sad |" in text
    assert "| accuracy | 0.500 | 0.500 |" in text and "| tool-use rate | 1.000 | 0.000 |" in text
    assert (tmp_path / "both" / "compare-rewards.png").is_file() and (tmp_path / "both" / "compare-f1.png").is_file()


def test_env_specific_plots_hook_in_by_env_prefix(two_runs, tmp_path):
    def episode_lengths(run, out_dir):
        path = out_dir / f"{run.label}-turns.png"
        path.write_bytes(b"\x89PNG\r\n\x1a\n")
        return [("Turns per episode", path)]

    register_report_plot("affectgym-test/ToyOutcome", episode_lengths)
    text = write_report([two_runs[1]], tmp_path / "hooked").read_text()
    assert "### Turns per episode" in text and "(always-sad-turns.png)" in text


def test_a_folder_without_results_is_named_in_the_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.jsonl"):
        write_report([tmp_path], tmp_path / "out")


# ----------------------------------------------------------------------------- readable figures

def test_every_report_figure_is_titled_with_its_run_env_and_agent(two_runs, tmp_path, drawn):
    write_report(list(two_runs), tmp_path / "titled")
    assert set(drawn) >= {"happy-reader-confusion.png", "happy-reader-rewards.png", "compare-rewards.png", "compare-f1.png"}
    for name, figure in drawn.items():
        title = figure._suptitle.get_text() if figure._suptitle else ""
        assert "ToyOutcome" in title, name
        if not name.startswith("compare-"):
            run = name.split("-")[0] + "-" + name.split("-")[1]
            assert run in title and "agent" in title, name


def test_comparison_legends_sit_outside_the_bars(two_runs, tmp_path, drawn):
    write_report(list(two_runs), tmp_path / "legends")
    for name in ("compare-rewards.png", "compare-f1.png", "happy-reader-per-label.png"):
        figure = drawn[name]
        assert figure.legends and all(axes.get_legend() is None for axes in figure.axes), name


def test_invalid_actions_is_written_as_a_count_not_drawn_among_the_unit_components(tmp_path, drawn):
    from affectgym.eval.report import plot_components

    plot_components({"run": {"correctness": 0.5, "invalid_actions": 2.0}}, tmp_path / "parts.png", "run: Toy, agent x")
    figure = drawn["parts.png"]
    assert [label.get_text() for label in figure.axes[0].get_xticklabels()] == ["correctness"]
    assert "invalid actions per episode: 2.000" in " ".join(figure._suptitle.get_text().split())
    assert figure.axes[0].containers[0].datavalues.tolist() == [0.5]


def test_the_run_metadata_records_the_weight_of_every_reward_component(two_runs):
    import gymnasium as gym

    metadata = json.loads((two_runs[0] / "metadata.json").read_text())
    env = gym.make(TOY_ID, max_turns=3)
    assert metadata["reward_weights"] == env.unwrapped.rubric.weights
    env.close()


def test_component_bars_say_their_weight_so_penalties_and_logged_values_read_as_such(tmp_path, drawn):
    from affectgym.eval.report import plot_components

    weights = {"correctness": 0.7, "shouting": -0.25, "overlap": 0.0}
    plot_components({"run": {"correctness": 0.5, "shouting": 0.1, "overlap": 1.0, "judge": 0.3}},
                    tmp_path / "weighted.png", "run: Toy, agent x", weights=weights)
    figure = drawn["weighted.png"]
    labels = [label.get_text() for label in figure.axes[0].get_xticklabels()]
    assert labels == ["correctness (×0.7)", "shouting (×-0.25)", "overlap (×0)", "judge"]
    assert "weight in the reward" in figure._suptitle.get_text()


def test_side_by_side_bars_show_only_the_weights_every_run_shares(two_runs, tmp_path, drawn):
    from affectgym.eval.report import Run, _shared_weights

    def run(weights):
        return Run(path=tmp_path, label="r", metadata={"reward_weights": weights}, summary={}, records=[])

    assert _shared_weights([run({"a": 1.0, "b": -0.5}), run({"a": 1.0, "b": -0.25}), run(None)]) == {"a": 1.0}
    assert _shared_weights([run(None)]) == {}
    write_report(list(two_runs), tmp_path / "shared")
    ticks = [label.get_text() for label in drawn["compare-rewards.png"].axes[0].get_xticklabels()]
    assert ticks and all("(×" in tick for tick in ticks)


def test_bars_carry_their_values_so_a_zero_is_not_an_empty_gap(tmp_path, drawn):
    from affectgym.eval.report import plot_bars

    plot_bars({"run": {"shouting": 0.0, "judge": None, "joy": 0.25}}, tmp_path / "bars.png", "mean value")
    axes = drawn["bars.png"].axes[0]
    assert [text.get_text() for text in axes.texts] == ["0.000", "n/a", "0.250"]


def test_rerunning_a_report_into_one_folder_removes_the_figures_it_no_longer_draws(two_runs, tmp_path):
    out = tmp_path / "again"
    write_report(list(two_runs), out)
    user_file = out / "my-notes.png"
    user_file.write_bytes(b"\x89PNG\r\n\x1a\n")
    write_report([two_runs[0]], out)
    assert not (out / "compare-rewards.png").exists() and not (out / "always-sad-rewards.png").exists()
    assert (out / "happy-reader-rewards.png").is_file() and user_file.is_file()


def test_a_side_by_side_bar_chart_of_long_run_names_keeps_its_whole_legend_inside_the_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from affectgym.eval.report import bar_chart

    series = {"hf:runs/sarcasm-cpu/checkpoint-final+runs/sarcasm-cpu/adapter": {"sarcastic": 0.5, "sincere": 0.0},
              "smollm2-135m (base, no adapter, greedy decoding)": {"sarcastic": 0.667, "sincere": None}}
    figure = bar_chart(series, "F1", ylim=(0, 1), title="F1 per label")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    legend, whole = figure.legends[0].get_window_extent(renderer), figure.get_window_extent(renderer)
    assert whole.x0 <= legend.x0 and legend.x1 <= whole.x1 and whole.y0 <= legend.y0
