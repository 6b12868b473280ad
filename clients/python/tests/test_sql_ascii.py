"""On a SQL_ASCII database (legacy systems still run them; a cluster initialised with no locale
is one), where psycopg returns text as bytes and psycopg2 decodes it as ASCII: both adapters
register, load and dump, and the index follower follows."""

import psycopg
import psycopg2
import pytest

import bloomfilter.psycopg
import bloomfilter.psycopg2
from bloomfilter import Filter
from bloomfilter.follow import IndexFollower

pytestmark = pytest.mark.server

KEYS = ["user%d@mail.com" % i for i in range(500)] + ["gh\u00f6st%d@m\u00e4il.com" % i for i in range(500)]


def test_the_database_is_sql_ascii(ascii_dsn):
    with psycopg.connect(ascii_dsn) as conn:
        assert conn.execute("SHOW server_encoding").fetchone()[0] in (b"SQL_ASCII", "SQL_ASCII")
        # What made register() fail before: text arrives as bytes.
        assert conn.execute("SELECT 'a'::text").fetchone()[0] == b"a"


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_loads_and_dumps(ascii_dsn, binary):
    with psycopg.connect(ascii_dsn, autocommit=True) as conn:
        info = bloomfilter.psycopg.register(conn)
        assert info.oid == conn.execute("SELECT 'bloom'::regtype::oid").fetchone()[0]
        cur = conn.cursor(binary=binary)
        cur.execute("CREATE TEMP TABLE f (id int, f bloom)")
        cur.execute("INSERT INTO f SELECT 1, bloom_agg(k, 2000, 0.01) FROM unnest(%s::text[]) k", [KEYS])
        f = cur.execute("SELECT f FROM f WHERE id = 1").fetchone()[0]
        assert isinstance(f, Filter)
        assert all(k in f for k in KEYS)
        assert f.to_bytes() == cur.execute("SELECT f::bytea FROM f").fetchone()[0]
        # Dumped (binary %b and text %t), and arrays of them.
        g = Filter.empty(2000, 0.01)
        g.update(KEYS[:10])
        for placeholder in ("%b", "%t"):
            assert cur.execute("SELECT %s = bloom_agg(k, 2000, 0.01) FROM unnest(%%s::text[]) k"
                               % placeholder, [g, KEYS[:10]]).fetchone()[0] is True
            assert cur.execute("SELECT bloom_contains(%s, 'user3@mail.com')" % placeholder,
                               [g]).fetchone()[0] is True
        assert cur.execute("SELECT ARRAY[f, f] FROM f").fetchone()[0] == [f, f]
        assert cur.execute("SELECT %s::bloom[]", [[f, g]]).fetchone()[0] == [f, g]


def test_psycopg2_loads_and_dumps(ascii_dsn):
    conn = psycopg2.connect(ascii_dsn)
    try:
        bloomfilter.psycopg2.register(conn)
        assert conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE
        cur = conn.cursor()
        ascii_keys = KEYS[:500]
        cur.execute("SELECT bloom_agg(k, 1000, 0.01) FROM unnest(%s::text[]) k", [ascii_keys])
        f = cur.fetchone()[0]
        assert isinstance(f, Filter) and all(k in f for k in ascii_keys)
        cur.execute("SELECT %s::bytea = bloom_agg(k, 1000, 0.01)::bytea FROM unnest(%s::text[]) k",
                    [f, ascii_keys])
        assert cur.fetchone()[0] is True
    finally:
        conn.close()


def test_follower(ascii_dsn):
    with psycopg.connect(ascii_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE users_ascii (email text NOT NULL)")
        conn.execute("CREATE INDEX users_ascii_bloom ON users_ascii USING bloomfilter (lower(email))")
        conn.execute("INSERT INTO users_ascii SELECT unnest(%s::text[])", [[k.upper() for k in KEYS]])
        for connect in (lambda: psycopg.connect(ascii_dsn), lambda: psycopg2.connect(ascii_dsn)):
            with IndexFollower(connect(), "users_ascii_bloom", background=False) as follower:
                # The C ctype lowers ASCII letters only, as the follower does.
                assert all(follower.contains(k.upper()) for k in KEYS)
                assert sum(follower.contains("nobody%d@mail.com" % i) for i in range(1000)) < 50
                conn.execute("INSERT INTO users_ascii VALUES ('New@Mail.com')")
                follower.refresh()
                assert follower.contains("new@mail.com")
                assert follower.filter.to_bytes() == conn.execute(
                    "SELECT bloom_index_filter('users_ascii_bloom')::bytea").fetchone()[0]
        conn.execute("DROP TABLE users_ascii")
