"""A follower made before a fork keeps answering in the children: under a real prefork server
(gunicorn --preload, 2 workers) every worker finds a new email within two intervals, and in a
plain os.fork() child the follower has its own connection and thread while the parent's
session goes on."""

import os
import signal
import time
import uuid

import psycopg
import pytest

from bloomfilter.follow import IndexFollower
from forked import in_a_child
from gunicorn_workers import ask_every_worker, gunicorn

pytestmark = pytest.mark.server

INTERVAL = 0.2
HERE = os.path.dirname(os.path.abspath(__file__))


def make_index(conn):
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email)" % (table, table))
    conn.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i" % table)
    return table, table + "_bloom"


def answers_of_every_worker(port, email, workers):
    """{worker pid: [its answers for email, True for present]}."""
    return {pid: [words[0] == "1" for words in answers]
            for pid, answers in ask_every_worker(port, "/?" + email, workers).items()}


def test_gunicorn_preload_workers_see_new_emails(conn, dsn):
    pytest.importorskip("gunicorn")  # test/run-python.sh requires it
    table, index = make_index(conn)
    env = dict(os.environ, BLOOM_DSN=dsn, BLOOM_INDEX=index, BLOOM_INTERVAL=str(INTERVAL),
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]))
    with gunicorn("wsgi_follower:app", 2, HERE, env, probe="/?user1@mail.com", timeout=20) as (_, port):
        before = answers_of_every_worker(port, "user1@mail.com", 2)
        assert len(before) == 2 and all(all(a) for a in before.values()), before
        for round_ in range(2):
            # A key the index's filter does not hold yet (no false positive to start from).
            email = next(e for e in ("new%d.%d.%s@mail.com" % (round_, i, uuid.uuid4().hex[:6]) for i in range(100))
                         if not conn.execute("SELECT bloom_index_contains(%s, %s)", [index, e]).fetchone()[0])
            assert not any(any(a) for a in answers_of_every_worker(port, email, 2).values())
            conn.execute("INSERT INTO %s VALUES (%%s)" % table, [email])
            time.sleep(2 * INTERVAL)
            # Every answer from two intervals after the commit on, from every worker: present.
            after = answers_of_every_worker(port, email, 2)
            assert set(after) == set(before), after
            assert all(all(a) for a in after.values()), after


def test_os_fork_child_has_its_own_connection_and_thread(conn, dsn):
    table, index = make_index(conn)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    try:
        parent_backend = follower.backend_pid

        def child():
            email = next(e for e in ("child%d.%s@mail.com" % (i, uuid.uuid4().hex[:6]) for i in range(100))
                         if not follower.contains(e))
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("INSERT INTO %s VALUES (%%s)" % table, [email])
            time.sleep(2 * INTERVAL)
            return (follower.contains(email), follower.backend_pid or 0,
                    follower._thread is not None and follower._thread.is_alive())
        status, report = in_a_child(child)
        assert status == 0, report
        found, child_backend, thread_alive = report
        assert found and thread_alive
        assert child_backend not in (0, parent_backend)
        # The parent's session was not ended by the child.
        email = "parent.%s@mail.com" % uuid.uuid4().hex[:6]
        conn.execute("INSERT INTO %s VALUES (%%s)" % table, [email])
        follower.refresh()
        assert follower.contains(email) and follower.backend_pid == parent_backend
        assert follower.reconnects == 0 and follower.last_error is None
    finally:
        follower.close()


def test_fork_without_python_at_fork_handlers_and_max_lag(conn, dsn):
    """A child forked from C (uWSGI's default) runs no at-fork handler: the follower, left out of
    them here, answers "maybe" once max_lag has passed, and its first such answer sets it up
    again, after which it answers from a fresh copy of its own."""
    from bloomfilter import follow
    table, index = make_index(conn)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL, max_lag=0.5)
    try:
        parent_backend = follower.backend_pid
        follow._followers.discard(follower)

        def child():
            email = next(e for e in ("child%d.%s@mail.com" % (i, uuid.uuid4().hex[:6]) for i in range(100))
                         if not follower.contains(e))  # absent from the copy of fork time
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("INSERT INTO %s VALUES (%%s)" % table, [email])
            stale_before = follower.contains(email)  # the fork-time copy, not yet stale
            time.sleep(0.5 + 2 * INTERVAL)
            maybe = follower.contains(email)        # stale: True, and set up again
            time.sleep(3 * INTERVAL)
            fresh = follower.is_fresh()
            ghosts = sum(follower.contains("ghost%d@mail.com" % i) for i in range(200))
            return (stale_before, maybe, fresh, ghosts, follower.contains(email),
                    follower.backend_pid or 0)
        status, report = in_a_child(child)
        assert status == 0, report
        stale_before, maybe, fresh, ghosts, found, child_backend = report
        assert not stale_before  # what the follower fixes: the copy of fork time says absent
        assert maybe and fresh and found and ghosts < 20
        assert child_backend not in (0, parent_backend)
        follower.refresh()
        assert follower.backend_pid == parent_backend and follower.last_error is None
    finally:
        follower.close()


def close_in_a_child_forked_from_c(follower, registry):
    """follower.close() in a child that ran no at-fork handler (the follower left out of them, as
    a fork from C leaves every one): whether it returned within 10 s, as the child's exit
    status (0), and what the parent's follower says after."""
    registry.discard(follower)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            signal.alarm(10)  # close() joining the parent's thread would wait for ever
            follower.close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return status


def test_close_in_a_child_forked_from_c(conn, dsn, tmp_path):
    """A child forked from C that closes a follower it inherited returns at once, and leaves
    the parent's follower (its thread, its session, a shared copy's writer lock) as it was."""
    from bloomfilter import follow, shared
    table, index = make_index(conn)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    try:
        backend = follower.backend_pid
        assert close_in_a_child_forked_from_c(follower, follow._followers) == 0
        follower.refresh()
        assert follower.backend_pid == backend and follower.last_error is None
    finally:
        follower.close()
    writer = shared.SharedIndexFollower(psycopg.connect(dsn), index, path=str(tmp_path / "copy"),
                                        interval=INTERVAL)
    try:
        assert writer.writer
        assert close_in_a_child_forked_from_c(writer, shared._shared_followers) == 0
        # The parent still holds the writer's lock: a second follower is a reader.
        reader = shared.SharedIndexFollower(psycopg.connect(dsn), index,
                                            path=str(tmp_path / "copy"), interval=INTERVAL)
        try:
            assert writer.writer and not reader.writer
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("INSERT INTO %s VALUES ('after.fork@mail.com')" % table)
            deadline = time.monotonic() + 5
            while not reader.contains("after.fork@mail.com") and time.monotonic() < deadline:
                time.sleep(INTERVAL)
            assert reader.contains("after.fork@mail.com")
        finally:
            reader.close()
    finally:
        writer.close()
