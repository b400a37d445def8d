"""Messages no longer store their plain-text projection: it is derived from the parts
when asked (memory_core.messages.Message.text), so a row holds its text once. Both
vendors drop the column in place (SQLite's ALTER TABLE DROP COLUMN keeps the table and
its triggers)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0012_search_ranges")]

    operations = [migrations.RemoveField(model_name="message", name="text")]
