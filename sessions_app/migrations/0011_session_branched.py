from django.db import migrations, models

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
        migrations.AddField(
            model_name='session',
            name='branched',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunSQL(MARK_BRANCHED, migrations.RunSQL.noop),
    ]
