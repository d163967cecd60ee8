"""The training figures read on their own: titled with the run, counts written out, no stale files."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from affectgym.train.plots import plot_eval_comparison, plot_loss_curve, plot_reward_curves  # noqa: E402

HISTORY = [
    {"step": step, "reward": 0.1 * step, "rewards/correctness/mean": 0.05 * step, "rewards/invalid_actions/mean": 0.5}
    for step in range(1, 4)
]


def test_every_reward_curve_is_titled_with_the_run(tmp_path, drawn):
    paths = plot_reward_curves(HISTORY, tmp_path, title="GRPO flat on affectgym/Sarcasm-v0, tiny")
    assert {p.name for p in paths} == {"reward_total.png", "reward_correctness.png", "reward_invalid_actions.png"}
    assert all(drawn[p.name].axes[0].get_title().startswith("GRPO flat on affectgym/Sarcasm-v0, tiny\n") for p in paths)


def test_a_long_run_title_is_wrapped_inside_the_figure_not_cut_at_its_edges(tmp_path, drawn):
    run = "SFT on affectgym/EmotionStyle-v0, smollm2-135m, 70 demonstrations of the best of 8 replies"
    plot_loss_curve([{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}], tmp_path / "loss.png", title=run)
    figure = drawn["loss.png"]
    title = figure.axes[0].title
    extent = title.get_window_extent(FigureCanvasAgg(figure).get_renderer())
    assert 0 <= extent.x0 and extent.x1 <= figure.bbox.width
    assert " ".join(title.get_text().split("\n")[:-1]) == run
    assert title.get_text().endswith("\ntraining loss")


def test_reward_curves_of_an_earlier_run_in_the_folder_are_removed(tmp_path):
    plot_reward_curves([{"step": 1, "reward": 0.1, "rewards/judge/mean": 0.3}], tmp_path)
    plot_reward_curves([{"step": 1, "reward": 0.1}], tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["reward_total.png"]


def test_the_held_out_comparison_writes_counts_out_and_keeps_its_legend_off_the_bars(tmp_path, drawn):
    base = {"reward_mean": 0.4, "reward_ci95": 0.1, "reward_components": {"correctness": 0.5, "invalid_actions": 0.4}}
    trained = {"reward_mean": 0.6, "reward_ci95": 0.1, "reward_components": {"correctness": 0.7, "invalid_actions": 0.1}}
    plot_eval_comparison(base, trained, tmp_path / "comparison.png", title="affectgym/Sarcasm-v0, tiny (flat)")
    figure = drawn["comparison.png"]
    axes = figure.axes[0]
    assert [label.get_text() for label in axes.get_xticklabels()] == ["total", "correctness"]
    assert axes.get_title().startswith("affectgym/Sarcasm-v0, tiny (flat)\n")
    assert "invalid actions per episode: base 0.40, trained 0.10" in axes.get_title()
    assert figure.legends and axes.get_legend() is None
    assert "0.70" in [text.get_text() for text in axes.texts]


def test_the_loss_curve_labels_its_axis_with_the_loss_it_is_given(tmp_path, drawn):
    history = [{"step": 1, "loss": 0.693}, {"step": 2, "loss": 0.5}]
    plot_loss_curve(history, tmp_path / "sft.png")
    plot_loss_curve(history, tmp_path / "dpo.png", loss_label="DPO loss per pair")
    assert drawn["sft.png"].axes[0].get_ylabel() == "loss (assistant tokens, mean per token)"
    assert drawn["dpo.png"].axes[0].get_ylabel() == "DPO loss per pair"


def test_training_figures_tick_their_steps_at_whole_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from affectgym.train.plots import step_axis

    figure, axis = plt.subplots()
    axis.plot([1, 2, 3], [0.1, 0.4, 0.3])
    step_axis(axis)
    figure.canvas.draw()
    ticks = [tick for tick in axis.get_xticks() if axis.get_xlim()[0] <= tick <= axis.get_xlim()[1]]
    plt.close(figure)
    assert ticks and all(float(tick).is_integer() for tick in ticks) and axis.get_xlabel() == "step"
