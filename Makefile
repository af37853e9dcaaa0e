# gangplank: `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint types unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/gangplank demo $(DEMO_ARGS)

lint: install
	$(BIN)/ruff check extender tests loadtest
	$(BIN)/ruff format --check extender tests loadtest
	$(BIN)/lint-imports

types: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q $(PYTEST_ARGS)

test: lint types unit

bench: install
	$(BIN)/python -m loadtest.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
