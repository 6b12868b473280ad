"""bloomfilter.sqlalchemy with the SQLAlchemy Debian ships (1.4; the module uses nothing that
2.x changed): a Bloom column read and written as Filter, typed functions, a bloomfilter index
declared on a model and created by create_all; through psycopg2 (sync) and asyncpg (async),
on the UTF8 and the SQL_ASCII database."""

import asyncio
import os
import uuid

import pytest
import sqlalchemy
from sqlalchemy import (BigInteger, Boolean, Column, Index, Integer, MetaData, Table, Text, UniqueConstraint,
                        func, select)
from sqlalchemy.ext.asyncio import create_async_engine

from bloomfilter import Filter
from bloomfilter.sqlalchemy import Bloom, bloom_agg, bloom_contains, bloom_index_contains

pytestmark = pytest.mark.server

EMAILS = ["user%d@mail.com" % i for i in range(500)]


def url(driver, conninfo):
    return sqlalchemy.engine.URL.create(
        "postgresql+" + driver, username=os.environ.get("PGUSER", "postgres"),
        database=conninfo.split("=", 1)[1], query={"host": os.environ["PGHOST"], "port": os.environ["PGPORT"]})


def tables():
    suffix = uuid.uuid4().hex[:8]
    metadata = MetaData()
    users = Table("users_%s" % suffix, metadata,
                  Column("id", Integer, primary_key=True),
                  Column("email", Text, nullable=False))
    Index("users_%s_bloom" % suffix, users.c.email, postgresql_using="bloomfilter",
          postgresql_with={"capacity": 10000, "error_rate": 0.01})
    filters = Table("filters_%s" % suffix, metadata,
                    Column("id", Integer, primary_key=True), Column("f", Bloom))
    return metadata, users, filters, "users_%s_bloom" % suffix


def check_compiled(index_name):
    # Typed without type_=: usable in where() and as a Python bool.
    assert isinstance(func.bloom_index_contains(index_name, "x").type, Boolean)
    assert isinstance(bloom_index_contains(index_name, "x").type, Boolean)
    assert isinstance(func.bloom_agg(Column("e", Text)).type, Bloom)


def statements(users, filters, index_name):
    f = Filter.empty(1000, 0.01)
    f.update(EMAILS[:10])
    return [
        ("insert_users", users.insert(), [{"email": e} for e in EMAILS]),
        ("present", select(bloom_index_contains(index_name, "user7@mail.com")), None),
        ("ghosts", select(func.count()).select_from(
            select(func.generate_series(1, 500).label("i")).subquery("g")).where(
                bloom_index_contains(index_name, func.concat("ghost", sqlalchemy.text("i"), "@mail.com"))), None),
        ("insert_filter", filters.insert(), [{"id": 1, "f": f}, {"id": 2, "f": None}]),
        ("insert_agg", filters.insert().from_select(
            ["id", "f"], select(sqlalchemy.literal(3), bloom_agg(users.c.email, 1000, 0.01))), None),
        ("read", select(filters.c.id, filters.c.f).order_by(filters.c.id), None),
        ("where", select(filters.c.id).where(filters.c.f == f), None),
        ("contains", select(bloom_contains(filters.c.f, "user3@mail.com")).where(filters.c.id == 1), None),
    ], f


def check_results(results, f):
    assert results["present"] is True
    assert results["ghosts"] < 25
    rows = results["read"]
    assert [r[0] for r in rows] == [1, 2, 3]
    assert rows[0][1] == f and rows[1][1] is None
    assert isinstance(rows[2][1], Filter) and all(e in rows[2][1] for e in EMAILS)
    assert results["where"] == [1]
    assert results["contains"] is True


@pytest.fixture(params=["utf8", "sql_ascii"])
def any_dsn(request, dsn, ascii_dsn):
    return dsn if request.param == "utf8" else ascii_dsn


def test_psycopg2(any_dsn):
    engine = sqlalchemy.create_engine(url("psycopg2", any_dsn))
    metadata, users, filters, index_name = tables()
    check_compiled(index_name)
    try:
        metadata.create_all(engine)
        with engine.connect() as c:
            assert c.execute(sqlalchemy.text(
                "SELECT pg_get_indexdef(%r::regclass)" % index_name)).scalar().find("USING bloomfilter") > 0
        steps, f = statements(users, filters, index_name)
        results = {}
        with engine.begin() as c:
            for name, statement, parameters in steps:
                result = c.execute(statement, parameters) if parameters else c.execute(statement)
                if name in ("present", "ghosts", "contains"):
                    results[name] = result.scalar()
                elif name == "read":
                    results[name] = [tuple(r) for r in result]
                elif name == "where":
                    results[name] = [r[0] for r in result]
        check_results(results, f)
    finally:
        metadata.drop_all(engine)
        engine.dispose()


