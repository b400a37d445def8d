"""The deployment recipe in deploy/ (README "Deploying with several workers"), checked as far
as this machine can: the systemd unit and the Procfile run the same command, and that
command, started here against the test database, serves /health and /ready; the units pass
`systemd-analyze verify` where systemd is installed and nginx's snippet `nginx -t` where
nginx is; the proxies know the same four workers, upgrade WebSockets, stream, and serve
the static files that collectstatic fills."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.live_server import ROOT, free_port, server_env

DEPLOY = ROOT / "deploy"
INSTALLED = "/opt/arbor"  # where the units expect the checkout
PORTS = ["8001", "8002", "8003", "8004"]


def unit(path: Path) -> dict[str, list[str]]:
    """A systemd unit's keys (a key may repeat), section names dropped."""
    keys: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            name, _, value = line.partition("=")
            keys.setdefault(name.strip(), []).append(value.strip())
    return keys


def procfile() -> dict[str, str]:
    found = {}
    for line in (DEPLOY / "Procfile").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_-]+):\s*(.+)$", line)
        if match:
            found[match[1]] = match[2]
    return found


def worker_command(port: str) -> list[str]:
    """The unit's ExecStart for the instance `port`, run from this checkout."""
    (command,) = unit(DEPLOY / "systemd" / "arbor@.service")["ExecStart"]
    return [a.replace(INSTALLED, str(ROOT)).replace("%i", port) for a in shlex.split(command)]


def test_the_unit_and_the_procfile_run_the_same_command():
    service = unit(DEPLOY / "systemd" / "arbor@.service")
    assert service["WorkingDirectory"] == [INSTALLED]
    assert service["EnvironmentFile"] == ["/etc/arbor/arbor.env"]
    assert "arbor-migrate.service" in service["Requires"][0]
    web = [a.replace("$PORT", "8001") for a in shlex.split(procfile()["web"])]
    assert [str(ROOT / a) if a.startswith(".venv/") else a for a in web] == \
        worker_command("8001")
    migrate = unit(DEPLOY / "systemd" / "arbor-migrate.service")
    assert [shlex.split(c)[1:] for c in migrate["ExecStart"]] == [
        ["manage.py", "migrate", "--noinput"], ["manage.py", "collectstatic", "--noinput"]]


@pytest.mark.django_db(transaction=True)
def test_the_units_command_serves_health_and_ready(tmp_path):
    port = str(free_port())
    command = worker_command(port)
    assert Path(command[0]).exists(), command[0]
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env=server_env({"ARBOR_LIFECYCLE_WORKER": "0", "REDIS_URL": ""}))
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            subprocess.run(["sleep", "0.1"], check=True)
        ready = httpx.get(f"{base}/ready", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ok"
    finally:
        worker.terminate()
        worker.wait(timeout=15)


def test_every_variable_of_the_env_example_is_a_setting():
    settings_text = (ROOT / "arbor" / "settings.py").read_text()
    names = [line.split("=", 1)[0] for line in
             (DEPLOY / "arbor.env.example").read_text().splitlines()
             if line and not line.startswith("#")]
    assert {"DATABASE_URL", "REDIS_URL", "ARBOR_DB_POOL_MAX", "ARBOR_SECRET_KEY"} <= set(names)
    for name in names:
        assert f'"{name}"' in settings_text, f"{name} is not read by arbor/settings.py"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd here")
def test_the_units_pass_systemd_analyze_verify(tmp_path):
    env_file = tmp_path / "arbor.env"
    env_file.write_text((DEPLOY / "arbor.env.example").read_text())
    for path in (DEPLOY / "systemd").iterdir():
        text = (path.read_text().replace(INSTALLED, str(ROOT))
                .replace("/etc/arbor/arbor.env", str(env_file))
                .replace("User=arbor", "User=root").replace("Group=arbor", "Group=root"))
        (tmp_path / path.name).write_text(text)
    instance = tmp_path / "arbor@8001.service"
    instance.symlink_to(tmp_path / "arbor@.service")
    done = subprocess.run(["systemd-analyze", "verify", "--man=no",
                           str(tmp_path / "arbor-migrate.service"), str(instance)],
                          capture_output=True, text=True, timeout=60)
    problems = [line for line in (done.stdout + done.stderr).splitlines()
                if ("arbor" in line and "Failed to" not in line) or "Unknown key" in line
                or "Invalid" in line]
    assert done.returncode == 0 or not problems, done.stdout + done.stderr
    assert not problems, problems


def _servers(text: str) -> list[str]:
    return re.findall(r"127\.0\.0\.1:(\d+)", text)


def test_the_nginx_snippet_proxies_websockets_streams_and_serves_static():
    text = (DEPLOY / "nginx" / "arbor.conf").read_text()
    code = re.sub(r"#.*", "", text)
    assert code.count("{") == code.count("}")
    assert _servers(code) == PORTS
    for directive in ("proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;",
                      "proxy_set_header Connection $arbor_connection;",
                      "proxy_set_header X-Forwarded-Proto $scheme;", "proxy_buffering off;",
                      "least_conn;", "alias /opt/arbor/staticfiles/;"):
        assert directive in code, directive
    timeout = re.search(r"proxy_read_timeout (\d+)s;", code)
    assert timeout and int(timeout[1]) >= 600  # a quiet WebSocket outlives daphne's pings


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed here")
def test_the_nginx_snippet_passes_nginx_t(tmp_path):  # pragma: no cover - no nginx in CI
    snippet = (DEPLOY / "nginx" / "arbor.conf").read_text()
    snippet = re.sub(r"ssl_certificate(_key)? [^;]+;", "", snippet).replace(" ssl;", ";")
    snippet = re.sub(r"listen (\d+)", lambda m: f"listen {free_port()}", snippet)
    (tmp_path / "arbor.conf").write_text(snippet)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;\n"
        f"events {{}}\nhttp {{ access_log off; include {tmp_path}/arbor.conf; }}\n")
    done = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_the_caddyfile_knows_the_same_workers_and_checks_readiness():
    text = (DEPLOY / "caddy" / "Caddyfile").read_text()
    code = re.sub(r"#.*", "", text)
    assert code.count("{") == code.count("}")
    assert _servers(code) == PORTS
    for directive in ("health_uri /ready", "flush_interval -1", "lb_policy least_conn",
                      "root * /opt/arbor/staticfiles", "file_server"):
        assert directive in code, directive
    if shutil.which("caddy"):  # pragma: no cover - not installed here
        done = subprocess.run(["caddy", "validate", "--adapter", "caddyfile", "--config",
                               str(DEPLOY / "caddy" / "Caddyfile")], capture_output=True)
        assert done.returncode == 0, done.stderr


def test_the_readme_starts_the_workers_the_proxies_expect():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Deploying with several workers"):]
    section = section[:section.index("\n## ", 3)]
    assert "systemctl enable --now " + " ".join(f"arbor@{p}" for p in PORTS) in section
    for path in ("deploy/Procfile", "deploy/systemd/arbor@.service", "deploy/nginx/arbor.conf",
                 "deploy/caddy/Caddyfile", "deploy/arbor.env.example"):
        assert path in section and (ROOT / path).exists(), path
