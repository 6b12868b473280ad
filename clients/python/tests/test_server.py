"""The Python client against the server: filters built in SQL, read through each adapter,
answer as SQL's bloom_contains does; Filter.add gives SQL's bloom_add bytes; sizing, info,
hashes and shards agree; malformed values are refused for the same reasons."""

import math
import random
import struct
import uuid

import pytest

from bloomfilter import Filter, key_hash, shard_of
from bloomfilter import _core

pytestmark = pytest.mark.server

PRESENT = 100_000
ABSENT = 100_000

SQL_TYPE = {"text": "text", "bytea": "bytea", "bigint": "bigint", "uuid": "uuid"}


def make_keys(kind, count, seed):
    """`count` distinct keys of a type; different seeds give disjoint sets (with overwhelming
    probability for the random ones, and by construction for text)."""
    rng = random.Random(seed)
    if kind == "text":
        # ASCII and non-ASCII text (hashed as UTF-8 by both sides).
        return ["%s%d@m\u00e4il.com" % ("user" if seed % 2 else "gh\u00f6st", seed * 10**7 + i)
                if i % 3 == 0 else "user%d.%d@mail.com" % (seed, i) for i in range(count)]
    if kind == "bytea":
        return [rng.getrandbits(8 * (1 + i % 40)).to_bytes(1 + i % 40, "little") + bytes([seed % 256])
                for i in range(count)]
    if kind == "bigint":
        return [rng.getrandbits(64) - 2**63 for _ in range(count)]
    if kind == "uuid":
        return [uuid.UUID(int=rng.getrandbits(128)) for _ in range(count)]
    raise AssertionError(kind)


# (capacity, error_rate, version, storage, keys added): inline, compressed, out of line
# uncompressed, overfull; both versions; one hash and several.
SPECS = [
    (1000, 0.05, 2, "inline", 1000),
    (1000, 0.05, 1, "inline", 1000),
    (100_000, 0.01, 2, "external", PRESENT),
    (100_000, 0.01, 1, "external", PRESENT),
    (200_000, 0.001, 2, "compressed", 2000),
    (200_000, 0.001, 1, "compressed", 2000),
    (50_000, 0.1, 2, "extended", PRESENT),
    (30, 0.9, 1, "inline", 30),
]
STORAGE = {"inline": "MAIN", "external": "EXTERNAL", "compressed": "EXTENDED", "extended": "EXTENDED"}
TYPES = ["text", "bytea", "bigint", "uuid"]


def empty_sql(version):
    if version == 1:
        return "overlay(bloom_empty(%s, %s)::bytea PLACING '\\x01' FROM 5)::bloom"
    return "bloom_empty(%s, %s)"


