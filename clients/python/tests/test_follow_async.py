"""AsyncIndexFollower on psycopg's AsyncConnection and on asyncpg: 8 concurrent writers (tasks
of the same event loop) whose rows are all found within two intervals and never missed once
committed before a refresh began; reconnection, REINDEX CONCURRENTLY, an expression index on the
SQL_ASCII database; the loop keeps running while it follows."""

import asyncio
import os
import time
import uuid

import asyncpg
import psycopg
import pytest

from bloomfilter.follow import AsyncIndexFollower

pytestmark = pytest.mark.server

INTERVAL = 0.1


def asyncpg_dsn(conninfo):
    return "postgresql://%s@/%s?host=%s&port=%s" % (
        os.environ.get("PGUSER", "postgres"), conninfo.split("=", 1)[1], os.environ["PGHOST"],
        os.environ["PGPORT"])


def connector(driver, conninfo):
    if driver == "psycopg":
        return lambda: psycopg.AsyncConnection.connect(conninfo, autocommit=True)
    return lambda: asyncpg.connect(asyncpg_dsn(conninfo))


def make_table(conn, expression="email"):
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (%s) WITH (capacity = 200000)"
                 % (table, table, expression))
    return table, table + "_bloom"


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_eight_concurrent_writers(conn, dsn, driver):
    table, index = make_table(conn)

    async def main():
        follower = AsyncIndexFollower(await connector(driver, dsn)(), index, interval=INTERVAL)
        await follower.start()
        committed, stop = [], asyncio.Event()

        async def writer(number):
            c = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            async with c:
                i = 0
                while not stop.is_set():
                    key = "w%d.%d@mail.com" % (number, i)
                    await c.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
                    committed.append((key, time.monotonic()))
                    i += 1

        writers = [asyncio.create_task(writer(n)) for n in range(8)]
        missed, late, pending, checked, ticks = [], [], [], 0, 0
        deadline = time.monotonic() + 4
        try:
            while time.monotonic() < deadline or pending or committed:
                if time.monotonic() >= deadline:
                    stop.set()
                pending.extend(committed)
                committed.clear()
                now, still = time.monotonic(), []
                for key, at in pending:
                    refreshed_at = follower._refreshed_at
                    found = follower.contains(key)
                    if at < refreshed_at and not found:
                        missed.append(key)
                    if found or now - at > 2 * INTERVAL:
                        checked += 1
                        if not found:
                            late.append((key, now - at))
                    else:
                        still.append((key, at))
                pending = still
                ticks += 1
                await asyncio.sleep(0.005)
                if time.monotonic() > deadline + 5:
                    break
        finally:
            stop.set()
            await asyncio.gather(*writers)
            await follower.aclose()
        return missed, late, checked, ticks, follower

    missed, late, checked, ticks, follower = asyncio.run(main())
    assert checked > 500, checked
    assert not missed
    assert not late, "%d of %d rows not found within %.2f s: %r" % (len(late), checked, 2 * INTERVAL, late[:3])
    (total,) = conn.execute("SELECT count(*) FROM %s" % table).fetchone()
    assert total == checked
    assert follower.refreshes > 10 and follower.reloads == 1
    assert ticks > 200  # the loop kept turning


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_reconnects_and_follows_reindex(conn, dsn, driver):
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s (email) SELECT 'u' || i FROM generate_series(1, 1000) i" % table)

    async def main():
        async with AsyncIndexFollower(connector(driver, dsn), index, interval=INTERVAL) as follower:
            assert follower.contains("u7") and follower.reconnects == 1
            backend = follower.backend_pid
            conn.execute("SELECT pg_terminate_backend(%s)", [backend])
            conn.execute("INSERT INTO %s (email) VALUES ('after-kill')" % table)
            for _ in range(100):
                await asyncio.sleep(INTERVAL / 2)
                if follower.reconnects >= 2 and follower.contains("after-kill"):
                    break
            assert follower.reconnects >= 2 and follower.contains("after-kill")
            assert follower.last_error is None
            reloads = follower.reloads
            conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
            conn.execute("INSERT INTO %s (email) VALUES ('after-reindex')" % table)
            for _ in range(100):
                await asyncio.sleep(INTERVAL / 2)
                if follower.contains("after-reindex"):
                    break
            assert follower.contains("after-reindex") and follower.reloads > reloads
            assert follower.filter.to_bytes() == conn.execute(
                "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
    asyncio.run(main())


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_a_large_filter_is_read_in_rows_of_a_megabyte(conn, dsn, driver):
    from bloomfilter import follow as follow_module
    table = "users_%s" % uuid.uuid4().hex[:10]
    index = table + "_bloom"
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s ON %s USING bloomfilter (email) WITH (capacity = 3000000)" % (index, table))
    conn.execute("INSERT INTO %s (email) SELECT 'u' || i FROM generate_series(1, 5000) i" % table)

    async def main():
        async with AsyncIndexFollower(connector(driver, dsn), index, interval=INTERVAL) as follower:
            value = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
            rows = -(-len(value) // follow_module._CHUNK_BYTES)
            assert rows >= 4
            assert (follower.last_rows, follower.last_bytes) == (rows, len(value))
            assert follower.filter.to_bytes() == value
            assert all(follower.contains("u%d" % i) for i in range(1, 5001))
    asyncio.run(main())


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg", "conninfo"])
def test_lower_expression_on_sql_ascii(ascii_dsn, driver):
    with psycopg.connect(ascii_dsn, autocommit=True) as c:
        table, index = make_table(c, "lower(email)")
        c.execute("INSERT INTO %s (email) SELECT 'User' || i || '@Mail.com' FROM generate_series(1, 1000) i" % table)

        async def main():
            conn = ascii_dsn if driver == "conninfo" else await connector(driver, ascii_dsn)()
            async with AsyncIndexFollower(conn, index,
                                          interval=INTERVAL, max_lag=5) as follower:
                assert all(follower.contains("USER%d@MAIL.COM" % i) for i in range(1, 1001))
                assert sum(follower.contains("ghost%d@mail.com" % i) for i in range(1000)) < 50
                assert follower.is_fresh()
                with pytest.raises(TypeError):
                    follower.contains(5)
        asyncio.run(main())
