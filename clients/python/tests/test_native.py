"""The compiled check (bloomfilter._native, the extension's C++ core) against the pure-Python
one and the server: the same answers, single and batch, on filters of format versions 1 and 2
and layered values of 1 and 6 layers, for keys of every type and kind (subclasses, edges, keys
refused with the same errors); the fallback when it is turned off (BLOOMFILTER_NATIVE=0); and
bytes that are not a valid value, or stop being one, raising ValueError instead of crashing."""

import array
import enum
import math
import os
import random
import subprocess
import sys
import textwrap
import uuid

import pytest

import bloomfilter
from bloomfilter import Filter, LayeredFilter, _core, _native_check, key_hash
from bloomfilter.follow import IndexFollower

from test_check import SIZINGS, keys_of_every_type
from test_golden import VECTORS
from test_server import make_keys

native = _native_check.native
needs_native = pytest.mark.skipif(
    native is None and os.environ.get("BLOOMFILTER_NATIVE_REQUIRED") != "1",
    reason="bloomfilter._native is not built (python3 setup.py build_ext --inplace)")
pytestmark = needs_native

_MASK64 = (1 << 64) - 1


class Text(str):
    pass


class Number(enum.IntEnum):
    SEVEN = 7


class Id(uuid.UUID):
    pass


def odd_keys():
    """Keys of the kinds _native converts itself and of those it hands to key_bytes."""
    return ["", "a", "\x00", "\u00e9" * 100, "\U0001F600", "x" * 10000, Text("abc"), Text(""),
            b"", b"abc", bytes(range(256)) * 4, bytearray(b"abc"), bytearray(), memoryview(b"abc"),
            memoryview(b"abcdef")[::2], memoryview(array.array("I", [1, 2, 3])),
            0, 1, -1, 2 ** 30 - 1, 2 ** 30, -2 ** 30 + 1, -2 ** 30, 2 ** 63 - 1, -2 ** 63, 2 ** 31,
            Number.SEVEN,
            uuid.UUID(int=0), uuid.UUID(int=_MASK64 << 64 | 1), Id(int=5)]


REFUSED = [True, False, None, 1.5, 2 ** 63, -2 ** 63 - 1, 2 ** 200, "\ud800", "a\udfffb",
           array.array("B", b"abc"), object(), ["a"], ("a",)]


def both(data):
    """The filter of `data` with the compiled check and with the pure-Python one."""
    compiled = Filter.from_bytes(data)
    saved = _native_check.native
    _native_check.native = None
    try:
        python = Filter.from_bytes(data)
    finally:
        _native_check.native = saved
    assert compiled._native is not None and python._native is None
    return compiled, python


def layered_value(capacity, error_rate, expansion, count, keys):
    """A layered value (format version 3) of `count` layers, built here as docs/format.md says,
    with key i added to layer i % count."""
    layers = [_core.layer_parameters(capacity, error_rate, expansion, n) for n in range(count)]
    parts = [_core._LAYERED_HEADER.pack(_core.MAGIC, 3, 0, count, expansion, capacity, error_rate,
                                        len(keys))]
    for n, (layer_capacity, rate, hashes, log2, blocks) in enumerate(layers):
        bits = bytearray(blocks << (log2 - 3))
        for key in keys[n::count]:
            h = key_hash(key)
            base = ((h * blocks) >> 64) << (log2 - 3)
            for i in range(hashes):
                p = ((h * _core.position_multiplier(i)) & _MASK64) >> (64 - log2)
                bits[base + (p >> 3)] |= 1 << (p & 7)
        parts += [_core._HEADER.pack(_core.MAGIC, 2, log2, hashes, blocks, layer_capacity, rate, 0),
                  bytes(bits)]
    return b"".join(parts)