def build_table(conn, spec, kind, present):
    capacity, error_rate, version, storage, _ = spec
    table = "f_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (id int PRIMARY KEY, f bloom)" % table)
    # The type's default is EXTERNAL (out of line, uncompressed); MAIN keeps a small value
    # inline, EXTENDED compresses a sparse one.
    conn.execute("ALTER TABLE %s ALTER f SET STORAGE %s" % (table, STORAGE[storage]))
    conn.execute("INSERT INTO %s SELECT 1, bloom_add(%s, %%s::%s[])" % (table, empty_sql(version), SQL_TYPE[kind]),
                 [capacity, error_rate, present])
    compressed, size = conn.execute(
        "SELECT pg_column_compression(f) IS NOT NULL, pg_column_size(f) FROM %s" % table).fetchone()
    return table, compressed, size


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "%d@%g-v%d-%s" % s[:4])
def test_answers_equal_sql(conn, conn2, spec, kind):
    capacity, error_rate, version, storage, added = spec
    present = make_keys(kind, PRESENT, 1)
    absent = make_keys(kind, ABSENT, 2)
    table, compressed, size = build_table(conn, spec, kind, present[:added])
    # Where the value lives is what the spec says.
    raw = conn.execute("SELECT f::bytea FROM %s" % table).fetchone()[0]
    stored_compressed = conn.execute("SELECT pg_column_compression(f) FROM %s" % table).fetchone()[0]
    if storage == "inline":
        assert size < 2000 and stored_compressed is None
    elif storage == "compressed":
        assert stored_compressed is not None and size < len(raw) / 2
    elif storage == "external":
        assert stored_compressed is None and size >= len(raw)

    # Every adapter and result format gives the same Filter: the server's bytes.
    binary = conn.cursor(binary=True).execute("SELECT f FROM %s" % table).fetchone()[0]
    text = conn.execute("SELECT f FROM %s" % table).fetchone()[0]
    cursor2 = conn2.cursor()
    cursor2.execute("SELECT f FROM %s" % table)
    via_psycopg2 = cursor2.fetchone()[0]
    assert isinstance(binary, Filter) and isinstance(text, Filter) and isinstance(via_psycopg2, Filter)
    assert binary.to_bytes() == raw == text.to_bytes() == via_psycopg2.to_bytes()
    assert binary.version == version

    keys = present + absent
    (sql_answers,) = conn.execute(
        "SELECT bloom_contains(f, %%s::%s[]) FROM %s" % (SQL_TYPE[kind], table), [keys]).fetchone()
    python_answers = [key in binary for key in keys]
    mismatches = [k for k, a, b in zip(keys, sql_answers, python_answers) if a != b]
    assert not mismatches, "%d answers differ, e.g. %r" % (len(mismatches), mismatches[:3])
    assert all(python_answers[:added])  # no false negative
    if added <= capacity and error_rate < 0.5:
        false_positives = sum(python_answers[PRESENT:]) / ABSENT
        assert false_positives < 1.5 * error_rate

    # info() is bloom_info() to the last bit of every float.
    row = conn.execute("SELECT (bloom_info(f)).* FROM %s" % table).fetchone()
    info = binary.info()
    assert tuple(info) == tuple(row)

    # Filter.add then to_bytes equals SQL's bloom_add, byte for byte (inserted included).
    more = make_keys(kind, 500, 3)
    (sql_added,) = conn.execute(
        "SELECT bloom_add(f, %%s::%s[])::bytea FROM %s" % (SQL_TYPE[kind], table), [more]).fetchone()
    copy = binary.copy()
    for key in more:
        copy.add(key)
    assert copy.to_bytes() == sql_added
    # One at a time too, through the scalar bloom_add and a Filter parameter of each adapter.
    one = more[0]
    (sql_one,) = conn.execute("SELECT bloom_add(%%s::bloom, %%s::%s)::bytea" % SQL_TYPE[kind],
                              [binary, one]).fetchone()
    assert binary.copy().add(one).to_bytes() == sql_one
    cursor2.execute("SELECT bloom_add(%%s, %%s::%s)::bytea" % SQL_TYPE[kind], [binary, one if kind != "uuid" else str(one)])
    assert bytes(cursor2.fetchone()[0]) == sql_one
    conn.execute("DROP TABLE %s" % table)


def test_filter_parameters_round_trip(conn, conn2):
    f = Filter.empty(5000, 0.02)
    for i in range(100):
        f.add("user%d@mail.com" % i)
    # psycopg: binary (default) and text dumpers; the server validates and stores them.
    for placeholder in ("%s", "%b", "%t"):
        back = conn.execute("SELECT " + placeholder + "::bloom", [f]).fetchone()[0]
        assert back == f
    assert conn.execute("SELECT bloom_contains(%s, 'user7@mail.com'), bloom_contains(%s, 'nobody')",
                        [f, f]).fetchone() == (True, False)
    cursor = conn2.cursor()
    cursor.execute("SELECT %s, bloom_contains(%s, 'user7@mail.com')", [f, f])
    back, answer = cursor.fetchone()
    assert back == f and answer is True
    cursor.execute("SELECT NULL::bloom")
    assert cursor.fetchone()[0] is None
    assert conn.execute("SELECT NULL::bloom").fetchone()[0] is None


