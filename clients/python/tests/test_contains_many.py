"""contains_many(keys): the answers of a loop of contains(), key for key, from Filter (both
format versions, every sizing, every key type, batches of every size around the pass size; with
NumPy and in pure Python) and from the followers (IndexFollower, the one of a MultiIndexFollower,
ShardedIndexFollower, AsyncIndexFollower); the errors of the first key contains() refuses; one
freshness check for a batch, which answers True for every key past max_lag as contains() does.
NumPy is used where importable (test/run-python.sh requires it), and only then."""

import array
import asyncio
import logging
import os
import random
import subprocess
import sys
import time
import uuid

import numpy
import psycopg
import pytest

import bloomfilter
from bloomfilter import Filter, _batch, _core, _native_check, _vector
from bloomfilter.follow import (AsyncIndexFollower, IndexFollower, MultiIndexFollower,
                                ShardedIndexFollower)

from test_check import SIZINGS, keys_of_every_type


def loop(checker, keys):
    return [checker.contains(key) for key in keys]


@pytest.fixture(params=["native", "numpy", "python"])
def batch_path(request, monkeypatch):
    """Filter.contains_many through the compiled check (see check_path), NumPy (its absence fails
    the test: the fast path must be there) or in pure Python, as without NumPy."""
    if request.param == "native":
        if _native_check.native is None and os.environ.get("BLOOMFILTER_NATIVE_REQUIRED") != "1":
            pytest.skip("bloomfilter._native is not built (python3 setup.py build_ext --inplace)")
        assert bloomfilter.accelerator() == "native"
        return request.param
    monkeypatch.setattr(_native_check, "native", None)
    if request.param == "python":
        monkeypatch.setattr(_core, "_vector", None)
    else:
        assert _core._vector is _vector and bloomfilter.accelerator() == "numpy"
    return request.param