def filters_of_every_format():
    """(name, bytes, keys added): versions 1 and 2 at every sizing, layered of 1 and 6 layers."""
    values = []
    for capacity, error_rate in SIZINGS:
        for version in (1, 2):
            added = keys_of_every_type(capacity // 2, seed=capacity + version)
            f = Filter.empty(capacity, error_rate, version=version).update(added)
            values.append(("v%d-%d@%g" % (version, capacity, error_rate), f.to_bytes(), added))
    for count, capacity in ((1, 5000), (6, 1000)):
        added = keys_of_every_type(3000, seed=count)
        values.append(("layered-%d" % count, layered_value(capacity, 0.01, 2, count, added), added))
    for spec in VECTORS["layered"]:
        values.append(("golden-layered-%d" % len(spec["layers"]), bytes.fromhex(spec["bytes"]), []))
    return values


FORMATS = filters_of_every_format()


def errors_of(check, key):
    try:
        return check(key)
    except Exception as error:  # the error's type and message, compared between the paths
        return type(error), str(error)


def test_accelerator():
    assert bloomfilter.accelerator() == "native"
    assert native.check_path() in ("scalar", "avx2", "avx512")
    f = Filter.empty(1000)
    assert f.contains == f._native.contains and f._native.layers == 1


@pytest.mark.parametrize("name,data,added", FORMATS, ids=[v[0] for v in FORMATS])
def test_answers_equal_python(name, data, added, monkeypatch):
    compiled, python = both(data)
    assert isinstance(compiled, LayeredFilter) == name.startswith(("layered", "golden"))
    keys = added + keys_of_every_type(6000, seed=len(data)) + odd_keys()
    random.Random(len(data)).shuffle(keys)
    expected = [python.contains(key) for key in keys]
    assert all(python.contains(key) for key in added) and not all(expected)
    assert [compiled.contains(key) for key in keys] == expected
    assert [key in compiled for key in keys] == expected
    assert compiled.contains_many(keys) == expected
    assert compiled.contains_many(iter(keys)) == expected
    assert compiled.contains_many(tuple(keys[:100])) == expected[:100]
    assert compiled.contains_many([]) == []
    # The pure-Python batches: NumPy's and, without it, the big integers'.
    assert python.contains_many(keys) == expected
    monkeypatch.setattr(_core, "_vector", None)
    assert python.contains_many(keys) == expected
    if not isinstance(compiled, LayeredFilter):
        assert compiled._contains_generic  # the plain check, the same answers
        assert [compiled._contains_generic(key) for key in keys[:3000]] == expected[:3000]


def large_values():
    """(name, bytes, keys added) of at least 256 KB: a batch of 4,096 keys or more on a version 2
    or layered one is checked in the order of its keys' blocks (native.cpp's by_block)."""
    added = keys_of_every_type(12000, seed=44)
    values = [("v%d-300000" % version, Filter.empty(300_000, 0.01, version=version).update(added).to_bytes(),
               added) for version in (1, 2)]
    values.append(("layered-4", layered_value(60_000, 0.01, 2, 4, added), added))
    return values


LARGE = large_values()


@pytest.mark.parametrize("name,data,added", LARGE, ids=[v[0] for v in LARGE])
def test_large_batch_equals_single(name, data, added):
    """Batches of 4,096 keys and more on values of 256 KB and more (sorted by block), one key
    short of that (in chunks), with the keys of every kind: each answer is its key's own."""
    compiled, python = both(data)
    assert len(data) >= 256 * 1024
    keys = added + keys_of_every_type(12000, seed=45) + odd_keys()
    random.Random(45).shuffle(keys)
    expected = [python.contains(key) for key in keys]
    assert 0.4 < sum(expected) / len(keys) < 0.6
    assert [compiled.contains(key) for key in keys] == expected
    for count in (len(keys), 4096, 4095, 5000):
        assert compiled.contains_many(keys[:count]) == expected[:count]
        assert compiled.contains_many(keys[-count:]) == expected[-count:]


def cpu_flags():
    """The CPU's flags from /proc/cpuinfo (an empty set where there is none)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def test_batch_registers_where_the_cpu_has_avx512():
    """The AVX-512 batch check is there exactly where the CPU has AVX-512 F and DQ (x86-64)."""
    flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags")
    expected = os.uname().machine == "x86_64" and {"avx512f", "avx512dq"} <= flags
    assert native.batch_registers() is expected


# Error rates whose filters have 4096-bit blocks, k = 1 to 7.
REGISTER_RATES = [0.5, 0.3, 0.15, 0.08, 0.04, 0.02, 0.01]


@pytest.mark.parametrize("error_rate", REGISTER_RATES)
def test_register_batch_equals_single(error_rate):
    """A batch of 8 keys a block and more on a version 2 filter of 4096-bit blocks (register_blocks
    where the CPU has AVX-512), and one key short of that (sorted by region): each answer is its
    key's own, with blocks holding 0 to dozens of the batch's keys, runs of the same key, and
    every key type."""
    added = keys_of_every_type(3000, seed=46)
    # About 300 KB, over by_block's 256 KB: 9.6 bits a key at 0.01, 1.44 at 0.5.
    capacity = int(300_000 * 8 * math.log(2) ** 2 / -math.log(error_rate))
    data = Filter.empty(capacity, error_rate).update(added).to_bytes()
    compiled, python = both(data)
    assert compiled.block_log2 == 12 and compiled.hashes == REGISTER_RATES.index(error_rate) + 1
    threshold = 8 * compiled.blocks
    assert len(data) >= 256 * 1024 and threshold >= 4096  # by_block's size and key count
    keys = added + keys_of_every_type(3000, seed=47) + odd_keys() + ["same"] * 40
    keys = (keys * (threshold // len(keys) + 2))[:threshold + 5000]
    random.Random(46).shuffle(keys)
    expected = [python.contains(key) for key in keys]
    assert 0.2 < sum(expected) / len(keys) < 0.8
    assert [compiled.contains(key) for key in keys[:5000]] == expected[:5000]
    checker = compiled._native
    for count in (threshold, threshold - 1, len(keys)):
        registers = native.batch_registers() and count >= threshold
        assert checker.batch_path(count) == ("registers" if registers else "regions")
        assert compiled.contains_many(keys[:count]) == expected[:count]
        assert compiled.contains_many(keys[-count:]) == expected[-count:]
    # The same batch by regions, the registers turned off.
    was = native.set_batch_registers(False)
    try:
        assert checker.batch_path(len(keys)) == "regions"
        assert compiled.contains_many(keys) == expected
    finally:
        native.set_batch_registers(was)
    assert was is True and checker.batch_path(len(keys)) == ("registers" if native.batch_registers() else "regions")


def test_register_batch_path_needs_one_filter_of_4096_bit_blocks():
    """register_blocks for one filter of 4096-bit blocks (a version 2 value, or a layered value
    of one such layer, of any size) and 8 keys a block, from 1,024 keys; not for two layers,
    larger blocks, fewer keys, or version 1 (whose batches go in chunks)."""
    if not native.batch_registers():
        pytest.skip("no AVX-512 here")
    added = keys_of_every_type(2000, seed=48)
    plain = Filter.empty(300_000, 0.01).update(added)
    one_layer = LayeredFilter.from_bytes(layered_value(300_000, 0.04, 2, 1, added))
    two_layers = LayeredFilter.from_bytes(layered_value(150_000, 0.04, 2, 2, added))
    larger = Filter.empty(300_000, 0.001)
    assert plain.block_log2 == 12 and larger.block_log2 > 12
    (_, (_, _, _, log2, layer_blocks)), = _core.read_layers(one_layer.to_bytes())[4]
    assert log2 == 12
    blocks = plain.blocks
    for f, count, path in ((plain, 8 * blocks, "registers"), (plain, 8 * blocks - 1, "regions"),
                           (plain, 4095, "chunks"), (one_layer, 8 * layer_blocks, "registers"),
                           (one_layer, 8 * layer_blocks - 1, "regions"),
                           (two_layers, 10 ** 6, "regions"), (larger, 10 ** 6, "regions"),
                           (Filter.empty(300_000, 0.01, version=1), 10 ** 6, "chunks")):
        assert len(f.to_bytes()) >= 256 * 1024
        assert f._native.batch_path(count) == path, (f, count)
    keys = added + ["absent %d" % n for n in range(8 * layer_blocks)]
    assert one_layer.contains_many(keys) == [one_layer.contains(key) for key in keys]
    # A filter under 256 KB (its batches otherwise in chunks): from 1,024 keys and 8 a block.
    small = Filter.empty(20_000, 0.01).update(added)
    assert small.block_log2 == 12 and 8 * small.blocks < 1024 and len(small.to_bytes()) < 256 * 1024
    assert small._native.batch_path(1024) == "registers"
    assert small._native.batch_path(1023) == "chunks"
    for count in (1023, 1024, len(keys)):
        assert small.contains_many(keys[-count:]) == [small.contains(key) for key in keys[-count:]]


def test_batch_bmi2_where_the_cpu_has_it():
    """The batch's scalar checks compiled for BMI2 are there exactly where the CPU has BMI2
    (x86-64)."""
    flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags")
    assert native.batch_bmi2() is (os.uname().machine == "x86_64" and "bmi2" in flags)


# Error rates whose filters have k = 1 to 20 hashes and blocks of 4096 to 131072 bits, for the
# scalar checks (the unrolled ones up to 16 hashes, the core's loop past them).
SCALAR_RATES = [0.5, 0.1, 0.01, 0.005, 0.002, 0.001, 0.0001, 0.00001, 0.000001]


@pytest.mark.parametrize("error_rate", SCALAR_RATES)
def test_scalar_batch_with_and_without_bmi2(error_rate):
    """The regions path (a batch sorted by region, each region's lines asked for before the
    region before it is checked) and the chunks path, with the checks compiled for BMI2 and
    without, on a plain value and a layered value of three layers: each answer its key's own,
    with regions of no key, of one, and of every key of the batch (one key repeated)."""
    added = keys_of_every_type(3000, seed=50)
    # About 300 KB, over by_block's 256 KB (as test_register_batch_equals_single's), and about
    # twice that in three layers. Filled to its capacity, so that absent keys answer True at
    # about the error rate, each by all of its positions.
    capacity = int(300_000 * 8 * math.log(2) ** 2 / -math.log(error_rate))
    fill = ["fill %d" % n for n in range(capacity)]
    plain = Filter.empty(capacity, error_rate).update(added).update(fill)
    layered = LayeredFilter.from_bytes(layered_value(
        capacity // 5, error_rate, 2, 3, added + (fill[:capacity // 10] if error_rate <= 0.01 else [])))
    keys = added + keys_of_every_type(3000, seed=51) + odd_keys()
    random.Random(50).shuffle(keys)
    with_registers = native.set_batch_registers(False)  # 4096-bit blocks: regions, not registers
    try:
        for f in (plain, layered):
            _, python = both(f.to_bytes())
            assert len(f.to_bytes()) >= 256 * 1024
            expected = [python.contains(key) for key in keys]
            assert 0.2 < sum(expected) / len(keys) < 0.8
            same = ["same key"] * 5000
            same_expected = [python.contains("same key")] * 5000
            for bmi2 in (True, False):
                was = native.set_batch_bmi2(bmi2)
                try:
                    assert f._native.batch_path(len(keys)) == "regions"
                    assert f._native.batch_path(4095) == "chunks"
                    assert f.contains_many(keys) == expected
                    assert f.contains_many(keys[:4096]) == expected[:4096]
                    assert f.contains_many(keys[-4095:]) == expected[-4095:]
                    assert f.contains_many(same) == same_expected
                    assert f.contains_many(keys[:1] + same) == expected[:1] + same_expected
                finally:
                    native.set_batch_bmi2(was)
                assert was is True
    finally:
        native.set_batch_registers(with_registers)
    assert (plain.hashes, plain.block_log2) == {
        0.5: (1, 12), 0.1: (3, 12), 0.01: (7, 12), 0.005: (8, 13), 0.002: (9, 14), 0.001: (10, 14),
        0.0001: (13, 15), 0.00001: (17, 16), 0.000001: (20, 17)}[error_rate]


def test_batch_within_a_batch():
    """A key whose conversion checks a batch (a str subclass's encode, which key_bytes calls)
    while the outer batch is being sorted: each batch has its own sort buffers, and both answer
    as their keys' single checks, on the registers' path and the regions'."""
    added = keys_of_every_type(3000, seed=49)
    f = Filter.empty(300_000, 0.01).update(added)
    g = Filter.empty(300_000, 0.01).update(added[::2])
    inner_keys = added + ["inner %d" % n for n in range(8 * g.blocks)]
    inner_expected = [g.contains(key) for key in inner_keys]
    inner_answers = []

    class Reentrant(str):
        def encode(self, *args):
            inner_answers.append(g.contains_many(inner_keys))
            return str.encode(self, *args)

    outer_keys = added + ["outer %d" % n for n in range(8 * f.blocks)]
    outer_keys[100:100] = [Reentrant("reentrant"), Reentrant(added[7])]
    outer_expected = [f.contains(str(key)) if type(key) is Reentrant else f.contains(key)
                      for key in outer_keys]
    for registers in (True, False):
        was = native.set_batch_registers(registers)
        try:
            assert f._native.batch_path(len(outer_keys)) == (
                "registers" if registers and native.batch_registers() else "regions")
            inner_answers.clear()
            assert f.contains_many(outer_keys) == outer_expected
            assert inner_answers == [inner_expected, inner_expected]
        finally:
            native.set_batch_registers(was)


def test_batch_larger_than_the_kept_buffers():
    """A batch whose sort buffers are more than the 4 MB kept between batches (about 200,000
    keys) has its own, then the kept ones serve the next batch: every answer its key's own."""
    added = ["k%d" % n for n in range(100_000)]
    f = Filter.empty(300_000, 0.01).update(added)
    keys = ["k%d" % n for n in range(250_000)]
    expected = [f.contains(key) for key in keys]
    assert 0.3 < sum(expected) / len(keys) < 0.5
    for batch in (keys, keys[:5000], keys, keys[-200_000:]):
        assert f.contains_many(batch) == [f.contains(key) for key in batch]


REFUSING = FORMATS[:2] + FORMATS[-5:-3]


@pytest.mark.parametrize("name,data,added", REFUSING, ids=[v[0] for v in REFUSING])
def test_refusals_equal_python(name, data, added):
    compiled, python = both(data)
    for key in REFUSED:
        expected = errors_of(python.contains, key)
        assert isinstance(expected, tuple), key
        assert errors_of(compiled.contains, key) == expected
        for keys in ([key], ["a"] * 50 + [key] + [7] * 50, [3] * 100 + [key]):
            assert errors_of(compiled.contains_many, keys) == expected
            assert errors_of(python.contains_many, keys) == expected


def test_follows_changes_in_place():
    """The compiled check reads the filter's own bytes on every call: adds, and pages a
    follower writes in place, are seen at once."""
    f = Filter.empty(10_000, 0.01)
    assert not f.contains("later") and f.contains_many(["later"]) == [False]
    f.add("later")
    assert f.contains("later") and f.contains_many(["later"]) == [True]
    g = Filter.empty(10_000, 0.01).update(range(100))
    f._data[36:] = g._data[36:]  # as _merge writes pages
    assert f.contains(5) and not f.contains("later")


@pytest.mark.parametrize("case", VECTORS["malformed"], ids=lambda c: c["what"])
def test_malformed_refused_as_the_core_refuses(case):
    """_native validates as the core does: the golden vectors' values refused, each for its
    reason, as Filter.from_bytes refuses them."""
    data = bytes.fromhex(case["bytes"])
    if case["status"] == "ok":
        native.Checker(data, _core.key_bytes)
        return
    with pytest.raises(ValueError) as raised:
        native.Checker(data, _core.key_bytes)
    assert raised.value.status == case["status"]
    assert str(raised.value) == "invalid bloom value: " + _core.MESSAGES[case["status"]]


def test_random_damage_raises_or_checks():
    """Bytes damaged at random (header bytes, truncated, extended): _native refuses exactly the
    values Filter.from_bytes refuses, for the same reason, and checks the others."""
    rng = random.Random(44)
    originals = [data for _, data, _ in FORMATS if len(data) < 200_000]
    keys = keys_of_every_type(60, seed=1)
    checked = 0
    for _ in range(3000):
        data = bytearray(rng.choice(originals))
        what = rng.randrange(4)
        if what == 0:
            data[rng.randrange(36)] = rng.randrange(256)
        elif what == 1:
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(min(len(data), 200))] ^= 1 << rng.randrange(8)
        elif what == 2:
            del data[rng.randrange(len(data)):]
        else:
            data += bytes(rng.randrange(1, 600))
        try:
            expected = Filter.from_bytes(bytes(data))
        except ValueError as error:
            expected = error
        try:
            checker = native.Checker(data, _core.key_bytes)
        except ValueError as error:
            assert isinstance(expected, ValueError), bytes(data[:40]).hex()
            assert error.status == expected.status, bytes(data[:40]).hex()
            continue
        assert isinstance(expected, Filter), (bytes(data[:40]).hex(), expected)
        assert checker.contains_many(keys) == [expected.contains(key) for key in keys]
        checked += 1
    assert 500 < checked < 2500  # both kinds, many of each


def test_buffer_changed_under_the_check():
    f = Filter.empty(1000, 0.01).update(["a", "b"])
    checker = f._native
    assert checker.contains("a")
    f._data[12] ^= 1  # capacity
    with pytest.raises(ValueError, match="changed under its check"):
        checker.contains("a")
    with pytest.raises(ValueError, match="changed under its check"):
        checker.contains_many(["a", "b"])
    f._data[12] ^= 1
    assert checker.contains_many(["a", "b"]) == [True, True]
    f._data.extend(b"\x00")  # no export outstanding between calls: the size may change
    with pytest.raises(ValueError, match="changed under its check"):
        checker.contains("a")
    del f._data[-1:]
    f._data[28:36] = bytes([255]) * 8  # inserted: not part of what the check relies on
    assert checker.contains("b")
    del f._data[100:]
    with pytest.raises(ValueError, match="changed under its check"):
        checker.contains_many(["a"])


def test_checker_misuse():
    with pytest.raises(TypeError):
        native.Checker("not a buffer", _core.key_bytes)
    with pytest.raises(TypeError):
        native.Checker(Filter.empty(10).to_bytes(), None)
    with pytest.raises(ValueError, match="shorter than a bloom header"):
        native.Checker(b"", _core.key_bytes)
    unready = native.Checker.__new__(native.Checker)
    for call in (lambda: unready.contains("a"), lambda: unready.contains_many(["a"]), lambda: unready.layers):
        with pytest.raises(ValueError, match="__init__"):
            call()
    checker = Filter.empty(10)._native
    with pytest.raises(TypeError):
        checker.contains_many(5)
    # key_bytes returning something else than bytes.
    odd = native.Checker(Filter.empty(10).to_bytes(), lambda key: "text")
    with pytest.raises(TypeError, match="not bytes"):
        odd.contains(1.5)
    assert odd.contains("plain") is False


def run_apart(code, env=None):
    """Runs code in a fresh interpreter (with env's variables added to the environment), so that
    a crash fails the test, not the run; its output."""
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, **(env or {})),
                         cwd=os.path.join(os.path.dirname(__file__), ".."))
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr[-2000:])
    return run.stdout


