"""Background jobs run by one worker at a time (issue 27), on both databases: processes
that all try the same job in a loop never run it at once (Postgres advisory locks, a file
lock on SQLite); a dead holder frees it; outbox pruning and compaction retries do their
work when a worker runs them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from sessions_app import models
from sessions_app.lifecycle import upkeep, worker
from sessions_app.storage import jobs
from tests.conftest import user_msg
from tests.live_server import ROOT, server_env


@pytest.fixture(autouse=True)
def _close_lock_connections():
    yield
    jobs.close_connections()  # else the test database cannot be dropped at the end

# A worker process: tries the job in a loop for `seconds`; each run it holds the job for
# `hold` seconds and writes its start and end times (one line, appended) to `log`.
CONTENDER = """
import json, os, random, sys, time
import django
django.setup()
from sessions_app.storage import jobs
name, seconds, hold, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
with jobs.exclusive("warm-up"):  # connects (Postgres) or opens the lock file (SQLite)
    pass
print("ready", flush=True)
start = float(sys.stdin.readline())  # the same moment for every process
while time.time() < start:
    time.sleep(0.005)
runs = 0
while time.time() < start + seconds:
    with jobs.exclusive(name) as mine:
        if mine:
            began = time.time()
            time.sleep(hold)
            ended = time.time()
            with open(log, "a") as f:
                f.write(json.dumps([os.getpid(), began, ended]) + "\\n")
            runs += 1
    time.sleep(random.uniform(0, 2 * hold) if mine else 0.001)  # a worker's next turn
print(runs)
"""


def contend(tmp_path: Path, processes: int, *, seconds: float = 2.0,
            hold: float = 0.02) -> list[tuple[int, float, float]]:
    log = tmp_path / "runs.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", CONTENDER, "test-job", str(seconds),
                               str(hold), str(log)],
                              cwd=ROOT, env=server_env({"ARBOR_LIFECYCLE_WORKER": "0"}),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
             for _ in range(processes)]
    for proc in procs:  # every process set up (django.setup takes seconds on a busy box)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready", \
            proc.communicate()[1].decode()
    start = f"{time.time() + 0.2}\n".encode()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(start)
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_never_run_the_same_job_at_once(db, tmp_path, processes):
    runs = sorted(contend(tmp_path, processes), key=lambda r: r[1])
    assert len(runs) >= 20
    for (_, _, ended), (_, began, _) in zip(runs, runs[1:], strict=False):
        assert began >= ended, "two processes held the job at the same time"
    assert len({pid for pid, _, _ in runs}) >= 2, "the job never changed hands"


def test_a_thread_of_the_holding_process_is_refused_too(db):
    with jobs.exclusive("test-job") as first:
        with jobs.exclusive("test-job") as second, jobs.exclusive("other-job") as other:
            assert (first, second, other) == (True, False, True)
    with jobs.exclusive("test-job") as again:
        assert again


HOLDER = """
import sys, time
import django
django.setup()
from sessions_app.storage import jobs
with jobs.exclusive("test-job") as mine:
    print("held" if mine else "refused", flush=True)
    time.sleep(60)
