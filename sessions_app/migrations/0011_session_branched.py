from django.db import migrations, models

from sessions_app.migrations._vendor import per_vendor

# A plain ADD COLUMN: on SQLite, Django would rebuild arbor_session for a NOT NULL
# column, which the event-numbering trigger (0008) refers to.
ADD = {
    "sqlite": ["ALTER TABLE arbor_session ADD COLUMN branched bool NOT NULL DEFAULT 0"],
    "postgresql": ["ALTER TABLE arbor_session ADD COLUMN branched boolean NOT NULL DEFAULT false"],
}
DROP = {v: ["ALTER TABLE arbor_session DROP COLUMN branched"] for v in ADD}
# Sessions with any two messages under one parent (or two roots) are branched.
MARK_BRANCHED = """
    UPDATE arbor_session SET branched = EXISTS (
        SELECT 1 FROM arbor_message m WHERE m.session_id = arbor_session.id
        GROUP BY m.parent_seq HAVING count(*) > 1)"""


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0010_api_key_last_used'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name='session',
                    name='branched',
                    field=models.BooleanField(db_default=False, default=False),
                ),
            ],
            database_operations=[
                migrations.RunPython(per_vendor(ADD), per_vendor(DROP)),
            ],
        ),
        migrations.RunSQL(MARK_BRANCHED, migrations.RunSQL.noop),
    ]