def test_checker_initialised_once():
    """A Checker re-initialised from a key's conversion while its batch runs would have the batch
    read the new value's layout over the old value's buffer: refused."""
    checker = Filter.empty(10)._native
    with pytest.raises(TypeError, match="initialised once"):
        checker.__init__(Filter.empty(1000).to_bytes(), _core.key_bytes)
    out = run_apart("""
        from bloomfilter import Filter, _core, _native_check
        native = _native_check.native
        small = Filter.empty(10, 0.5).update(["key-1"])
        big = bytearray(Filter.empty(20_000_000, 0.01).to_bytes())
        class Evil:
            pass
        def key_bytes(key):
            if isinstance(key, Evil):
                native.Checker.__init__(checker, big, key_bytes)
                return b"x"
            return _core.key_bytes(key)
        checker = native.Checker(small.to_bytes(), key_bytes)
        try:
            checker.contains_many([Evil()] + ["key-%d" % i for i in range(5000)])
        except TypeError as error:
            print("refused:", error)
        print("still the small value's:", checker.contains("key-1"))
    """)
    assert "refused: a Checker is initialised once" in out
    assert "still the small value's: True" in out


def test_answers_made_after_the_keys():
    """contains_many's answers list does not exist while key_bytes (Python code) runs: code
    reaching it through the garbage collector would find it half filled, its items' references
    not yet counted."""
    out = run_apart("""
        import gc
        from bloomfilter import Filter, _core, _native_check
        native = _native_check.native
        COUNT = 300
        seen = []
        def key_bytes(key):
            for obj in gc.get_objects():
                if type(obj) is list and obj is not keys and len(obj) == COUNT:
                    seen.append(len(obj))
                    del obj[:]
            return _core.key_bytes(key)
        keys = ["k%d" % i for i in range(128)] + [memoryview(b"x")] * (COUNT - 128)
        checker = native.Checker(Filter.empty(1000).to_bytes(), key_bytes)
        answers = checker.contains_many(keys)
        print("lists seen:", len(seen), "answers:", len(answers), sum(answers))
    """)
    assert "lists seen: 0 answers: 300 0" in out


