"""The code in README.md and docs/*.md runs: every ```python block of a page, in order, as one script.

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
from doc_blocks import DOCS, README, compile_block, not_run_blocks, python_blocks

PAGES = [README, *sorted(DOCS.glob("*.md"))]
#: The folder README.md's audio plug-in example reads: label -> shipped emotion clips (angry and
#: sad ones), two of each label for each speaker the examples read from the clip number (mod 4).
MY_CORPUS = {"angry": ['ed0052', 'ed0017', 'ed0002', 'ed0007', 'ed0060', 'ed0025', 'ed0022', 'ed0015'],
             "calm": ['ed0012', 'ed0001', 'ed0030', 'ed0023', 'ed0028', 'ed0073', 'ed0058', 'ed0027']}
#: Where README.md's baseline table sits, between these two lines.
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
    assert len(python_blocks(README)) >= 5
    assert DOCS / "plugins.md" in PAGES and len(python_blocks(DOCS / "plugins.md")) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_block_of_the_page_runs(page, monkeypatch, tmp_path):
    # A real module, registered as __main__: dataclasses and get_type_hints look a class's
    # module up in sys.modules, and a guarded block must see __name__ == "__main__".
    module = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", module)
    monkeypatch.chdir(tmp_path)
    make_my_corpus(tmp_path)
    for line, code in python_blocks(page):
        exec(compile_block(page, line, code), module.__dict__)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
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


def readme_between(start: str, end: str, what: str) -> str:
    """The README text between two marker lines."""
    text = README.read_text(encoding="utf-8")
    assert start in text and end in text, f"README.md lost the markers around its {what}"
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_readme_baseline_table_is_what_the_script_prints():
    baseline_tables = repo_module("tools", "baseline_table").baseline_tables
    in_readme = readme_between(TABLE_START, TABLE_END, "baseline table")
    assert in_readme == baseline_tables(), "README.md's baseline tables are stale: run python tools/baseline_table.py"


def test_the_plugin_guide_has_two_example_envs_of_about_sixty_lines():
    examples = [code for _, code in python_blocks(DOCS / "plugins.md") if "(AffectEnv):" in code]
    assert len(examples) == 2
    assert all(len(code.splitlines()) <= 65 for code in examples), [len(c.splitlines()) for c in examples]


#: README.md's tables of committed benchmark results: the script, and the lines each table sits between.
BENCHMARK_TABLES = {
    "bench_learning": ("<!-- learning table: python benchmarks/bench_learning.py --report-only -->\n",
                       "\n<!-- end of learning table -->"),
    "bench_transfer": ("<!-- transfer table: python benchmarks/bench_transfer.py --report-only -->\n",
                       "\n<!-- end of transfer table -->"),
    "bench_dialogue_learning": ("<!-- dialogue table: python benchmarks/bench_dialogue_learning.py --report-only -->\n",
                                "\n<!-- end of dialogue table -->"),
    "bench_style_learning": ("<!-- style table: python benchmarks/bench_style_learning.py --neutral-weight 0.25 "
                             "--report-only -->\n", "\n<!-- end of style table -->", "CALIBRATED_SUMMARY_FILE"),
}


@pytest.mark.parametrize("script", sorted(BENCHMARK_TABLES))
def test_the_readme_benchmark_tables_are_the_committed_benchmark_results(script):
    import json

    bench = repo_module("benchmarks", script)
    start, end, *summary_name = BENCHMARK_TABLES[script]
    in_readme = readme_between(start, end, f"{script} table")
    summary = json.loads(getattr(bench, *summary_name or ["SUMMARY_FILE"]).read_text(encoding="utf-8"))
    assert in_readme == bench.markdown_table(summary), f"README.md's table is stale: rerun {script}.py --report-only"
