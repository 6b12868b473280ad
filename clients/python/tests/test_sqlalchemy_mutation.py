"""A Bloom column's value changed in place reaches the database: the ORM sends the UPDATE after
f.add(k), f.update(keys), f |= g and the same filter assigned again, and the stored filter
(checked by the server, bloom_contains) then has the key. Written with the 2.x API (select(),
Session.scalars, Session.get) on the SQLAlchemy Debian ships (1.4, future=True), through psycopg2,
and an AsyncSession through asyncpg."""

import asyncio
import os
import pickle
import uuid

import pytest
import sqlalchemy
from sqlalchemy import Column, Integer, event, func, select
from sqlalchemy.orm import Session, declarative_base

from bloomfilter import Filter
from bloomfilter.sqlalchemy import Bloom, bloom_add, bloom_contains

pytestmark = pytest.mark.server

Base = declarative_base()


class Snapshot(Base):
    __tablename__ = "snapshots_%s" % uuid.uuid4().hex[:8]
    id = Column(Integer, primary_key=True)
    f = Column(Bloom)
    # A Python-side default: set on the object by the flush, not by an attribute event.
    g = Column(Bloom, default=lambda: Filter.empty(1000, 0.01))


def url(driver, conninfo):
    return sqlalchemy.engine.URL.create(
        "postgresql+" + driver, username=os.environ.get("PGUSER", "postgres"),
        database=conninfo.split("=", 1)[1],
        query={"host": os.environ["PGHOST"], "port": os.environ["PGPORT"]})


@pytest.fixture(scope="module")
def engine(dsn):
    engine = sqlalchemy.create_engine(url("psycopg2", dsn), future=True)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture
def updates(engine):
    """The UPDATE statements sent, as a list growing while the test runs."""
    sent = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE"):
            sent.append(statement)
    event.listen(engine, "before_cursor_execute", record)
    yield sent
    event.remove(engine, "before_cursor_execute", record)


def new_row(engine, *keys):
    """A committed row whose filter holds `keys`; its id."""
    f = Filter.empty(1000, 0.01)
    f.update(keys)
    with Session(engine, future=True) as session:
        snapshot = Snapshot(f=f)
        session.add(snapshot)
        session.commit()
        return snapshot.id


def stored(engine, row_id, key, column="f"):
    """The server's answer for `key` in the stored filter, and the client's on the filter read back
    in a new session."""
    with Session(engine, future=True) as session:
        in_sql = session.scalar(select(bloom_contains(getattr(Snapshot, column), key))
                                .where(Snapshot.id == row_id))
        f = getattr(session.get(Snapshot, row_id), column)
        return in_sql, key in f


def load(session, row_id):
    return session.scalars(select(Snapshot).where(Snapshot.id == row_id)).one()


def other_with(key):
    g = Filter.empty(1000, 0.01)
    g.add(key)
    return g


def add(s):
    s.f.add("new@mail.com")


def add_through_a_name(s):
    f = s.f
    f.add("new@mail.com")


def update_list(s):
    s.f.update(["new@mail.com", "other@mail.com"])


def update_generator(s):
    s.f.update(k for k in ["other@mail.com", "new@mail.com"])


def union_augmented(s):
    s.f |= other_with("new@mail.com")     # a new filter (Filter has no in-place union), assigned


def union_assigned(s):
    s.f = s.f.union(other_with("new@mail.com"))


def add_then_same_object_again(s):
    s.f.add("new@mail.com")
    s.f = s.f


def unseen_change_then_same_object_again(s):
    # A change the ORM cannot see (Filter's own add, called on the value): assigning the same
    # object again says it changed.
    Filter.add(s.f, "new@mail.com")
    s.f = s.f


MUTATIONS = {m.__name__: m for m in [add, add_through_a_name, update_list, update_generator,
                                     union_augmented, union_assigned, add_then_same_object_again,
                                     unseen_change_then_same_object_again]}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_change_in_place_is_stored(engine, updates, mutation):
    row_id = new_row(engine, "old@mail.com")
    with Session(engine, future=True) as session:
        snapshot = load(session, row_id)
        assert "new@mail.com" not in snapshot.f
        MUTATIONS[mutation](snapshot)
        assert "new@mail.com" in snapshot.f
        session.commit()
    assert stored(engine, row_id, "new@mail.com") == (True, True), \
        "the stored filter lacks the key after %s and commit (UPDATEs sent: %d)" % (
            mutation, len(updates))
    assert len(updates) == 1
    assert stored(engine, row_id, "old@mail.com") == (True, True)


