"""The code in README.md and on the docs site (docs/**/*.md) runs: every ```python block of a page, in order, as one script.

Conventions for the pages:

* Each page runs as a script would: its blocks share one ``__main__`` module, in the order
  they appear, so a later block uses what an earlier one defined, and a block that starts
  worker processes guards them with ``if __name__ == "__main__":`` as a reader's script must.
* A block runs in a fresh temporary working directory; a block that needs a file uses one
  the package ships (e.g. the embedded speech corpus) or one this test creates there.
* A block that cannot run here (it trains for hours, or needs a GPU or a server) is marked
  by an HTML comment on the line just above its fence, ``<!-- not run: REASON -->``. It is
  still compiled, and its reason must say why. Use it sparingly.
"""

from __future__ import annotations

import shutil
import sys
import types

import pytest
from doc_blocks import (
    DOCS,
    PAGES,
    README,
    compile_block,
    marked_text,
    not_run_blocks,
    page_name,
    python_blocks,
)

#: The folder the audio plug-in examples (docs/datasets.md, docs/plugins.md) read: label -> shipped emotion clips (angry and
#: sad ones), two of each label for each speaker the examples read from the clip number (mod 4).
MY_CORPUS = {"angry": ['ed0052', 'ed0017', 'ed0002', 'ed0007', 'ed0060', 'ed0025', 'ed0022', 'ed0015'],
             "calm": ['ed0012', 'ed0001', 'ed0030', 'ed0023', 'ed0028', 'ed0073', 'ed0058', 'ed0027']}
#: Where the baseline table sits (docs/evaluation.md), between these two lines.
TABLE_START, TABLE_END = "<!-- baseline table: python tools/baseline_table.py -->\n", "\n<!-- end of baseline table -->"


def make_my_corpus(root) -> None:
    """``root/my_corpus/<label>/<clip>.flac`` from the shipped emotion clips, each with its own transcript."""
    from affectgym.data.speech_corpus import speech_root

    for label, clip_ids in MY_CORPUS.items():
        folder = root / "my_corpus" / label
        folder.mkdir(parents=True)
        for clip_id in clip_ids:
            shutil.copy(speech_root() / "audio" / f"{clip_id}.flac", folder / f"{clip_id}.flac")
            (folder / f"{clip_id}.txt").write_text(f"This is take {clip_id} of the line.\n", encoding="utf-8")


def test_the_readme_and_the_plugin_guide_are_among_the_pages_and_have_code():
    assert len(python_blocks(README)) >= 3
    assert DOCS / "plugins.md" in PAGES and len(python_blocks(DOCS / "plugins.md")) >= 5


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_python_block_of_the_page_runs(page, monkeypatch, tmp_path):
    # A real module, registered as __main__: dataclasses and get_type_hints look a class's
    # module up in sys.modules, and a guarded block must see __name__ == "__main__".
    module = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", module)
    monkeypatch.chdir(tmp_path)
    make_my_corpus(tmp_path)
    for line, code in python_blocks(page):
        exec(compile_block(page, line, code), module.__dict__)


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_blocks_that_do_not_run_say_why_and_still_compile(page):
    for line, code, reason in not_run_blocks(page):
        assert len(reason.split()) >= 2, f"{page.name}:{line}: say why the block is not run, got {reason!r}"
        compile_block(page, line, code)


def repo_module(folder: str, name: str):
    """A script module of the repository's ``folder`` (tools/, benchmarks/), imported by name."""
    import importlib

    sys.path.insert(0, str(README.parent / folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(README.parent / folder))


def test_the_baseline_table_is_what_the_script_prints():
    baseline_tables = repo_module("tools", "baseline_table").baseline_tables
    page, on_page = marked_text(TABLE_START, TABLE_END)
    assert on_page == baseline_tables(), f"{page_name(page)}'s baseline tables are stale: run python tools/baseline_table.py"


def test_the_plugin_guide_has_two_example_envs_of_about_sixty_lines():
    examples = [code for _, code in python_blocks(DOCS / "plugins.md") if "(AffectEnv):" in code]
    assert len(examples) == 2
    assert all(len(code.splitlines()) <= 65 for code in examples), [len(c.splitlines()) for c in examples]


#: The site's tables of committed benchmark results (docs/results.md): the script (``script:which`` for a second table
#: of one script), and the lines each table sits between, and the summary file's name in the script when not SUMMARY_FILE.
BENCHMARK_TABLES = {
    "bench_learning": ("<!-- learning table: python benchmarks/bench_learning.py --report-only -->\n",
                       "\n<!-- end of learning table -->"),
    "bench_transfer": ("<!-- transfer table: python benchmarks/bench_transfer.py --report-only -->\n",
                       "\n<!-- end of transfer table -->"),
    "bench_dialogue_learning": ("<!-- dialogue table: python benchmarks/bench_dialogue_learning.py --report-only -->\n",
                                "\n<!-- end of dialogue table -->"),
    "bench_dialogue_learning:chosen-rounds": (
        "<!-- dialogue table, the round count chosen on validation: python benchmarks/bench_dialogue_learning.py "
        "--dpo-rounds 1 --report-only -->\n", "\n<!-- end of the chosen round count's dialogue table -->",
        "CHOSEN_SUMMARY_FILE"),
    "bench_dialogue_learning:earlier-rubric": (
        "<!-- dialogue table, the earlier rubric: benchmarks/results/dialogue_learning.json -->\n",
        "\n<!-- end of the earlier rubric's dialogue table -->", "EARLIER_RUBRIC_SUMMARY_FILE"),
    "bench_style_learning": ("<!-- style table: python benchmarks/bench_style_learning.py --neutral-weight 0.25 "
                             "--report-only -->\n", "\n<!-- end of style table -->", "CALIBRATED_SUMMARY_FILE"),
    "bench_style_hacking": ("<!-- style hacking table: python benchmarks/bench_style_hacking.py --report-only -->\n",
                            "\n<!-- end of style hacking table -->"),
    "bench_style_hacking:probe": (
        "<!-- style hacking table, the probe: python benchmarks/bench_style_hacking.py --classifier probe "
        "--report-only -->\n", "\n<!-- end of the probe's style hacking table -->", "PROBE_SUMMARY_FILE"),
    "bench_style_warmstart": ("<!-- style warm-start table: python benchmarks/bench_style_warmstart.py --report-only -->\n",
                              "\n<!-- end of style warm-start table -->"),
    "bench_sarcasm_probe": ("<!-- sarcasm probe table: python benchmarks/bench_sarcasm_probe.py --report-only -->\n",
                            "\n<!-- end of sarcasm probe table -->"),
    "bench_sarcasm_sft": ("<!-- sarcasm sft table: python benchmarks/bench_sarcasm_sft.py --report-only -->\n",
                          "\n<!-- end of sarcasm sft table -->"),
}


@pytest.mark.parametrize("script", sorted(BENCHMARK_TABLES))
def test_the_benchmark_tables_are_the_committed_benchmark_results(script):
    import json

    bench = repo_module("benchmarks", script.split(":")[0])
    start, end, *summary_name = BENCHMARK_TABLES[script]
    page, on_page = marked_text(start, end)
    summary = json.loads(getattr(bench, *summary_name or ["SUMMARY_FILE"]).read_text(encoding="utf-8"))
    assert on_page == bench.markdown_table(summary), f"{page_name(page)}'s table is stale: rerun {script}.py --report-only"


def test_the_readme_is_a_front_page_of_at_most_250_lines_and_the_site_holds_the_rest():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250
    assert (DOCS.parent / "mkdocs.yml").is_file()
