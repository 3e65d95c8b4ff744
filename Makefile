# dialerapi: `make run` serves the API on 127.0.0.1:8000 and the agent sockets on 127.0.0.1:8001; `make test` runs the test suite.
# Without DATABASE_URL (environment or .env) both use a private MariaDB under ./var/mariadb, on a
# port of the checkout's own (`scripts/devdb.sh port`); each stops it again when it started it.
# `make test-clock` runs the suite with the clock moved, on private MariaDB instances of its own.
# `make test`, `make faults` and each moment of `make test-clock` run their tests in parallel worker
# processes, then the tests marked `serial` alone (scripts/pytest_groups.sh); PYTEST_ARGS=-n0 runs
# everything serially. Ctrl-C, SIGTERM or a timeout of `make run`, `make test`, `make faults` or
# `make test-clock` (and `make bench`, `make test-galera`) stops every process it started
# (scripts/supervise.py).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEVDB := scripts/devdb.sh
SUPERVISE := $(BIN)/python scripts/supervise.py
GROUPS := scripts/pytest_groups.sh
PYTEST_ARGS ?=
CLOCK_ARGS ?=
SOAK_ARGS ?=

.PHONY: install system-packages run test test-clock test-galera faults soak bench docs docs-serve db-upgrade db-start db-stop clean

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,sim,docs]'
	touch $@

# The Debian packages first (scripts/system-packages.sh): a stop during their install never leaves
# dpkg half-done, and no test ever calls apt.
system-packages:
	scripts/system-packages.sh

install: system-packages $(BIN)/.installed

db-upgrade: install
	scripts/ensure-secret.sh
	$(DEVDB) exec $(BIN)/dialerapi db upgrade

run: install
	scripts/ensure-secret.sh
	$(SUPERVISE) $(DEVDB) with sh -c '$(BIN)/dialerapi db upgrade && BIN=$(BIN) exec scripts/serve.sh'

# The whole suite (no PYTEST_ARGS) also writes bench-results-make-test.json for `make bench`'s table.
test: install
	$(if $(PYTEST_ARGS),,TEST_RESULTS_FILE=bench-results-make-test.json) $(SUPERVISE) $(DEVDB) with $(GROUPS) "make test" \
	  $(BIN)/pytest --durations=15 $(PYTEST_ARGS)

test-clock: install
	$(SUPERVISE) $(BIN)/python tests/clock_matrix.py $(CLOCK_ARGS)

faults: install
	$(SUPERVISE) $(DEVDB) with $(GROUPS) "make faults" $(BIN)/pytest -m "faults or long" --durations=15 $(PYTEST_ARGS)

# The tests that once failed now and then (the host restart, the rolling upgrade, the panel in
# Chromium), 20 runs in a row with two processes spinning on the CPU beside them (tests/soak.py).
soak: install
	$(SUPERVISE) $(DEVDB) with $(BIN)/python tests/soak.py $(SOAK_ARGS)

bench: install
	$(SUPERVISE) $(DEVDB) with sh -c '$(BIN)/python bench/service_bench.py && $(BIN)/python bench/import_bench.py \
	  && $(BIN)/python bench/claim_bench.py && $(BIN)/python bench/caller_id_bench.py \
	  && $(BIN)/python bench/compliance_bench.py && $(BIN)/python bench/state_rules_bench.py \
	  && $(BIN)/python bench/abandon_bench.py \
	  && $(BIN)/python bench/personal_callback_bench.py && $(BIN)/python bench/caps_bench.py \
	  && $(BIN)/python bench/campaign_bench.py \
	  && $(BIN)/python bench/floor_bench.py && $(BIN)/python bench/results_bench.py && $(BIN)/python bench/board_bench.py \
	  && $(BIN)/python bench/intake_bench.py \
	  && scripts/galera.sh with $(BIN)/python bench/cluster_bench.py \
	  && $(BIN)/python bench/figures.py record && $(BIN)/python bench/figures.py render'

# The documentation site (mkdocs.yml): built into ./site with every warning an error; docs-serve
# serves it with live reload on http://127.0.0.1:8010.
docs: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --quiet

docs-serve: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8010

db-start:
	$(DEVDB) start

db-stop:
	$(DEVDB) stop

clean: db-stop
	rm -rf $(VENV) var *.egg-info

# The concurrency and fault tests through a private 3-node Galera cluster on loopback
# (docs/operations/galera.md), built by scripts/galera.sh and deleted afterwards.
# Serially (-n0): three nodes on two cores leave no room for parallel workers.
test-galera: install
	$(SUPERVISE) scripts/galera.sh with sh -c 'DATABASE_URL="$$GALERA_URL" $(BIN)/pytest -n0 -m galera tests/galera $(PYTEST_ARGS)'
