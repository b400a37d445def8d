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

# Lint and type-check first (cheap), then the whole suite on SQLite and, when DATABASE_URL
# names PostgreSQL, on Postgres at the same time, in two lanes that never run browser tests
# together (two browsers and their servers at once starve a 2-core machine): SQLite runs
# its browser tests first, Postgres last. The lanes share nothing (a file, a database and
# a Redis database of their own). Postgres's output streams, SQLite's is printed when both
# are done. Fails when any part fails.
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
test: install lint typecheck chromium
	@case "$$DATABASE_URL" in \
	postgres*) \
		echo "--- the suite on SQLite and on PostgreSQL ($$DATABASE_URL), side by side"; \
		( export DATABASE_URL= ARBOR_TEST_REDIS_URL=redis://127.0.0.1:6379/8; \
		  $(PYTEST) tests/ui; ui=$$?; $(PYTEST) --ignore=tests/ui; rest=$$?; \
		  test $$ui -eq 0 && test $$rest -eq 0 ) > .test-sqlite.log 2>&1 & \
		sqlite=$$!; \
		$(PYTEST) --ignore=tests/ui; rest=$$?; $(PYTEST) tests/ui; ui=$$?; \
		wait $$sqlite; sqlite=$$?; \
		echo "--- the suite on SQLite (browser tests first)"; cat .test-sqlite.log; \
		echo "SQLite: exit $$sqlite; PostgreSQL: exit $$rest (browser tests aside), $$ui (browser tests)"; \
		test $$sqlite -eq 0 && test $$rest -eq 0 && test $$ui -eq 0 ;; \
	*) DATABASE_URL= $(PYTEST) ;; \
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
