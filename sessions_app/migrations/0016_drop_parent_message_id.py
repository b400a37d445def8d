"""Messages no longer repeat their parent's public id: a path read takes it from the row
before, other reads from the parent's row by its seq (sql.parent_id_of). Both vendors
drop the column in place."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0015_session_key")]

    operations = [migrations.RemoveField(model_name="message", name="parent_message_id")]
