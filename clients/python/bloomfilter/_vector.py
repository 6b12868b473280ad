"""Filter.contains_many with NumPy, when it is importable (the optional extra "fast"; Debian's
python3-numpy): the keys are hashed one call each, as contains() hashes them, and every later
step (the block, each position's bit number, the byte gathered, the bit tested) is one NumPy
operation over a pass of keys. _batch is the pure-Python fallback; both give contains()'s
answers, and the errors of the keys contains() refuses (raised while hashing).

The products are NumPy's wrapping 64-bit ones: a position is bits [64 - block_log2, 64) of the
product, the same modulo 2^64. A block, (h * blocks) >> 64, is the high half of a 128-bit
product, which NumPy has not: with blocks < 2^32 (the header's 32-bit field) it is computed
from h's 32-bit halves, with no overflow.
"""

import numpy as np
import xxhash

from . import _batch

__all__ = ["VectorCheck", "LayeredVectorCheck", "MIN_KEYS", "PASS"]

MIN_KEYS = 40   # fewer keys: a loop of contains() costs less than a call's fixed NumPy work
PASS = 4096     # keys per pass, so that the pass's (keys x hashes) arrays stay in the caches

_U64 = np.uint64
_LOW32 = _U64(0xFFFFFFFF)
_32 = _U64(32)
_ONE = np.uint8(1)


def _block_of(h, blocks):
    """(h * blocks) >> 64 for each h, blocks < 2^32: hi * blocks + (lo * blocks >> 32) is
    below 2^64 (hi, lo < 2^32)."""
    return (((h >> _32) * blocks) + (((h & _LOW32) * blocks) >> _32)) >> _32


def _fin(z):
    """SplitMix64's finalizer, elementwise, wrapping as the C code does."""
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


def _uint64s(digests):
    return np.fromiter(digests, _U64)


class VectorCheck:
    """The batch check of one filter with NumPy: call it with a list of keys, get a list of
    bools (contains()'s answers)."""

    def __init__(self, f):
        self.filter = f
        self.version = f.version
        self.hashes = f.hashes
        self.blocks = _U64(f.blocks)
        self.block_bytes = _U64(f._block_bytes)
        self.header = _U64(36)  # HEADER_BYTES
        self.shift = _U64(64 - f.block_log2)
        self.multipliers = np.array(f._multipliers, dtype=_U64)
        self.steps = np.arange(f.hashes, dtype=_U64)

    def __call__(self, keys, key_bytes):
        if self.version == 2:
            hashes = _batch.digests(keys, xxhash.xxh3_64_intdigest, key_bytes, _uint64s)
        else:
            # xxh3_128_digest is the hash big-endian: its high half first.
            digests = _batch.digests(keys, xxhash.xxh3_128_digest, key_bytes, b"".join)
            hashes = np.frombuffer(digests, dtype=">u8").astype(_U64).reshape(-1, 2)
        # A view of the filter's bytes, for this call only: while it exists the bytearray cannot
        # change size (a follower's refresh writes pages into it in place, of the same size).
        data = np.frombuffer(self.filter._data, dtype=np.uint8)
        answers = []
        for start in range(0, len(hashes), PASS):
            answers += self._check(hashes[start:start + PASS], data).tolist()
        return answers

    def _check(self, h, data):
        """Whether every bit of each key is set. The arrays are (position, key): NumPy's
        reduction over the positions is then over rows, several times faster than over
        columns."""
        if self.version == 2:
            block = _block_of(h, self.blocks)
            numbers = (self.multipliers[:, None] * h) >> self.shift
        else:
            low, high = h[:, 1], h[:, 0]
            block = _block_of(high, self.blocks)
            # Version 1: position i is fin(low + i * step), step the high half rotated by 32
            # bits, made odd.
            step = ((high << _32) | (high >> _32)) | _U64(1)
            numbers = _fin(self.steps[:, None] * step + low) >> self.shift
        return _all_set(data, block * self.block_bytes + self.header, numbers)


def _all_set(data, base, numbers):
    """For each key (a column of numbers, its bit numbers in its block; base, the byte where
    its block starts in data): whether all its bits are set."""
    offsets = (numbers >> _U64(3)) + base
    bits = np.take(data, offsets.view(np.int64))
    bits &= np.left_shift(_ONE, (numbers & _U64(7)).astype(np.uint8))
    return bits.all(axis=0)


class LayeredVectorCheck:
    """The batch check of a layered value (format version 3) with NumPy. Its layers are version
    2 filters, which place a key from the same hash (XXH3_64 of its bytes, no seed), so a key is
    hashed once; each layer then tests, newest first as contains() does, the keys no newer layer
    holds, as VectorCheck tests one filter's."""

    def __init__(self, f, multipliers):
        """f: a LayeredFilter; multipliers(i): M_i of docs/format.md."""
        self.filter = f
        most = max(layer[2] for layer in f.layers)
        all_multipliers = np.array([multipliers(i) for i in range(most)], dtype=_U64)
        self.layers = []  # newest first: (blocks, block_bytes, header, shift, multipliers)
        for offset, (_, _, hashes, log2, blocks) in reversed(list(zip(f._offsets, f.layers))):
            self.layers.append((_U64(blocks), _U64(1 << (log2 - 3)), _U64(offset + 36),
                                _U64(64 - log2), all_multipliers[:hashes]))

    def __call__(self, keys, key_bytes):
        hashes = _batch.digests(keys, xxhash.xxh3_64_intdigest, key_bytes, _uint64s)
        # As VectorCheck: a view of the value's bytes for this call only.
        data = np.frombuffer(self.filter._data, dtype=np.uint8)
        answers = []
        for start in range(0, len(hashes), PASS):
            answers += self._check(hashes[start:start + PASS], data).tolist()
        return answers

    def _check(self, h, data):
        """Whether some layer holds each key: a layer tests the keys no newer one holds."""
        found = pending = None  # pending: the positions in h of the keys not found yet
        for blocks, block_bytes, header, shift, multipliers in self.layers:
            keys = h if pending is None else h[pending]
            numbers = (multipliers[:, None] * keys) >> shift
            present = _all_set(data, _block_of(keys, blocks) * block_bytes + header, numbers)
            if found is None:
                found = present
                pending = np.flatnonzero(~present)
            else:
                found[pending[present]] = True
                pending = pending[~present]
            if len(pending) == 0:
                break
        return found
