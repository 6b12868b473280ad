"""contains_many(keys) of a layered value (format version 3, an index that grows): the answers
of a loop of contains(), key for key, on 1, 2 and 6 layers, every key type, batches of every
size around the pass size, with NumPy and in pure Python (each key hashed once, each layer's
bits tested for the batch at once); and on a server, a follower's and bloom_index_filter's
answers equal to SQL's bloom_index_contains over present and absent keys of every key type, on
1 and 6 layers."""

import hashlib
import os
import random
import uuid

import pytest

from bloomfilter import Filter, LayeredFilter, _batch, _core, _native_check, _vector
from bloomfilter._core import (HEADER_BYTES, MAGIC, _HEADER, _LAYERED_HEADER, key_hash,
                               layer_parameters, position_multiplier)
from bloomfilter.follow import IndexFollower

from test_check import keys_of_every_type
from test_contains_many import COUNTS, loop


def grown_value(capacity, error_rate, expansion, count, keys):
    """A layered value of `count` layers holding the keys as an index that grows does: each
    layer's capacity of them in turn, the rest in the last. Placed here from docs/format.md,
    not by the client's code."""
    layers = [layer_parameters(capacity, error_rate, expansion, n) for n in range(count)]
    parts = [bytearray(_HEADER.pack(MAGIC, 2, log2, hashes, blocks, layer_capacity, rate, 0))
             + bytes(blocks << (log2 - 3)) for layer_capacity, rate, hashes, log2, blocks in layers]
    n, room = 0, layers[0][0]
    for key in keys:
        if room == 0 and n < count - 1:
            n += 1
            room = layers[n][0]
        room -= 1
        _, _, hashes, log2, blocks = layers[n]
        h = key_hash(key)
        base = HEADER_BYTES + ((h * blocks) >> 64) * (1 << (log2 - 3))
        for i in range(hashes):
            bit = ((h * position_multiplier(i)) >> (64 - log2)) & ((1 << log2) - 1)
            parts[n][base + (bit >> 3)] |= 1 << (bit & 7)
    header = _LAYERED_HEADER.pack(MAGIC, 3, 0, count, expansion, capacity, error_rate, len(keys))
    return header + b"".join(parts)


@pytest.fixture(params=["native", "numpy", "python"])
def batch_path(request, monkeypatch):
    """LayeredFilter.contains_many through the compiled check (see test_contains_many's
    batch_path), NumPy, or in pure Python, as without NumPy."""
    if request.param == "native":
        if _native_check.native is None and os.environ.get("BLOOMFILTER_NATIVE_REQUIRED") != "1":
            pytest.skip("bloomfilter._native is not built (python3 setup.py build_ext --inplace)")
        return request.param
    monkeypatch.setattr(_native_check, "native", None)
    if request.param == "python":
        monkeypatch.setattr(_core, "_vector", None)
    else:
        assert _core._vector is _vector
    return request.param


@pytest.mark.parametrize("layers", [1, 2, 6])
@pytest.mark.parametrize("capacity,error_rate", [(300, 0.01), (200, 1e-4), (1000, 0.5)])
def test_layered_answers_as_contains(layers, capacity, error_rate, batch_path):
    added = keys_of_every_type(6000, seed=layers)
    f = Filter.from_bytes(grown_value(capacity, error_rate, 2, layers, added))
    assert isinstance(f, LayeredFilter) and len(f.layers) == layers
    keys = added + keys_of_every_type(6000, seed=layers + 100)
    random.Random(layers).shuffle(keys)
    assert f.contains_many(added) == [True] * len(added)
    for count in COUNTS + [len(keys)]:
        assert f.contains_many(keys[:count]) == loop(f, keys[:count]), count
    for kind in (str, bytes, int, uuid.UUID, bytearray):
        some = [key for key in keys if type(key) is kind]
        assert f.contains_many(some) == loop(f, some), kind
    assert f.contains_many(iter(keys[:100])) == f.contains_many(tuple(keys[:100])) == loop(f, keys[:100])


def test_layered_numpy_is_the_path_taken(monkeypatch):
    monkeypatch.setattr(_native_check, "native", None)
    calls = []
    original = _vector.LayeredVectorCheck.__call__

    def spy(self, keys, key_bytes):
        calls.append(len(keys))
        return original(self, keys, key_bytes)
    monkeypatch.setattr(_vector.LayeredVectorCheck, "__call__", spy)
    f = Filter.from_bytes(grown_value(100, 0.01, 2, 6, range(3000)))
    keys = list(range(6000))
    assert f.contains_many(keys) == loop(f, keys)
    assert f.contains_many(keys[:_vector.MIN_KEYS - 1]) == loop(f, keys[:_vector.MIN_KEYS - 1])
    assert calls == [6000]


