"""A follower's contains in C (bloomfilter._native.FollowerCheck) against its contains in Python
(_Index.contains, which it falls back to): the same answers and errors for keys of every type,
composite keys and expression indexes; True past max_lag with the warning, for max_lag of every
type; every change of state (a reload, a refresh, a new max_lag) seen at once; the checks
counted once. No server: the followers' states are set here as a refresh sets them."""

import decimal
import fractions
import logging
import os
import random
import struct
import time
import uuid

import pytest

from bloomfilter import Filter, _native_check, composite_hash, key_hash
from bloomfilter.follow import IndexFollower, _Composite

from test_check import keys_of_every_type
from test_native import REFUSED, layered_value, odd_keys, run_apart

native = _native_check.native
pytestmark = pytest.mark.skipif(
    native is None and os.environ.get("BLOOMFILTER_NATIVE_REQUIRED") != "1",
    reason="bloomfilter._native is not built (python3 setup.py build_ext --inplace)")

_MASK64 = (1 << 64) - 1


def follower(f, key_type, transform=None, max_lag=None, refreshed_at=None):
    """An IndexFollower with no connection, its state set as a refresh sets it."""
    follower = object.__new__(IndexFollower)
    follower._init_index("t_bloom", max_lag, None)
    follower._connection_owner = follower
    follower._state = (f, key_type, transform)
    follower._refreshed_at = time.monotonic() if refreshed_at is None else refreshed_at
    return follower


def outcome(check, key):
    try:
        return check(key)
    except Exception as error:  # compared between the paths: type and message
        return type(error), str(error)


def assert_same(follower, keys):
    assert follower.contains == follower._fast.contains
    fast = [outcome(follower.contains, key) for key in keys]
    python = [outcome(follower._contains_python, key) for key in keys]
    assert fast == python


def filled(keys, capacity=20000, version=2):
    return Filter.empty(capacity, 0.01, version=version).update(keys)


KEY_TYPES = [None, str, bytes, int, uuid.UUID]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: getattr(t, "__name__", "None"))
def test_answers_equal_python(version, key_type):
    added = keys_of_every_type(4000, seed=version)
    if version == 3:
        f = Filter.from_bytes(layered_value(1000, 0.01, 2, 4, added))
    else:
        f = filled(added, version=version)
    keys = added + keys_of_every_type(4000, seed=10 + version) + odd_keys() + REFUSED
    random.Random(version).shuffle(keys)
    for max_lag in (None, 30.0):
        checked = follower(f, key_type, max_lag=max_lag)
        assert_same(checked, keys)
        assert checked.checks == 2 * len(keys)
        if key_type is None:
            assert checked._fast.checks >= len(added)  # these were answered in C


def test_expression_index_falls_back():
    """An index on lower(column): every key through the Python method (its lower())."""
    f = filled(["abc", "déf"])

    def lower(key):
        if not isinstance(key, str):
            raise TypeError("takes str")
        return key.lower()
    checked = follower(f, str, transform=lower)
    assert_same(checked, ["ABC", "abc", "DÉF", "x", 1, b"abc"])
    assert checked._fast.checks == 0 and checked.checks == 12


TYPES = ["text", "integer", "uuid", "bytea", "smallint", "bigint"]


def composite_filter(keys, capacity=20000):
    f = Filter.empty(capacity, 0.01)
    for key in keys:
        h = composite_hash(key)
        base = 36 + ((h * f.blocks) >> 64) * (1 << (f.block_log2 - 3))
        for m in f._multipliers:
            p = ((h * m) & _MASK64) >> (64 - f.block_log2)
            f._data[base + (p >> 3)] |= 1 << (p & 7)
    return Filter.from_bytes(f.to_bytes())