def test_reading_sends_no_update(engine, updates):
    row_id = new_row(engine, "old@mail.com")
    with Session(engine, future=True) as session:
        snapshot = load(session, row_id)
        assert "old@mail.com" in snapshot.f and snapshot.f.contains("x") is False
        snapshot.f.info(), snapshot.f.to_bytes(), snapshot.f.copy().add("x")
        assert not session.dirty
        session.commit()
    assert updates == []


def test_changes_across_flushes_and_rows(engine):
    a, b = new_row(engine), new_row(engine)
    with Session(engine, future=True) as session:
        first, second = session.get(Snapshot, a), session.get(Snapshot, b)
        first.f.add("one")
        session.flush()
        first.f.add("two")           # after the flush: a second UPDATE
        second.f.update(["three"])
        session.commit()
    assert stored(engine, a, "one") == (True, True) and stored(engine, a, "two") == (True, True)
    assert stored(engine, b, "three") == (True, True) and stored(engine, b, "one") == (False, False)


def test_an_update_refused_halfway_and_a_value_of_another_type(engine):
    row_id = new_row(engine)
    with Session(engine, future=True) as session:
        snapshot = session.get(Snapshot, row_id)
        with pytest.raises(TypeError):
            snapshot.f.update(["before@mail.com", None, "after@mail.com"])
        with pytest.raises(TypeError, match="a Bloom value is a bloomfilter.Filter, not str"):
            snapshot.f = "\\x00"
        session.commit()
    assert stored(engine, row_id, "before@mail.com") == (True, True)
    assert stored(engine, row_id, "after@mail.com") == (False, False)


def test_an_assigned_filter_and_a_default_are_tracked(engine):
    mine = Filter.empty(1000, 0.01)
    with Session(engine, future=True) as session:
        snapshot = Snapshot(f=mine)
        session.add(snapshot)
        session.flush()              # INSERT; g gets its default
        snapshot.f.add("after insert")
        snapshot.g.add("in the default")
        session.commit()
        row_id = snapshot.id
    assert stored(engine, row_id, "after insert") == (True, True)
    assert stored(engine, row_id, "in the default", column="g") == (True, True)
    # The attribute holds a copy of the filter assigned (as MutableDict does for a dict).
    assert "after insert" not in mine


def test_an_sql_expression_still_assigns(engine):
    row_id = new_row(engine, "old@mail.com")
    with Session(engine, future=True) as session:
        snapshot = session.get(Snapshot, row_id)
        snapshot.f = bloom_add(Snapshot.f, "new@mail.com")
        session.commit()
        assert "new@mail.com" in snapshot.f and "old@mail.com" in snapshot.f   # expired, read again
        snapshot.f.add("then@mail.com")
        session.commit()
    assert stored(engine, row_id, "new@mail.com") == (True, True)
    assert stored(engine, row_id, "then@mail.com") == (True, True)


def test_detached_merged_and_pickled_objects(engine):
    a, b, c = new_row(engine), new_row(engine), new_row(engine)
    with Session(engine, future=True) as session:
        detached, merged, pickled = [session.get(Snapshot, i) for i in (a, b, c)]
    # Closed with the block: detached, with their values (not expired).
    detached.f.add("detached")
    merged.f.add("merged")
    pickled = pickle.loads(pickle.dumps(pickled))
    pickled.f.add("pickled")
    with Session(engine, future=True) as session:
        session.add(detached)
        session.merge(merged)
        session.add(pickled)
        session.commit()
    assert stored(engine, a, "detached") == (True, True)
    assert stored(engine, b, "merged") == (True, True)
    assert stored(engine, c, "pickled") == (True, True)


def test_core_rows_and_sessions_read_filters(engine):
    row_id = new_row(engine, "old@mail.com")
    with engine.connect() as conn:
        f = conn.execute(select(Snapshot.f).where(Snapshot.id == row_id)).scalar_one()
    assert isinstance(f, Filter) and "old@mail.com" in f
    with Session(engine, future=True) as session:
        f = session.scalars(select(Snapshot.f).where(Snapshot.id == row_id)).one()
        assert isinstance(f, Filter) and "old@mail.com" in f
        assert session.scalar(select(func.count()).select_from(Snapshot).where(
            bloom_contains(Snapshot.f, "old@mail.com"), Snapshot.id == row_id)) == 1


def test_async_session(dsn, engine):
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
    row_id = new_row(engine, "old@mail.com")

    async def main():
        aengine = create_async_engine(url("asyncpg", dsn))
        try:
            async with AsyncSession(aengine) as session:
                snapshot = (await session.scalars(select(Snapshot).where(Snapshot.id == row_id))).one()
                snapshot.f.add("async@mail.com")
                await session.commit()
        finally:
            await aengine.dispose()
    asyncio.run(main())
    assert stored(engine, row_id, "async@mail.com") == (True, True)
