"""Block versions (memory_core/versions.py): every write to a context block kept. Block
contents stored before this migration become each block's version 1 (actor `system`,
dated by their last write), so a block's newest version is always its value."""

import django.db.models.deletion
import sessions_app.models
from django.db import migrations, models



def _backfill(apps, schema_editor):
    BlockValue = apps.get_model("sessions_app", "BlockValue")
    Entry = apps.get_model("sessions_app", "Entry")
    BlockVersion = apps.get_model("sessions_app", "BlockVersion")
    rows = [BlockVersion(key=v.key, number=1, agent_id=v.agent_id, session_id=v.session_id,
                         action="replace", content=v.content, actor="system",
                         created_at=v.updated_at)
            for v in BlockValue.objects.all().iterator()]
    keyed: dict = {}
    for e in Entry.objects.order_by("namespace", "key").iterator():
        keyed.setdefault(e.namespace, []).append(e)
    for namespace, entries in keyed.items():
        rows.append(BlockVersion(
            key=namespace, number=1, agent_id=entries[0].agent_id,
            session_id=entries[0].session_id, action="set_entry", actor="system",
            entries=[{"key": e.key, "content": e.content, "description": e.description,
                      "source": None} for e in entries],
            created_at=max(e.updated_at for e in entries)))
    BlockVersion.objects.bulk_create(rows, batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0018_event_session_key'),
    ]

    operations = [
        migrations.CreateModel(
            name='BlockVersion',
            fields=[
                ('seq', models.BigAutoField(primary_key=True, serialize=False)),
                ('key', models.CharField(max_length=400)),
                ('number', models.IntegerField()),
                ('action', models.CharField(max_length=20)),
                ('entry_key', models.CharField(blank=True, max_length=255, null=True)),
                ('content', models.TextField(blank=True, null=True)),
                ('entries', sessions_app.models.JSONText(blank=True, null=True)),
                ('loaded', sessions_app.models.JSONText(blank=True, null=True)),
                ('actor', models.CharField(max_length=10)),
                ('actor_id', models.CharField(blank=True, max_length=64, null=True)),
                ('message_id', models.CharField(blank=True, max_length=255, null=True)),
                ('leaf_id', models.CharField(blank=True, max_length=255, null=True)),
                ('source_session_id', models.CharField(blank=True, max_length=36, null=True)),
                ('source_deleted', models.BooleanField(default=False)),
                ('restored_from', models.IntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField()),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.agent')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_block_version',
                'indexes': [models.Index(fields=['source_session_id', 'message_id'], name='arbor_block_version_src')],
                'constraints': [models.UniqueConstraint(fields=('key', 'number'), name='arbor_block_version_num')],
            },
        ),
        migrations.RunPython(_backfill, migrations.RunPython.noop),
    ]
