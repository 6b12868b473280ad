"""Filter.contains_many without NumPy: many keys checked at once, in CPython's big integers.

Filter.contains runs a few dozen interpreted operations per key: a product, shifts and masks, a
table lookup and a byte test for each bit position. Here each such step is one call into C for a
whole batch of keys. The keys' hashes sit in the 128-bit slots of one Python int (key j in bits
[128j, 128j + 64)), so that one multiplication of that int by a position's multiplier computes
the position's product for every key, each in its own slot (two 64-bit numbers multiply into
128 bits: no slot carries into the next). Shifts and masks cut out each key's bit number in the
filter (its block's first bit plus the position), four positions to a slot in 32-bit fields;
one conversion to bytes and one to a list give the byte offsets, operator.itemgetter gathers the
bytes, bytes.translate turns the low three bits of each field into the mask of its bit, and one
AND over the whole batch tests every bit.

A loop of contains() stops at a key's first clear bit, the batch computes the positions of a
stage for all its keys: the keys still possibly present after the first four go on to the
others alone (STAGES). The answers, and the errors for keys contains() refuses, are
contains()'s.
"""

import array
import itertools
import operator
import struct
import sys
import uuid

import xxhash

__all__ = ["BatchCheck", "Layer", "MIN_KEYS"]

CHUNK = 1024          # keys per pass, so that the pass's ints stay in the CPU's caches
MIN_KEYS = 32         # fewer keys: a loop of contains() costs less than a pass's setup
MAX_FILTER_BYTES = 1 << 29  # a bit number must fit a 32-bit field
# Positions [start, stop) tested in turn, each stage for the keys the ones before found maybe
# present. A stage costs about as much as four positions: one stage for all would compute seven
# positions of a key whose first bit is clear, stages of one or two positions cost more than
# they save (measured on a 1M-key filter at 1%, half the keys present or none).
STAGES = ((0, 4), (4, 1 << 30))

_MASK64 = (1 << 64) - 1
_HEADER_BITS = 36 * 8
_ZERO8 = bytes(8)
# A field's low byte (its bit number's low bits) -> the mask of that bit in its byte.
_BIT_MASKS = bytes(1 << (value & 7) for value in range(256))
_is_zero = (0).__eq__
_gather = operator.itemgetter
_from_bytes = int.from_bytes
_BIGINT = struct.Struct("<q")
# The keys xxhash takes as they are (a str is hashed as its UTF-8 bytes, as contains() does).
_AS_IS = frozenset((str, bytes))
# Keys of one other type, converted to the bytes key_bytes() gives without a call per key.
_CONVERTERS = {int: _BIGINT.pack, uuid.UUID: operator.attrgetter("bytes"), bytearray: bytes,
               memoryview: bytes}
# The byte offsets are read as native unsigned 32-bit ints.
USABLE = array.array("I").itemsize == 4