"""


def test_a_holder_that_dies_frees_the_job(db):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, stdout=subprocess.PIPE,
                              env=server_env({"ARBOR_LIFECYCLE_WORKER": "0"}))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"held"
        with jobs.exclusive("test-job") as mine:
            assert not mine
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while True:
        with jobs.exclusive("test-job") as mine:
            if mine or time.monotonic() > deadline:
                break
        time.sleep(0.1)
    assert mine


def test_keys_are_stable_and_distinct():
    assert jobs.key("retention") == jobs.key("retention")
    assert len({jobs.key(n) for n in ("retention", "purge", "outbox-prune", "embed")}) == 4
    assert all(-(2 ** 63) <= jobs.key(n) < 2 ** 63 for n in ("retention", "x" * 500))


def test_outbox_pruning_keeps_each_sessions_last_events(manager, settings):
    long_id, short_id = manager.create("long").id, manager.create("short").id
    manager.append_all(long_id, [user_msg(f"m{i}") for i in range(30)])
    for i in range(3):
        manager.get_session(short_id).append_message(user_msg(f"s{i}"))
    settings.ARBOR_EVENT_RETENTION = 5
    long_row = models.Session.objects.get(id=long_id)
    before = models.SessionEvent.objects.filter(session_id=long_row.key).count()
    assert before > 5

    assert upkeep.prune_outbox() == before - 5
    seqs = list(models.SessionEvent.objects.filter(session_id=long_row.key)
                .order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(long_row.event_seq - 4, long_row.event_seq + 1))
    short_row = models.Session.objects.get(id=short_id)
    assert models.SessionEvent.objects.filter(session_id=short_row.key).count() == \
        short_row.event_seq
    assert upkeep.prune_outbox() == 0


def _failed_compaction(manager, settings, *, words: int) -> str:
    sid = manager.create("long").id
    manager.append_all(sid, [user_msg(f"point {i}: " + "alpha beta gamma " * words)
                             for i in range(12)])
    models.Session.objects.filter(id=sid).update(
        compaction_error="LLMError: timed out", compaction_failed_at=timezone.now(),
        compaction_retry_at=timezone.now() - timedelta(seconds=1), status="error")
    return sid


def test_a_cooled_down_compaction_is_retried_without_an_append(manager, settings):
    sid = _failed_compaction(manager, settings, words=1000)
    settings.ARBOR_COMPACT_AFTER = None
    assert upkeep.retry_compactions() == 0  # sessions here do not compact on their own
    assert not models.Compaction.objects.filter(session__id=sid).exists()

    settings.ARBOR_COMPACT_AFTER = 200
    assert upkeep.retry_compactions() == 1
    row = models.Session.objects.get(id=sid)
    assert models.Compaction.objects.filter(session=row).count() == 1
    assert (row.compaction_error, row.compaction_retry_at, row.status) == ("", None, "idle")
    assert upkeep.retry_compactions() == 0


def test_a_session_under_its_threshold_is_not_retried_again(manager, settings):
    sid = _failed_compaction(manager, settings, words=1)
    settings.ARBOR_COMPACT_AFTER = 100_000
    assert upkeep.retry_compactions() == 1
    row = models.Session.objects.get(id=sid)
    assert not models.Compaction.objects.filter(session=row).exists()
    assert (row.compaction_error, row.compaction_retry_at) == ("", None)
    assert upkeep.retry_compactions() == 0


def test_a_cooling_down_compaction_waits(manager, settings):
    sid = _failed_compaction(manager, settings, words=1000)
    models.Session.objects.filter(id=sid).update(
        compaction_retry_at=timezone.now() + timedelta(minutes=5))
    settings.ARBOR_COMPACT_AFTER = 200
    assert upkeep.retry_compactions() == 0


def test_a_job_held_elsewhere_is_skipped_by_this_worker(manager, settings, monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr(upkeep, "prune_outbox", lambda: ran.append("prune"))
    run = worker._run_alone("outbox-prune", lambda: upkeep.prune_outbox())
    with jobs.exclusive("outbox-prune"):
        run()
    assert ran == []
    run()
    assert ran == ["prune"]


@pytest.mark.django_db(transaction=True)
def test_a_workers_step_runs_every_job_that_is_due(manager, agent, settings):
    old = manager.create("old").id
    manager.append_all(old, [user_msg("from last year")])
    models.Session.objects.filter(id=old).update(
        updated_at=timezone.now() - timedelta(days=400))
    busy = manager.create("busy").id
    manager.append_all(busy, [user_msg(f"m{i}") for i in range(20)])
    agent.retention_max_age_days = 30
    agent.save()
    settings.ARBOR_EVENT_RETENTION = 3

    upkeep_worker = worker.Worker()
    upkeep_worker._next = dict.fromkeys(upkeep_worker._next, 0.0)  # every job due now
    upkeep_worker.step()

    assert not models.Session.objects.filter(id=old).exists()  # retention
    assert not models.Erasure.objects.filter(purged_at=None).exists()  # the purge after it
    key = models.Session.objects.get(id=busy).key
    assert models.SessionEvent.objects.filter(session_id=key).count() == 3  # the outbox
    assert min(upkeep_worker._next.values()) > time.monotonic() + 1  # each waits its turn


def test_the_commands_wait_for_a_worker_running_the_same_job(agent, monkeypatch):
    monkeypatch.setattr(jobs, "COMMAND_WAIT", 0.3)
    for command, job in (("apply_retention", "retention"), ("purge", "purge")):
        with jobs.exclusive(job), pytest.raises(CommandError, match="another process"):
            call_command(command, stdout=StringIO())
    call_command("apply_retention", "--dry-run", stdout=StringIO())  # reads only: no lock
    with jobs.exclusive("retention"):
        call_command("apply_retention", "--dry-run", stdout=StringIO())


def test_exclusive_waits_when_asked(db):
    released = threading.Event()

    def hold() -> None:
        with jobs.exclusive("test-job"):
            released.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.2)
    threading.Timer(0.5, released.set).start()
    started = time.monotonic()
    with jobs.exclusive("test-job", wait=5) as mine:
        assert mine and 0.3 < time.monotonic() - started < 4
    holder.join()
