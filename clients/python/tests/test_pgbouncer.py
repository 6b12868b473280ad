"""Through PgBouncer (tests/pgbouncer.py: processes of the tests' own, Debian's pgbouncer 1.18).

Session mode: the adapters (psycopg 3, a psycopg pool, psycopg2, asyncpg) with their default
settings, prepared statements included, and the followers (IndexFollower on psycopg and psycopg2,
MultiIndexFollower, AsyncIndexFollower on psycopg and asyncpg) work as on a direct connection; a
follower whose server process is terminated reconnects and reads the filter whole.

Transaction mode, each transaction sent to the other of two server processes: the adapters'
checks, bloom values read and Filter parameters answer as the server does with the settings the
README gives (psycopg prepare_threshold=None, asyncpg statement_cache_size=0, psycopg2 as it is);
the followers refuse with SessionChangedError, and one whose session changes after it started
(another client holds its server process, or a RELOAD points PgBouncer at another server, as after
a failover) keeps its copy as of its last refresh, then reconnects and reads the filter whole. A
follower on a database entry in session mode beside them works."""

import asyncio
import os
import time
import uuid

import asyncpg
import psycopg
import psycopg2
import pytest
from psycopg_pool import ConnectionPool

import bloomfilter.asyncpg
import bloomfilter.psycopg
import bloomfilter.psycopg2
from bloomfilter import Filter
from bloomfilter.follow import AsyncIndexFollower, IndexFollower, MultiIndexFollower, SessionChangedError
from clusters import Cluster
from pgbouncer import PgBouncer, binary

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(binary() is None, reason="pgbouncer is not installed (apt-get install pgbouncer; "
                                                "test/bootstrap.sh installs it)"),
]

PRESENT = ["user%d@mail.com" % i for i in range(0, 1000, 97)]
ABSENT = ["ghost%d@mail.com" % i for i in range(11)]
# More checks than psycopg's prepare_threshold (5): in session mode the queries are prepared.
CHECKS = PRESENT + ABSENT


def dbname(dsn):
    return dsn.split("=", 1)[1]


@pytest.fixture(scope="module")
def users(dsn):
    """A table of 1000 emails with its bloomfilter index, and the server's answers for CHECKS."""
    table = "users_%s" % uuid.uuid4().hex[:10]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)" % table)
        c.execute("INSERT INTO %s (email) SELECT 'user' || i || '@mail.com' FROM generate_series(0, 999) i"
                  % table)
        c.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (capacity = 100000)"
                  % (table, table))
        expected = [c.execute("SELECT bloom_index_contains(%s, %s)", [table + "_bloom", key]).fetchone()[0]
                    for key in CHECKS]
    assert expected[:len(PRESENT)] == [True] * len(PRESENT)
    return table, table + "_bloom", expected


@pytest.fixture(scope="module")
def session_mode():
    bouncer = PgBouncer("session")
    yield bouncer
    bouncer.remove()


@pytest.fixture(scope="module")
def transaction_mode(dsn):
    """Transaction mode, two server connections taken in turn, and the entry <database>_session
    in session mode beside it."""
    bouncer = PgBouncer("transaction", round_robin=True, pool_size=2,
                        session_entries={dbname(dsn) + "_session": dbname(dsn)})
    bouncer.warm(dsn)
    yield bouncer
    bouncer.remove()


@pytest.fixture
def lifo_transaction_mode(dsn):
    """Transaction mode as configured by default: the server connection released last is taken
    first, so a lone client keeps one server process until another client holds it."""
    bouncer = PgBouncer("transaction", pool_size=2)
    yield bouncer
    bouncer.remove()


@pytest.fixture
def admin(dsn):
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


# -- the adapters' checks ----------------------------------------------------------------------

