from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Arbor memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import engine_config
        from .storage import purge
        from .storage.vendors import sqlite_index, sqlite_wal
        from .storage.vendors.sqlite_fts5 import require_fts5

        require_fts5()
        engine_config.install()
        sqlite_wal.install()
        sqlite_index.install()
        purge.install()
