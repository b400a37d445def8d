# Arbor: `make run` serves the demo, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run shell test test-sqlite test-postgres bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/daphne -b $(HOST) -p $(PORT) arbor.asgi:application

# A Django shell with the venv's Python, for the README's engine examples.
shell: install
	$(BIN)/python manage.py shell

# The whole suite on SQLite, then on Postgres when DATABASE_URL names it.
test: install
	DATABASE_URL= $(BIN)/python -m pytest -q
	@case "$$DATABASE_URL" in postgres*) \
		echo "--- the same suite on PostgreSQL ($$DATABASE_URL)"; \
		$(BIN)/python -m pytest -q -p no:cacheprovider ;; \
	esac

test-sqlite: install
	DATABASE_URL= $(BIN)/python -m pytest -q

test-postgres: install
	DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q

bench: install
	ARBOR_DEBUG=0 $(BIN)/python -m benchmarks

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .test-arbor.sqlite3*
