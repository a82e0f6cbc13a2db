# mcptap — common tasks. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test bench conformance clean

$(BIN)/mcptap: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(BIN)/mcptap

demo: install
	$(BIN)/mcptap demo

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python scripts/bench_stdio.py

conformance: install
	bash scripts/conformance.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