def sync_checks(driver, conninfo, index, settings):
    """(answers to CHECKS, the server processes seen, a Filter read, whether it passed as a bloom
    parameter) over one connection (a pool's, lent anew for each query) of the driver."""
    check = "SELECT bloom_index_contains(%s, %s), pg_backend_pid()"
    if driver == "psycopg2":
        conn = psycopg2.connect(conninfo)
        conn.autocommit = True
        bloomfilter.psycopg2.register(conn)
        cursor = conn.cursor()

        def query(sql, parameters=()):
            cursor.execute(sql, parameters)
            return cursor.fetchone()
        close = conn.close
    elif driver == "psycopg_pool":
        pool = ConnectionPool(conninfo, min_size=1, max_size=1, kwargs=dict(autocommit=True, **settings),
                              configure=bloomfilter.psycopg.register)

        def query(sql, parameters=()):
            with pool.connection() as c:
                return c.execute(sql, parameters).fetchone()
        close = pool.close
    else:
        conn = psycopg.connect(conninfo, autocommit=True, **settings)
        bloomfilter.psycopg.register(conn)

        def query(sql, parameters=()):
            return conn.execute(sql, parameters).fetchone()
        close = conn.close
    try:
        answers, pids = [], set()
        for key in CHECKS:
            answer, pid = query(check, [index, key])
            answers.append(answer)
            pids.add(pid)
        f = query("SELECT bloom_index_filter(%s)", [index])[0]
        passed = query("SELECT bloom_contains(%s, %s)", [f, PRESENT[0]])[0]
        return answers, pids, f, passed
    finally:
        close()


async def asyncpg_checks(url, index, settings):
    conn = await asyncpg.connect(url, **settings)
    try:
        await bloomfilter.asyncpg.register(conn)
        answers, pids = [], set()
        for key in CHECKS:
            answer, pid = await conn.fetchrow("SELECT bloom_index_contains($1, $2), pg_backend_pid()", index, key)
            answers.append(answer)
            pids.add(pid)
        f = await conn.fetchval("SELECT bloom_index_filter($1)", index)
        passed = await conn.fetchval("SELECT bloom_contains($1, $2)", f, PRESENT[0])
        return answers, pids, f, passed
    finally:
        await conn.close()


def checks(driver, bouncer, dsn, index, settings):
    if driver == "asyncpg":
        return asyncio.run(asyncpg_checks(bouncer.url(dsn), index, settings))
    return sync_checks(driver, bouncer.dsn(dsn), index, settings)


DRIVERS = ["psycopg", "psycopg_pool", "psycopg2", "asyncpg"]
# What transaction mode needs (on PgBouncer 1.18, which does not carry prepared statements over
# from one server connection to the next): no prepared statements.
TRANSACTION_SETTINGS = {"psycopg": {"prepare_threshold": None}, "psycopg_pool": {"prepare_threshold": None},
                        "psycopg2": {}, "asyncpg": {"statement_cache_size": 0}}


@pytest.mark.parametrize("driver", DRIVERS)
def test_checks_in_session_mode(driver, dsn, users, session_mode):
    _, index, expected = users
    answers, pids, f, passed = checks(driver, session_mode, dsn, index, {})
    assert answers == expected
    assert isinstance(f, Filter) and all(f.contains(key) for key in PRESENT) and passed is True
    if driver != "psycopg_pool":
        assert len(pids) == 1


@pytest.mark.parametrize("driver", DRIVERS)
def test_checks_in_transaction_mode(driver, dsn, users, transaction_mode):
    _, index, expected = users
    answers, pids, f, passed = checks(driver, transaction_mode, dsn, index, TRANSACTION_SETTINGS[driver])
    assert len(pids) == 2  # the queries went to both server processes, in turn
    assert answers == expected
    assert isinstance(f, Filter) and all(f.contains(key) for key in PRESENT) and passed is True


# -- the followers -----------------------------------------------------------------------------

FOLLOWERS = ["psycopg", "psycopg2", "multi", "async-psycopg", "asyncpg"]


class Follower:
    """One kind of follower driven the same way: refresh(), contains(), close() and its counters."""

    def __init__(self, kind, bouncer, conninfo, index, settings=None):
        self.kind, self.loop = kind, None
        settings = settings or {}
        if kind in ("async-psycopg", "asyncpg"):
            self.loop = asyncio.new_event_loop()
            if kind == "asyncpg":
                url = bouncer.url(conninfo)
                connect = lambda: asyncpg.connect(url, **settings)  # noqa: E731
            else:
                connect = lambda: psycopg.AsyncConnection.connect(bouncer.dsn(conninfo))  # noqa: E731
            self.follower = AsyncIndexFollower(connect, index)
            self.index = self.follower
            try:
                self.refresh()
            except BaseException:
                self.close()
                raise
        elif kind == "multi":
            self.follower = MultiIndexFollower(bouncer.dsn(conninfo), [index], background=False)
            self.index = self.follower.index(index)
        else:
            module = psycopg if kind == "psycopg" else psycopg2
            self.follower = IndexFollower(lambda: module.connect(bouncer.dsn(conninfo)), index,
                                          background=False)
            self.index = self.follower

    def refresh(self):
        if self.loop is not None:
            return self.loop.run_until_complete(self.follower.refresh())
        return self.follower.refresh()

    def contains(self, key):
        return self.index.contains(key)

    def close(self):
        if self.loop is not None:
            self.loop.run_until_complete(self.follower.aclose())
            self.loop.close()
        else:
            self.follower.close()