def test_layered_pure_python_is_the_path_taken(monkeypatch):
    """Without NumPy, a batch of _batch.MIN_KEYS keys or more goes through _batch, each layer's
    check for the keys no newer layer holds."""
    monkeypatch.setattr(_core, "_vector", None)
    monkeypatch.setattr(_native_check, "native", None)
    calls = []
    original = _batch.BatchCheck.__call__

    def spy(self, digests):
        calls.append(len(digests))
        return original(self, digests)
    monkeypatch.setattr(_batch.BatchCheck, "__call__", spy)
    f = Filter.from_bytes(grown_value(100, 0.01, 2, 6, range(3000)))
    keys = list(range(1000))
    assert f.contains_many(keys) == loop(f, keys)
    assert calls[0] == 1000 and len(calls) == 6 and calls == sorted(calls, reverse=True)
    calls.clear()
    assert f.contains_many(keys[:_batch.MIN_KEYS - 1]) == loop(f, keys[:_batch.MIN_KEYS - 1])
    assert calls == []


def test_layered_sees_bytes_changed_in_place(batch_path):
    """A follower writes pages into the value's bytes in place: the next batch sees them."""
    keys = ["k%d" % i for i in range(2000)]
    empty = Filter.from_bytes(grown_value(100, 0.01, 2, 6, []))
    full = grown_value(100, 0.01, 2, 6, keys)
    assert not any(empty.contains_many(keys))
    empty._data[HEADER_BYTES:] = full[HEADER_BYTES:]
    assert empty.contains_many(keys) == [True] * len(keys)


@pytest.mark.parametrize("bad,error", [(1.5, TypeError), (True, TypeError), (2 ** 63, ValueError),
                                       ("\ud800", UnicodeEncodeError)])
def test_layered_refuses_what_contains_refuses(bad, error, batch_path):
    f = Filter.from_bytes(grown_value(100, 0.01, 2, 6, range(500)))
    keys = list(range(300)) + [bad]
    with pytest.raises(error) as from_loop:
        loop(f, keys)
    with pytest.raises(error) as from_batch:
        f.contains_many(keys)
    assert str(from_batch.value) == str(from_loop.value)


# Key number i of each column type, in SQL and in Python: (column type, SQL expression of i,
# Python key of i).
KEY_TYPES = [
    ("text", "'user' || i || '@m\u00e4il.com'", lambda i: "user%d@m\u00e4il.com" % i),
    ("bigint", "i::bigint * 1000003 - 5000000000", lambda i: i * 1000003 - 5000000000),
    ("uuid", "md5(i::text)::uuid", lambda i: uuid.UUID(hashlib.md5(b"%d" % i).hexdigest())),
    ("bytea", "convert_to('k' || i, 'UTF8')", lambda i: b"k%d" % i),
]


@pytest.mark.server
@pytest.mark.parametrize("layers", [1, 6])
@pytest.mark.parametrize("column_type,sql_key,key", KEY_TYPES, ids=[t[0] for t in KEY_TYPES])
def test_layered_index_answers_as_sql(conn, dsn, layers, column_type, sql_key, key):
    """A follower of an index of `layers` layers and its bloom_index_filter: contains_many equal
    to the loop and to bloom_index_contains (and bloom_contains of the value) over rows present
    and absent."""
    rows = 20000
    table = "layered_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (k %s NOT NULL)" % (table, column_type))
    # 6 layers: 500 x (1 + 2 + ... + 16) < 20,000 keys <= 500 x (2^6 - 1).
    capacity = 500 if layers == 6 else 2 * rows
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (k) WITH (capacity = %d, expansion = 2)"
                 % (table, table, capacity))
    conn.execute("INSERT INTO %s SELECT %s FROM generate_series(1, %d) AS i" % (table, sql_key, rows))
    index = table + "_bloom"
    assert conn.execute("SELECT count(*) FROM bloom_index_layers(%s)", [index]).fetchone()[0] == layers
    # Present and absent keys, shuffled.
    numbers = list(range(1, 2 * rows + 1))
    random.Random(layers).shuffle(numbers)
    keys = [key(i) for i in numbers]
    (sql,) = conn.execute(
        "SELECT array_agg(bloom_index_contains(%%s, k) ORDER BY n) FROM (SELECT %s AS k, n "
        "FROM unnest(%%s::int[]) WITH ORDINALITY AS u(i, n)) AS s" % sql_key, [index, numbers]).fetchone()
    assert sum(sql[:]) >= rows and not all(sql)
    with IndexFollower(dsn, index, background=False) as follower:
        assert isinstance(follower.filter, LayeredFilter) and len(follower.filter.layers) == layers
        answers = follower.contains_many(keys)
        assert answers == sql
        assert answers == loop(follower, keys)
    value = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()[0]
    f = Filter.from_bytes(value)
    assert f.contains_many(keys) == sql
    (stored,) = conn.execute("SELECT bloom_contains(bloom_index_filter(%%s), array_agg(%s ORDER BY n)) "
                             "FROM unnest(%%s::int[]) WITH ORDINALITY AS u(i, n)" % sql_key,
                             [index, numbers]).fetchone()
    assert stored == sql
