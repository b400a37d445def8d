# The lifecycle lease goes: background jobs take advisory locks instead (sessions_app/jobs.py).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0004_message_vectors'),
    ]

    operations = [
        migrations.DeleteModel(
            name='LifecycleLease',
        ),
    ]