def follows_inserts(follower, admin, table, tag, count=8):
    """Inserts `count` keys, one per refresh, each found after it: more queries than psycopg's
    prepare_threshold, and asyncpg's statements reused."""
    for i in range(count):
        key = "%s-%d@mail.com" % (tag, i)
        admin.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
        follower.refresh()
        assert follower.contains(key), key


@pytest.mark.parametrize("kind", FOLLOWERS)
def test_followers_in_session_mode(kind, dsn, users, session_mode, admin):
    table, index, _ = users
    follower = Follower(kind, session_mode, dsn, index)
    try:
        assert all(follower.contains(key) for key in PRESENT)
        follows_inserts(follower, admin, table, "session-%s" % kind)
        # The server process goes: PgBouncer ends the client's connection in session mode, and the
        # follower opens another, reading the filter whole.
        owner = follower.follower
        pid, reconnects, reloads = owner.backend_pid, owner.reconnects, follower.index.reloads
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        key = "after-terminate-%s@mail.com" % kind
        admin.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                follower.refresh()
                if follower.contains(key):
                    break
            except Exception:
                time.sleep(0.05)
        assert follower.contains(key)
        assert owner.backend_pid != pid and owner.reconnects == reconnects + 1
        assert follower.index.reloads == reloads + 1
    finally:
        follower.close()


@pytest.mark.parametrize("kind", FOLLOWERS + ["asyncpg-cache"])
def test_followers_refuse_transaction_mode(kind, dsn, users, transaction_mode):
    _, index, _ = users
    # asyncpg's own statements (its statement cache) or unnamed ones: the follower refuses.
    settings = {"statement_cache_size": 0} if kind == "asyncpg" else {}
    kind = "asyncpg" if kind == "asyncpg-cache" else kind
    with pytest.raises(SessionChangedError, match=r"pool_mode = transaction.*pool_mode = session"):
        Follower(kind, transaction_mode, dsn, index, settings).close()


@pytest.mark.parametrize("kind", FOLLOWERS)
def test_followers_on_a_session_entry_beside_transaction_mode(kind, dsn, users, transaction_mode, admin):
    table, index, _ = users
    follower = Follower(kind, transaction_mode, "dbname=%s_session" % dbname(dsn), index)
    try:
        assert all(follower.contains(key) for key in PRESENT)
        follows_inserts(follower, admin, table, "session-entry-%s" % kind)
        assert follower.index.last_error is None
    finally:
        follower.close()


@pytest.mark.parametrize("kind", ["psycopg", "asyncpg"])
def test_a_follower_whose_session_changes_refuses_then_reads_whole(kind, dsn, users, lifo_transaction_mode,
                                                                    admin):
    table, index, _ = users
    settings = {"statement_cache_size": 0} if kind == "asyncpg" else {}
    # Alone on the pool, the follower keeps the server process released last: it starts.
    follower = Follower(kind, lifo_transaction_mode, dsn, index, settings)
    holder = psycopg.connect(lifo_transaction_mode.dsn(dsn))
    try:
        owner = follower.follower
        pid, reconnects, reloads = owner.backend_pid, owner.reconnects, follower.index.reloads
        # Another client holds that server process in a transaction: the follower's next query
        # goes to the other one.
        assert holder.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
        key = "after-switch-%s@mail.com" % kind
        admin.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
        refreshes = follower.index.refreshes
        with pytest.raises(SessionChangedError, match="reached server process [0-9]+ after %d" % pid):
            follower.refresh()
        assert isinstance(follower.index.last_error, SessionChangedError)
        # Nothing of the other session's rows went into the copy: it is as of the last refresh.
        assert follower.index.refreshes == refreshes and not follower.contains(key)
        assert all(follower.contains(k) for k in PRESENT)
        holder.commit()
        # A new connection, on one server process again: the filter read whole.
        follower.refresh()
        assert follower.contains(key) and follower.index.last_error is None
        assert owner.reconnects == reconnects + 1 and follower.index.reloads == reloads + 1
    finally:
        holder.close()
        follower.close()