# Batch sizes around both paths' thresholds and pass sizes.
COUNTS = sorted({0, 1, _batch.MIN_KEYS - 1, _batch.MIN_KEYS, _vector.MIN_KEYS - 1, _vector.MIN_KEYS,
                 1000, _batch.CHUNK, _batch.CHUNK + 1, _vector.PASS, _vector.PASS + 1})


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("capacity,error_rate", SIZINGS + [(100_000, 1e-7)])
def test_filter_answers_as_contains(capacity, error_rate, version, batch_path):
    f = Filter.empty(capacity, error_rate, version=version)
    added = keys_of_every_type(min(capacity // 2, 5000), seed=capacity)
    f.update(added)
    keys = added + keys_of_every_type(5000, seed=capacity + 1)
    random.Random(capacity).shuffle(keys)
    assert sum(f.contains_many(added)) == len(added)
    # Mixed types, and around the pass size (a partial pass, one whole, several).
    for count in COUNTS + [len(keys)]:
        assert f.contains_many(keys[:count]) == loop(f, keys[:count]), count
    # One type to a batch (converted without a call per key).
    for kind in (str, bytes, int, uuid.UUID, bytearray):
        some = [key for key in keys if type(key) is kind]
        assert len(some) > _batch.MIN_KEYS
        assert f.contains_many(some) == loop(f, some), kind
    views = [memoryview(key) for key in keys if type(key) is bytes]
    assert f.contains_many(views) == loop(f, views)
    # Any iterable, and a tuple.
    assert f.contains_many(iter(keys[:100])) == f.contains_many(tuple(keys[:100])) == loop(f, keys[:100])


def test_filter_sees_later_adds(batch_path):
    f = Filter.empty(1000, 0.01)
    keys = ["k%d" % i for i in range(100)]
    assert not any(f.contains_many(keys))
    f.update(keys[::2])
    assert f.contains_many(keys) == [i % 2 == 0 for i in range(100)]


@pytest.mark.parametrize("version", [1, 2])
def test_numpy_and_python_agree_on_large_filters(version):
    """The two paths and the loop on a filter of several thousand blocks with many bits set
    (hashes whose products carry into the high half, blocks past 2^16): equal, key for key."""
    f = Filter.empty(400_000, 0.02, version=version)
    f.update(range(0, 800_000, 2))
    keys = list(range(-1000, 300_000)) + [2 ** 63 - 1, -2 ** 63]
    numpy_answers = f.contains_many(keys)
    assert numpy_answers == f._contains_many_python(keys) == loop(f, keys)
    assert all(numpy_answers[1000:301000:2]) and not all(numpy_answers)


def test_numpy_block_is_the_high_half():
    """_vector's block, (h * blocks) >> 64 from 32-bit halves, against Python's exact product,
    for hashes and block counts over their whole ranges (a carry from the low halves changes
    the block of about one key in 2^32 / blocks: the filters above would not show it)."""
    rng = random.Random(7)
    hashes = [0, 1, 2 ** 64 - 1, 2 ** 63, 2 ** 32 - 1, 2 ** 32] + [rng.getrandbits(64) for _ in range(20000)]
    for blocks in [1, 2, 1000, 2 ** 16 + 1, 2 ** 31 - 1, 2 ** 32 - 1] + [rng.getrandbits(32) for _ in range(20)]:
        got = _vector._block_of(numpy.array(hashes, dtype=numpy.uint64), numpy.uint64(blocks)).tolist()
        assert got == [(h * blocks) >> 64 for h in hashes], blocks


def test_numpy_is_the_path_taken(monkeypatch):
    """With NumPy importable, a batch of MIN_KEYS keys or more goes through _vector."""
    monkeypatch.setattr(_native_check, "native", None)
    calls = []
    original = _vector.VectorCheck.__call__

    def spy(self, keys, key_bytes):
        calls.append(len(keys))
        return original(self, keys, key_bytes)
    monkeypatch.setattr(_vector.VectorCheck, "__call__", spy)
    f = Filter.empty(10_000, 0.01).update(range(500))
    keys = list(range(1000))
    assert f.contains_many(keys) == loop(f, keys)
    assert f.contains_many(keys[:_vector.MIN_KEYS - 1]) == loop(f, keys[:_vector.MIN_KEYS - 1])
    assert calls == [1000]


def test_numpy_is_faster(monkeypatch):
    """The point of the NumPy path: its CPU time per key, best of 5, at most 1/2.5 of a loop of
    contains() on a 1M-key filter half of whose keys are present (bench/python_client.sh
    measures the ratio, against 3x; the pure-Python batch is under 2x)."""
    monkeypatch.setattr(_native_check, "native", None)  # tests/test_native.py times that one
    f = Filter.empty(1_000_000, 0.01)
    f.update(str(n) for n in range(0, 400_000, 2))
    keys = [str(n) for n in range(40_000)]

    def cpu(check):
        best = None
        for _ in range(5):
            started = time.thread_time()
            check()
            elapsed = time.thread_time() - started
            best = elapsed if best is None else min(best, elapsed)
        return best
    contains = f.contains
    loop_time = cpu(lambda: [contains(k) for k in keys])
    batch_time = cpu(lambda: f.contains_many(keys))
    assert loop_time / batch_time >= 2.5, (loop_time, batch_time)


def test_without_numpy():
    """Where NumPy does not import, contains_many is the pure-Python batch, with equal answers."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import bloomfilter\n"
            "assert bloomfilter.accelerator() is None, bloomfilter.accelerator()\n"
            "f = bloomfilter.Filter.empty(10000).update(range(0, 3000, 3))\n"
            "keys = list(range(5000)) + ['k%d' % i for i in range(100)]\n"
            "assert f.contains_many(keys) == [f.contains(k) for k in keys]\n"
            "assert sum(f.contains_many(keys)) >= 1000\n"
            "print('pure python')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.join(os.path.dirname(__file__), ".."),
                         env=dict(os.environ, BLOOMFILTER_NATIVE="0"))
    assert run.returncode == 0 and run.stdout == "pure python\n", run.stdout + run.stderr


@pytest.mark.parametrize("count", [3, 500])
@pytest.mark.parametrize("bad,error", [
    (True, TypeError),
    (1.5, TypeError),
    (2 ** 63, ValueError),
    ("\ud800", UnicodeEncodeError),
    (array.array("B", b"abc"), TypeError),  # a buffer, as xxhash would take it, but not a key
])
def test_filter_refuses_what_contains_refuses(count, bad, error, batch_path):
    f = Filter.empty(1000, 0.01)
    for keys in ([bad] * count, ["a"] * count + [bad], [7] * count + [bad]):
        with pytest.raises(error) as from_loop:
            loop(f, keys)
        with pytest.raises(error) as from_batch:
            f.contains_many(keys)
        assert str(from_batch.value) == str(from_loop.value)


def make_table(conn, expression="email", column_type="text", capacity=100_000):
    table = "many_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email %s NOT NULL)" % (table, column_type))
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (%s) WITH (capacity = %d)"
                 % (table, table, expression, capacity))
    return table, table + "_bloom"


@pytest.mark.server
def test_index_follower(conn, dsn):
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i" % table)
    keys = ["user%d@mail.com" % i for i in range(1, 10000, 3)]
    with IndexFollower(dsn, index, background=False) as follower:
        answers = follower.contains_many(keys)
        assert answers == loop(follower, keys)
        assert all(answers[:1667]) and not all(answers)
        (sql,) = conn.execute("SELECT array_agg(bloom_index_contains(%s, k) ORDER BY n) "
                              "FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n)", [index, keys]).fetchone()
        assert answers == sql
        with pytest.raises(TypeError, match="keys of type str, not int"):
            follower.contains_many(keys + [5])
        assert follower.contains_many([]) == []


@pytest.mark.server
@pytest.mark.parametrize("column_type,keys", [
    ("bigint", list(range(-300, 300, 7)) + [2 ** 62]),
    ("uuid", [uuid.UUID(int=i * 7919) for i in range(1, 200)]),
    ("bytea", [b"k%d" % i for i in range(200)] + [bytearray(b"k3"), memoryview(b"k5")]),
])
def test_index_follower_key_types(conn, dsn, column_type, keys):
    table, index = make_table(conn, column_type=column_type, capacity=1000)
    with conn.cursor() as cursor:
        for key in keys[::2]:
            value = str(key) if isinstance(key, uuid.UUID) else bytes(key) if column_type == "bytea" else key
            cursor.execute("INSERT INTO %s VALUES (%%s::%s)" % (table, column_type), [value])
    with IndexFollower(dsn, index, background=False) as follower:
        assert follower.contains_many(keys) == loop(follower, keys)
        with pytest.raises(TypeError):
            follower.contains_many(keys + ["text"])


@pytest.mark.server
def test_lower_expression_and_unreproducible_keys(conn, dsn):
    table, index = make_table(conn, expression="lower(email)")
    conn.execute("INSERT INTO %s SELECT 'User' || i || '@Mail.com' FROM generate_series(1, 500) i" % table)
    # Non-ASCII keys under the C.UTF-8 ctype cannot be lowered as the server would: "maybe".
    keys = ["USER%d@MAIL.COM" % i for i in range(1, 1000)] + ["Ünïcode%d" % i for i in range(50)]
    with IndexFollower(dsn, index, background=False) as follower:
        answers = follower.contains_many(keys)
        assert answers == loop(follower, keys)
        assert all(answers[:500]) and all(answers[-50:]) and not all(answers[500:999])
        with pytest.raises(TypeError):
            follower.contains_many(["a", 1])


@pytest.mark.server
def test_one_freshness_check_past_max_lag(conn, dsn, caplog):
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s SELECT 'user' || i FROM generate_series(1, 1000) i" % table)
    caplog.set_level(logging.WARNING, logger="bloomfilter.follow")
    with IndexFollower(dsn, index, background=False, max_lag=0.3) as follower:
        ghosts = ["ghost%d" % i for i in range(500)]
        absent = [g for g, found in zip(ghosts, follower.contains_many(ghosts)) if not found]
        assert len(absent) > 450
        time.sleep(0.4)  # no refresh: the copy is older than max_lag
        assert follower.contains_many(absent) == [True] * len(absent) == loop(follower, absent)
        with pytest.raises(TypeError):  # a key the follower refuses is refused, stale or not
            follower.contains_many(absent + [b"bytes"])
        warnings = [r for r in caplog.records if "max_lag" in r.getMessage()]
        assert len(warnings) == 1
        follower.refresh()
        assert not any(follower.contains_many(absent))


@pytest.mark.server
def test_multi_sharded_and_async_followers(conn, dsn):
    from conftest import _database
    table, index = make_table(conn)
    conn.execute("INSERT INTO %s SELECT 'a' || i FROM generate_series(1, 2000) i" % table)
    other_dsn, drop = _database("UTF8", "C.UTF-8")
    try:
        with psycopg.connect(other_dsn, autocommit=True) as other:
            other.execute("CREATE TABLE %s (email text NOT NULL)" % table)
            other.execute("CREATE INDEX %s ON %s USING bloomfilter (email) WITH (capacity = 100000)"
                          % (index, table))
            other.execute("INSERT INTO %s SELECT 'b' || i FROM generate_series(1, 2000) i" % table)
        keys = ["a%d" % i for i in range(0, 4000, 3)] + ["b%d" % i for i in range(0, 4000, 3)]
        random.Random(5).shuffle(keys)
        with ShardedIndexFollower([dsn, other_dsn], index, background=False) as shards:
            answers = shards.contains_many(keys)
            assert answers == loop(shards, keys)
            assert all(answer for key, answer in zip(keys, answers) if 1 <= int(key[1:]) <= 2000)
            assert sum(answers) < len(keys) * 0.55
        with MultiIndexFollower(dsn, [index], background=False) as multi:
            assert multi.index(index).contains_many(keys) == loop(multi.index(index), keys)

        async def follow():
            async with AsyncIndexFollower(dsn, index, interval=0.1) as follower:
                return follower.contains_many(keys), loop(follower, keys)
        batch, one_by_one = asyncio.run(follow())
        assert batch == one_by_one
    finally:
        drop()