def test_composite_keys_equal_python():
    rng = random.Random(3)
    values = {"text": lambda: rng.choice(["t%d" % rng.randrange(50), "é%d" % rng.randrange(50)]),
              "integer": lambda: rng.randrange(-60, 60), "uuid": lambda: uuid.UUID(int=rng.randrange(40)),
              "bytea": lambda: bytes([rng.randrange(3)]) * 2, "smallint": lambda: rng.randrange(-3, 3),
              "bigint": lambda: rng.randrange(-3, 3)}
    good = [tuple(values[t]() for t in TYPES) for _ in range(3000)]
    first = good[0]
    odd = [list(first), first[:5], first + (1,), (True,) + first[1:], (first[0], 2 ** 31) + first[2:],
           (first[0], -2 ** 31) + first[2:], (first[0], -2 ** 31 - 1) + first[2:],
           first[:3] + (bytearray(b"\x01\x01"),) + first[4:], first[:3] + (memoryview(b"\x01"),) + first[4:],
           first[:4] + (2 ** 15,) + first[5:], first[:4] + (-2 ** 15,) + first[5:],
           first[:5] + (2 ** 63,) + first[6:], first[:5] + (-2 ** 63,) + first[6:],
           ("\ud800",) + first[1:], (first[0], 1.0) + first[2:], "abc", 5, None,
           first[:2] + (uuid.UUID(int=1).bytes,) + first[3:]]
    f = composite_filter(good[::2])
    for max_lag in (None, 30.0):
        checked = follower(f, _Composite("t_bloom", TYPES), max_lag=max_lag)
        assert_same(checked, good + odd)
        assert checked._fast.checks >= len(good)
    single = follower(composite_filter([("a",), ("b",)]), _Composite("t_bloom", ["text"]))
    assert_same(single, [("a",), ("b",), ("c",), ["a"], ("a", "b"), "a"])
    assert single.contains(("a",)) is True


MAX_LAGS = [0.5, 1, decimal.Decimal("0.5"), fractions.Fraction(1, 2), True, 2 ** 60]


@pytest.mark.parametrize("max_lag", MAX_LAGS, ids=repr)
def test_past_max_lag_answers_true(max_lag, caplog):
    """Past max_lag (of any type Python compares) every key is "maybe", with the one warning;
    within it, the copy's answers."""
    present = ["k%d" % i for i in range(0, 2000, 2)]
    absent = ["k%d" % i for i in range(1, 2000, 2)]
    f = filled(present)
    checked = follower(f, str, max_lag=max_lag)
    answers = [checked.contains(k) for k in absent]
    assert not all(answers)
    caplog.set_level(logging.WARNING, logger="bloomfilter.follow")
    checked._refreshed_at = time.monotonic() - float(max_lag) - 0.01
    if max_lag == 2 ** 60:
        assert [checked.contains(k) for k in absent] == answers
        return
    assert all(checked.contains(k) for k in absent)
    assert len([r for r in caplog.records if "max_lag" in r.getMessage()]) == 1
    checked._refreshed_at = time.monotonic()
    checked._stale_warned = False
    assert [checked.contains(k) for k in absent] == answers


def test_bound_at_its_edge():
    """Around the edge of max_lag: "absent" only when the bound was not passed before the call
    began, True only when it was passed by the time the call ended (the same clock, read as
    time.monotonic reads it)."""
    for _ in range(200):
        before = time.monotonic()
        read = native.monotonic()
        after = time.monotonic()
        assert before <= read <= after
    max_lag = 0.002
    checked = follower(filled([]), str, max_lag=max_lag)
    checked._stale_warned = True  # no warning each time
    stale = fresh = 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not (stale > 20 and fresh > 20):
        refreshed_at = checked._refreshed_at = time.monotonic()
        while True:
            before = time.monotonic()
            answer = checked.contains("absent")
            after = time.monotonic()
            if answer:
                assert after - refreshed_at > max_lag
                stale += 1
                break
            assert before - refreshed_at <= max_lag
            fresh += 1
    assert stale and fresh