def test_empty_equals_bloom_empty(conn):
    rng = random.Random(7)
    cases = [(c, p) for c in (1, 2, 3, 10, 99, 100, 1000, 4096, 12345, 10**5, 10**6)
             for p in (0.5, 0.9, 0.99, 0.6, 0.61, 0.3, 0.1, 0.05, 0.01, 0.001, 1e-4, 1e-6, 1e-9)]
    cases += [(rng.randint(1, 10**6), math.exp(rng.uniform(math.log(1e-9), math.log(0.999)))) for _ in range(400)]
    rows = conn.execute(
        "SELECT substring(bloom_empty(c, p)::bytea FROM 1 FOR 36), length(bloom_empty(c, p)::bytea) "
        "FROM unnest(%s::bigint[], %s::float8[]) WITH ORDINALITY AS u(c, p, n) ORDER BY n",
        [[c for c, _ in cases], [p for _, p in cases]]).fetchall()
    for (capacity, error_rate), (header, length) in zip(cases, rows):
        hashes, block_log2, blocks = _core._size(capacity, error_rate)
        assert struct.pack("<4sBBHIQdQ", b"BLOM", 2, block_log2, hashes, blocks, capacity, error_rate, 0) \
            == header, (capacity, error_rate)
        assert 36 + (blocks << (block_log2 - 3)) == length
    # Small ones whole.
    for capacity, error_rate in [(10, 0.01), (1000, 0.001), (3, 0.9)]:
        (whole,) = conn.execute("SELECT bloom_empty(%s, %s)::bytea", [capacity, error_rate]).fetchone()
        assert Filter.empty(capacity, error_rate).to_bytes() == whole


@pytest.mark.parametrize("capacity,error_rate", [(0, 0.01), (-5, 0.01), (10, 0.0), (10, 1.0), (10, -1.0),
                                                  (10, float("nan")), (2**40, 0.01), (10**12, 1e-9)])
def test_empty_refused_as_the_server_refuses(conn, capacity, error_rate):
    import psycopg
    with pytest.raises(psycopg.errors.InvalidParameterValue) as server:
        conn.execute("SELECT bloom_empty(%s, %s)", [capacity, error_rate])
    with pytest.raises(ValueError) as client:
        Filter.empty(capacity, error_rate)
    # Both say the same thing (the server's %g and Python's %g agree).
    assert str(client.value) == server.value.diag.message_primary