def test_keys_changed_during_the_batch():
    """A key converted by Python code (a UUID subclass's bytes) that empties the list being
    checked: an error or answers, never a crash."""
    keys = []

    class Emptying(uuid.UUID):
        @property
        def bytes(self):
            keys.clear()
            return uuid.UUID.bytes.fget(self)

    f = Filter.empty(1000)
    keys.extend(["a"] * 10 + [Emptying(int=1)] + ["b"] * 100)
    with pytest.raises(RuntimeError, match="changed during contains_many"):
        f.contains_many(keys)
    keys.extend(["a", Emptying(int=1)])
    assert f.contains_many(keys) == [False, False]


def test_forced_fallback():
    """BLOOMFILTER_NATIVE=0 when bloomfilter is imported: the pure-Python check, the same
    answers."""
    code = ("import bloomfilter, json, sys\n"
            "from bloomfilter import Filter, _native_check\n"
            "f = Filter.empty(10000).update(range(0, 3000, 3))\n"
            "keys = list(range(5000)) + ['k%d' % i for i in range(100)]\n"
            "print(json.dumps([bloomfilter.accelerator(), f._native is None,\n"
            "                  hasattr(f.contains, '__code__'), f.contains_many(keys),\n"
            "                  [f.contains(k) for k in keys]]))\n")
    import json
    answers = {}
    for setting in ("0", "1"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=os.path.join(os.path.dirname(__file__), ".."),
                             env=dict(os.environ, BLOOMFILTER_NATIVE=setting))
        assert run.returncode == 0, run.stderr
        answers[setting] = json.loads(run.stdout)
    assert answers["0"][:3] == ["numpy", True, True]
    assert answers["1"][:3] == ["native", False, False]
    assert answers["0"][3] == answers["0"][4] == answers["1"][3] == answers["1"][4]


