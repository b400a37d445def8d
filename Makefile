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
# names PostgreSQL, on Postgres at the same time: the two share nothing (a file and a
# database of their own) and much of each run waits on browsers and servers, so side by
# side they take little longer than the longer one. Postgres's output streams; SQLite's
# is printed whole when both are done. Fails when either fails.
test: install lint typecheck chromium
	@case "$$DATABASE_URL" in \
	postgres*) \
		echo "--- the suite on SQLite and on PostgreSQL ($$DATABASE_URL), side by side"; \
		DATABASE_URL= $(BIN)/python -m pytest -q -p no:cacheprovider > .test-sqlite.log 2>&1 & \
		sqlite=$$!; \
		$(BIN)/python -m pytest -q -p no:cacheprovider; postgres=$$?; \
		wait $$sqlite; sqlite=$$?; \
		echo "--- the suite on SQLite"; cat .test-sqlite.log; \
		echo "SQLite: exit $$sqlite, PostgreSQL: exit $$postgres"; \
		test $$sqlite -eq 0 && test $$postgres -eq 0 ;; \
	*) DATABASE_URL= $(BIN)/python -m pytest -q ;; \
	esac

test-sqlite: install chromium
	DATABASE_URL= $(BIN)/python -m pytest -q

test-postgres: install chromium
	DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q

# The suite's benchmarks, then the scale run: one agent's operations as other agents'
# data grows to 500,000 messages (fails when any costs 1.5x its first figure).
bench: install
	ARBOR_DEBUG=0 $(BIN)/python -m benchmarks
	ARBOR_DEBUG=0 $(BIN)/python -m benchmarks.scale

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