def test_malformed_refused_as_the_server_refuses(conn):
    import psycopg
    import json
    import os
    golden = os.path.join(os.path.dirname(__file__), "..", "..", "..", "test", "vectors", "golden.json")
    cases = [(c["what"], bytes.fromhex(c["bytes"])) for c in json.load(open(golden, encoding="utf-8"))["malformed"]]
    # Random changes to the header of valid filters of both versions.
    rng = random.Random(11)
    bases = [Filter.empty(10, 0.01).to_bytes(), Filter.empty(1000, 0.001, version=1).to_bytes(),
             Filter.empty(3, 0.9).to_bytes()]
    # A layered value (format version 3): its header and its layers' headers.
    layered = bytes.fromhex(json.load(open(golden, encoding="utf-8"))["layered"][0]["bytes"])
    for i in range(300):
        data = bytearray(layered)
        for _ in range(rng.randint(1, 3)):
            position = rng.choice([rng.randrange(36), 36 + rng.randrange(36), 36 + 548 + rng.randrange(36)])
            data[position] = rng.choice([0, 1, 2, 3, 0xff, data[position] ^ (1 << rng.randrange(8)),
                                         (data[position] + 1) & 0xff, (data[position] - 1) & 0xff])
        if rng.random() < 0.1:
            data = data[:rng.randrange(len(data) + 1)] if rng.random() < 0.5 else data + b"\0"
        cases.append(("layered mutation %d" % i, bytes(data)))
    for i in range(600):
        data = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(36)
            data[position] = rng.choice([0, 1, 2, 3, 0xff, data[position] ^ (1 << rng.randrange(8)),
                                         (data[position] + 1) & 0xff, (data[position] - 1) & 0xff])
        if rng.random() < 0.1:
            data = data[:rng.randrange(len(data) + 1)] if rng.random() < 0.5 else data + b"\0"
        cases.append(("mutation %d" % i, bytes(data)))
    # Raw bytes sent as a bloom parameter in binary: the server's receive function (bloom_recv).
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class RawBloom(bytes):
        pass

    class RawBloomDumper(Dumper):
        format = Format.BINARY
        oid = conn.adapters.types["bloom"].oid

        def dump(self, obj):
            return bytes(obj)

    conn.adapters.register_dumper(RawBloom, RawBloomDumper)
    refused = 0
    for what, data in cases:
        try:
            conn.execute("SELECT %s::bytea::bloom", [data])
            server = None
        except psycopg.Error as error:
            server = error.diag.message_primary
        try:
            Filter.from_bytes(data)
            client = None
        except ValueError as error:
            client = _core.MESSAGES[error.status]
        if server is None:
            assert client is None, what
        else:
            refused += 1
            assert client is not None and server.endswith(": " + client), (what, server, client)
        # The text input refuses the same values (as its own error).
        try:
            conn.execute("SELECT %s::text::bloom", ["\\x" + data.hex()])
            server_text = None
        except psycopg.Error as error:
            server_text = error.diag.message_primary
        assert (server_text is None) == (server is None), what
        try:
            conn.execute("SELECT %b", [RawBloom(data)])
            server_binary = None
        except psycopg.Error as error:
            server_binary = error.diag.message_primary
        if server is None:
            assert server_binary is None, what
        else:
            assert server_binary == "invalid binary value for type bloom: " + client, (what, server_binary)
    assert refused > 300


def test_hashes_and_shards_equal_sql(conn):
    for kind in TYPES:
        keys = make_keys(kind, 10_000, 5)
        rows = conn.execute(
            "SELECT bloom_hash(k), bloom_shard(k, 1), bloom_shard(k, 7), bloom_shard(k, 64), "
            "bloom_shard(k, 1000), bloom_shard(k, 2147483647) "
            "FROM unnest(%%s::%s[]) WITH ORDINALITY AS u(k, n) ORDER BY n" % SQL_TYPE[kind], [keys]).fetchall()
        for key, row in zip(keys, rows):
            h = key_hash(key)
            assert (h - 2**64 if h >= 2**63 else h) == row[0]
            assert [shard_of(key, n) for n in (1, 7, 64, 1000, 2147483647)] == list(row[1:])
    # smallint and integer values hash as the bigint of the same value.
    assert conn.execute("SELECT bloom_hash(5::smallint), bloom_hash(-70000::integer)").fetchone() == tuple(
        h - 2**64 if h >= 2**63 else h for h in (key_hash(5), key_hash(-70000)))


def test_union_equals_sql(conn):
    a = Filter.empty(2000, 0.01)
    b = Filter.empty(2000, 0.01)
    a.update("a%d" % i for i in range(1000))
    b.update(i for i in range(1500))
    (sql_union,) = conn.execute("SELECT bloom_union(%s, %s)::bytea", [a, b]).fetchone()
    assert a.union(b).to_bytes() == sql_union


def test_index_filter_equals_python(conn):
    conn.execute("CREATE TABLE users_py (id bigserial PRIMARY KEY, email text NOT NULL)")
    emails = ["user%d@mail.com" % i for i in range(3000)]
    conn.execute("INSERT INTO users_py (email) SELECT unnest(%s::text[])", [emails])
    # Of fixed size: one filter, the bytes the Python client makes.
    conn.execute("CREATE INDEX users_py_bloom ON users_py USING bloomfilter (email) "
                 "WITH (capacity = 5000, error_rate = 0.01, expansion = 0)")
    (f,) = conn.execute("SELECT bloom_index_filter('users_py_bloom')").fetchone()
    mine = Filter.empty(5000, 0.01)
    mine.update(emails)
    assert f == mine
    conn.execute("DROP TABLE users_py")