def test_every_change_seen():
    """A reload (a new filter), a refresh and a new max_lag reach the C answer at once."""
    first, second = filled(["a"]), filled(["b"])
    checked = follower(first, str, max_lag=10.0)
    assert checked.contains("a") and not checked.contains("b")
    checked._state = (second, str, None)
    assert checked.contains("b") and not checked.contains("a")
    checked._state = (second, bytes, None)
    assert checked.contains(b"b")
    with pytest.raises(TypeError):
        checked.contains("b")
    checked._state = (second, str, None)
    checked.max_lag = 0.0
    assert checked.contains("a") is True  # past the new bound
    checked.max_lag = None
    assert checked.contains("a") is False
    checked.max_lag = 10.0
    checked._refreshed_at = time.monotonic() - 11
    checked._stale_warned = True
    assert checked.contains("a") is True
    checked._refreshed_at = time.monotonic()
    assert checked.contains("a") is False
    checked._state = None
    with pytest.raises(TypeError):
        checked.contains("a")  # as before the first load
    # A copy checked in pure Python (the compiled check turned off for it): the Python method.
    saved, _native_check.native = _native_check.native, None
    try:
        python = Filter.from_bytes(first.to_bytes())
    finally:
        _native_check.native = saved
    checked._state = (python, str, None)
    before = checked._fast.checks
    assert checked.contains("a") and not checked.contains("b")
    assert checked._fast.checks == before


def test_checks_counted_once():
    f = filled(["a", "b"])
    checked = follower(f, str, max_lag=10.0)
    for key in ["a", "b", "c", 1, b"x"]:
        outcome(checked.contains, key)
    checked.contains_many(["a", "z"])
    assert checked.checks == 7
    checked.checks += 3
    assert checked.checks == 10


def test_without_the_compiled_check():
    saved, _native_check.native = _native_check.native, None
    try:
        checked = follower(filled(["a"]), str, max_lag=10.0)
    finally:
        _native_check.native = saved
    assert checked._fast is None and "contains" not in vars(checked)
    assert checked.contains("a") and not checked.contains("b") and "a" in checked
    assert checked.checks == 3


def test_composite_batch_equals_python():
    """contains_many of composite keys, in C where it can be: the Python method's answers and
    errors (the first key refused), True past max_lag."""
    rng = random.Random(5)
    good = [("t%d" % rng.randrange(300), rng.randrange(-100, 100)) for _ in range(5000)]
    f = composite_filter(good[::2])
    checked = follower(f, _Composite("t_bloom", ["text", "integer"]), max_lag=30.0)
    python = follower(f, _Composite("t_bloom", ["text", "integer"]), max_lag=30.0)
    python._fast = None
    for keys in (good, tuple(good), good[:1], [], [list(k) for k in good[:100]]):
        assert checked.contains_many(keys) == python.contains_many(keys) == [python.contains(k) for k in keys]
    for bad in (("a", 2 ** 31), ("a",), ("a", 1.0), "a", ("a", True)):
        keys = good[:10] + [bad] + good[10:20]
        assert outcome(checked.contains_many, keys) == outcome(python.contains_many, keys)
        assert isinstance(outcome(checked.contains_many, keys), tuple)
    checked._refreshed_at = python._refreshed_at = time.monotonic() - 31
    checked._stale_warned = python._stale_warned = True
    assert checked.contains_many(good) == [True] * len(good)
    assert outcome(checked.contains_many, [("a", 2 ** 31)]) == outcome(python.contains_many, [("a", 2 ** 31)])


