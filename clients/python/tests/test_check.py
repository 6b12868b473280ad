"""Filter.contains, compiled per filter (with the bit tables where the block size allows, with
shifts where it does not), against the plain check and against positions(): the same answer
for every key of every type, on half-full filters of both versions and every kind of sizing."""

import random
import uuid

import pytest

from bloomfilter import Filter
from bloomfilter import _core


def keys_of_every_type(count, seed):
    rng = random.Random(seed)
    keys = []
    for i in range(count):
        kind = i % 6
        if kind == 0:
            keys.append("user%d@mail.com" % rng.getrandbits(40))
        elif kind == 1:
            keys.append("gh\u00f6st%d@m\u00e4il.com\U0001F600" % rng.getrandbits(40))
        elif kind == 2:
            keys.append(rng.getrandbits(8 * (i % 30)).to_bytes(i % 30, "little"))
        elif kind == 3:
            keys.append(rng.getrandbits(64) - 2**63)
        elif kind == 4:
            keys.append(uuid.UUID(int=rng.getrandbits(128)))
        else:
            keys.append(bytearray(b"k%d" % i) if i % 2 else memoryview(b"m%d" % i))
    return keys


def expected(f, key):
    """The answer from positions(): every bit of the key's block set."""
    block, bits = f.positions(key)
    data = f.to_bytes()
    base = _core.HEADER_BYTES + block * (1 << (f.block_log2 - 3))
    return all(data[base + (bit >> 3)] >> (bit & 7) & 1 for bit in bits)


# (capacity, error_rate): 1, 7, 10, 13, 17 and 23 hashes (over 16: the plain check), blocks
# of 2^12 to 2^16 bits.
SIZINGS = [(1000, 0.01), (5000, 0.5), (2000, 0.001), (3000, 1e-4), (2000, 1e-5), (500, 1e-7)]


@pytest.mark.parametrize("form", ["tables", "shifts"])
@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("capacity,error_rate", SIZINGS)
def test_compiled_check_equals_plain_check(monkeypatch, capacity, error_rate, version, form,
                                           check_path):
    if form == "shifts":
        # As for blocks too large to tabulate.
        monkeypatch.setattr(_core, "_BIT_TABLES_MAX_LOG2", 11)
    f = Filter.empty(capacity, error_rate, version=version)
    uses_tables = "_byte" in getattr(f.contains, "__globals__", {})
    # The compiled check (bloomfilter._native) against the plain check, or Python's own.
    assert uses_tables == (check_path == "python" and form == "tables" and f.hashes <= 16)
    added = keys_of_every_type(capacity // 2, seed=capacity)
    f.update(added)
    others = keys_of_every_type(3000, seed=capacity + 1)
    for key in added + others:
        answer = f.contains(key)
        assert answer is f._contains_generic(key) is expected(f, key), key
        assert (key in f) is answer
    assert all(f.contains(key) for key in added)
    assert not all(f.contains(key) for key in others)


def test_check_sees_later_changes(check_path):
    # The compiled check reads the filter's own bytes: adds and union results are seen.
    f = Filter.empty(1000, 0.01)
    assert not f.contains("later")
    f.add("later")
    assert f.contains("later") and "later" in f.copy()
    g = Filter.empty(1000, 0.01).add(b"other")
    assert (f | g).contains(b"other") and not f.contains(b"other")
    with pytest.raises(UnicodeEncodeError):
        f.contains("\ud800")
    with pytest.raises(TypeError):
        f.contains(1.5)