def test_faster_than_python():
    """The point of the compiled check: a check and a batch's key each at most a third of the
    pure-Python check's CPU time (bench/python_client.sh measures them)."""
    import time
    f = Filter.empty(1_000_000, 0.01).update(str(n) for n in range(0, 400_000, 2))
    compiled, python = both(f.to_bytes())
    keys = [str(n) for n in range(40_000)]

    def cpu(check):
        best = None
        for _ in range(5):
            started = time.thread_time()
            check()
            elapsed = time.thread_time() - started
            best = elapsed if best is None else min(best, elapsed)
        return best
    python_loop = cpu(lambda: list(map(python.contains, keys)))
    compiled_loop = cpu(lambda: list(map(compiled.contains, keys)))
    compiled_many = cpu(lambda: compiled.contains_many(keys))
    assert python_loop / compiled_loop >= 3, (python_loop, compiled_loop)
    assert python_loop / compiled_many >= 3, (python_loop, compiled_many)


# -- against the server ----------------------------------------------------------------------

SQL_TYPES = ["text", "bytea", "bigint", "uuid"]


def sql_answers(conn, data, kind, keys):
    (answers,) = conn.execute("SELECT bloom_contains(%%s::bytea::bloom, %%s::%s[])" % kind,
                              [data, keys]).fetchone()
    return answers


