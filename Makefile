# gangplank: `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp

.PHONY: install demo test lint types unit bench soak clean prometheus

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The demo needs only gangplank and its report's plotting, not the test tools. --no-compile:
# byte-compiling every installed module was half the install's time; Python compiles what the
# demo imports as it first imports it.
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[sim]'
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/gangplank demo $(DEMO_ARGS)

lint: install
	$(BIN)/ruff check extender tests loadtest
	$(BIN)/ruff format --check extender tests loadtest
	$(BIN)/lint-imports

types: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q $(PYTEST_ARGS)

# promtool (Debian's prometheus package) for the alert tests: installed where we are root with
# apt; elsewhere those tests are skipped, and pytest's summary says so.
prometheus:
	@if command -v promtool >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's prometheus package (promtool) for the alert tests"; \
	  { apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }; } || \
	  echo "NOTE: could not install prometheus: the promtool tests will be skipped"; \
	else \
	  echo "NOTE: no promtool and not root: the promtool tests will be skipped"; \
	fi

test: prometheus lint types unit

bench: install
	$(BIN)/python -m loadtest.bench $(BENCH_ARGS)
	$(BIN)/python -m loadtest.http_suite --write docs/benchmarks.md $(SUITE_ARGS)
	$(BIN)/python -m loadtest.simulate_bench --write docs/benchmarks.md $(SIMULATE_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info

# 30 minutes of gangs, queues, churn and pass-through calls against a live gangplank, loopback
# only; writes its figures into docs/reliability.md and docs/soak.png.
soak: install
	$(BIN)/python -m loadtest.soak --minutes 30 --write docs/reliability.md --plot docs/soak.png
