"""The shared modes of the other followers: SharedMultiIndexFollower (a copy per index, each with
its own writer), SharedShardedIndexFollower (a copy per shard, on servers of their own) and
SharedAsyncIndexFollower (the writer reads through psycopg's AsyncConnection or asyncpg). In
each, processes share one copy of each index (a second process is a reader, not a second
writer), every committed key answers True in every process within the lag bound, no answer is
ever a false negative, the writer's SIGKILL has another process take over, and a reader whose
writer stops refreshing answers True past max_lag."""

import asyncio
import os
import time
import uuid

import psycopg
import pytest

from bloomfilter import shard_of
from bloomfilter.shared import (SharedAsyncIndexFollower, SharedIndexFollower,
                                SharedMultiIndexFollower, SharedShardedIndexFollower)

from clusters import Cluster
from forked import in_a_child
from shared_workers import Workers
from test_follow_async import asyncpg_dsn

pytestmark = pytest.mark.server

INTERVAL = 0.05
MAX_LAG = 1.5
BOUND = MAX_LAG + 2.0


def make_index(conn, prefix="", rows=2000):
    """A table of emails "<prefix>user<i>@mail.com" and its bloomfilter index: (table, index)."""
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (capacity = 200000)"
                 % (table, table))
    conn.execute("INSERT INTO %s SELECT %%s || 'user' || i || '@mail.com' "
                 "FROM generate_series(1, %d) i" % (table, rows), [prefix])
    return table, table + "_bloom"


