# Arbor: `make run` serves the demo, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run demo-password shell test test-sqlite test-postgres bench lint typecheck chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test,mcp]"
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python -m arbor.serve -b $(HOST) -p $(PORT) arbor.asgi:application

# A lost demo password: a new one, printed once (and a sign-in lockout on demo lifted).
demo-password: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo --new-password

# A Django shell with the venv's Python, for the README's engine examples.
shell: install
	$(BIN)/python manage.py shell

# Lint and type-check first (cheap), then the whole suite on SQLite, then on Postgres
# when DATABASE_URL names it.
test: install lint typecheck chromium
	DATABASE_URL= $(BIN)/python -m pytest -q
	@case "$$DATABASE_URL" in postgres*) \
		echo "--- the same suite on PostgreSQL ($$DATABASE_URL)"; \
		$(BIN)/python -m pytest -q -p no:cacheprovider ;; \
	esac

test-sqlite: install chromium
	DATABASE_URL= $(BIN)/python -m pytest -q

test-postgres: install chromium
	DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q

# The suite's benchmarks, then the scale run: one agent's operations as other agents'
# data grows to 500,000 messages (fails when any costs 1.5x its first figure).
# Both run even when the first misses a target; make fails when either did.
bench: install
	@status=0; \
	ARBOR_DEBUG=0 $(BIN)/python -m benchmarks || status=1; \
	ARBOR_DEBUG=0 $(BIN)/python -m benchmarks.scale || status=1; \
	exit $$status

lint: install
	$(BIN)/ruff check .

# memory_core stays fully typed (pyproject's [tool.mypy] runs it --strict).
typecheck: install
	$(BIN)/python -m mypy

# The browser tests drive Debian's chromium; Playwright never downloads one.
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }

clean:
	rm -rf $(VENV) .pytest_cache .test-arbor.sqlite3*
