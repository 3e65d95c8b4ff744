# dialerapi: `make run` serves the API on 127.0.0.1:8000; `make test` runs the test suite.
# Without DATABASE_URL (environment or .env) both use a private MariaDB under ./var/mariadb.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEVDB := scripts/devdb.sh
PYTEST_ARGS ?=

.PHONY: install run test faults bench db-upgrade db-start db-stop clean

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,sim]'
	touch $@

install: $(BIN)/.installed

db-upgrade: install
	scripts/ensure-secret.sh
	$(DEVDB) exec $(BIN)/dialerapi db upgrade

run: db-upgrade
	$(DEVDB) exec $(BIN)/gunicorn -c deploy/gunicorn.conf.py wsgi:app

test: install
	$(DEVDB) exec $(BIN)/pytest $(PYTEST_ARGS)

faults: install
	$(DEVDB) exec $(BIN)/pytest -m faults tests/faults $(PYTEST_ARGS)

bench: install
	$(DEVDB) exec $(BIN)/python bench/service_bench.py
	$(DEVDB) exec $(BIN)/python bench/claim_bench.py

db-start:
	$(DEVDB) start

db-stop:
	$(DEVDB) stop

clean: db-stop
	rm -rf $(VENV) var *.egg-info
