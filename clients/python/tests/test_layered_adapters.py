"""The filter of a default 2.2 index (made with no options: it grows, and bloom_index_filter
gives a layered value, format version 3) read through every adapter as a LayeredFilter, as
Filter.from_bytes reads it: SQLAlchemy's func.bloom_index_filter (psycopg2 and asyncpg engines,
and a mapped Bloom attribute holding such a value, read-only), psycopg (text and binary),
psycopg2, asyncpg (binary and text). Adding to it in place is refused with a clear error."""

import asyncio
import os
import uuid

import pytest
import sqlalchemy
from sqlalchemy import Column, Integer, event, func, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import Session, declarative_base

from bloomfilter import FORMAT_VERSION_LAYERED, Filter, LayeredFilter
import bloomfilter.sqlalchemy
from bloomfilter.sqlalchemy import Bloom

pytestmark = pytest.mark.server

EMAILS = ["user%d@mail.com" % i for i in range(2000)]


def url(driver, conninfo):
    return sqlalchemy.engine.URL.create(
        "postgresql+" + driver, username=os.environ.get("PGUSER", "postgres"),
        database=conninfo.split("=", 1)[1], query={"host": os.environ["PGHOST"], "port": os.environ["PGPORT"]})


@pytest.fixture(scope="module")
def default_index(dsn):
    """A table of EMAILS with a bloomfilter index made as the README's "First use" makes it, with
    no options: its name, and its filter's bytes as the server gives them."""
    import psycopg
    table = "layered_%s" % uuid.uuid4().hex[:10]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email text NOT NULL)" % table)
        with conn.cursor() as cursor:
            cursor.executemany("INSERT INTO %s (email) VALUES (%%s)" % table, [(e,) for e in EMAILS])
        conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email)" % (table, table))
        data = conn.execute("SELECT bloom_index_filter(%s)::bytea", [table + "_bloom"]).fetchone()[0]
        assert data[4] == FORMAT_VERSION_LAYERED  # a default 2.2 index is a layered value
        yield table + "_bloom", bytes(data)
        conn.execute("DROP TABLE %s" % table)


def check_layered(f, data):
    assert isinstance(f, LayeredFilter), type(f)
    assert f.to_bytes() == data
    assert f.contains_many(EMAILS) == [True] * len(EMAILS)
    assert all(e in f for e in EMAILS[::50])


def check_refused(f):
    for call in (lambda: f.add("new@mail.com"), lambda: f.update(["new@mail.com"]), lambda: f | f):
        with pytest.raises(ValueError, match="layered bloom value"):
            call()


@pytest.mark.parametrize("driver", ["psycopg2", "asyncpg"])
def test_sqlalchemy_func_bloom_index_filter(dsn, default_index, driver):
    index, data = default_index
    statement = select(func.bloom_index_filter(index))
    if driver == "psycopg2":
        engine = sqlalchemy.create_engine(url(driver, dsn), future=True)
        try:
            with Session(engine) as session:
                f = session.scalar(statement)
        finally:
            engine.dispose()
    else:
        async def main():
            engine = create_async_engine(url(driver, dsn))
            try:
                async with engine.connect() as c:
                    return (await c.execute(statement)).scalar()
            finally:
                await engine.dispose()
        f = asyncio.run(main())
    check_layered(f, data)
    assert isinstance(f, bloomfilter.sqlalchemy.MutableLayeredFilter)
    check_refused(f)
    with pytest.raises(ValueError, match=r"add\(\) refused: .* read-only"):
        f.add("new@mail.com")
    assert f.to_bytes() == data  # unchanged by the refusals


Base = declarative_base()


class Snapshot(Base):
    __tablename__ = "layered_snapshots_%s" % uuid.uuid4().hex[:8]
    id = Column(Integer, primary_key=True)
    f = Column(Bloom)


def test_sqlalchemy_mapped_attribute(dsn, default_index):
    """A Bloom attribute holding a layered value: loaded read-only, add() refused and no UPDATE
    owed; stored again when assigned, and a LayeredFilter assigned is written as it is."""
    index, data = default_index
    engine = sqlalchemy.create_engine(url("psycopg2", dsn), future=True)
    Base.metadata.create_all(engine)
    updates = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE"):
            updates.append(statement)
    event.listen(engine, "before_cursor_execute", record)
    try:
        with Session(engine) as session:
            session.add(Snapshot(id=1, f=Filter.from_bytes(data)))  # a LayeredFilter assigned
            session.commit()
        with Session(engine) as session:
            snapshot = session.get(Snapshot, 1)
            check_layered(snapshot.f, data)
            check_refused(snapshot.f)
            session.commit()
            assert updates == []
            snapshot.f = Filter.empty(100, 0.01).update(["a@mail.com"])
            session.commit()
            assert len(updates) == 1
            snapshot.f = session.scalar(select(func.bloom_index_filter(index)))
            session.commit()
        with Session(engine) as session:
            check_layered(session.get(Snapshot, 1).f, data)
    finally:
        event.remove(engine, "before_cursor_execute", record)
        Base.metadata.drop_all(engine)
        engine.dispose()


def test_psycopg(dsn, conn, default_index):
    import psycopg
    index, data = default_index
    check_layered(conn.execute("SELECT bloom_index_filter(%s)", [index]).fetchone()[0], data)
    check_layered(conn.execute("SELECT bloom_index_filter(%s)", [index], binary=True).fetchone()[0], data)
    with psycopg.connect(dsn) as plain:  # no adapter: the text form, which from_text reads
        check_layered(Filter.from_text(plain.execute("SELECT bloom_index_filter(%s)", [index]).fetchone()[0]), data)


def test_psycopg2(conn2, default_index):
    index, data = default_index
    with conn2.cursor() as cursor:
        cursor.execute("SELECT bloom_index_filter(%s)", [index])
        check_layered(cursor.fetchone()[0], data)


@pytest.mark.parametrize("format", ["binary", "text"])
def test_asyncpg(dsn, default_index, format):
    import asyncpg
    import bloomfilter.asyncpg
    index, data = default_index

    async def main():
        conn = await asyncpg.connect(host=os.environ["PGHOST"], port=int(os.environ["PGPORT"]),
                                     user=os.environ.get("PGUSER", "postgres"),
                                     database=dsn.split("=", 1)[1])
        try:
            await bloomfilter.asyncpg.register(conn, format=format)
            return await conn.fetchval("SELECT bloom_index_filter($1)", index)
        finally:
            await conn.close()
    check_layered(asyncio.run(main()), data)