@pytest.mark.parametrize("key_type", KEY_TYPES, ids=lambda t: getattr(t, "__name__", "None"))
def test_batch_in_c_equals_python(key_type):
    """contains_many in C (FollowerCheck.contains_many) for every key kind, on a layered value
    large enough to be checked in the order of its keys' blocks: the Python method's answers,
    and its errors (the keys handed back to it); True past max_lag, from the method."""
    added = keys_of_every_type(15000, seed=46)
    f = Filter.from_bytes(layered_value(60_000, 0.01, 2, 4, added))
    keys = [key for key in added + keys_of_every_type(15000, seed=47)
            if key_type is None or type(key) is key_type]
    random.Random(47).shuffle(keys)
    assert len(keys) >= 4096  # checked in the order of their blocks
    checked = follower(f, key_type, max_lag=30.0)
    python = follower(f, key_type, max_lag=30.0)
    python._fast = None
    expected = [python.contains(key) for key in keys]
    assert 0.3 < sum(expected) / len(keys) < 0.7
    for batch in (keys, tuple(keys), keys[:100]):
        assert checked._fast.contains_many(batch) == expected[:len(batch)]
        assert checked.contains_many(batch) == python.contains_many(batch) == expected[:len(batch)]
    odd = [key for key in odd_keys() + REFUSED if key_type is None or type(key) is not key_type]
    for key in odd:
        batch = keys[:5000] + [key] + keys[5000:]
        assert outcome(checked.contains_many, batch) == outcome(python.contains_many, batch)
    checked._refreshed_at = python._refreshed_at = time.monotonic() - 31
    checked._stale_warned = python._stale_warned = True
    assert checked._fast.contains_many(keys) is None
    assert checked.contains_many(keys) == [True] * len(keys)


@pytest.mark.parametrize("key_type,failing,other", [(str, "\ud800", b"x"), (int, 2 ** 64, "x"),
                                                    (str, "a\udfffb", 7), (int, -2 ** 63 - 1, 1.5)])
def test_batch_conversion_error_then_another_type(key_type, failing, other):
    """A key whose conversion fails, then a key of another type: the method checks every key's
    type before it converts any, so the later key's error is raised, by both paths; the failing
    key alone raises its own."""
    added = keys_of_every_type(6000, seed=48)
    f = Filter.from_bytes(layered_value(60_000, 0.01, 2, 2, added))
    keys = [key for key in added if type(key) is key_type][:5000]
    checked = follower(f, key_type, max_lag=30.0)
    python = follower(f, key_type, max_lag=30.0)
    python._fast = None
    for batch in ([failing] + keys + [other], keys[:3] + [failing, other], keys + [failing],
                  [failing, failing] + keys):
        expected = outcome(python.contains_many, batch)
        assert isinstance(expected, tuple), expected  # an error
        assert outcome(checked.contains_many, batch) == expected
        assert outcome(checked._fast.contains_many, batch) in (expected, None)
    assert outcome(checked.contains_many, keys + [failing])[0] is not TypeError


def test_composite_batch_sorted_by_block_equals_python():
    """Composite keys in a batch checked in the order of their blocks (a 360 KB value): the
    Python method's answers."""
    rng = random.Random(6)
    good = [("t%d" % rng.randrange(30000), rng.randrange(-2 ** 31, 2 ** 31)) for _ in range(12000)]
    f = composite_filter(good[::2], capacity=300_000)
    checked = follower(f, _Composite("t_bloom", ["text", "integer"]), max_lag=30.0)
    python = follower(f, _Composite("t_bloom", ["text", "integer"]), max_lag=30.0)
    python._fast = None
    expected = [python.contains(key) for key in good]
    assert 0.4 < sum(expected) / len(good) < 0.6
    assert checked._fast.contains_many(good) == python.contains_many(good) == expected


PAIR_VALUES = {"text": lambda rng: rng.choice(["t%d" % rng.randrange(9000), "é%d" % rng.randrange(300),
                                             "", "an email %d@mail.com" % rng.randrange(9000)]),
               "integer": lambda rng: rng.randrange(-2 ** 31, 2 ** 31),
               "smallint": lambda rng: rng.randrange(-2 ** 15, 2 ** 15),
               "bigint": lambda rng: rng.choice([rng.randrange(-2 ** 63, 2 ** 63), rng.randrange(-9, 9)])}