def grown_index(conn, kind, layers):
    """A bloomfilter index on a `kind` column grown to `layers` layers (expansion 2), its
    table, and the keys inserted."""
    table = "native_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (k %s NOT NULL)" % (table, kind))
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (k) "
                 "WITH (capacity = 300, error_rate = 0.01, expansion = 2)" % (table, table))
    keys = []
    seed = 10
    count = 0
    while count < layers or not keys:
        batch = make_keys(kind, 300 if keys else 100, seed)
        seed += 2
        conn.execute("INSERT INTO %s SELECT unnest(%%s::%s[])" % (table, kind), [batch])
        keys += batch
        count = conn.execute("SELECT count(*) FROM bloom_index_layers(%s)", [table + "_bloom"]).fetchone()[0]
    assert count == layers
    return table, table + "_bloom", keys


@pytest.mark.server
@pytest.mark.parametrize("kind", SQL_TYPES)
def test_equal_sql(conn, kind):
    """Filters of versions 1 and 2 made in SQL, and an index's layered values of 1 and 6
    layers: the compiled check, the pure-Python one and SQL's bloom_contains agree on every key,
    single and batch."""
    present = make_keys(kind, 20_000, 1)
    absent = make_keys(kind, 20_000, 2)
    values = []
    for version in (1, 2):
        empty = ("overlay(bloom_empty(20000, 0.01)::bytea PLACING '\\x01' FROM 5)::bloom"
                 if version == 1 else "bloom_empty(20000, 0.01)")
        (data,) = conn.execute("SELECT bloom_add(%s, %%s::%s[])::bytea" % (empty, kind),
                               [present]).fetchone()
        values.append((version, data, present))
    for layers in (1, 6):
        table, index, keys = grown_index(conn, kind, layers)
        (data,) = conn.execute("SELECT bloom_index_filter(%s)::bytea", [index]).fetchone()
        values.append((3, data, keys))
        assert len(Filter.from_bytes(data).layers) == layers
    for version, data, added in values:
        compiled, python = both(data)
        assert compiled.version == python.version == version
        keys = added[:5000] + absent
        present = min(len(added), 5000)
        sql = sql_answers(conn, data, kind, keys)
        assert compiled.contains_many(keys) == sql
        assert [compiled.contains(key) for key in keys] == sql
        assert python.contains_many(keys) == sql
        assert [python.contains(key) for key in keys] == sql
        assert all(sql[:present]) and not all(sql[present:])