def test_a_follower_refuses_another_server_after_a_reload(dsn, users):
    """A failover behind PgBouncer in transaction mode: RELOAD with another host, and the
    follower's connection, still open, reaches another server, whose WAL positions are not the
    first one's. The follower refuses, then reads that server's filter whole."""
    table, index, _ = users
    other = Cluster("pgbouncer-failover")
    bouncer = follower = None
    try:
        with psycopg.connect(other.dsn(), autocommit=True) as c:
            c.execute('CREATE DATABASE "%s" TEMPLATE template0 ENCODING \'UTF8\' LOCALE \'C.UTF-8\'' % dbname(dsn))
        with psycopg.connect(other.dsn(dbname(dsn)), autocommit=True) as c:
            c.execute("CREATE EXTENSION bloomfilter")
            c.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)" % table)
            c.execute("INSERT INTO %s (email) VALUES ('only-there@mail.com')" % table)
            c.execute("CREATE INDEX %s ON %s USING bloomfilter (email) WITH (capacity = 100000)" % (index, table))
        bouncer = PgBouncer("transaction")
        follower = IndexFollower(lambda: psycopg.connect(bouncer.dsn(dsn)), index, background=False)
        assert follower.contains(PRESENT[0]) and not follower.contains("only-there@mail.com")
        reloads = follower.reloads
        bouncer.retarget(other.dir, other.port, dsn)
        with pytest.raises(SessionChangedError):
            follower.refresh()
        assert follower.contains(PRESENT[0]) and not follower.contains("only-there@mail.com")
        follower.refresh()
        assert follower.contains("only-there@mail.com") and follower.reloads == reloads + 1
        assert follower.filter.to_bytes() == psycopg.connect(other.dsn(dbname(dsn))).execute(
            "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
    finally:
        if follower is not None:
            follower.close()
        if bouncer is not None:
            bouncer.remove()
        other.remove()


def stale_after_restart(dsn, settings):
    """Seconds from the end of a PostgreSQL restart (pg_ctl stop -m fast, 2 s down, then start, in
    another thread) to the first successful refresh of a follower through PgBouncer in session mode,
    refreshing every 0.1 s throughout (as its background thread would)."""
    import threading
    server = Cluster("pgbouncer-restart")
    bouncer = follower = None
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as c:
            c.execute('CREATE DATABASE "%s" TEMPLATE template0 ENCODING \'UTF8\' LOCALE \'C.UTF-8\'' % dbname(dsn))
        with psycopg.connect(server.dsn(dbname(dsn)), autocommit=True) as c:
            c.execute("CREATE EXTENSION bloomfilter")
            c.execute("CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)")
            c.execute("CREATE INDEX users_bloom ON users USING bloomfilter (email)")
        # A client waiting for a server connection gives up after 60 s, not PgBouncer's 120.
        bouncer = PgBouncer("session", settings={"query_wait_timeout": 60, **settings})
        bouncer.retarget(server.dir, server.port, dsn)
        follower = IndexFollower(bouncer.dsn(dsn), "users_bloom", background=False)
        up = []

        def restart():
            server.stop("fast")
            time.sleep(2)  # down for 2 s, as a restart with a long checkpoint or an upgrade is
            server.start()
            up.append(time.monotonic())
        thread = threading.Thread(target=restart)
        failed = False
        thread.start()
        try:
            while True:
                try:
                    follower.refresh()
                    if up and failed:
                        return time.monotonic() - up[0]
                except Exception:
                    failed = True
                assert not up or time.monotonic() - up[0] < 60, "no refresh succeeded 60 s after the restart"
                time.sleep(0.1)
        finally:
            thread.join()
    finally:
        if follower is not None:
            follower.close()
        if bouncer is not None:
            bouncer.remove()
        server.remove()


@pytest.mark.parametrize("retry", [1, pytest.param(None, marks=pytest.mark.skipif(
    not os.environ.get("BLOOM_PGBOUNCER_DEFAULT_RETRY"),
    reason="15 s: BLOOM_PGBOUNCER_DEFAULT_RETRY=1 measures PgBouncer's default server_login_retry"))],
    ids=["server_login_retry=1", "default"])
def test_a_follower_after_a_postgresql_restart(dsn, retry):
    """After PostgreSQL restarts, PgBouncer refuses new server logins for server_login_retry
    seconds after the last one failed (15 by default): the follower, which tried while the server
    was down, stays stale that long. With server_login_retry = 1 it is fresh within seconds."""
    seconds = stale_after_restart(dsn, {} if retry is None else {"server_login_retry": retry})
    print("stale %.1f s after the restart (server_login_retry %s)" % (seconds, retry or "default, 15"))
    if retry is None:
        assert seconds > 5
    else:
        assert seconds < retry + 3
