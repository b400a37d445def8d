# The lifecycle lease goes: background jobs take advisory locks instead (sessions_app/storage/jobs.py).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0005_term_counters'),
    ]

    operations = [
        migrations.DeleteModel(
            name='LifecycleLease',
        ),
    ]
