"""max_lag: with the follower's server stopped, once the copy is older than max_lag the follower
answers True ("maybe"), says it is not fresh and logs one warning; when the server is back, it
answers from the copy again. Without max_lag it keeps the last copy's answers (as documented)."""

import asyncio
import logging
import time

import psycopg
import pytest

from bloomfilter.follow import AsyncIndexFollower, IndexFollower

from clusters import Cluster

pytestmark = pytest.mark.server

INTERVAL = 0.1
MAX_LAG = 0.5


@pytest.fixture(scope="module")
def cluster():
    c = Cluster("maxlag")
    yield c
    c.remove()


def test_max_lag_with_the_server_stopped(cluster, caplog):
    with psycopg.connect(cluster.dsn(), autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS bloomfilter")
        c.execute("CREATE TABLE users (email text NOT NULL)")
        c.execute("CREATE INDEX users_bloom ON users USING bloomfilter (email)")
        c.execute("INSERT INTO users SELECT 'user' || i || '@mail.com' FROM generate_series(1, 1000) i")
    bounded = IndexFollower(cluster.dsn(), "users_bloom", interval=INTERVAL, max_lag=MAX_LAG)
    unbounded = IndexFollower(cluster.dsn(), "users_bloom", interval=INTERVAL)
    ghosts = ["ghost%d@mail.com" % i for i in range(200)]
    try:
        assert bounded.is_fresh() and unbounded.is_fresh()
        assert sum(map(bounded.contains, ghosts)) < 10
        absent = [g for g in ghosts if not bounded.contains(g)]
        caplog.set_level(logging.WARNING, logger="bloomfilter.follow")
        cluster.stop()
        time.sleep(MAX_LAG + 3 * INTERVAL)
        assert bounded.last_error is not None and bounded.lag > MAX_LAG
        assert not bounded.is_fresh()
        assert all(bounded.contains(g) for g in absent)          # "maybe: ask the database"
        assert all(bounded.contains("user%d@mail.com" % i) for i in range(1, 1001))
        assert not any(unbounded.contains(g) for g in absent)    # the last copy's answers
        assert not unbounded.is_fresh(MAX_LAG) and unbounded.is_fresh()
        warnings = [r for r in caplog.records if "max_lag" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
        assert "users_bloom" in warnings[0].getMessage()
        cluster.start()
        deadline = time.monotonic() + 10
        while not bounded.is_fresh() and time.monotonic() < deadline:
            time.sleep(INTERVAL)
        assert bounded.is_fresh() and bounded.reconnects >= 1
        assert not any(bounded.contains(g) for g in absent)
        assert any("fresh again" in r.getMessage() for r in caplog.records)
    finally:
        bounded.close()
        unbounded.close()


def test_async_follower_max_lag(cluster, caplog):
    with psycopg.connect(cluster.dsn(), autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS bloomfilter")
        c.execute("CREATE TABLE users_async (email text NOT NULL)")
        c.execute("CREATE INDEX users_async_bloom ON users_async USING bloomfilter (email)")
        c.execute("INSERT INTO users_async SELECT 'user' || i FROM generate_series(1, 1000) i")
    caplog.set_level(logging.WARNING, logger="bloomfilter.follow")

    async def main():
        async with AsyncIndexFollower(cluster.dsn(), "users_async_bloom", interval=INTERVAL,
                                      max_lag=MAX_LAG) as follower:
            absent = [g for g in ("ghost%d" % i for i in range(200)) if not follower.contains(g)]
            assert len(absent) > 150 and follower.is_fresh()
            cluster.stop()
            try:
                await asyncio.sleep(MAX_LAG + 3 * INTERVAL)
                assert not follower.is_fresh() and follower.last_error is not None
                assert all(follower.contains(g) for g in absent)
            finally:
                cluster.start()
            for _ in range(100):
                await asyncio.sleep(INTERVAL)
                if follower.is_fresh():
                    break
            assert follower.is_fresh() and not any(follower.contains(g) for g in absent)
    asyncio.run(main())
    messages = [r.getMessage() for r in caplog.records]
    assert sum("max_lag" in m and "users_async_bloom" in m for m in messages) == 1, messages
    assert any("fresh again" in m for m in messages)
