# mcptap — common tasks. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint bench bench-stdio bench-http bench-analysis bench-replay bench-serve bench-otel conformance clean bench-report

$(BIN)/mcptap: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(BIN)/mcptap

demo: install
	$(BIN)/mcptap demo

test: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: bench-stdio bench-http bench-analysis bench-replay bench-serve bench-otel bench-report

bench-stdio: install
	$(BIN)/python scripts/bench_stdio.py

bench-http: install
	$(BIN)/python scripts/bench_http.py

bench-analysis: install
	$(BIN)/python scripts/bench_analysis.py
	$(BIN)/python scripts/bench_analysis.py --recorded

bench-report: install
	$(BIN)/python scripts/bench_report.py

bench-replay: install
	$(BIN)/python scripts/bench_replay.py

bench-serve: install
	$(BIN)/python scripts/bench_serve.py

bench-otel: install
	$(BIN)/python scripts/bench_otel.py

conformance: install
	bash scripts/conformance.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
