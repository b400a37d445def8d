"""The site a new user meets: no DEBUG page, a home page, static files under daphne, and
a SECRET_KEY that needs no configuration yet survives restarts."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.live_server import ROOT, running_daphne

PRINT_SETTINGS = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'arbor.settings'; "
                  "django.setup(); from django.conf import settings; "
                  "print(settings.SECRET_KEY); print(settings.DEBUG)")


def settings_in_subprocess(**env: str) -> tuple[str, str]:
    """(SECRET_KEY, DEBUG) as a freshly started process sees them."""
    clean = {k: v for k, v in os.environ.items()
             if k not in {"ARBOR_SECRET_KEY", "ARBOR_SECRET_KEY_FILE", "ARBOR_DEBUG"}}
    result = subprocess.run([sys.executable, "-c", PRINT_SETTINGS], cwd=ROOT,
                            env={**clean, **env}, capture_output=True, text=True, timeout=60,
                            check=True)
    key, debug = result.stdout.split()
    return key, debug


# --- DEBUG ------------------------------------------------------------------------------

def test_debug_is_off_unless_asked_for(tmp_path):
    key_file = str(tmp_path / "key")
    assert settings_in_subprocess(ARBOR_SECRET_KEY_FILE=key_file)[1] == "False"
    assert settings_in_subprocess(ARBOR_SECRET_KEY_FILE=key_file, ARBOR_DEBUG="1")[1] == "True"


@pytest.mark.django_db
def test_home_asks_a_stranger_to_sign_in_and_the_sign_in_page_links_the_api_docs(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/"
    html = client.get(response["Location"]).content.decode()
    assert 'name="username"' in html and 'name="password"' in html
    for link in ('href="/admin/"', 'href="/api/v1/docs"'):
        assert link in html


def test_unknown_page_is_a_plain_404_and_the_api_still_answers_json(client):
    page = client.get("/no-such-page")
    assert page.status_code == 404
    assert "URLconf" not in page.content.decode()  # not DEBUG's list of URL patterns
    api = client.get("/api/v1/no-such-endpoint")
    assert api.status_code == 404
    assert api.json()["code"] and api.json()["detail"]


@pytest.fixture
def production_daphne(transactional_db, tmp_path):
    with running_daphne(tmp_path, env={"ARBOR_DEBUG": "0"}) as base:
        yield base


def test_daphne_serves_static_files_with_debug_off(production_daphne):
    base = production_daphne
    assert "URLconf" not in httpx.get(f"{base}/no-such-page").text
    for path, kind in [("/static/admin/css/base.css", "text/css"),
                       ("/static/ninja/swagger-ui.css", "text/css"),
                       ("/static/ninja/swagger-ui-bundle.js", "javascript")]:
        response = httpx.get(base + path)
        assert response.status_code == 200, path
        assert kind in response.headers["content-type"], path
    docs = httpx.get(f"{base}/api/v1/docs")
    assert docs.status_code == 200 and "/static/ninja/swagger-ui-bundle.js" in docs.text
    admin = httpx.get(f"{base}/admin/", follow_redirects=True)
    assert admin.status_code == 200 and "/static/admin/css/base.css" in admin.text


# --- SECRET_KEY -------------------------------------------------------------------------

def test_secret_key_is_generated_once_and_kept_private(tmp_path):
    key_file = tmp_path / "secret"
    first, _ = settings_in_subprocess(ARBOR_SECRET_KEY_FILE=str(key_file))
    second, _ = settings_in_subprocess(ARBOR_SECRET_KEY_FILE=str(key_file))

    assert first == second == key_file.read_text().strip()
    assert len(first) >= 50 and "insecure" not in first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    other, _ = settings_in_subprocess(ARBOR_SECRET_KEY_FILE=str(tmp_path / "elsewhere"))
    assert other != first  # random per installation, not a constant


def test_processes_starting_together_agree_on_one_key(tmp_path):
    key_file = str(tmp_path / "secret")
    with ThreadPoolExecutor(6) as pool:
        keys = {key for key, _ in pool.map(
            lambda _: settings_in_subprocess(ARBOR_SECRET_KEY_FILE=key_file), range(6))}
    assert keys == {Path(key_file).read_text().strip()}
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no temporary files left


def test_secret_key_from_the_environment_wins(tmp_path):
    key_file = tmp_path / "secret"
    key, _ = settings_in_subprocess(ARBOR_SECRET_KEY="from-the-env-" + "x" * 50,
                                    ARBOR_SECRET_KEY_FILE=str(key_file))
    assert key == "from-the-env-" + "x" * 50
    assert not key_file.exists()


def test_default_key_file_is_git_ignored():
    result = subprocess.run(["git", "check-ignore", "-q", ".arbor-secret-key"], cwd=ROOT)
    assert result.returncode == 0


@pytest.mark.parametrize("https", ["0", "1"])
def test_production_settings_pass_the_deployment_checks(tmp_path, https):
    env = {k: v for k, v in os.environ.items() if k != "ARBOR_DEBUG"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**env, "ARBOR_SECRET_KEY_FILE": str(tmp_path / "key"), "ARBOR_HTTPS": https})
    assert result.returncode == 0, result.stdout + result.stderr