@pytest.mark.parametrize("columns", [("integer", "text"), ("text", "integer"), ("text", "text"),
                                     ("bigint", "smallint"), ("text", "bigint")], ids="-".join)
def test_composite_batch_in_lanes_equals_python(columns):
    """A batch of composite keys of two int or str columns, sorted by block, hashed eight at a
    time in AVX-512 registers where the CPU has them (FollowerCheck's PairLanes), and key by key
    with them off: the Python method's answers, with keys of another shape among them (a str
    not ASCII, a list, an int of 30 bits and more) hashed alone, in runs of every length; and its
    errors, from a key refused anywhere in a run."""
    rng = random.Random(7)
    good = [tuple(PAIR_VALUES[c](rng) for c in columns) for _ in range(12000)]
    good[5:13] = [list(key) for key in good[5:13]]
    f = composite_filter([tuple(key) for key in good[::2]], capacity=300_000)
    checked = follower(f, _Composite("t_bloom", list(columns)), max_lag=30.0)
    python = follower(f, _Composite("t_bloom", list(columns)), max_lag=30.0)
    python._fast = None
    expected = [python.contains(key) for key in good]
    assert 0.4 < sum(expected) / len(good) < 0.6
    assert native.batch_lanes() is native.batch_registers()  # the same AVX-512 F and DQ
    out_of_range = {"text": 1, "integer": 2 ** 31, "smallint": -2 ** 15 - 1, "bigint": 2 ** 63}
    for lanes in (True, False):
        was = native.set_batch_lanes(lanes)
        try:
            for count in (len(good), len(good) - 3, 4097):
                assert checked._fast.contains_many(good[:count]) == expected[:count]
                assert checked._fast.contains_many(tuple(good[-count:])) == expected[-count:]
            for at in (0, 4000, 4003, 4007, len(good) - 1):
                bad = list(good[at])
                bad[at % 2] = out_of_range[columns[at % 2]]
                keys = good[:at] + [tuple(bad)] + good[at:]
                assert outcome(checked.contains_many, keys) == outcome(python.contains_many, keys)
                assert isinstance(outcome(python.contains_many, keys), tuple)  # an error
                assert checked._fast.contains_many(keys) is None
        finally:
            native.set_batch_lanes(was)
        assert was is True


def test_composite_key_dropped_during_its_conversion():
    """A composite key whose UUID column's conversion (Python code) drops the key from the
    batch's list: the batch holds the key until it is hashed. With Python's debug allocator a
    freed key's memory is overwritten, and reading it crashes the interpreter."""
    out = run_apart("""
        import gc, uuid
        from bloomfilter import Filter, _native_check
        check = _native_check.native.FollowerCheck(lambda key: "fallback")
        check.set_state(Filter.empty(1000)._native, 6, ((5, 0, 0), (2, 0, 0)))  # (uuid, text)
        for make in (list, tuple):
            keys = [make([uuid.UUID(int=1), "a" * 40]), make([uuid.UUID(int=2), "b"])]
            original = uuid.UUID.bytes

            def dropping(self):
                uuid.UUID.bytes = original
                keys.clear()  # the only reference to the key being hashed
                gc.collect()
                return original.fget(self)
            uuid.UUID.bytes = property(dropping)
            print("answers:", check.contains_many(keys))
    """, env={"PYTHONMALLOC": "debug"})
    assert out.split("\n")[:2] == ["answers: None", "answers: None"]


