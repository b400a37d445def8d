"""Postgres' term statistics for bulk writes, and a cheaper slot lookup (issue 27).

A bulk write (storage/bulk.py) knows its rows' tokens before it stores them, so it adds
their counts itself, in one statement from a JSON object, and says so with a
transaction-local flag, `arbor.terms_counted = next`: the next INSERT's trigger then
counts nothing and clears the flag, so exactly that one statement (the write's COPY) is
skipped. Counting 1,000 rows' lexemes in the trigger (unnest, then group by text) cost
about 30 ms of its 50; the same counts come from Python's Counter for about 2 ms.

Every statement of the trigger also takes its slot once (an InitPlan), not once per term
row.
"""

import importlib

from django.db import migrations

from sessions_app.migrations._vendor import per_vendor

_0005 = importlib.import_module("sessions_app.migrations.0005_term_counters")
FLAG = "arbor.terms_counted"


def _function(*, skip_counted: bool) -> str:
    """0005's arbor_term_count(); with skip_counted, the flag check and the slot taken
    once per statement."""
    body = next(s for s in _0005.POSTGRES_FORWARD
                if s.startswith("CREATE FUNCTION arbor_term_count()"))
    body = body.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    if not skip_counted:
        return body
    assert body.count("arbor_term_slot()") == 3 and body.count("IF TG_OP = 'INSERT' THEN") == 1
    body = body.replace("arbor_term_slot()", "(SELECT arbor_term_slot())")
    return body.replace("IF TG_OP = 'INSERT' THEN", f"""IF TG_OP = 'INSERT' THEN
           IF current_setting('{FLAG}', true) = 'next' THEN  -- counted by the writer
             PERFORM set_config('{FLAG}', '', true);
             RETURN NULL;
           END IF;""", 1)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0007_last_leaf")]

    operations = [
        migrations.RunPython(
            per_vendor({"postgresql": [_function(skip_counted=True)]}),
            per_vendor({"postgresql": [_function(skip_counted=False)]}),
        ),
    ]
