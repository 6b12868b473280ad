"""Layered values (format version 3) against a server: the golden vectors' answers and
bloom_info equal to the server's, a grown index's bloom_index_filter read here, and an
IndexFollower that follows an index while it grows by layers."""

import json
import os
import threading
import time
import uuid

import psycopg
import pytest

from bloomfilter import Filter, LayeredFilter
from bloomfilter.follow import IndexFollower

pytestmark = pytest.mark.server

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "test", "vectors", "golden.json")
with open(GOLDEN, encoding="utf-8") as _file:
    VECTORS = json.load(_file)


def grown_table(conn, capacity=1000):
    table = "grown_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) "
                 "WITH (capacity = %d, error_rate = 0.01, expansion = 2)" % (table, table, capacity))
    return table, table + "_bloom"


def layer_count(conn, index):
    return conn.execute("SELECT count(*) FROM bloom_index_layers(%s)", [index]).fetchone()[0]


@pytest.mark.parametrize("spec", VECTORS["layered"], ids=lambda s: "%d-layers" % len(s["layers"]))
def test_golden_layered_answers_as_the_server(conn, spec):
    data = bytes.fromhex(spec["bytes"])
    f = Filter.from_bytes(data)
    keys = [k["key"] for k in VECTORS["keys"] if k["type"] == "text"] + [a for a, _ in spec["absent"]]
    server = conn.execute("SELECT bloom_contains(%s::bytea::bloom, %s::text[])", [data, keys]).fetchone()[0]
    assert server == f.contains_many(keys)
    assert all(server[:7])
    row = conn.execute("SELECT (bloom_info(%s::bytea::bloom)).*", [data]).fetchone()
    assert tuple(row) == tuple(f.info())


def test_grown_index_read_here(conn):
    table, index = grown_table(conn)
    conn.execute("INSERT INTO %s (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i" % table)
    layers = layer_count(conn, index)
    assert layers >= 4
    data = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
    f = Filter.from_bytes(data)
    assert isinstance(f, LayeredFilter) and len(f.layers) == layers
    assert [layer[:2] for layer in f.layers] == [tuple(row) for row in conn.execute(
        "SELECT capacity, error_rate FROM bloom_index_layers(%s) ORDER BY layer", [index]).fetchall()]
    keys = ["user%d@mail.com" % i for i in range(1, 20001)]
    assert f.contains_many(keys) == [True] * len(keys)
    assert all(key in f for key in keys[::97])
    false_positives = sum(f.contains_many(["ghost%d@mail.com" % i for i in range(100000)]))
    assert false_positives < 1150  # error_rate 0.01: 1,000 expected at most
    row = conn.execute("SELECT (bloom_info(bloom_index_filter(%s))).*", [index]).fetchone()
    assert tuple(row) == tuple(f.info())