@pytest.mark.server
def test_index_follower(conn, dsn, check_path):
    """An IndexFollower's copy checks with the compiled check when it is there, and answers
    as SQL, single and batch, on a layered index while it grows."""
    table, index, keys = grown_index(conn, "text", 3)
    with IndexFollower(dsn, index, background=False) as follower:
        assert (follower.filter._native is not None) == (check_path == "native")
        more = make_keys("text", 3000, 99)
        conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [more])
        follower.refresh()
        keys = keys + more + make_keys("text", 5000, 100)
        (sql,) = conn.execute("SELECT array_agg(bloom_index_contains(%s, k) ORDER BY n) "
                              "FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n)",
                              [index, keys]).fetchone()
        assert follower.contains_many(keys) == sql
        assert [follower.contains(key) for key in keys] == sql
        assert (follower.filter._native is not None) == (check_path == "native")


def test_checks_a_shared_mapping(tmp_path):
    """A Checker reads any object exporting its bytes, an mmap of a file as well as a Filter's
    bytearray (what a follower sharing one copy per host will give it); a mapping closed under
    it raises ValueError, as a buffer of another length does."""
    import mmap
    for name, data, added in (FORMATS[1], FORMATS[-5], FORMATS[-4]):
        path = tmp_path / name
        path.write_bytes(data)
        with open(path, "r+b") as file:
            mapping = mmap.mmap(file.fileno(), 0)
        checker = native.Checker(mapping, _core.key_bytes)
        f = Filter.from_bytes(data)
        keys = added[:500] + keys_of_every_type(2000, seed=9)
        assert checker.contains_many(keys) == [checker.contains(k) for k in keys] == f.contains_many(keys)
        assert native.Checker(memoryview(mapping), _core.key_bytes).contains_many(keys) == f.contains_many(keys)
        mapping[36:] = bytes(len(data) - 36)  # another process's writes, seen at once
        assert not any(checker.contains_many(keys))
        mapping.close()
        with pytest.raises(ValueError):
            checker.contains("a")
        with pytest.raises(ValueError):
            checker.contains_many(["a"])