def _repeated(value, width, count):
    """`value` in each of `count` fields of `width` bits."""
    return _from_bytes((b"\x01" + bytes(width // 8 - 1)) * count, "little") * value


def digests(keys, digest, key_bytes, collect=list):
    """collect() of the XXH3 digests of the keys' bytes, in order; or the error contains()
    raises for the first key it refuses (a type, an int out of the bigint range, a lone
    surrogate)."""
    kinds = set(map(type, keys))
    if kinds <= _AS_IS:
        return collect(map(digest, keys))
    if len(kinds) == 1:
        convert = _CONVERTERS.get(next(iter(kinds)))
        if convert is not None:
            try:
                return collect(map(digest, map(convert, keys)))
            except struct.error:
                pass  # an int outside the bigint range: key_bytes() raises contains()'s error
    return collect(map(digest, map(key_bytes, keys)))


_CONSTANTS = {}


def _constants(block_log2):
    """The per-slot constants of a pass over CHUNK keys in a filter of 2^block_log2-bit blocks
    (shared by the filters of that block size)."""
    constants = _CONSTANTS.get(block_log2)
    if constants is None:
        slot = _repeated(1, 128, CHUNK)
        position = (1 << block_log2) - 1
        shift = 64 - block_log2  # a position is bits [shift, 64) of its product
        constants = _CONSTANTS.setdefault(block_log2, (
            slot * _MASK64,                                        # low: a slot's low 64 bits
            slot,                                                  # one
            # A block's first bit, (x * blocks) >> 64 << block_log2, is under 2^32.
            slot * (0xFFFFFFFF ^ position),                        # block
            slot * _HEADER_BITS,                                   # header
            _repeated((1 << 29) - 1, 32, 4 * CHUNK),               # byte offsets of bit numbers
            # Field k of a slot: a position's bits at [32k, 32k + block_log2).
            [(shift - 32 * k, slot * (position << (32 * k))) for k in range(4)],
            # The fields in use in a group of r < 4 positions.
            [_repeated(_from_bytes(b"\xff" * r + bytes(4 - r), "little"), 32, CHUNK) for r in range(5)],
        ))
    return constants


class BatchCheck:
    """The batch check of one filter: call it with a list of keys' digests (self.digest: for
    version 2 xxh3_64_digest, for version 1 xxh3_128_digest), get a list of bools."""

    def __init__(self, f, start=None):
        """f: a Filter, or a layer of a layered value (Layer); start: the byte of f._data where
        its blocks begin, if not after one header."""
        self.filter = f
        self.version = f.version
        self.digest = xxhash.xxh3_64_digest if f.version == 2 else xxhash.xxh3_128_digest
        self.shift = 64 - f.block_log2
        (self.low, self.one, self.block, self.header, self.byte_offsets, self.fields,
         self.used) = _constants(f.block_log2)
        if start is not None:
            self.header = self.one * (8 * start)
        self.multipliers = f._multipliers
        self.hashes = f.hashes

    def __call__(self, digests):
        """One bool per digest (at most CHUNK of them): every bit of the key set."""
        answers = None
        keys = range(len(digests))  # the positions in digests of the keys still maybe present
        for start, stop in STAGES:
            stop = min(stop, self.hashes)
            if start >= stop:
                break
            found = self._check(digests, start, stop)
            if answers is None:
                answers = found
            else:
                for index in itertools.compress(keys, map(operator.not_, found)):
                    answers[index] = False
            if stop == self.hashes:
                break
            keys = list(itertools.compress(keys, found))
            if not keys:
                break
            digests = list(itertools.compress(digests, found))
        return answers

    def _check(self, digests, start, stop):
        """For each digest: whether the bits of positions [start, stop) are all set."""
        count = len(digests)
        size = 16 * count
        if count == CHUNK:
            cut = None
            low, block, header, byte_offsets = self.low, self.block, self.header, self.byte_offsets
        else:
            cut = (1 << (128 * count)) - 1
            low, block, header, byte_offsets = (self.low & cut, self.block & cut,
                                                 self.header & cut, self.byte_offsets & cut)
        digests = digests[::-1]  # big-endian: the last digest lands in the lowest slot
        f = self.filter
        if self.version == 2:
            hashes = _from_bytes(_ZERO8 + _ZERO8.join(digests), "big")
            base = ((hashes * f.blocks >> self.shift) & block) + header
            products = self._products_v2(hashes, start, stop)
        else:
            both = _from_bytes(b"".join(digests), "big")
            high = (both >> 64) & low
            base = ((high * f.blocks >> self.shift) & block) + header
            one = self.one if cut is None else self.one & cut
            products = self._products_v1(both & low, high, low, one, start, stop)
        base |= base << 32
        base |= base << 64
        data = f._data
        missing = 0
        fields = self.fields
        k = 0
        numbers = 0
        for product in products:
            shift, mask = fields[k]
            numbers |= ((product >> shift) if shift >= 0 else (product << -shift)) & mask
            k += 1
            if k == 4 or start + k == stop:
                numbers += base  # each field's bit number: under 2^32, no carry into the next
                masks = _from_bytes(numbers.to_bytes(size, "little")[::4].translate(_BIT_MASKS),
                                    "little")
                if k < 4:
                    used = self.used[k]
                    masks &= used if cut is None else used & cut
                offsets = memoryview(((numbers >> 3) & byte_offsets).to_bytes(size, sys.byteorder))
                found = _from_bytes(bytes(_gather(*offsets.cast("I").tolist())(data)), "little")
                missing |= (found & masks) ^ masks
                start += k
                k = 0
                numbers = 0
        missing |= missing >> 16
        missing |= missing >> 8
        return list(map(_is_zero, missing.to_bytes(4 * count, "little")[::4]))

    def _products_v2(self, hashes, start, stop):
        for multiplier in self.multipliers[start:stop]:
            yield hashes * multiplier

    def _products_v1(self, low_bits, high, low, one, start, stop):
        # Version 1: position i is SplitMix64's finalizer of low + i * step (mod 2^64), step
        # the high half rotated by 32 bits, made odd.
        step = ((((high << 32) | (high >> 32)) & low) | one)
        g = (low_bits + step * start) & low
        for _ in range(start, stop):
            z = (g ^ (g >> 30)) & low
            z = (z * 0xBF58476D1CE4E5B9) & low
            z = (z ^ (z >> 27)) & low
            z = (z * 0x94D049BB133111EB) & low
            yield z ^ (z >> 31)
            g = (g + step) & low


class Layer:
    """A layer of a layered value as BatchCheck reads a filter: a version 2 filter whose blocks
    are in the value's bytes (`data`, shared, which a follower changes in place)."""

    __slots__ = ("version", "block_log2", "blocks", "hashes", "_multipliers", "_data")

    def __init__(self, data, hashes, block_log2, blocks, multipliers):
        self.version = 2
        self.block_log2, self.blocks, self.hashes = block_log2, blocks, hashes
        self._multipliers = multipliers
        self._data = data


def layered(checks, digests):
    """For each of the digests (at most CHUNK of them): whether some layer holds its key. checks:
    the layers' BatchChecks, the newest first; each tests the keys no newer one holds."""
    answers = [False] * len(digests)
    pending = range(len(digests))
    for check in checks:
        found = check(digests if len(pending) == len(digests) else [digests[i] for i in pending])
        for i in itertools.compress(pending, found):
            answers[i] = True
        pending = list(itertools.compress(pending, map(operator.not_, found)))
        if not pending:
            break
    return answers
