"""The answers of every Python path equal the server's over many keys: the compiled check
(Filter.contains and contains_many), the pure-Python one (both, NumPy's batch where importable)
and an IndexFollower's (contains, in C where it can be, and contains_many), against SQL's
bloom_contains, for keys of every type (text, bytea, bigint, uuid) in filters of format versions
1 and 2 and in the values of a fixed-size index and of a grown (layered) one; and an
IndexFollower's of a two-column index (composite keys: (integer, text), (text, text),
(text, bigint)), its batch with the eight-at-a-time hashing on and off, against
bloom_index_contains(index, value1, value2).

BLOOMFILTER_EQUALITY_KEYS keys are checked per type (or pair of types) and format, half of them
added (default 40000; BLOOMFILTER_EQUALITY_KEYS=1000000 test/run-python.sh tests/test_equality.py
for the full size)."""

import os
import random
import uuid

import pytest

from bloomfilter import Filter, _native_check
from bloomfilter.follow import IndexFollower

from test_server import make_keys

pytestmark = pytest.mark.server

KEYS = int(os.environ.get("BLOOMFILTER_EQUALITY_KEYS", "40000"))
KINDS = ["text", "bytea", "bigint", "uuid"]


def pure_python(data):
    saved, _native_check.native = _native_check.native, None
    try:
        return Filter.from_bytes(data)
    finally:
        _native_check.native = saved


def index_of(conn, kind, keys, options):
    table = "equality_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (k %s NOT NULL)" % (table, kind))
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (k) WITH (%s)" % (table, table, options))
    conn.execute("INSERT INTO %s SELECT unnest(%%s::%s[])" % (table, kind), [keys])
    return table + "_bloom"


@pytest.mark.parametrize("kind", KINDS)
def test_every_path_equals_sql(conn, dsn, kind):
    half = KEYS // 2
    present = make_keys(kind, half, 11)
    absent = make_keys(kind, KEYS - half, 12)
    keys = [key for pair in zip(present, absent) for key in pair]  # interleaved
    values = []  # (format, bytes, index name or None)
    for version in (1, 2):
        empty = "bloom_empty(%d, 0.01)" % half
        if version == 1:
            empty = "overlay(%s::bytea PLACING '\\x01' FROM 5)::bloom" % empty
        (data,) = conn.execute("SELECT bloom_add(%s, %%s::%s[])::bytea" % (empty, kind), [present]).fetchone()
        values.append(("version %d" % version, bytes(data), None))
    for name, options in (("fixed-size index", "capacity = %d, error_rate = 0.01, expansion = 0" % half),
                          ("grown index", "capacity = %d, error_rate = 0.01, expansion = 2" % max(100, half // 40))):
        index = index_of(conn, kind, present, options)
        (data,) = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()
        values.append((name, bytes(data), index))
    layers = len(Filter.from_bytes(values[-1][1]).layers)
    assert layers >= 3, layers
    for name, data, index in values:
        (sql,) = conn.execute("SELECT bloom_contains(%%s::bytea::bloom, %%s::%s[])" % kind, [data, keys]).fetchone()
        assert all(sql[0::2]), "%s: SQL answers a key added absent" % name
        assert not all(sql[1::2])
        compiled, python = Filter.from_bytes(data), pure_python(data)
        assert compiled._native is not None and python._native is None
        paths = {
            "compiled contains": lambda: list(map(compiled.contains, keys)),
            "compiled contains_many": lambda: compiled.contains_many(keys),
            "pure-Python contains": lambda: list(map(python.contains, keys)),
            "pure-Python contains_many": lambda: python.contains_many(keys),
        }
        for path, answers in paths.items():
            got = answers()
            assert got == sql, "%s, %s keys, %s: %d answers differ from SQL's" % (
                name, kind, path, sum(a != b for a, b in zip(got, sql)))
        if index is not None:
            with IndexFollower(dsn, index, background=False, max_lag=3600) as follower:
                assert list(map(follower.contains, keys)) == sql, (name, kind, "IndexFollower.contains")
                assert follower.contains_many(keys) == sql, (name, kind, "IndexFollower.contains_many")
                assert follower._fast.checks >= len(keys)  # answered in C
        print("%s keys, %s: %d keys, %d found by SQL; compiled single and batch, pure-Python single and "
              "batch%s equal SQL" % (kind, name, len(keys), sum(sql),
                                     ", IndexFollower single and batch" if index else ""))


# A column's values: make_keys's, or integers of the column's range.
def column_values(kind, count, seed):
    if kind == "integer":
        rng = random.Random(seed)
        return [rng.randrange(-2**31, 2**31) for _ in range(count)]
    values = make_keys(kind, count, seed)
    random.Random(seed).shuffle(values)  # pairs that are not in the order of either column
    return values


@pytest.mark.parametrize("columns", [("integer", "text"), ("text", "text"), ("text", "bigint")])
def test_composite_follower_equals_sql(conn, dsn, columns):
    half = KEYS // 2
    present = list(zip(column_values(columns[0], half, 21), column_values(columns[1], half, 22)))
    # Absent: each present key's first value with another's second, and keys of new values.
    quarter = (KEYS - half) // 2
    absent = list(zip([first for first, _ in present[:quarter]],
                      [second for _, second in present[1:quarter + 1]]))
    absent += zip(column_values(columns[0], KEYS - half - quarter, 23),
                  column_values(columns[1], KEYS - half - quarter, 24))
    keys = [key for pair in zip(present, absent) for key in pair]  # interleaved
    first, second = ([key[n] for key in present] for n in (0, 1))
    for name, options in (("fixed-size index", "capacity = %d, error_rate = 0.01, expansion = 0" % half),
                          ("grown index", "capacity = %d, error_rate = 0.01, expansion = 2" % max(100, half // 40))):
        table = "equality_%s" % uuid.uuid4().hex[:10]
        conn.execute("CREATE TABLE %s (a %s NOT NULL, b %s NOT NULL)" % ((table,) + columns))
        conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (a, b) WITH (%s)" % (table, table, options))
        conn.execute("INSERT INTO %s SELECT * FROM unnest(%%s::%s[], %%s::%s[])" % ((table,) + columns),
                     [first, second])
        index = table + "_bloom"
        (sql,) = conn.execute(
            "SELECT array_agg(bloom_index_contains(%%s, a, b) ORDER BY n) "
            "FROM unnest(%%s::%s[], %%s::%s[]) WITH ORDINALITY AS k(a, b, n)" % columns,
            [index, [key[0] for key in keys], [key[1] for key in keys]]).fetchone()
        assert all(sql[0::2]), "%s: SQL answers a key added absent" % name
        assert not all(sql[1::2])
        with IndexFollower(dsn, index, background=False, max_lag=3600) as follower:
            assert list(map(follower.contains, keys)) == sql, (name, columns, "IndexFollower.contains")
            assert follower.contains_many(keys) == sql, (name, columns, "IndexFollower.contains_many")
            if _native_check.native is not None:
                assert follower._fast.checks >= len(keys)  # answered in C
                was = _native_check.native.set_batch_lanes(False)
                try:
                    assert follower.contains_many(keys) == sql, (name, columns, "contains_many, lanes off")
                finally:
                    _native_check.native.set_batch_lanes(was)
        print("(%s, %s) keys, %s: %d keys, %d found by SQL; IndexFollower single and batch equal SQL"
              % (columns + (name, len(keys), sum(sql))))
