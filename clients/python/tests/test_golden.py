"""The Python code against the golden vectors (test/vectors/golden.json), which the C++ unit
tests check against the core: hashes, shards, positions, filter bytes and validation."""

import json
import os
import uuid

import pytest

import bloomfilter
from bloomfilter import Filter, composite_hash, key_bytes, key_hash, shard_of
from bloomfilter import _core

GOLDEN = os.environ.get("BLOOMFILTER_GOLDEN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "test", "vectors", "golden.json")

with open(GOLDEN, encoding="utf-8") as _file:
    VECTORS = json.load(_file)


def python_key(entry):
    kind, shown = entry["type"], entry["key"]
    if kind == "text":
        return shown
    if kind == "bytea":
        return bytes.fromhex(shown)
    if kind == "bigint":
        return int(shown)
    if kind == "uuid":
        return uuid.UUID(shown)
    raise AssertionError(kind)


KEYS = [python_key(entry) for entry in VECTORS["keys"]]


def test_every_type_is_covered():
    assert {entry["type"] for entry in VECTORS["keys"]} == {"text", "bytea", "bigint", "uuid"}


@pytest.mark.parametrize("entry", VECTORS["keys"], ids=lambda e: "%s:%s" % (e["type"], e["key"][:20]))
def test_key_hashes_and_shards(entry):
    key = python_key(entry)
    assert key_bytes(key).hex() == entry["bytes"]
    assert "%016x" % key_hash(key) == entry["hash_v2"]
    low, high = key_hash(key, version=1)
    assert ("%016x" % low, "%016x" % high) == (entry["hash_v1_low"], entry["hash_v1_high"])
    signed = key_hash(key) - (1 << 64) if key_hash(key) >= 1 << 63 else key_hash(key)
    assert signed == entry["bloom_hash"]
    assert [shard_of(key, n) for n in VECTORS["shard_counts"]] == entry["shards"]


def signed(h):
    return h - (1 << 64) if h >= 1 << 63 else h


@pytest.mark.parametrize("entry", VECTORS["composite"],
                         ids=lambda e: ",".join("%s:%s" % (p["type"], p["key"][:8]) for p in e["parts"]))
def test_composite_hashes(entry):
    values = [python_key(part) for part in entry["parts"]]
    assert [signed(key_hash(value)) for value in values] == [part["bloom_hash"] for part in entry["parts"]]
    assert "%016x" % composite_hash(values) == entry["hash_v2"]
    assert signed(composite_hash(values)) == entry["bloom_hash"]


def test_composite_hash_arity():
    assert composite_hash(["abc"]) == key_hash("abc")
    assert composite_hash(("t1", "x")) != composite_hash(("t2", "x"))
    for values in ([], list(range(9))):
        with pytest.raises(ValueError):
            composite_hash(values)


@pytest.mark.parametrize("spec", VECTORS["filters"],
                         ids=lambda s: "%d@%g-v%d" % (s["capacity"], s["error_rate"], s["version"]))
def test_filters(spec, check_path):
    f = Filter.empty(spec["capacity"], spec["error_rate"], version=spec["version"])
    assert (f.hashes, f.block_log2, f.blocks) == (spec["hashes"], spec["block_log2"], spec["blocks"])
    assert f.to_bytes()[:36].hex() == spec["empty_header"]
    for key, (block, bits) in zip(KEYS, spec["positions"]):
        assert f.positions(key) == (block, bits)
        f.add(key)
        assert key in f
    assert f.to_bytes().hex() == spec["all_keys_added"]
    assert Filter.from_bytes(bytes.fromhex(spec["all_keys_added"])) == f


@pytest.mark.parametrize("case", VECTORS["malformed"], ids=lambda c: c["what"])
def test_malformed(case):
    data = bytes.fromhex(case["bytes"])
    if case["status"] == "ok":
        Filter.from_bytes(data)
        return
    with pytest.raises(ValueError) as raised:
        Filter.from_bytes(data)
    assert raised.value.status == case["status"]
    assert _core.MESSAGES[case["status"]] in str(raised.value)


def test_operations(check_path):
    a = Filter.empty(1000, 0.01)
    b = Filter.empty(1000, 0.01)
    a.add("x")
    b.add(b"y")
    b.add(7)
    u = a | b
    assert "x" in u and b"y" in u and 7 in u and u.inserted == 3
    assert "y" in u  # text and bytea of the same bytes agree
    with pytest.raises(ValueError, match="different capacity"):
        a.union(Filter.empty(1001, 0.01))
    with pytest.raises(ValueError, match="different error_rate"):
        a.union(Filter.empty(1000, 0.02))
    with pytest.raises(ValueError, match="different format versions"):
        a.union(Filter.empty(1000, 0.01, version=1))
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        Filter.empty(0)
    with pytest.raises(ValueError, match="error_rate must be greater than 0"):
        Filter.empty(10, 1.0)
    with pytest.raises(ValueError, match="1 GB"):
        Filter.empty(2 ** 40, 0.01)
    with pytest.raises(ValueError, match="bigint out of range"):
        a.contains(2 ** 63)
    with pytest.raises(TypeError):
        a.contains(1.5)
    with pytest.raises(TypeError):
        a.contains(True)
    assert Filter.from_text(a.to_text()) == a
    with pytest.raises(ValueError):
        Filter.from_text("\\x0")
    info = a.info()
    assert info.capacity == 1000 and info.inserted == 1 and info.bits_set == a.hashes
    assert info.bytes == len(a.to_bytes()) + 4
    with pytest.raises(ValueError, match="shards must be between"):
        shard_of("x", 0)
    assert bloomfilter.__version__


@pytest.mark.parametrize("spec", VECTORS["layered"],
                         ids=lambda s: "%d@%g-x%d-%d-layers" % (s["capacity"], s["error_rate"], s["expansion"],
                                                                 len(s["layers"])))
def test_layered(spec, check_path):
    """A layered value (format version 3) as the core writes it: its layers where the core
    puts them, every key of every layer present, the absent keys answered as the core answers,
    and nothing that would write it."""
    data = bytes.fromhex(spec["bytes"])
    f = Filter.from_bytes(data)
    assert isinstance(f, bloomfilter.LayeredFilter) and isinstance(f, Filter)
    assert (f.version, f.capacity, f.error_rate, f.expansion) == (
        3, spec["capacity"], spec["error_rate"], spec["expansion"])
    assert [layer[:5] for layer in f.layers] == [
        (l["capacity"], l["error_rate"], l["hashes"], l["block_log2"], l["blocks"]) for l in spec["layers"]]
    assert list(f._offsets) == [l["offset"] for l in spec["layers"]]
    assert f.inserted == len(KEYS)
    assert all(key in f for key in KEYS)
    assert f.contains_many(KEYS) == [True] * len(KEYS)
    absent = [key for key, _ in spec["absent"]]
    assert [f.contains(key) for key in absent] == [answer for _, answer in spec["absent"]]
    assert f.contains_many(absent) == [answer for _, answer in spec["absent"]]
    # Each key is in the layer i % layers: an empty copy of that layer alone misses it.
    for n in range(len(spec["layers"])):
        stripped = bytearray(data)
        start = spec["layers"][n]["offset"] + 36
        end = spec["layers"][n + 1]["offset"] if n + 1 < len(spec["layers"]) else len(data)
        stripped[start:end] = bytes(end - start)
        g = Filter.from_bytes(bytes(stripped))
        layer_keys = KEYS[n::len(spec["layers"])]
        assert sum(g.contains(key) for key in layer_keys) < len(layer_keys)
    assert f.to_bytes() == data and Filter.from_text(f.to_text()) == f
    assert f.copy() == f and f.info().hashes is None
    for refused in (lambda: f.add("x"), lambda: f.update(["x"]), lambda: f.union(f), lambda: f | f,
                    lambda: f.positions("x")):
        with pytest.raises(ValueError, match="layered bloom value"):
            refused()
    assert f.to_bytes() == data
    with pytest.raises(ValueError, match="layered"):
        Filter(data)


def test_contains_hash():
    """contains_hash of a key's hash answers as contains of the key (a layered value's:
    test_follow_composite); a composite key's hash is checked the same way."""
    f = Filter.empty(2000)
    keys = ["k%d" % i for i in range(1000)] + list(range(1000))
    f.update(keys[::2])
    probes = keys + [composite_hash((i, "x")) for i in range(100)]
    assert [f.contains_hash(key_hash(k)) for k in keys] == [f.contains(k) for k in keys]
    assert sum(f.contains_hash(h) for h in probes[len(keys):]) < 10
    with pytest.raises(ValueError):
        f.contains_hash(-1)
    with pytest.raises(ValueError):
        Filter.empty(10, version=1).contains_hash(1)
