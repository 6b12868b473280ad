"""Watching a follower: on_event on a reload (at start, after REINDEX CONCURRENTLY, after a
reconnection), on going stale (found by the follower's own thread, with no check asked) and
fresh again, and on the index passing its capacity, each with the log line it had; a callback
that raises is logged and the thread goes on; stats(); MultiIndexFollower, several indexes on
one connection, also under a writer a table; the async follower's events."""

import asyncio
import logging
import threading
import time
import uuid

import psycopg
import pytest

from bloomfilter.follow import AsyncIndexFollower, IndexFollower, MultiIndexFollower

pytestmark = pytest.mark.server

INTERVAL = 0.1


def make_table(conn, capacity=100_000, column_type="text"):
    table = "watch_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email %s NOT NULL)" % (table, column_type))
    # Of fixed size: the capacity watched is the one given.
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) "
                 "WITH (capacity = %d, expansion = 0)" % (table, table, capacity))
    return table, table + "_bloom"


class Events:
    """on_event's calls, from any thread."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, event, info):
        with self.lock:
            self.calls.append((event, dict(info)))

    def of(self, event):
        with self.lock:
            return [info for name, info in self.calls if name == event]

    def wait(self, event, count=1, timeout=10):
        deadline = time.monotonic() + timeout
        while len(self.of(event)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.of(event)


def test_reload_events_and_stats(conn, dsn):
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s SELECT 'user' || i FROM generate_series(1, 1000) i" % table)
    events = Events()
    follower = IndexFollower(lambda: psycopg.connect(dsn, autocommit=True), index,
                             interval=INTERVAL, on_event=events)
    try:
        (start,) = events.of("reload")
        assert start["reason"] == "start" and start["index"] == index
        assert start["capacity"] == 100_000 and start["bytes"] == len(follower.filter.to_bytes())
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        assert [e["reason"] for e in events.wait("reload", 2)] == ["start", "rebuilt"]
        conn.execute("SELECT pg_terminate_backend(%s)", [follower.backend_pid])
        assert [e["reason"] for e in events.wait("reload", 3)] == ["start", "rebuilt", "reconnect"]
        assert not events.of("stale") and not events.of("capacity")
        follower.contains("user1")
        follower.contains_many(["user%d" % i for i in range(100)])
        stats = follower.stats()
        assert stats["index"] == index and stats["checks"] == 101
        assert stats["reloads"] == 3 and stats["reconnects"] == 2 and stats["errors"] >= 1
        assert stats["refreshes"] >= 3 and stats["refreshes"] == follower.refreshes
        assert 0 <= stats["lag"] < 5 and stats["fresh"] is True
        assert abs(stats["last_refresh"] - time.time()) < 5
        assert stats["extension_version"] == conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'").fetchone()[0]
        assert stats["capacity"] == 100_000 and stats["estimated_count"] < 1100
        assert stats["over_capacity"] is False
        assert set(stats) >= {"queries", "last_rows", "last_bytes", "last_error"}
    finally:
        follower.close()


def test_stale_and_fresh_from_the_thread(conn, dsn, caplog):
    """With the server unreachable, the follower's thread finds the copy past max_lag and says
    so (on_event and the warning) with no check asked of it; then fresh again, once."""
    table, index = make_table(conn)
    reachable = threading.Event()
    reachable.set()

    def connect():
        if not reachable.is_set():
            raise psycopg.OperationalError("unreachable (test)")
        return psycopg.connect(dsn, autocommit=True)

    caplog.set_level(logging.WARNING, logger="bloomfilter")
    events = Events()
    follower = IndexFollower(connect, index, interval=INTERVAL, max_lag=0.3, on_event=events)
    try:
        reachable.clear()
        conn.execute("SELECT pg_terminate_backend(%s)", [follower.backend_pid])
        (stale,) = events.wait("stale")
        assert stale["index"] == index and stale["lag"] > 0.3 and stale["max_lag"] == 0.3
        assert "unreachable" in str(stale["error"])
        assert not follower.is_fresh() and follower.stats()["fresh"] is False
        assert follower.contains("anything")  # "maybe", and no second event
        reachable.set()
        (fresh,) = events.wait("fresh")
        assert fresh["index"] == index and fresh["lag"] > 0.3
        assert follower.is_fresh() and len(events.of("stale")) == 1
        assert events.of("reload")[-1]["reason"] == "reconnect"
        messages = [r.getMessage() for r in caplog.records]
        assert sum("more than max_lag" in m for m in messages) == 1, messages
        assert sum("fresh again" in m for m in messages) == 1, messages
        assert follower.stats()["errors"] >= 2
    finally:
        follower.close()


def test_a_raising_callback_is_logged_and_the_thread_goes_on(conn, dsn, caplog):
    table, index = make_table(conn)
    calls = []

    def on_event(event, info):
        calls.append(event)
        raise RuntimeError("the application's callback failed")

    caplog.set_level(logging.ERROR, logger="bloomfilter")
    follower = IndexFollower(dsn, index, interval=INTERVAL, on_event=on_event)
    try:
        assert calls == ["reload"]
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)  # a reload in the thread: it raises
        deadline = time.monotonic() + 10
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert calls == ["reload", "reload"]
        logged = [r for r in caplog.records if "on_event" in r.getMessage()]
        assert len(logged) == 2 and logged[0].exc_info[0] is RuntimeError
        refreshes = follower.refreshes
        conn.execute("INSERT INTO %s VALUES ('after')" % table)
        time.sleep(4 * INTERVAL)
        assert follower.refreshes > refreshes and follower.contains("after")
        assert follower._thread.is_alive() and follower.last_error is None
    finally:
        follower.close()


def test_a_callback_may_refresh(conn, dsn):
    """on_event runs once the refresh's lock is released: a callback that refreshes (or checks)
    does not wait for itself."""
    table, index = make_table(conn)
    seen = []

    def on_event(event, info):
        seen.append((event, info["reason"]))
        if info["reason"] == "rebuilt":
            follower.refresh()
            seen.append(("refreshed", follower.contains("x")))

    follower = IndexFollower(dsn, index, background=False, on_event=on_event)
    try:
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        done = threading.Thread(target=follower.refresh, daemon=True)
        done.start()
        done.join(10)
        assert not done.is_alive(), "refresh() waits for itself"
        assert seen == [("reload", "start"), ("reload", "rebuilt"), ("refreshed", False)]
    finally:
        follower.close()


def test_capacity(conn, dsn, caplog):
    """Past its capacity (bloom_index_info's needs_rebuild): one event and one warning, at a
    full read and as pages change; back under it after a resize."""
    caplog.set_level(logging.WARNING, logger="bloomfilter.follow")
    table, index = make_table(conn, capacity=1000)
    conn.execute("INSERT INTO %s SELECT 'user' || i FROM generate_series(1, 900) i" % table)
    events = Events()
    follower = IndexFollower(dsn, index, background=False, on_event=events)
    try:
        assert not events.of("capacity") and follower.stats()["over_capacity"] is False
        assert 850 < follower.stats()["estimated_count"] < 950
        conn.execute("INSERT INTO %s SELECT 'more' || i FROM generate_series(1, 1000) i" % table)
        follower.refresh()  # pages changed, but the next check is a minute away
        assert not events.of("capacity")
        follower.capacity_check_interval = 0
        follower.refresh()
        (passed,) = events.of("capacity")
        (needs_rebuild, estimated) = conn.execute(
            "SELECT needs_rebuild, estimated_count FROM bloom_index_info(%s)", [index]).fetchone()
        assert needs_rebuild
        assert passed["index"] == index and passed["capacity"] == 1000
        assert abs(passed["estimated_count"] - estimated) < 1e-6 * estimated
        assert passed["estimated_error_rate"] > 0.01
        stats = follower.stats()
        assert stats["over_capacity"] is True and stats["estimated_count"] > 1500
        conn.execute("INSERT INTO %s VALUES ('one more')" % table)
        follower.refresh()
        assert len(events.of("capacity")) == 1  # once while it stays past capacity
        warnings = [r.getMessage() for r in caplog.records if "capacity" in r.getMessage()]
        assert len(warnings) == 1 and index in warnings[0] and "REINDEX" in warnings[0]
        conn.execute("ALTER INDEX %s SET (capacity = 100000)" % index)
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        follower.refresh()
        assert follower.stats()["over_capacity"] is False
    finally:
        follower.close()
    # A follower started on an index past its capacity says so at its first read.
    events = Events()
    table, index = make_table(conn, capacity=1000)
    conn.execute("INSERT INTO %s SELECT 'user' || i FROM generate_series(1, 5000) i" % table)
    with IndexFollower(dsn, index, background=False, on_event=events):
        assert [name for name, _ in events.calls] == ["reload", "capacity"]


def test_several_indexes_on_one_connection(conn, dsn):
    emails, email_index = make_table(conn)
    numbers, number_index = make_table(conn, column_type="bigint")
    events = Events()
    follower = MultiIndexFollower(dsn, [email_index, number_index], interval=INTERVAL, max_lag=5,
                                  on_event=events)
    try:
        assert {e["index"] for e in events.of("reload")} == {email_index, number_index}
        backend = follower.backend_pid
        (sessions,) = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                   [backend]).fetchone()
        assert sessions == 1
        conn.execute("INSERT INTO %s VALUES ('a@mail.com')" % emails)
        conn.execute("INSERT INTO %s VALUES (42)" % numbers)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
                follower.index(email_index).contains("a@mail.com") and follower[number_index].contains(42)):
            time.sleep(0.02)
        assert follower.index(email_index).contains("a@mail.com")
        numbers_follower = follower.index(number_index)
        answers = numbers_follower.contains_many(list(range(30, 60)))
        assert answers == [numbers_follower.contains(k) for k in range(30, 60)] and answers[12]
        with pytest.raises(TypeError):
            follower.index(number_index).contains("42")
        with pytest.raises(KeyError):
            follower.index("no_such_index")
        assert follower.is_fresh() and follower.lag < 5
        assert follower.extension_version == follower.index(email_index).extension_version
        stats = follower.stats()
        assert set(stats) == {email_index, number_index}
        assert stats[email_index]["checks"] >= 1 and stats[number_index]["reconnects"] == 1
        # One index dropped: its refreshes fail, the other's go on.
        conn.execute("DROP INDEX %s" % number_index)
        time.sleep(5 * INTERVAL)
        dropped, kept = follower.index(number_index), follower.index(email_index)
        assert dropped.last_error is not None and dropped.errors >= 2
        assert kept.last_error is None and kept.lag < 3 * INTERVAL
        conn.execute("INSERT INTO %s VALUES ('b@mail.com')" % emails)
        time.sleep(3 * INTERVAL)
        assert kept.contains("b@mail.com") and follower.backend_pid == backend
        # A dropped connection: both indexes are read whole on the new one.
        conn.execute("CREATE INDEX %s ON %s USING bloomfilter (email)" % (number_index, numbers))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                e["index"] == number_index and e["reason"] == "rebuilt" for e in events.of("reload")):
            time.sleep(0.02)
        assert dropped.last_error is None
        reloads = len(events.of("reload"))
        conn.execute("SELECT pg_terminate_backend(%s)", [backend])
        reasons = [e["reason"] for e in events.wait("reload", reloads + 2)[reloads:]]
        assert reasons == ["reconnect", "reconnect"]
        assert follower.backend_pid != backend and follower.index(number_index).contains(42)
    finally:
        follower.close()
    with pytest.raises(ValueError):
        MultiIndexFollower(dsn, [email_index, email_index])
    with pytest.raises(TypeError):
        MultiIndexFollower(dsn, email_index)


def test_four_indexes_on_one_connection_under_writers(conn, dsn):
    """A MultiIndexFollower of 4 indexes (bench/python_client.sh measures its lag), a writer on
    each table: checked while they write, every row committed before the last refresh of its
    index began is found by that index's follower; one server process throughout."""
    tables = [make_table(conn) for _ in range(4)]
    follower = MultiIndexFollower(dsn, [index for _, index in tables], interval=0.05)
    committed, lock, stop = [], threading.Lock(), threading.Event()
    counts = {"checks": 0, "misses": 0}

    def write(n):
        table = tables[n][0]
        with psycopg.connect(dsn, autocommit=True) as c:
            for i in range(150):
                key = "%s-%d@mail.com" % (table, i)
                c.execute("INSERT INTO %s VALUES (%%s)" % table, [key])
                with lock:
                    committed.append((n, key, time.monotonic()))
                time.sleep(0.002)  # several refreshes while they write

    def check():
        while not stop.is_set():
            time.sleep(0.005)
            with lock:
                done = list(committed)
            for n, key, at in done:
                index = follower.index(tables[n][1])
                if at < time.monotonic() - index.lag:  # before its last refresh began
                    counts["checks"] += 1
                    counts["misses"] += not index.contains(key)

    try:
        backend = follower.backend_pid
        checker = threading.Thread(target=check)
        checker.start()
        writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        time.sleep(0.3)
        stop.set()
        checker.join()
        assert counts["misses"] == 0, counts
        assert counts["checks"] > 1000, counts
        for n, key, _ in committed:
            assert follower.index(tables[n][1]).contains(key), key
        # Each index answers for its own table: another's keys are mostly absent.
        others = [follower.index(tables[(n + 1) % 4][1]).contains(key) for n, key, _ in committed]
        assert sum(others) < 0.05 * len(others)
        assert follower.backend_pid == backend
        assert all(s["reconnects"] == 1 and s["errors"] == 0 for s in follower.stats().values())
        assert min(follower.index(index).refreshes for _, index in tables) > 5
    finally:
        stop.set()
        follower.close()


def test_async_follower_events_and_stats(conn, dsn):
    table, index = make_table(conn, capacity=1000)
    conn.execute("INSERT INTO %s SELECT 'user' || i FROM generate_series(1, 5000) i" % table)
    events = Events()

    async def follow():
        async with AsyncIndexFollower(dsn, index, interval=INTERVAL, on_event=events) as follower:
            assert [name for name, _ in events.calls] == ["reload", "capacity"]
            conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
            for _ in range(100):
                await asyncio.sleep(INTERVAL / 2)
                if len(events.of("reload")) == 2:
                    break
            follower.contains_many(["user%d" % i for i in range(20)])
            return follower.stats()

    stats = asyncio.run(follow())
    assert [e["reason"] for e in events.of("reload")] == ["start", "rebuilt"]
    assert stats["checks"] == 20 and stats["reloads"] == 2 and stats["over_capacity"] is True
    assert stats["extension_version"]
