"""bloomfilter.asyncpg: bloom loads as Filter and Filter is sent as bloom, in binary and text,
arrays included, on the UTF8 and the SQL_ASCII database; as create_pool(init=...)."""

import asyncio
import os

import asyncpg
import pytest

import bloomfilter.asyncpg
from bloomfilter import Filter

pytestmark = pytest.mark.server

KEYS = ["user%d@mail.com" % i for i in range(300)]


def database(conninfo):
    return dict(host=os.environ["PGHOST"], port=int(os.environ["PGPORT"]),
                user=os.environ.get("PGUSER", "postgres"), database=conninfo.split("=", 1)[1])


@pytest.fixture(params=["utf8", "sql_ascii"])
def any_db(request, dsn, ascii_dsn):
    return database(dsn if request.param == "utf8" else ascii_dsn)


@pytest.mark.parametrize("format", ["binary", "text"])
def test_loads_and_dumps(any_db, format):
    async def main():
        conn = await asyncpg.connect(**any_db)
        try:
            # Unregistered, asyncpg gives the text form.
            text = await conn.fetchval("SELECT bloom_agg(k, 1000, 0.01) FROM unnest($1::text[]) k", KEYS)
            assert isinstance(text, str) and text.startswith("\\x")
            await bloomfilter.asyncpg.register(conn, format=format)
            f = await conn.fetchval("SELECT bloom_agg(k, 1000, 0.01) FROM unnest($1::text[]) k", KEYS)
            assert isinstance(f, Filter) and f == Filter.from_text(text)
            assert all(k in f for k in KEYS)
            g = Filter.empty(1000, 0.01)
            g.update(KEYS)
            assert await conn.fetchval("SELECT $1::bloom::bytea = $2::bloom::bytea", g, f) is True
            assert await conn.fetchval("SELECT bloom_contains($1, 'user7@mail.com')", g) is True
            assert await conn.fetchval("SELECT bloom_contains($1, 'ghost@mail.com')", Filter.empty(10)) is False
            assert await conn.fetchval("SELECT $1::bloom[]", [f, g]) == [f, g]
            await conn.execute("CREATE TEMP TABLE t (f bloom)")
            await conn.executemany("INSERT INTO t VALUES ($1)", [(f,), (None,)])
            assert await conn.fetch("SELECT f FROM t") == [(f,), (None,)]
            with pytest.raises(asyncpg.DataError, match="takes a bloomfilter.Filter, not int"):
                await conn.fetchval("SELECT $1::bloom", 12)
            # A malformed value is refused by the server's validation, with its SQLSTATE.
            with pytest.raises(asyncpg.PostgresError) as error:
                await conn.fetchval("SELECT $1::text::bloom", "\\x00")
            assert error.value.sqlstate.startswith("22")
        finally:
            await conn.close()
    asyncio.run(main())


def test_pool_init(any_db):
    async def main():
        async with asyncpg.create_pool(**any_db, min_size=2, max_size=2,
                                       init=bloomfilter.asyncpg.register) as pool:
            results = await asyncio.gather(*(
                pool.fetchval("SELECT bloom_agg(k, 1000, 0.01) FROM unnest($1::text[]) k", KEYS)
                for _ in range(6)))
        assert all(isinstance(f, Filter) and f == results[0] for f in results)
    asyncio.run(main())