def test_batch_references_balanced():
    """contains_many takes the list's references to True and False at once: as many as it
    holds, after batches and after ones that fail part way (counted over 50 of each, once the
    first of each has run: the interpreter's own references settle then)."""
    import sys
    f = Filter.empty(10000).update(range(0, 3000, 2))
    keys = ["k%d" % i for i in range(500)] + list(range(1000))

    def batches():
        answers = f.contains_many(keys)
        assert sum(answers) >= 500
        try:
            f.contains_many(keys + [1.5] + keys)
        except TypeError:
            pass
        else:
            raise AssertionError("a float key was checked")
    batches()
    before = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(50):
        batches()
    assert (sys.getrefcount(True), sys.getrefcount(False)) == before


@pytest.mark.parametrize("name,data,added", FORMATS, ids=[v[0] for v in FORMATS])
def test_contains_hash_equals_python(name, data, added):
    """Checker.contains_hash answers as Filter.contains_hash (pure Python), or refuses a version
    1 filter and a hash out of range as it does."""
    compiled, python = both(data)
    checker = compiled._native
    hashes = [key_hash(key) for key in added[:300]] + [random.Random(7).getrandbits(64) for _ in range(3000)]
    if compiled.version == 1:
        with pytest.raises(ValueError, match="version 2"):
            checker.contains_hash(0)
        return
    assert [checker.contains_hash(h) for h in hashes] == [python.contains_hash(h) for h in hashes]
    for h in (-1, 1 << 64):
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            checker.contains_hash(h)


@pytest.mark.parametrize("layers", [1, 5])
def test_batches_across_chunks(layers):
    """Batches of every size around the compiled batch's chunk of 1024 keys answer as the
    single checks, with keys converted by Python code (UUID subclasses) among them."""
    keys = ["k%d" % i for i in range(5000)]
    keys[1500:1510] = [Id(int=i) for i in range(10)]
    if layers == 1:
        f = Filter.empty(3000).update(keys[::2])
    else:
        f = Filter.from_bytes(layered_value(300, 0.01, 2, layers, keys[::2]))
    for count in (0, 1, 1023, 1024, 1025, 2048, 2049, 5000):
        assert f.contains_many(keys[:count]) == [f.contains(k) for k in keys[:count]], count
    assert all(f.contains_many(keys[::2]))
