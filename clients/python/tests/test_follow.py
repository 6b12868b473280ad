"""IndexFollower against a server: it finds every committed row within two intervals, never
misses a row committed before its last refresh, costs one query when nothing changed, and
recovers from a dropped connection and from REINDEX CONCURRENTLY."""

import queue
import threading
import time
import uuid

import psycopg
import pytest

from bloomfilter.follow import IndexFollower, UnsupportedIndexError

pytestmark = pytest.mark.server

INTERVAL = 0.1


def make_table(conn, expression="email", capacity=200_000, error_rate=0.01, column_type="text"):
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (id bigserial PRIMARY KEY, email %s NOT NULL)" % (table, column_type))
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (%s) WITH (capacity = %d, error_rate = %s)"
                 % (table, table, expression, capacity, error_rate))
    return table, table + "_bloom"


def test_follows_inserts_and_costs_one_query_when_idle(conn, dsn):
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i" % table)
    with IndexFollower(psycopg.connect(dsn), index, background=False) as follower:
        assert all(follower.contains("user%d@mail.com" % i) for i in range(1, 5001))
        assert sum(follower.contains("ghost%d@mail.com" % i) for i in range(5000)) < 100
        assert follower.filter.to_bytes() == conn.execute(
            "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
        # Nothing changed: one query, whose only row is the 36-byte header.
        before = follower.queries
        follower.refresh()
        assert follower.queries == before + 1
        assert (follower.last_rows, follower.last_bytes) == (1, 36)
        conn.execute("INSERT INTO %s (email) VALUES ('new@mail.com')" % table)
        follower.refresh()
        assert "new@mail.com" in follower
        assert follower.last_rows == 2  # the header and the one page the key changed
        assert follower.filter.to_bytes()[36:] == conn.execute(
            "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0][36:]
        assert follower.lag < 5
        with pytest.raises(TypeError):
            follower.contains(5)


def test_eight_concurrent_clients(conn, dsn):
    """Rows committed by 8 clients are all found within two intervals of their commit, and no
    row committed before the start of the last refresh is ever missing."""
    table, index = make_table(conn)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    committed = queue.Queue()
    stop = threading.Event()
    errors = []

    def client(number):
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                i = 0
                while not stop.is_set():
                    key = "c%d.%d@mail.com" % (number, i)
                    c.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
                    committed.put((key, time.monotonic()))
                    i += 1
                    time.sleep(0.002)
        except Exception as error:  # reported below
            errors.append(error)

    late, missed, checked, delays = [], [], 0, []
    clients = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in clients:
        t.start()
    deadline = time.monotonic() + 6
    pending = []
    try:
        while time.monotonic() < deadline or not committed.empty() or pending:
            if time.monotonic() >= deadline:
                stop.set()
            try:
                while True:
                    pending.append(committed.get_nowait())
            except queue.Empty:
                pass
            now = time.monotonic()
            still = []
            for key, at in pending:
                refreshed_at = follower._refreshed_at
                found = follower.contains(key)
                if at < refreshed_at and not found:
                    missed.append(key)  # committed before the last refresh began: never allowed
                if found:
                    delays.append(now - at)
                    checked += 1
                elif now - at > 2 * INTERVAL:
                    late.append((key, now - at))
                    checked += 1
                else:
                    still.append((key, at))
            pending = still
            time.sleep(0.005)
    finally:
        stop.set()
        for t in clients:
            t.join()
        follower.close()
    assert not errors
    assert checked > 1000
    assert not missed
    assert not late, "%d of %d rows not found within %.2f s, e.g. %r" % (len(late), checked, 2 * INTERVAL, late[:3])
    (total,) = conn.execute("SELECT count(*) FROM %s" % table).fetchone()
    assert total == checked


def test_dropped_connection(conn, dsn):
    table, index = make_table(conn)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    try:
        first_pid = follower.backend_pid
        conn.execute("SELECT pg_terminate_backend(%s)", [first_pid])
        conn.execute("INSERT INTO %s (email) SELECT 'after' || i FROM generate_series(1, 2000) i" % table)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (follower.backend_pid != first_pid and follower.lag < INTERVAL):
            time.sleep(0.02)
        assert follower.backend_pid != first_pid and follower.reconnects >= 1
        time.sleep(3 * INTERVAL)
        assert all(follower.contains("after%d" % i) for i in range(1, 2001))
    finally:
        follower.close()
    # On demand: the refresh that meets the dropped connection raises, the next reconnects.
    follower = IndexFollower(psycopg.connect(dsn), index, background=False)
    conn.execute("SELECT pg_terminate_backend(%s)", [follower.backend_pid])
    with pytest.raises(psycopg.OperationalError):
        follower.refresh()
    conn.execute("INSERT INTO %s (email) VALUES ('later')" % table)
    follower.refresh()
    assert "later" in follower
    follower.close()


def test_reconnection_loads_the_filter_again(conn, dsn):
    """A new connection may reach another server (a standby promoted after the primary failed),
    whose WAL positions are not those of the old one: one behind the old position changes pages
    at positions the follower takes for old. So the first refresh on a new connection reads the
    filter whole, as if it had started there."""
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s (email) VALUES ('before')" % table)
    follower = IndexFollower(lambda: psycopg.connect(dsn, autocommit=True), index, background=False)
    try:
        assert follower.reloads == 1
        conn.execute("SELECT pg_terminate_backend(%s)", [follower.backend_pid])
        with pytest.raises(psycopg.OperationalError):
            follower.refresh()
        conn.execute("INSERT INTO %s (email) VALUES ('after')" % table)
        follower.refresh()
        assert follower.reconnects == 2 and follower.reloads == 2
        assert follower.last_rows == 1 and follower.last_bytes == len(follower.filter.to_bytes())
        assert "before" in follower and "after" in follower
        follower.refresh()
        assert follower.reloads == 2
    finally:
        follower.close()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_a_large_filter_is_read_in_rows_of_a_megabyte(conn, dsn, driver):
    """libpq keeps its input buffer as large as the largest row it received: the filter comes in
    rows of 1 MB, not one row of the whole value."""
    from bloomfilter import follow as follow_module
    table, index = make_table(conn, capacity=3_000_000)
    conn.execute("INSERT INTO %s (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i" % table)
    if driver == "psycopg":
        connect = lambda: psycopg.connect(dsn, autocommit=True)
    else:
        psycopg2 = pytest.importorskip("psycopg2")
        connect = lambda: psycopg2.connect(dsn)
    with IndexFollower(connect, index, background=False) as follower:
        value = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
        rows = -(-len(value) // follow_module._CHUNK_BYTES)
        assert rows >= 4
        assert (follower.last_rows, follower.last_bytes) == (rows, len(value))
        assert follower.filter.to_bytes() == value
        assert all(follower.contains("user%d@mail.com" % i) for i in range(1, 5001))


def test_reindex_concurrently_and_resize(conn, dsn):
    table, index = make_table(conn, capacity=50_000)
    conn.execute("INSERT INTO %s (email) SELECT 'before' || i FROM generate_series(1, 5000) i" % table)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    stop = threading.Event()
    inserted = []

    def insert():
        with psycopg.connect(dsn, autocommit=True) as c:
            i = 0
            while not stop.is_set():
                c.execute("INSERT INTO %s (email) VALUES (%%s)" % table, ["during%d" % i])
                inserted.append("during%d" % i)
                i += 1

    writer = threading.Thread(target=insert)
    writer.start()
    try:
        time.sleep(0.3)
        reloads = follower.reloads
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        time.sleep(0.3)
        conn.execute("ALTER INDEX %s SET (capacity = 80000)" % index)
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        time.sleep(0.3)
        stop.set()
        writer.join()
        follower.refresh()
        assert follower.reloads >= reloads + 2  # a new index under the name, then new parameters
        assert follower.filter.capacity == 80000
        assert all(follower.contains("before%d" % i) for i in range(1, 5001))
        assert all(follower.contains(key) for key in inserted)
        assert follower.filter.to_bytes()[36:] == conn.execute(
            "SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0][36:]
    finally:
        stop.set()
        follower.close()


def test_no_false_negative_through_reindex_and_dropped_connection(conn, dsn):
    """While 4 clients insert, the index is rebuilt concurrently (twice, the second time with
    new parameters) and the follower's connection is dropped; all along, every row committed
    before the start of the follower's last successful refresh is found."""
    table, index = make_table(conn, capacity=50_000)
    follower = IndexFollower(psycopg.connect(dsn), index, interval=INTERVAL)
    committed = []  # (time.monotonic() once the INSERT has committed, key)
    lock = threading.Lock()
    stop = threading.Event()
    errors, missed, checked = [], [], [0]

    def writer(number):
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                i = 0
                while not stop.is_set():
                    key = "w%d.%d@mail.com" % (number, i)
                    c.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
                    with lock:
                        committed.append((time.monotonic(), key))
                    i += 1
                    time.sleep(0.002)
        except Exception as error:  # reported below
            errors.append(error)

    def checker():
        try:
            while not stop.is_set():
                # No later than the start of the last successful refresh (lag is read after now).
                now = time.monotonic()
                refreshed_at = now - follower.lag
                with lock:
                    before = [key for at, key in committed if at < refreshed_at]
                for key in before:
                    if not follower.contains(key):
                        missed.append(key)
                checked[0] += len(before)
                time.sleep(0.01)
        except Exception as error:  # an answer must never fail, whatever the refresh meets
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)] + [threading.Thread(target=checker)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        reloads, reconnects = follower.reloads, follower.reconnects
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        time.sleep(0.5)
        conn.execute("SELECT pg_terminate_backend(%s)", [follower.backend_pid])
        time.sleep(0.5)
        conn.execute("ALTER INDEX %s SET (capacity = 80000)" % index)
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join()
    try:
        assert not errors
        assert not missed, "%d checks of rows committed before the last refresh missed, e.g. %r" % (
            len(missed), missed[:3])
        assert checked[0] > 10_000
        assert follower.reloads >= reloads + 2 and follower.reconnects >= reconnects + 1
        follower.refresh()
        assert follower.filter.capacity == 80000
        assert all(follower.contains(key) for _, key in committed)
    finally:
        follower.close()


def test_lower_expression(conn, dsn):
    table, index = make_table(conn, expression="lower(email)")
    conn.execute("INSERT INTO %s (email) VALUES ('User7@Mail.COM'), ('Ünïcode@Mail.com')" % table)
    with IndexFollower(dsn, index, background=False) as follower:
        assert follower.contains("USER7@mail.com") and follower.contains("user7@mail.com")
        for key in ("USER7@mail.com", "nobody@mail.com", "ÜNÏCODE@mail.com", "ünïcode@mail.com"):
            (sql,) = conn.execute("SELECT bloom_index_contains(%s, %s::text)", [index, key]).fetchone()
            assert follower.contains(key) or not sql  # never "absent" where SQL finds it
        assert follower.contains("USER7@mail.com") == conn.execute(
            "SELECT bloom_index_contains(%s, 'USER7@mail.com'::text)", [index]).fetchone()[0]


def test_unsupported_indexes(conn, dsn):
    table, index = make_table(conn, expression="substr(email, 1, 3)")
    with pytest.raises(UnsupportedIndexError, match="substr"):
        IndexFollower(dsn, index, background=False)
    conn.execute("CREATE INDEX %s_btree ON %s (email)" % (table, table))
    with pytest.raises(UnsupportedIndexError, match="not a bloomfilter index"):
        IndexFollower(dsn, table + "_btree", background=False)
    # A multicolumn index with an expression column other than lower() of a text column.
    conn.execute("CREATE INDEX %s_pair ON %s USING bloomfilter (id, upper(email))" % (table, table))
    with pytest.raises(UnsupportedIndexError, match="key column 2 has the key expression upper"):
        IndexFollower(dsn, table + "_pair", background=False)


@pytest.mark.parametrize("column_type,keys", [
    ("bigint", [1, -1, 2**62, 42]),
    ("integer", [1, -1, 2**30, 42]),
    ("uuid", [uuid.UUID(int=i * 7919) for i in range(1, 5)]),
    ("bytea", [b"\x00", b"abc", b"\xff" * 20, b""]),
])
def test_key_types_and_psycopg2(conn, dsn, column_type, keys):
    import psycopg2
    table, index = make_table(conn, column_type=column_type, capacity=1000)
    with conn.cursor() as cursor:
        for key in keys:
            cursor.execute("INSERT INTO %s (email) VALUES (%%s::%s)" % (table, column_type),
                           [key if column_type != "uuid" else str(key)])
    with IndexFollower(psycopg2.connect(dsn), index, background=False) as follower:
        assert all(follower.contains(key) for key in keys)


def test_lower_expression_c_collation(conn, dsn):
    """Under the C collation lower() changes ASCII letters only, so the follower answers every
    key, non-ASCII ones included, exactly as bloom_index_contains."""
    table, index = make_table(conn, expression="lower(email)", column_type='text COLLATE "C"')
    conn.execute("INSERT INTO %s (email) SELECT 'Ünïcode' || i || '@Mail.COM' FROM generate_series(1, 200) i" % table)
    with IndexFollower(dsn, index, background=False) as follower:
        keys = ["Ünïcode%d@MAIL.com" % i for i in range(1, 400)] + ["ÜNÏCODE%d@mail.com" % i for i in range(1, 200)]
        (sql,) = conn.execute("SELECT array_agg(bloom_index_contains(%s, k) ORDER BY n) "
                              "FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n)", [index, keys]).fetchone()
        assert [follower.contains(k) for k in keys] == sql
        assert all(sql[:200]) and not all(sql[200:])


def test_dropped_psycopg2_connection(conn, dsn):
    import psycopg2
    table, index = make_table(conn, capacity=1000)
    follower = IndexFollower(psycopg2.connect(dsn), index, background=False)
    first_pid = follower.backend_pid
    conn.execute("SELECT pg_terminate_backend(%s)", [first_pid])
    with pytest.raises(psycopg2.OperationalError):
        follower.refresh()
    conn.execute("INSERT INTO %s (email) VALUES ('later')" % table)
    follower.refresh()
    assert "later" in follower and follower.backend_pid != first_pid
    follower.close()


@pytest.mark.parametrize("base,expression,keys,probe", [
    ("text", "email", ["a@mail.com", "b@mail.com"], "a@mail.com"),
    ("text", "lower(email)", ["User7@Mail.com"], "USER7@mail.com"),
    ("bigint", "email", [7, 2**40], 7),
])
def test_domain_columns(conn, dsn, base, expression, keys, probe):
    """A column of a domain (over a domain) is followed as its base type, as the server checks it."""
    domain = "dom_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE DOMAIN %s_inner AS %s CHECK (VALUE IS NOT NULL)" % (domain, base))
    conn.execute("CREATE DOMAIN %s AS %s_inner" % (domain, domain))
    table, index = make_table(conn, expression=expression, capacity=1000, column_type=domain)
    with conn.cursor() as cursor:
        for key in keys:
            cursor.execute("INSERT INTO %s (email) VALUES (%%s::%s)" % (table, base), [key])
    with IndexFollower(dsn, index, background=False) as follower:
        assert follower.contains(probe)
        (sql,) = conn.execute("SELECT bloom_index_contains(%%s, %%s::%s)" % ("bigint" if base == "bigint" else "text"),
                              [index, probe]).fetchone()
        assert sql is True
