"""Which conversations of other tools were imported into which session, once per agent
(memory_core.imports: a second import of the same file adds nothing)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0021_retention"),
    ]

    operations = [
        migrations.CreateModel(
            name="ImportSource",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("source_format", models.CharField(max_length=20)),
                ("conversation_id", models.CharField(max_length=255)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("agent", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="+", to="sessions_app.agent")),
                ("session", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="+", to="sessions_app.session")),
            ],
            options={
                "db_table": "arbor_import_source",
                "constraints": [models.UniqueConstraint(
                    fields=("agent", "source_format", "conversation_id"),
                    name="arbor_import_once")],
            },
        ),
    ]
