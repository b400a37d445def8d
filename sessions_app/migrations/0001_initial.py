"""Arbor's tables as the models declare them (one squash of the history up to 0023; an
existing database that applied those is taken as having applied this). What the ORM does
not know, by vendor, follows: search structures (0002), session and event numbering
(0003), message vectors (0004)."""

import django.db.models.deletion
import sessions_app.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    replaces = [
        ("sessions_app", "0003_context_blocks"),
        ("sessions_app", "0005_compaction_state"),
        ("sessions_app", "0006_api_key"),
        ("sessions_app", "0007_estimate_cache"),
        ("sessions_app", "0009_stop_request_and_roots"),
        ("sessions_app", "0010_api_key_last_used"),
        ("sessions_app", "0016_drop_parent_message_id"),
        ("sessions_app", "0017_message_time_micros"),
        ("sessions_app", "0019_block_versions"),
        ("sessions_app", "0020_session_turn_claim"),
        ("sessions_app", "0021_retention"),
        ("sessions_app", "0022_import_sources"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Erasure',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('created_at', models.DateTimeField(db_index=True)),
                ('owner_id', models.BigIntegerField(blank=True, db_index=True, null=True)),
                ('agent_id', models.CharField(db_index=True, max_length=36)),
                ('session_id', models.CharField(blank=True, max_length=36, null=True)),
                ('scope', models.CharField(max_length=10)),
                ('sessions', models.IntegerField(default=0)),
                ('messages', models.IntegerField(default=0)),
                ('by', models.CharField(max_length=10)),
                ('by_id', models.CharField(blank=True, max_length=64, null=True)),
                ('door', models.CharField(max_length=10)),
                ('purged_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'db_table': 'arbor_erasure',
                'ordering': ['-id'],
            },
        ),
        migrations.CreateModel(
            name='LifecycleLease',
            fields=[
                ('name', models.CharField(max_length=20, primary_key=True, serialize=False)),
                ('next_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'arbor_lifecycle_lease',
            },
        ),
        migrations.CreateModel(
            name='Message',
            fields=[
                ('seq', models.BigAutoField(primary_key=True, serialize=False)),
                ('message_id', models.CharField(max_length=255)),
                ('parent_seq', models.BigIntegerField(blank=True, null=True)),
                ('role', models.CharField(max_length=16)),
                ('parts', models.TextField(default='[]')),
                ('metadata', models.TextField(default='{}')),
                ('search_len', models.IntegerField(default=0)),
                ('search_extra', models.TextField(blank=True, null=True)),
                ('created_at', sessions_app.models.MessageTime()),
            ],
            options={
                'db_table': 'arbor_message',
            },
        ),
        migrations.CreateModel(
            name='Session',
            fields=[
                ('id', models.CharField(default=sessions_app.models.uuid_str, editable=False, max_length=36, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, default='', max_length=200)),
                ('model', models.CharField(blank=True, max_length=200, null=True)),
                ('source', models.CharField(blank=True, max_length=200, null=True)),
                ('input_tokens', models.BigIntegerField(default=0)),
                ('output_tokens', models.BigIntegerField(default=0)),
                ('estimated_cost', models.FloatField(default=0.0)),
                ('end_reason', models.CharField(blank=True, max_length=100, null=True)),
                ('message_count', models.IntegerField(default=0)),
                ('search_tokens', models.BigIntegerField(default=0)),
                ('compaction_error', models.TextField(blank=True, default='')),
                ('compaction_failed_at', models.DateTimeField(blank=True, null=True)),
                ('compaction_retry_at', models.DateTimeField(blank=True, null=True)),
                ('estimate_leaf_id', models.CharField(blank=True, max_length=255, null=True)),
                ('estimate_tokens', models.BigIntegerField(default=0)),
                ('event_seq', models.BigIntegerField(db_default=0, default=0)),
                ('status', models.CharField(db_default='idle', default='idle', max_length=20)),
                ('stop_requested_at', models.DateTimeField(blank=True, null=True)),
                ('turn_id', models.CharField(blank=True, max_length=200, null=True)),
                ('turn_seen_at', models.DateTimeField(blank=True, null=True)),
                ('branched', models.BooleanField(db_default=False, default=False)),
                ('pinned', models.BooleanField(db_default=False, default=False)),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
                ('key', models.BigIntegerField(editable=False, unique=True)),
            ],
            options={
                'db_table': 'arbor_session',
            },
        ),
        migrations.CreateModel(
            name='Agent',
            fields=[
                ('id', models.CharField(default=sessions_app.models.uuid_str, editable=False, max_length=36, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=200)),
                ('context', models.JSONField(blank=True, default=list)),
                ('retention_max_age_days', models.IntegerField(blank=True, help_text='Delete sessions not updated for this many days (pinned sessions stay). Empty: keep forever.', null=True)),
                ('retention_max_sessions', models.IntegerField(blank=True, help_text='Keep only this many most recently updated sessions (pinned sessions stay and do not count). Empty: no limit.', null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='agents', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'arbor_agent',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(blank=True, default='', max_length=100)),
                ('prefix', models.CharField(editable=False, max_length=16)),
                ('key_hash', models.CharField(editable=False, max_length=64, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('agent', models.ForeignKey(blank=True, help_text='Limit the key to this agent (optional).', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='sessions_app.agent')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API key',
                'db_table': 'arbor_api_key',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='SessionPrompt',
            fields=[
                ('session', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='prompt', serialize=False, to='sessions_app.session')),
                ('text', models.TextField(blank=True, default='')),
                ('sections', models.JSONField(default=dict)),
                ('frozen_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'arbor_session_prompt',
            },
        ),
        migrations.AddField(
            model_name='session',
            name='agent',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sessions', to='sessions_app.agent'),
        ),
        migrations.AddField(
            model_name='session',
            name='parent_session',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='continuations', to='sessions_app.session'),
        ),
        migrations.AddField(
            model_name='message',
            name='session',
            field=models.ForeignKey(db_column='session_key', db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='sessions_app.session', to_field='key'),
        ),
        migrations.CreateModel(
            name='ImportSource',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source_format', models.CharField(max_length=20)),
                ('conversation_id', models.CharField(max_length=255)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.agent')),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_import_source',
            },
        ),
        migrations.CreateModel(
            name='Entry',
            fields=[
                ('seq', models.BigAutoField(primary_key=True, serialize=False)),
                ('namespace', models.CharField(max_length=400)),
                ('key', models.CharField(max_length=255)),
                ('description', models.TextField(blank=True, default='')),
                ('content', models.TextField(blank=True, default='')),
                ('search_len', models.IntegerField(default=0)),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.agent')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_entry',
            },
        ),
        migrations.CreateModel(
            name='Compaction',
            fields=[
                ('seq', models.BigAutoField(primary_key=True, serialize=False)),
                ('overlay_id', models.CharField(default=sessions_app.models.uuid_str, editable=False, max_length=36, unique=True)),
                ('summary', models.TextField()),
                ('from_message_id', models.CharField(max_length=255)),
                ('to_message_id', models.CharField(max_length=255)),
                ('created_at', models.DateTimeField()),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='compactions', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_compaction',
            },
        ),
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
            },
        ),
        migrations.CreateModel(
            name='BlockValue',
            fields=[
                ('key', models.CharField(max_length=400, primary_key=True, serialize=False)),
                ('content', models.TextField(blank=True, default='')),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.agent')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_block_value',
            },
        ),
        migrations.CreateModel(
            name='SessionBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(max_length=100)),
                ('position', models.IntegerField(default=0)),
                ('spec', models.JSONField(default=dict)),
                ('removed', models.BooleanField(default=False)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='blocks', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_session_block',
                'ordering': ['position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='SessionEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField()),
                ('type', models.CharField(max_length=40)),
                ('data', sessions_app.models.JSONText(default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('session', models.ForeignKey(db_column='session_key', db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='sessions_app.session', to_field='key')),
            ],
            options={
                'db_table': 'arbor_session_event',
            },
        ),
        migrations.CreateModel(
            name='SkillState',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(max_length=100)),
                ('key', models.CharField(max_length=255)),
                ('loaded', models.BooleanField(default=True)),
                ('loaded_at', models.DateTimeField()),
                ('unloaded_at', models.DateTimeField(blank=True, null=True)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='skills', to='sessions_app.session')),
            ],
            options={
                'db_table': 'arbor_skill_state',
            },
        ),
        migrations.AddIndex(
            model_name='agent',
            index=models.Index(fields=['owner', 'name'], name='arbor_agent_owner_name'),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['agent', '-updated_at'], name='arbor_session_agent_upd'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['session', 'seq'], name='arbor_message_session_seq'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['parent_seq'], name='arbor_message_parent_seq'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(condition=models.Q(('parent_seq__isnull', True)), fields=['session', 'seq'], name='arbor_message_roots'),
        ),
        migrations.AddConstraint(
            model_name='message',
            constraint=models.UniqueConstraint(fields=('session', 'message_id'), name='arbor_message_session_mid'),
        ),
        migrations.AddConstraint(
            model_name='importsource',
            constraint=models.UniqueConstraint(fields=('agent', 'source_format', 'conversation_id'), name='arbor_import_once'),
        ),
        migrations.AddConstraint(
            model_name='entry',
            constraint=models.UniqueConstraint(fields=('namespace', 'key'), name='arbor_entry_ns_key'),
        ),
        migrations.AddIndex(
            model_name='compaction',
            index=models.Index(fields=['session', 'created_at', 'seq'], name='arbor_compaction_order'),
        ),
        migrations.AddIndex(
            model_name='blockversion',
            index=models.Index(fields=['source_session_id', 'message_id'], name='arbor_block_version_src'),
        ),
        migrations.AddConstraint(
            model_name='blockversion',
            constraint=models.UniqueConstraint(fields=('key', 'number'), name='arbor_block_version_num'),
        ),
        migrations.AddConstraint(
            model_name='sessionblock',
            constraint=models.UniqueConstraint(fields=('session', 'label'), name='arbor_block_session_label'),
        ),
        migrations.AddConstraint(
            model_name='sessionevent',
            constraint=models.UniqueConstraint(fields=('session', 'seq'), name='arbor_session_event_seq'),
        ),
        migrations.AddConstraint(
            model_name='skillstate',
            constraint=models.UniqueConstraint(fields=('session', 'label', 'key'), name='arbor_skill_unique'),
        ),
    ]
