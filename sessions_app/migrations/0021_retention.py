"""Retention (sessions_app/lifecycle): an agent's policy, a session's pin, and the erasure
log. The pin is added by ALTER TABLE on both vendors: Django would rebuild SQLite's
arbor_session (a NOT NULL column) and with it drop the table's triggers."""

from django.db import migrations, models

from ._vendor import per_vendor

ADD_PINNED = {
    "sqlite": ['ALTER TABLE "arbor_session" ADD COLUMN "pinned" bool DEFAULT 0 NOT NULL'],
    "postgresql": ['ALTER TABLE "arbor_session" ADD COLUMN "pinned" boolean DEFAULT false '
                   "NOT NULL"],
}
DROP_PINNED = {v: ['ALTER TABLE "arbor_session" DROP COLUMN "pinned"']
               for v in ("sqlite", "postgresql")}


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0020_session_turn_claim"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent", name="retention_max_age_days",
            field=models.IntegerField(blank=True, null=True, help_text=(
                "Delete sessions not updated for this many days (pinned sessions stay). "
                "Empty: keep forever.")),
        ),
        migrations.AddField(
            model_name="agent", name="retention_max_sessions",
            field=models.IntegerField(blank=True, null=True, help_text=(
                "Keep only this many most recently updated sessions (pinned sessions stay "
                "and do not count). Empty: no limit.")),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(per_vendor(ADD_PINNED),
                                                      per_vendor(DROP_PINNED))],
            state_operations=[migrations.AddField(
                model_name="session", name="pinned",
                field=models.BooleanField(db_default=False, default=False))],
        ),
        migrations.CreateModel(
            name="Erasure",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("created_at", models.DateTimeField(db_index=True)),
                ("owner_id", models.BigIntegerField(blank=True, db_index=True, null=True)),
                ("agent_id", models.CharField(db_index=True, max_length=36)),
                ("session_id", models.CharField(blank=True, max_length=36, null=True)),
                ("scope", models.CharField(max_length=10)),
                ("sessions", models.IntegerField(default=0)),
                ("messages", models.IntegerField(default=0)),
                ("by", models.CharField(max_length=10)),
                ("by_id", models.CharField(blank=True, max_length=64, null=True)),
                ("door", models.CharField(max_length=10)),
                ("purged_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={"db_table": "arbor_erasure", "ordering": ["-id"]},
        ),
        migrations.CreateModel(
            name="LifecycleLease",
            fields=[
                ("name", models.CharField(max_length=20, primary_key=True, serialize=False)),
                ("next_at", models.DateTimeField()),
            ],
            options={"db_table": "arbor_lifecycle_lease"},
        ),
    ]