def commit(dsn, table, keys):
    """Commits the keys; {key: time.monotonic() once COMMIT had returned}."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
    at = time.monotonic()
    return {key: at for key in keys}


def ghosts(prefix, count=200):
    return ["%sghost%d.%s@mail.com" % (prefix, i, uuid.uuid4().hex[:6]) for i in range(count)]


def finish(workers):
    """Stops the workers: none ever answered a false negative, and each checked all along."""
    for pid, (examples, false_negatives, checks, rounds, _) in workers.stop().items():
        assert false_negatives == 0, (pid, examples)
        assert rounds > 20 and checks > 1000, (pid, rounds, checks)


@pytest.fixture(scope="module")
def shards():
    """Two clusters with the same table and index (likely the same OIDs): only the server tells
    their copies apart."""
    clusters = []
    try:
        for k in range(2):
            cluster = Cluster("shmodes%d" % k)
            clusters.append(cluster)
            with psycopg.connect(cluster.dsn(), autocommit=True) as c:
                c.execute("CREATE EXTENSION bloomfilter")
                c.execute("CREATE TABLE users (email text PRIMARY KEY, CHECK (bloom_shard(email, 2) = %d))" % k)
                c.execute("CREATE INDEX users_email_bloom ON users USING bloomfilter (email) "
                          "WITH (capacity = 100000)")
                c.execute("INSERT INTO users SELECT e FROM (SELECT 'user' || i || '@mail.com' e "
                          "FROM generate_series(1, 2000) i) s WHERE bloom_shard(e, 2) = %d" % k)
        yield clusters
    finally:
        for cluster in clusters:
            cluster.remove()


# -- SharedMultiIndexFollower ---------------------------------------------------------------


def test_multi_processes_share_each_index_copy(conn, dsn, tmp_path):
    """A SharedIndexFollower of index 1 starts first (its writer), then two processes follow
    indexes 0 and 1 with a SharedMultiIndexFollower: the first writes index 0's copy and reads
    index 1's, the second reads both. Each writer's SIGKILL has a survivor take its copy over."""
    directory = str(tmp_path / "copies")
    tables, indexes = zip(*(make_index(conn, "t%d-" % k) for k in range(2)))
    single = Workers("single", {"dsn": dsn, "index": indexes[1], "directory": directory},
                     INTERVAL, MAX_LAG)
    multi = Workers("multi", {"dsn": dsn, "indexes": list(indexes), "directory": directory},
                    INTERVAL, MAX_LAG)
    initial = {"t%d-user%d@mail.com" % (k, i): time.monotonic() for k in range(2) for i in range(1, 2001)}
    multi.committed.update(initial)
    single.committed.update({key: at for key, at in initial.items() if key.startswith("t1-")})
    single.start()
    first, second = multi.start(2)
    try:
        assert single.roles() == {next(iter(single.workers)): [True]}
        assert multi.roles() == {first: [True, False], second: [False, False]}
        assert len(os.listdir(directory)) == 2  # one copy per index

        def round_(tag):
            keys = {k: ["t%d-%s%d.%s@mail.com" % (k, tag, i, uuid.uuid4().hex[:6]) for i in range(30)]
                    for k in range(2)}
            at = {}
            for k in range(2):
                at.update(commit(dsn, tables[k], keys[k]))
            multi.commit(at)
            single.commit({key: t for key, t in at.items() if key.startswith("t1-")})
            lag = multi.wait_all_true(max(at.values()), BOUND)
            single.wait_all_true(max(at.values()), BOUND)
            return lag

        lags = [round_("a")]
        # Index 1's writer dies: one of the multi followers takes its copy over.
        single.kill(next(iter(single.workers)))
        lags.append(round_("b"))
        roles = multi.roles()
        assert roles[first][0] and not roles[second][0]
        assert sum(r[1] for r in roles.values()) == 1, roles
        # Index 0's writer dies: the other takes both over.
        multi.kill(first)
        lags.append(round_("c"))
        assert multi.roles() == {second: [True, True]}
        assert max(lags) < BOUND
    finally:
        finish(multi)
        finish(single)


def test_multi_answers_each_index_from_its_own_copy(conn, dsn, tmp_path):
    """Two indexes in one directory: a store each, named from each index's identity; a
    follower of the same index (SharedIndexFollower) shares it, one of another does not."""
    directory = str(tmp_path / "copies")
    (_, a), (_, b) = make_index(conn, "a-"), make_index(conn, "b-")
    with SharedMultiIndexFollower(dsn, [a, b], directory=directory, background=False) as writer, \
            SharedMultiIndexFollower(dsn, [b, a], directory=directory, background=False) as reader, \
            SharedIndexFollower(dsn, b, directory=directory, background=False) as single:
        for follower in (writer, reader):
            fa, fb = follower.index(a), follower.index(b)
            assert fa.path != fb.path and sorted(os.listdir(directory)) == sorted(
                os.path.basename(p) for p in (fa.path, fb.path))
            assert fa._generation.meta["identity"]["index"] == a
            assert fb._generation.meta["identity"]["index"] == b
            a_keys = ["a-user%d@mail.com" % i for i in range(1, 2001)]
            b_keys = ["b-user%d@mail.com" % i for i in range(1, 2001)]
            assert all(fa.contains_many(a_keys)) and all(fb.contains_many(b_keys))
            assert sum(fb.contains_many(a_keys)) < 100 and sum(fa.contains_many(b_keys)) < 100
        assert writer.index(a).writer and writer.index(b).writer
        assert not reader.index(a).writer and not reader.index(b).writer
        assert reader._conn is None  # a reader of every copy keeps no connection
        assert not single.writer and single.path == writer.index(b).path
        assert writer.index(a).stats()["writer"] and writer.stats()[b]["generation"] == 1
    assert not os.listdir(directory)  # the last follower of each copy removed it


def test_multi_reader_past_max_lag_answers_true_and_takes_over(conn, dsn, tmp_path):
    """A SharedMultiIndexFollower reading both copies: while their writer holds the locks but
    refreshes no more, past max_lag every answer is True; it takes both over once the writer
    closes."""
    directory = str(tmp_path / "copies")
    (ta, a), (_, b) = make_index(conn, "a-"), make_index(conn, "b-")
    writer = SharedMultiIndexFollower(dsn, [a, b], directory=directory, background=False)
    reader = SharedMultiIndexFollower(dsn, [a, b], directory=directory, background=False,
                                      max_lag=0.3)
    try:
        assert not any(index.writer for index in reader.indexes.values())
        absent = {a: [g for g in ghosts("a-") if not reader.index(a).contains(g)],
                  b: [g for g in ghosts("b-") if not reader.index(b).contains(g)]}
        assert all(len(keys) > 150 for keys in absent.values())
        conn.execute("INSERT INTO %s VALUES ('a-late@mail.com')" % ta)
        time.sleep(0.5)
        reader.refresh()   # the locks are held: a reader still, as of the writer's last refresh
        assert not reader.is_fresh() and reader.lag > 0.3
        for name, keys in absent.items():
            assert all(reader.index(name).contains_many(keys))
            assert all(reader.index(name).contains(key) for key in keys)
        writer.refresh()
        reader.refresh()
        assert reader.is_fresh() and reader.index(a).contains("a-late@mail.com")
        assert not all(reader.index(b).contains_many(absent[b]))
        writer.close()
        # The locks are free: it writes both copies, going on from the generations it maps (the
        # same server, the positions the writer published).
        reader.refresh()
        assert all(index.writer for index in reader.indexes.values()) and reader.is_fresh()
        assert reader.index(a).contains("a-late@mail.com")
        assert [(s["generation"], s["adoptions"]) for s in reader.stats().values()] == [(1, 1), (1, 1)]
    finally:
        writer.close()
        reader.close()


def test_multi_forked_child_reads_both_copies(conn, dsn, tmp_path):
    """A SharedMultiIndexFollower made before a fork: the child reads both copies the parent
    writes (it never inherits the writer's role) and finds keys committed after the fork."""
    (ta, a), (tb, b) = make_index(conn, "a-"), make_index(conn, "b-")
    follower = SharedMultiIndexFollower(dsn, [a, b], directory=str(tmp_path / "copies"),
                                        interval=INTERVAL)
    try:
        assert follower.index(a).writer and follower.index(b).writer

        def child():
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("INSERT INTO %s VALUES ('a-child@mail.com')" % ta)
                c.execute("INSERT INTO %s VALUES ('b-child@mail.com')" % tb)
            at = time.monotonic()
            deadline = at + 5
            while min(i._refreshed_at for i in follower.indexes.values()) < at \
                    and time.monotonic() < deadline:
                time.sleep(INTERVAL)
            return (follower.index(a).writer, follower.index(b).writer, follower._conn is None,
                    follower.index(a).contains("a-child@mail.com"),
                    follower.index(b).contains("b-child@mail.com"))
        status, report = in_a_child(child)
        assert status == 0 and report == [0, 0, 1, 1, 1], (status, report)
        assert follower.index(a).writer and follower.index(b).writer
    finally:
        follower.close()


# -- SharedShardedIndexFollower -------------------------------------------------------------


def test_sharded_processes_share_each_shards_copy(shards, tmp_path):
    """Two processes follow both shards: the first writes both copies (one per shard, though
    database, OID and index name are the same on both servers), the second reads them; after
    the first's SIGKILL the second writes both."""
    directory = str(tmp_path / "copies")
    dsns = [c.dsn() for c in shards]
    workers = Workers("sharded", {"dsns": dsns, "index": "users_email_bloom",
                                  "directory": directory}, INTERVAL, MAX_LAG)
    workers.committed.update({"user%d@mail.com" % i: time.monotonic() for i in range(1, 2001)})
    first, second = workers.start(2)
    try:
        assert workers.roles() == {first: [True, True], second: [False, False]}
        assert len(os.listdir(directory)) == 2

        def round_(tag):
            keys = ["%s%d.%s@mail.com" % (tag, i, uuid.uuid4().hex[:6]) for i in range(60)]
            at = {}
            for k in range(2):
                at.update(commit(dsns[k], "users", [key for key in keys if shard_of(key, 2) == k]))
            workers.commit(at)
            return workers.wait_all_true(max(at.values()), BOUND)

        lags = [round_("a")]
        workers.kill(first)
        lags.append(round_("b"))
        assert workers.roles() == {second: [True, True]}
        third, = workers.start(1)
        assert workers.roles()[third] == [False, False]
        lags.append(round_("c"))
        assert max(lags) < BOUND
    finally:
        finish(workers)


def test_sharded_reader_past_max_lag_answers_true(shards, tmp_path):
    """The copies of two shards with the same database, OID and index name never collide; a
    reader of both whose writer refreshes no more answers True past max_lag, and takes both
    over once the writer closes."""
    directory = str(tmp_path / "copies")
    dsns = [c.dsn() for c in shards]
    writer = SharedShardedIndexFollower(dsns, "users_email_bloom", directory=directory,
                                        background=False)
    reader = SharedShardedIndexFollower(dsns, "users_email_bloom", directory=directory,
                                        background=False, max_lag=0.3)
    try:
        identities = [f._store.identity for f in writer.followers]
        assert identities[0]["database_oid"] == identities[1]["database_oid"]
        assert identities[0]["index"] == identities[1]["index"]
        assert identities[0]["system"] != identities[1]["system"]
        assert [f.path for f in reader.followers] == [f.path for f in writer.followers]
        assert writer.followers[0].path != writer.followers[1].path
        assert [f.writer for f in reader.followers] == [False, False]
        assert reader.contains_many(["user%d@mail.com" % i for i in range(1, 2001)]) == [True] * 2000
        absent = [g for g in ghosts("") if not reader.contains(g)]
        assert len(absent) > 150
        time.sleep(0.5)
        reader.refresh()
        assert not reader.is_fresh()
        assert all(reader.contains_many(absent)) and all(map(reader.contains, absent))
        writer.close()
        reader.refresh()
        assert [f.writer for f in reader.followers] == [True, True] and reader.is_fresh()
        assert not all(reader.contains_many(absent))
    finally:
        writer.close()
        reader.close()


# -- SharedAsyncIndexFollower ---------------------------------------------------------------


def async_options(driver, dsn, index, directory):
    if driver == "asyncpg":
        return {"driver": "asyncpg", "url": asyncpg_dsn(dsn), "index": index, "directory": directory}
    return {"driver": "psycopg", "dsn": dsn, "index": index, "directory": directory}


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_async_processes_share_one_copy(conn, dsn, tmp_path, driver):
    """Two processes with a SharedAsyncIndexFollower each: one writer (reading through the async
    connection), one reader; after the writer's SIGKILL the reader takes over, and a new process
    is a reader."""
    directory = str(tmp_path / "copies")
    table, index = make_index(conn)
    workers = Workers("async", async_options(driver, dsn, index, directory), INTERVAL, MAX_LAG)
    workers.committed.update({"user%d@mail.com" % i: time.monotonic() for i in range(1, 2001)})
    first, second = workers.start(2)
    try:
        assert workers.roles() == {first: [True], second: [False]}

        def round_(tag):
            at = commit(dsn, table, ["%s%d.%s@mail.com" % (tag, i, uuid.uuid4().hex[:6])
                                     for i in range(50)])
            workers.commit(at)
            return workers.wait_all_true(max(at.values()), BOUND)

        lags = [round_("a")]
        conn.execute("REINDEX INDEX %s" % index)  # a rebuild, followed by the async writer
        lags.append(round_("rebuilt"))
        before = workers.call(second, "ask", [])[3][0]["generation"]
        workers.kill(first)
        lags.append(round_("b"))
        # The new writer went on from the generation the async writer published its position in.
        (taken,) = workers.call(second, "ask", [])[3]
        assert taken["writer"] and taken["adoptions"] == 1 and taken["generation"] == before
        third, = workers.start(1)
        assert workers.roles() == {second: [True], third: [False]}
        lags.append(round_("c"))
        assert max(lags) < BOUND
    finally:
        finish(workers)


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_async_reader_past_max_lag_answers_true(conn, dsn, tmp_path, driver):
    """A SharedAsyncIndexFollower reading a copy whose writer (a SharedIndexFollower of the
    same index) refreshes no more answers True past max_lag, holds no connection, and takes
    over once the writer closes, going on from the generation it maps through its async
    connection (the changes since the writer's position, not the whole filter)."""
    directory = str(tmp_path / "copies")
    table, index = make_index(conn)
    if driver == "asyncpg":
        import asyncpg
        connect = lambda: asyncpg.connect(asyncpg_dsn(dsn))  # noqa: E731
    else:
        connect = lambda: psycopg.AsyncConnection.connect(dsn, autocommit=True)  # noqa: E731
    writer = SharedIndexFollower(dsn, index, directory=directory, background=False)

    async def main():
        reader = SharedAsyncIndexFollower(connect, index, directory=directory, max_lag=0.3,
                                          interval=3600)
        async with reader:
            assert not reader.writer and reader._conn is None and reader.path == writer.path
            absent = [g for g in ghosts("") if not reader.contains(g)]
            assert len(absent) > 150
            conn.execute("INSERT INTO %s VALUES ('late@mail.com')" % table)
            await asyncio.sleep(0.5)
            await reader.refresh()
            assert not reader.writer and not reader.is_fresh()
            assert all(reader.contains_many(absent)) and all(map(reader.contains, absent))
            writer.refresh()
            await reader.refresh()
            assert reader.is_fresh() and reader.contains("late@mail.com")
            conn.execute("INSERT INTO %s VALUES ('later@mail.com')" % table)
            writer.close()
            reloads = reader.reloads
            await reader.refresh()
            assert reader.writer and reader.is_fresh() and reader._conn is not None
            assert reader.stats()["generation"] == 1 and reader.stats()["adoptions"] == 1
            assert reader.reloads == reloads and reader.last_rows < 10
            assert reader.last_bytes < len(reader.filter.to_bytes()) / 4
            assert reader.contains("late@mail.com") and reader.contains("later@mail.com")
            assert not all(reader.contains_many(absent))
        assert reader._store is None

    try:
        asyncio.run(main())
    finally:
        writer.close()
    assert not os.listdir(directory)