def test_follower_while_the_index_grows(conn, dsn):
    """A writer commits keys in batches until the index has 6 layers; meanwhile the follower
    refreshes, and after each refresh every key committed before it started is present: across
    every layer added, none is ever answered "absent"."""
    table, index = grown_table(conn, capacity=500)
    committed = []  # keys whose transaction committed, in order
    stop = threading.Event()
    errors = []

    def writer():
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                batch = 0
                while not stop.is_set():
                    keys = ["w%d.%d@mail.com" % (batch, i) for i in range(250)]
                    c.execute("INSERT INTO %s (email) SELECT unnest(%%s::text[])" % table, [keys])
                    committed.extend(keys)
                    batch += 1
                    if batch % 8 == 0 and layer_count(c, index) >= 6:
                        return
                    time.sleep(0.005)
        except Exception as error:  # reported below
            errors.append(error)

    thread = threading.Thread(target=writer)
    with IndexFollower(psycopg.connect(dsn), index, background=False) as follower:
        assert isinstance(follower.filter, LayeredFilter) and len(follower.filter.layers) == 1
        thread.start()
        refreshes, checked, missed, layers_seen = 0, 0, [], set()
        deadline = time.monotonic() + 120
        while thread.is_alive() and time.monotonic() < deadline:
            before = len(committed)  # committed before this refresh starts
            follower.refresh()
            refreshes += 1
            layers_seen.add(len(follower.filter.layers))
            keys = committed[:before]
            answers = follower.contains_many(keys)
            missed += [key for key, present in zip(keys, answers) if not present]
            checked += len(keys)
        stop.set()
        thread.join()
        assert not errors, errors
        follower.refresh()
        answers = follower.contains_many(committed)
        missed += [key for key, present in zip(committed, answers) if not present]
        final_layers = layer_count(conn, index)
        assert missed == [], "%d committed keys answered absent" % len(missed)
        assert final_layers >= 6 and len(follower.filter.layers) == final_layers
        # It read the value whole at each new layer count it saw, and followed changes between.
        assert len(layers_seen) >= 4 and follower.reloads >= len(layers_seen)
        assert follower.refreshes > follower.reloads
        assert follower.filter.to_bytes() == conn.execute(
            "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
        print("%d refreshes, %d reloads, layers seen %s, %d keys checked, %d committed"
              % (refreshes, follower.reloads, sorted(layers_seen), checked, len(committed)))


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_async_follower_while_the_index_grows(conn, dsn, driver):
    """The same with AsyncIndexFollower, whose refreshes run on an event loop while a writer
    thread grows the index to 5 layers."""
    import asyncio
    from bloomfilter.follow import AsyncIndexFollower
    from test_follow_async import connector

    table, index = grown_table(conn, capacity=500)
    committed, errors, done = [], [], threading.Event()

    def writer():
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                batch = 0
                while True:
                    keys = ["a%d.%d@mail.com" % (batch, i) for i in range(250)]
                    c.execute("INSERT INTO %s (email) SELECT unnest(%%s::text[])" % table, [keys])
                    committed.extend(keys)
                    batch += 1
                    if batch % 8 == 0 and layer_count(c, index) >= 5:
                        return
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            done.set()

    async def follow():
        missed, layers_seen = [], set()
        follower = AsyncIndexFollower(await connector(driver, dsn)(), index)
        try:
            await follower.refresh()
            thread = threading.Thread(target=writer)
            thread.start()
            deadline = time.monotonic() + 120
            while not done.is_set() and time.monotonic() < deadline:
                before = len(committed)
                await follower.refresh()
                layers_seen.add(len(follower.filter.layers))
                keys = committed[:before]
                missed += [k for k, present in zip(keys, follower.contains_many(keys)) if not present]
            thread.join()
            await follower.refresh()
            missed += [k for k, present in zip(committed, follower.contains_many(committed)) if not present]
            return missed, layers_seen, len(follower.filter.layers), follower.reloads
        finally:
            await follower.aclose()

    missed, layers_seen, layers, reloads = asyncio.run(follow())
    assert not errors, errors
    assert missed == [], "%d committed keys answered absent" % len(missed)
    assert layers == layer_count(conn, index) >= 5
    assert len(layers_seen) >= 3 and reloads >= len(layers_seen)


def check_stats_as_the_server(conn, index, stats):
    """stats()'s capacity and estimated_count summed over the layers, as bloom_index_info gives
    them (and the Node client's stats())."""
    capacity, estimated = conn.execute(
        "SELECT capacity, estimated_count FROM bloom_index_info(%s)", [index]).fetchone()
    assert stats["capacity"] == capacity
    assert stats["estimated_count"] == pytest.approx(estimated, rel=1e-9)
    assert stats["over_capacity"] is False


def test_follower_reload_reasons_grown_and_rebuilt(conn, dsn, caplog):
    """A layer added is reported as reason "grown" (event and log line), distinct from
    "rebuilt" (REINDEX, REINDEX CONCURRENTLY); stats() sums capacity and estimated_count over
    the layers."""
    import logging
    table, index = grown_table(conn, capacity=500)
    events = []
    caplog.set_level(logging.INFO, logger="bloomfilter.follow")
    with IndexFollower(psycopg.connect(dsn), index, background=False,
                       on_event=lambda event, info: events.append((event, info))) as follower:
        check_stats_as_the_server(conn, index, follower.stats())
        conn.execute("INSERT INTO %s (email) SELECT 'g' || i || '@mail.com' FROM generate_series(1, 2000) i" % table)
        assert layer_count(conn, index) >= 3
        follower.refresh()
        reloads = [info for event, info in events if event == "reload"]
        assert [info["reason"] for info in reloads] == ["start", "grown"]
        assert reloads[1]["capacity"] == conn.execute(
            "SELECT capacity FROM bloom_index_info(%s)", [index]).fetchone()[0]
        assert any("read the whole filter (grown)" in r.getMessage() for r in caplog.records)
        check_stats_as_the_server(conn, index, follower.stats())
        assert follower.stats()["estimated_count"] > 1500
        conn.execute("REINDEX INDEX %s" % index)
        follower.refresh()
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        follower.refresh()
        assert [info["reason"] for event, info in events if event == "reload"] == ["start", "grown", "rebuilt", "rebuilt"]
        check_stats_as_the_server(conn, index, follower.stats())
        assert all(e in follower for e in ("g%d@mail.com" % i for i in range(1, 2001)))


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_async_follower_reload_reason_grown(conn, dsn, driver):
    import asyncio
    from bloomfilter.follow import AsyncIndexFollower
    from test_follow_async import connector

    table, index = grown_table(conn, capacity=500)
    events = []

    async def follow():
        follower = AsyncIndexFollower(await connector(driver, dsn)(), index,
                                      on_event=lambda event, info: events.append((event, info)))
        try:
            await follower.refresh()
            conn.execute("INSERT INTO %s (email) SELECT 'g' || i || '@mail.com' "
                         "FROM generate_series(1, 2000) i" % table)
            await follower.refresh()
            conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
            await follower.refresh()
            return follower.stats()
        finally:
            await follower.aclose()

    stats = asyncio.run(follow())
    assert [info["reason"] for event, info in events if event == "reload"] == ["start", "grown", "rebuilt"]
    check_stats_as_the_server(conn, index, stats)