def test_asyncpg(any_dsn):
    async def main():
        engine = create_async_engine(url("asyncpg", any_dsn))
        metadata, users, filters, index_name = tables()
        try:
            async with engine.begin() as c:
                await c.run_sync(metadata.create_all)
            steps, f = statements(users, filters, index_name)
            results = {}
            async with engine.begin() as c:
                for name, statement, parameters in steps:
                    result = await (c.execute(statement, parameters) if parameters else c.execute(statement))
                    if name in ("present", "ghosts", "contains"):
                        results[name] = result.scalar()
                    elif name == "read":
                        results[name] = [tuple(r) for r in result]
                    elif name == "where":
                        results[name] = [r[0] for r in result]
            check_results(results, f)
        finally:
            async with engine.begin() as c:
                await c.run_sync(metadata.drop_all)
            await engine.dispose()
    asyncio.run(main())


# -- a composite key: UNIQUE (tenant_id, email) -----------------------------------------------

def composite_tables():
    suffix = uuid.uuid4().hex[:8]
    metadata = MetaData()
    accounts = Table("accounts_%s" % suffix, metadata,
                     Column("id", Integer, primary_key=True),
                     Column("tenant_id", BigInteger, nullable=False),
                     Column("email", Text, nullable=False),
                     UniqueConstraint("tenant_id", "email"))
    pair = Index("accounts_%s_bloom" % suffix, accounts.c.tenant_id, accounts.c.email,
                 postgresql_using="bloomfilter", postgresql_with={"capacity": 10000, "error_rate": 0.01})
    lower = Index("accounts_%s_lower_bloom" % suffix, accounts.c.tenant_id, func.lower(accounts.c.email),
                  postgresql_using="bloomfilter")
    return metadata, accounts, pair.name, lower.name


def composite_statements(accounts, pair, lower):
    """(name, statement) of the checks, after the rows: tenant t has user<i>@mail.com for
    i < 100 * t, and 42 has a@x.com."""
    return [
        ("pair", select(func.bloom_index_contains(pair, 42, "a@x.com"))),
        ("other_tenant", select(func.bloom_index_contains(pair, 43, "a@x.com"))),
        ("swapped", select(bloom_index_contains(pair, 42, "b@x.com"))),
        ("lower", select(func.bloom_index_contains(lower, 42, "A@X.COM"))),
        ("missed", select(func.count()).select_from(accounts).where(
            ~func.bloom_index_contains(pair, accounts.c.tenant_id, accounts.c.email))),
        ("ghosts", select(func.count()).select_from(accounts).where(
            func.bloom_index_contains(pair, accounts.c.tenant_id + 1000, accounts.c.email))),
    ]


def composite_rows():
    return [{"tenant_id": 42, "email": "a@x.com"}] + [
        {"tenant_id": t, "email": "user%d@mail.com" % i} for t in range(1, 4) for i in range(100 * t)]


COMPOSITE_ANSWERS = {"pair": True, "other_tenant": False, "swapped": False, "lower": True, "missed": 0}


def check_composite(results):
    assert {k: results[k] for k in COMPOSITE_ANSWERS} == COMPOSITE_ANSWERS
    assert results["ghosts"] < 30  # of 601 pairs, at 1%
    assert "(tenant_id, email)" in results["indexdef"] and "USING bloomfilter" in results["indexdef"]


def test_composite_psycopg2(dsn):
    engine = sqlalchemy.create_engine(url("psycopg2", dsn))
    metadata, accounts, pair, lower = composite_tables()
    assert isinstance(func.bloom_index_contains(pair, 42, "a@x.com").type, Boolean)
    try:
        metadata.create_all(engine)
        with engine.begin() as c:
            c.execute(accounts.insert(), composite_rows())
            results = {name: c.execute(statement).scalar()
                       for name, statement in composite_statements(accounts, pair, lower)}
            results["indexdef"] = c.execute(sqlalchemy.text(
                "SELECT pg_get_indexdef(%r::regclass)" % pair)).scalar()
        check_composite(results)
    finally:
        metadata.drop_all(engine)
        engine.dispose()


def test_composite_asyncpg(dsn):
    async def main():
        engine = create_async_engine(url("asyncpg", dsn))
        metadata, accounts, pair, lower = composite_tables()
        try:
            async with engine.begin() as c:
                await c.run_sync(metadata.create_all)
            async with engine.begin() as c:
                await c.execute(accounts.insert(), composite_rows())
                results = {}
                for name, statement in composite_statements(accounts, pair, lower):
                    results[name] = (await c.execute(statement)).scalar()
                results["indexdef"] = (await c.execute(sqlalchemy.text(
                    "SELECT pg_get_indexdef(%r::regclass)" % pair))).scalar()
            check_composite(results)
        finally:
            async with engine.begin() as c:
                await c.run_sync(metadata.drop_all)
            await engine.dispose()
    asyncio.run(main())
