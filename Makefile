# gangplank: `make demo` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp

.PHONY: install demo test test-slow lint types unit bench soak clean prometheus constraints

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

# The slow suites (pytest -m slow: a fresh venv of the package, the soak, schemathesis, the live
# demo, the HTTP suite, simulate run as a user runs it, the Job controller stand-in) run in
# `make test-slow`; CI (.ci/run) runs both.
unit: install
	$(BIN)/pytest -q -m "not slow" $(PYTEST_ARGS)
	@echo "NOTE: the slow suites did not run here: \`make test-slow\` runs them (CI runs both)"

test-slow: install
	$(BIN)/pytest -q -m slow $(PYTEST_ARGS)

# Real servers some tests run (Debian's packages): promtool and prometheus for the alert and
# live-Prometheus tests, nginx for the production overlay's metrics proxy. Installed where we are
# root with apt; elsewhere those tests are skipped, and pytest's summary says so.
SERVER_PACKAGES := prometheus nginx
prometheus:
	@if command -v promtool >/dev/null 2>&1 && command -v nginx >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's $(SERVER_PACKAGES) for the alert, Prometheus and proxy tests"; \
	  { apt-get install -y -q --no-install-recommends $(SERVER_PACKAGES) >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends $(SERVER_PACKAGES) >/dev/null 2>&1; }; } || \
	  echo "NOTE: could not install $(SERVER_PACKAGES): the tests needing them will be skipped"; \
	else \
	  echo "NOTE: no promtool/nginx and not root: the tests needing them will be skipped"; \
	fi

test: prometheus lint types unit

bench: install
	$(BIN)/python -m loadtest.bench $(BENCH_ARGS)
	$(BIN)/python -m loadtest.http_suite --write docs/benchmarks.md $(SUITE_ARGS)
	$(BIN)/python -m loadtest.simulate_bench --write docs/benchmarks.md $(SIMULATE_ARGS)
	$(BIN)/python -m loadtest.restart_ready --write docs/benchmarks.md $(RESTART_ARGS)
	$(BIN)/python -m loadtest.gang_start --write docs/benchmarks.md $(GANG_START_ARGS)
	$(BIN)/python -m loadtest.admissions --write docs/benchmarks.md $(ADMISSIONS_ARGS)
	$(BIN)/python -m loadtest.plain_pods --write docs/benchmarks.md $(PLAIN_PODS_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info

# 30 minutes of gangs, queues, churn and pass-through calls against a live gangplank, loopback
# only; writes its figures into docs/reliability.md and docs/soak.png.
soak: install
	$(BIN)/python -m loadtest.soak --minutes 30 --write docs/reliability.md --plot docs/soak.png

# constraints.txt pins every package the image installs (the Dockerfile's and
# tests/test_installed_package.py's `pip install -c constraints.txt .`). Regenerate it after
# changing pyproject's dependencies, or to take newer releases: `pip install .` of a copy of what
# the Dockerfile copies, into a fresh venv, then `pip freeze`. $(PYTHON) must be the Dockerfile's
# Python (a test compares the two).
constraints:
	@set -e; tmp=$$(mktemp -d /tmp/gangplank-constraints.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	cp -r pyproject.toml README.md extender "$$tmp/"; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet --no-compile "$$tmp"; \
	{ echo '# Every package the gangplank image installs, pinned: the Dockerfile and'; \
	  echo '# tests/test_installed_package.py run `pip install -c constraints.txt .`.'; \
	  "$$tmp/venv/bin/python" -c 'import platform; print("# Resolved on Python", \
	    ".".join(platform.python_version_tuple()[:2]), platform.machine(), \
	    "(the Dockerfile base image must be the same Python).")'; \
	  echo '# Regenerate with `make constraints` (pip install . in a fresh venv, pip freeze).'; \
	  "$$tmp/venv/bin/python" -m pip freeze --exclude-editable --exclude gangplank; \
	} > constraints.txt.new; \
	mv constraints.txt.new constraints.txt; \
	echo "constraints.txt: $$(grep -vc '^#' constraints.txt) packages pinned"
