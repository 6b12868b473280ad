"""bloomfilter.psycopg.register on every context psycopg 3 offers: a Connection, a cursor, an
AsyncConnection (await register(aconn), await register_async(aconn)), an async cursor, and as
the configure function of ConnectionPool and AsyncConnectionPool; on both the UTF8 and the
SQL_ASCII database. Neither driver's register leaves a connection in a transaction."""

import asyncio

import psycopg
import psycopg2
import psycopg2.extensions
import pytest
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, ConnectionPool

import bloomfilter.psycopg
import bloomfilter.psycopg2
from bloomfilter import Filter

pytestmark = pytest.mark.server

KEYS = ["user%d@mail.com" % i for i in range(100)]
QUERY = "SELECT bloom_agg(k, 1000, 0.01) FROM unnest(%s::text[]) k"


def expected():
    f = Filter.empty(1000, 0.01)
    f.update(KEYS)
    return f


@pytest.fixture(params=["utf8", "sql_ascii"])
def any_dsn(request, dsn, ascii_dsn):
    return dsn if request.param == "utf8" else ascii_dsn


def check_sync(cursor):
    f = cursor.execute(QUERY, [KEYS]).fetchone()[0]
    assert isinstance(f, Filter) and f == expected()
    assert cursor.execute("SELECT %s::bytea = %s::bloom::bytea", [f, f]).fetchone()[0] is True


async def check_async(cursor):
    await cursor.execute(QUERY, [KEYS])
    f = (await cursor.fetchone())[0]
    assert isinstance(f, Filter) and f == expected()
    await cursor.execute("SELECT %s::bytea = %s::bloom::bytea", [f, f])
    assert (await cursor.fetchone())[0] is True


@pytest.mark.parametrize("binary", [False, True])
def test_connection_outside_and_inside_a_transaction(any_dsn, binary):
    with psycopg.connect(any_dsn) as conn:  # not autocommit
        bloomfilter.psycopg.register(conn)
        assert conn.info.transaction_status == TransactionStatus.IDLE
        check_sync(conn.cursor(binary=binary))
        conn.rollback()
    with psycopg.connect(any_dsn) as conn:
        conn.execute("SELECT 1")
        bloomfilter.psycopg.register(conn)  # a savepoint inside the caller's transaction
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        check_sync(conn.cursor(binary=binary))


def test_cursor_only(any_dsn):
    with psycopg.connect(any_dsn, autocommit=True) as conn:
        cursor = conn.cursor()
        bloomfilter.psycopg.register(cursor)
        check_sync(cursor)
        # The connection's other cursors are as they were.
        assert not isinstance(conn.execute(QUERY, [KEYS]).fetchone()[0], Filter)


@pytest.mark.parametrize("form", ["register", "register_async", "cursor"])
def test_async_connection(any_dsn, form):
    async def main():
        async with await psycopg.AsyncConnection.connect(any_dsn) as aconn:
            if form == "cursor":
                cursor = aconn.cursor(binary=True)
                await bloomfilter.psycopg.register(cursor)
            else:
                await getattr(bloomfilter.psycopg, form)(aconn)
                cursor = aconn.cursor()
            assert aconn.info.transaction_status == TransactionStatus.IDLE
            await check_async(cursor)
    asyncio.run(main())


def test_connection_pool(any_dsn):
    with ConnectionPool(any_dsn, min_size=2, max_size=2, configure=bloomfilter.psycopg.register,
                        timeout=10) as pool:
        for _ in range(4):
            with pool.connection() as conn:
                check_sync(conn.cursor())


@pytest.mark.parametrize("configure", ["register", "register_async"])
def test_async_connection_pool(any_dsn, configure):
    async def main():
        async with AsyncConnectionPool(any_dsn, min_size=2, max_size=2, timeout=10,
                                       configure=getattr(bloomfilter.psycopg, configure)) as pool:
            async def one():
                async with pool.connection() as aconn:
                    await check_async(aconn.cursor(binary=True))
            await asyncio.gather(*(one() for _ in range(6)))
    asyncio.run(main())


def test_psycopg2_register_leaves_no_transaction(any_dsn):
    conn = psycopg2.connect(any_dsn)
    try:
        bloomfilter.psycopg2.register(conn)
        assert conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE
        cursor = conn.cursor()
        cursor.execute(QUERY, [KEYS])
        assert cursor.fetchone()[0] == expected()
        # Inside the caller's transaction: left in it, as it was.
        assert conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INTRANS
        bloomfilter.psycopg2.register(cursor)
        assert conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_INTRANS
        conn.rollback()
    finally:
        conn.close()