@pytest.mark.parametrize("key_type", [None, uuid.UUID])
def test_batch_conversion_error_raised_once(key_type, monkeypatch):
    """A key whose conversion raises (a UUID's bytes, Python code), in a batch the C check
    takes: the error of that key, as the Python method raises it, and no key converted twice."""
    f = filled(["a"])
    conversions = []
    original = uuid.UUID.bytes

    def failing(self):
        conversions.append(self.int)
        if self.int == 3:
            raise ValueError("no bytes for %d" % self.int)
        return original.fget(self)
    monkeypatch.setattr(uuid.UUID, "bytes", property(failing))
    batch = [uuid.UUID(int=n) for n in (1, 2, 3, 4, 5)]
    for fast in (True, False):
        checked = follower(f, key_type, max_lag=30.0)
        if not fast:
            checked._fast = None
        conversions.clear()
        with pytest.raises(ValueError, match="no bytes for 3"):
            checked.contains_many(batch)
        assert conversions == [1, 2, 3], fast
    # Past max_lag the Python method answers True without converting the keys it takes.
    checked = follower(f, key_type, max_lag=30.0, refreshed_at=time.monotonic() - 31)
    checked._stale_warned = True
    assert checked.contains_many(batch) == [True] * 5


def test_composite_with_an_expression_column_falls_back():
    """Key rules the C check does not apply (a column's transform, a type it does not know):
    every key through the Python method."""

    class WithTransforms(_Composite):
        __slots__ = ("transforms",)

    rules = WithTransforms("t_bloom", ["text", "integer"])
    rules.transforms = (str.lower, None)
    keys = [("a", 1), ("b", 2)]
    checked = follower(composite_filter(keys), rules, max_lag=30.0)
    assert [checked.contains(k) for k in keys] == [checked._contains_python(k) for k in keys]
    assert checked.contains_many(keys) == [checked._contains_python(k) for k in keys]
    assert checked._fast.checks == 0
    odd = _Composite("t_bloom", ["text", "citext"])
    checked._state = (composite_filter(keys), odd, None)
    assert outcome(checked.contains, ("a", "b")) == outcome(checked._contains_python, ("a", "b"))
    assert checked._fast.checks == 0


def test_unready_refused():
    """A FollowerCheck whose __init__ never ran: an error, not a call of a missing fallback."""
    from test_native import run_apart
    out = run_apart("""
        from bloomfilter import _native_check
        check = _native_check.native.FollowerCheck.__new__(_native_check.native.FollowerCheck)
        try:
            check.contains("a")
        except ValueError as error:
            print("refused:", error)
    """)
    assert "refused: FollowerCheck.__init__ was not called" in out


def test_rules_changed_during_a_key():
    """A composite key whose conversion (a UUID's bytes, Python code) sees the follower's state
    replaced, as a reload on the refresh thread does: the key is hashed by the rules it began
    with and checked in their copy, or handed to the fallback; never hashed by half of each."""
    key = (uuid.UUID(int=12345), "a", "b")
    old = Filter.empty(1000)
    # The key's bits, as the server sets them: a composite key's hash is the version 2 hash of
    # its parts' hashes, which is what adding their bytes sets.
    old.add(b"".join(struct.pack("<Q", key_hash(value)) for value in key))
    assert old.contains_hash(composite_hash(key))
    three = ((5, 0, 0), (2, 0, 0), (2, 0, 0))  # (kind, low, high): uuid, str, str
    new = Filter.empty(1000)
    check = native.FollowerCheck(lambda key: "fallback")

    class Switching(int):
        def to_bytes(self, *args, **kwargs):
            check.set_state(new._native, 6, ((2, 0, 0), (2, 0, 0)))
            return int(self).to_bytes(*args, **kwargs)

    switching = uuid.UUID(int=12345)
    object.__setattr__(switching, "int", Switching(12345))
    assert switching.bytes == key[0].bytes
    check.set_state(old._native, 6, three)
    assert check.contains((switching, "a", "b")) in (True, "fallback")
    check.set_state(old._native, 6, three)
    assert check.contains_many([(switching, "a", "b")]) in ([True], None)
    check.set_state(old._native, 6, three)
    assert check.contains(key) is True
