"""The bloom byte format, sizing and hashing, as specified in the extension's docs/format.md
("Byte format", "Keys: what is hashed", "Placing a key", "Sizing"), in plain Python.

Every computation follows src/core/bloom.cpp step for step, in the same floating-point
operations, so a filter made or changed here is byte for byte the one the server makes, and
a value the server refuses is refused here with the same reason.
"""

import math
import struct
import uuid

import xxhash

from . import _batch, _native_check

try:
    from . import _vector  # with NumPy (the extra "fast"): contains_many's steps in NumPy
except ImportError:
    _vector = None

# XXH3 came with xxhash 2.0. The requirement is checked here rather than in pyproject.toml:
# Debian's python3-xxhash (3.0 in bookworm) declares its version as 0.0.0 to pip.
if not hasattr(xxhash, "xxh3_128_intdigest"):
    raise ImportError("bloomfilter needs xxhash 2.0 or later (XXH3); this one is %s"
                      % getattr(xxhash, "VERSION", "older"))

__all__ = ["Filter", "LayeredFilter", "Info", "shard_of", "key_bytes", "key_hash",
           "FORMAT_VERSIONS", "FORMAT_VERSION_LAYERED", "UnsupportedVersionError", "accelerator",
           "__version__"]

# The client's version (pyproject.toml's), named in the errors that ask to upgrade it.
__version__ = "1.1.0"
DISTRIBUTION = "bloomfilter-postgresql"

FORMAT_VERSION_1 = 1
FORMAT_VERSION_2 = 2
FORMAT_VERSIONS = (FORMAT_VERSION_1, FORMAT_VERSION_2)
# A layered value: the layers of an index that grows, each a version 2 filter (LayeredFilter).
FORMAT_VERSION_LAYERED = 3
MAX_LAYERS = 32
LAYER_MAX_HASHES = 8
MAX_EXPANSION = 1024
MAGIC = b"BLOM"
HEADER_BYTES = 36
MIN_BLOCK_LOG2 = 12
MAX_BLOCK_LOG2 = 24
# PostgreSQL values are limited to 1 GB (0x3fffffff bytes) including their 4-byte length word.
MAX_ENCODED_BYTES = 0x3FFFFFFF - 4
MAX_BITS = (MAX_ENCODED_BYTES - HEADER_BYTES) * 8
SHARD_SEED = 0x5348415244  # "SHARD"

_MASK64 = (1 << 64) - 1
_HEADER = struct.Struct("<4sBBHIQdQ")  # magic, version, block_log2, hashes, blocks, capacity, error_rate, inserted
_INSERTED = struct.Struct("<Q")
_BIGINT = struct.Struct("<q")
_LN2 = math.log(2.0)

# The messages of status_message() in src/core/bloom.cpp, which the server's errors quote.
MESSAGES = {
    "truncated": "the value is shorter than a bloom header",
    "bad_magic": 'the value does not start with the bloom magic "BLOM"',
    "unsupported_version": "unsupported bloom format version",
    "bad_block_size": "the block size in the header is out of range",
    "bad_parameters": "capacity or error_rate in the header is out of range",
    "inconsistent_sizing": "hashes or blocks in the header do not match capacity and error_rate",
    "bad_length": "the value's length does not match its number of blocks",
    "too_large": "the filter would exceed the 1 GB limit of a PostgreSQL value",
    "bad_layer_count": "the layer count or expansion in the layered header is out of range",
    "bad_layer": "a layer's header does not match its place in the layered value",
}
_LAYERED_HEADER = struct.Struct("<4sBBHIQdQ")  # magic, version, 0, layer_count, expansion, capacity, error_rate, inserted


def _fin(z):
    """SplitMix64's finalizer, modulo 2^64."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def position_multiplier(i):
    """M_i of format version 2: fin((i + 1) * 0x9e3779b97f4a7c15) | 1."""
    return _fin(((i + 1) * 0x9E3779B97F4A7C15) & _MASK64) | 1


def _round_half_away(x):
    """C's round() for x >= 0: halves go away from zero (Python's round() goes to even)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def _g(x):
    """printf's %g as PostgreSQL's snprintf writes it (NaN and Infinity spelled out)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return "%g" % x


class _SizingError(ValueError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _size(capacity, error_rate):
    """size_filter() of bloom.cpp: (hashes, block_log2, blocks), or _SizingError."""
    if capacity < 1:
        raise _SizingError("capacity_out_of_range", "capacity must be at least 1, got %d" % capacity)
    if not (0.0 < error_rate < 1.0):
        raise _SizingError("error_rate_out_of_range",
                           "error_rate must be greater than 0 and less than 1, got %s" % _g(error_rate))
    too_large = _SizingError(
        "too_large", "a bloom filter for capacity %d at error_rate %s would exceed the 1 GB limit "
        "of a PostgreSQL value" % (capacity, _g(error_rate)))
    # optimal_bits(): m as a double, compared before the conversion to an integer.
    m = -(float(capacity) * math.log(error_rate)) / (_LN2 * _LN2)
    m = float(math.ceil(m)) if math.isfinite(m) else m
    if not (m <= float(MAX_BITS)):
        raise too_large
    bits = 1 if m < 1 else int(m)
    k = float(_round_half_away(float(bits) / float(capacity) * _LN2))
    if k < 1:
        k = 1.0
        one_hash_bits = -float(capacity) / math.log1p(-error_rate)
        one_hash_bits = float(math.ceil(one_hash_bits)) if math.isfinite(one_hash_bits) else one_hash_bits
        if not (one_hash_bits <= float(MAX_BITS)):
            raise too_large
        bits = max(bits, int(one_hash_bits))
    hashes = int(k)
    log2 = _block_log2_for(hashes, bits)
    padded = int(math.ceil(float(bits) * 1.005))
    blocks = (padded + (1 << log2) - 1) >> log2
    if HEADER_BYTES + (blocks << (log2 - 3)) > MAX_ENCODED_BYTES:
        raise too_large
    return hashes, log2, blocks


def _block_log2_for(hashes, bits):
    """block_log2_for() of bloom.cpp."""
    wanted = 4096.0 * math.pow(float(hashes) / 7.0, 3.0)
    log2 = MIN_BLOCK_LOG2
    while log2 < MAX_BLOCK_LOG2 and float(1 << log2) < wanted and (1 << log2) < bits:
        log2 += 1
    return log2


def _size_capped(capacity, error_rate, max_hashes):
    """size_filter_capped() of bloom.cpp: _size() with at most max_hashes hashes."""
    hashes, log2, blocks = _size(capacity, error_rate)
    if hashes <= max_hashes:
        return hashes, log2, blocks
    too_large = _SizingError("too_large", "too large")
    k = float(max_hashes)
    bits = -k * float(capacity) / math.log1p(-math.pow(error_rate, 1.0 / k))
    bits = float(math.ceil(bits)) if math.isfinite(bits) else bits
    if not (bits <= float(MAX_BITS)):
        raise too_large
    log2 = _block_log2_for(max_hashes, int(bits))
    padded = math.ceil(bits * 1.005)
    blocks = (int(padded) + (1 << log2) - 1) >> log2
    if HEADER_BYTES + (blocks << (log2 - 3)) > MAX_ENCODED_BYTES:
        raise too_large
    return max_hashes, log2, blocks


def layer_error_rate(error_rate, n):
    """layer_error_rate() of bloom.cpp: error_rate x (1/4) x (3/4)^n, as the same double (3^n is
    exact, then one rounded product and an exact scaling)."""
    three_to_n = 1.0
    for _ in range(n):
        three_to_n *= 3
    return math.ldexp(error_rate * three_to_n, -2 * (n + 1))


def layer_parameters(capacity, error_rate, expansion, n):
    """layer_parameters() of bloom.cpp, layer n of a layered value: (capacity, error_rate,
    hashes, block_log2, blocks), or _SizingError."""
    layer_capacity = float(capacity)
    for _ in range(n):
        layer_capacity *= expansion
    if layer_capacity > float(0x7FFFFFFFFFFFFFFF):
        raise _SizingError("too_large", "too large")
    layer_capacity = int(layer_capacity)
    rate = layer_error_rate(error_rate, n)
    if n == 0:
        hashes, log2, blocks = _size(layer_capacity, rate)
    else:
        hashes, log2, blocks = _size_capped(layer_capacity, rate, LAYER_MAX_HASHES)
    return layer_capacity, rate, hashes, log2, blocks


def _refuse(status):
    error = ValueError("invalid bloom value: " + MESSAGES[status])
    error.status = status
    raise error


def read_layers(data):
    """Checks a layered value as read_layers() in bloom.cpp does, in the same order; returns
    (capacity, error_rate, expansion, inserted, [(offset, (capacity, error_rate, hashes,
    block_log2, blocks)) per layer]) or raises ValueError with .status."""
    if len(data) < HEADER_BYTES:
        _refuse("truncated")
    magic, version, zero, count, expansion, capacity, error_rate, inserted = \
        _LAYERED_HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        _refuse("bad_magic")
    if version != FORMAT_VERSION_LAYERED or zero != 0:
        _refuse("unsupported_version")
    if count < 1 or count > MAX_LAYERS or expansion < 2 or expansion > MAX_EXPANSION:
        _refuse("bad_layer_count")
    if capacity < 1 or not (0.0 < error_rate < 1.0):
        _refuse("bad_parameters")
    layers = []
    offset = HEADER_BYTES
    for n in range(count):
        try:
            parameters = layer_parameters(capacity, error_rate, expansion, n)
        except _SizingError as error:
            _refuse("too_large" if error.status == "too_large" else "bad_parameters")
        layers.append((offset, parameters))
        offset += HEADER_BYTES + (parameters[4] << (parameters[3] - 3))
        if offset > MAX_ENCODED_BYTES:
            _refuse("too_large")
    for at, (layer_capacity, rate, hashes, log2, blocks) in layers:
        if at + HEADER_BYTES > len(data):
            _refuse("bad_length")
        expected = _HEADER.pack(MAGIC, FORMAT_VERSION_2, log2, hashes, blocks, layer_capacity, rate, 0)
        if bytes(data[at:at + 28]) != expected[:28]:
            _refuse("bad_layer")
    if len(data) != offset:
        _refuse("bad_length")
    return capacity, error_rate, expansion, inserted, layers


def key_bytes(key):
    """The bytes the server hashes for a key: str as UTF-8 (text, in a UTF8 database), bytes
    as they are (bytea), int as 8 bytes little-endian two's complement (bigint; smallint and
    integer columns are hashed as bigint too), uuid.UUID as its 16 bytes (uuid)."""
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes):
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    if isinstance(key, bool):
        raise TypeError("bloom keys must be str, bytes, int or uuid.UUID, not bool")
    if isinstance(key, int):
        try:
            return _BIGINT.pack(key)
        except struct.error:
            raise ValueError("bigint out of range: %d" % key) from None
    if isinstance(key, uuid.UUID):
        return key.bytes
    raise TypeError("bloom keys must be str, bytes, int or uuid.UUID, not %s" % type(key).__name__)


def key_hash(key, version=FORMAT_VERSION_2):
    """The key's hash as a filter of `version` uses it: version 2, the 64-bit XXH3 hash (what
    SQL's bloom_hash returns, as an unsigned number); version 1, the 128-bit XXH3 hash as a
    (low, high) pair of 64-bit halves."""
    data = key_bytes(key)
    if version == FORMAT_VERSION_1:
        h = xxhash.xxh3_128_intdigest(data)
        return h & _MASK64, h >> 64
    return xxhash.xxh3_64_intdigest(data)


MAX_KEY_PARTS = 8
_PART = struct.Struct("<Q")


def composite_hash(values):
    """The hash of a composite key, as an unsigned number: the key of a multicolumn index's row,
    what SQL's bloom_hash(a, b, ...) returns. Each value's version 2 hash (key_hash), 8 bytes
    little-endian each in column order, hashed again with XXH3; a key of one value is that
    value's hash (docs/format.md, "Composite keys")."""
    values = tuple(values)
    if not 1 <= len(values) <= MAX_KEY_PARTS:
        raise ValueError("a composite key has 1 to %d values, not %d" % (MAX_KEY_PARTS, len(values)))
    if len(values) == 1:
        return key_hash(values[0])
    return xxhash.xxh3_64_intdigest(b"".join(_PART.pack(key_hash(value)) for value in values))


def shard_of(key, shards):
    """SQL's bloom_shard(key, shards): a shard number in [0, shards), independent of the bits a
    filter sets for the key."""
    if isinstance(shards, bool) or not isinstance(shards, int):
        raise TypeError("shards must be an int")
    if not 1 <= shards <= 0x7FFFFFFF:
        raise ValueError("shards must be between 1 and 2147483647, got %d" % shards)
    return (xxhash.xxh3_64_intdigest(key_bytes(key), seed=SHARD_SEED) * shards) >> 64


class UnsupportedVersionError(ValueError):
    """A filter of a format version this client does not read (.version): a newer one is made
    by a newer extension, which a newer client reads."""


def read_header(data):
    """Checks an encoded filter as read_header() in bloom.cpp does, in the same order; returns
    (version, block_log2, hashes, blocks, capacity, error_rate, inserted) or raises ValueError
    (with .status, the core's status name) carrying the server's reason; for a format version
    newer than this client's, UnsupportedVersionError, which says to upgrade the client."""
    def refuse(status):
        error = ValueError("invalid bloom value: " + MESSAGES[status])
        error.status = status
        raise error

    if len(data) < HEADER_BYTES:
        refuse("truncated")
    magic, version, block_log2, hashes, blocks, capacity, error_rate, inserted = \
        _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        refuse("bad_magic")
    if version == FORMAT_VERSION_LAYERED:
        error = ValueError("a layered bloom value (format version 3) is not one filter: "
                           "Filter.from_bytes reads it as a LayeredFilter")
        error.status = "layered"
        raise error
    if version > FORMAT_VERSION_LAYERED:
        error = UnsupportedVersionError(
            "invalid bloom value: %s %d, newer than this client (%s %s reads versions %s): "
            "upgrade the Python client" % (MESSAGES["unsupported_version"], version, DISTRIBUTION,
                                           __version__, "1, 2 and 3"))
        error.status, error.version = "unsupported_version", version
        raise error
    if version not in FORMAT_VERSIONS:
        refuse("unsupported_version")
    try:
        expected = _size(capacity, error_rate)
    except _SizingError as error:
        refuse("too_large" if error.status == "too_large" else "bad_parameters")
    if block_log2 < MIN_BLOCK_LOG2 or block_log2 > MAX_BLOCK_LOG2:
        refuse("bad_block_size")
    if (hashes, block_log2, blocks) != expected:
        refuse("inconsistent_sizing")
    if len(data) != HEADER_BYTES + (blocks << (block_log2 - 3)):
        refuse("bad_length")
    return version, block_log2, hashes, blocks, capacity, error_rate, inserted


# Bit p of a block is bit p & 7 of its byte p >> 3. For the compiled checks, two lists give both
# per position: a list subscript is one of CPython's specialised instructions, cheaper than the
# shift and two masks it replaces. Kept per block size, up to 2^16 bits (blocks of the filters
# of up to 16 hashes are smaller); larger blocks use the shifts.
_BIT_TABLES = {}
_BIT_TABLES_MAX_LOG2 = 16


def _bit_tables(block_log2):
    """(byte offset, bit mask) lists indexed by a bit position in a block of 2^block_log2 bits,
    or None for blocks too large to tabulate."""
    if block_log2 > _BIT_TABLES_MAX_LOG2:
        return None
    tables = _BIT_TABLES.get(block_log2)
    if tables is None:
        positions = range(1 << block_log2)
        tables = _BIT_TABLES.setdefault(block_log2, ([p >> 3 for p in positions],
                                                     [1 << (p & 7) for p in positions]))
    return tables


class Info(tuple):
    """The columns of SQL's bloom_info(filter), in its order."""
    __slots__ = ()
    _fields = ("capacity", "error_rate", "bits", "hashes", "bytes", "inserted", "bits_set", "fill",
               "estimated_count", "estimated_error_rate")

    def __new__(cls, *values):
        return tuple.__new__(cls, values)

    def _asdict(self):
        return dict(zip(self._fields, self))

    def __repr__(self):
        return "Info(%s)" % ", ".join("%s=%r" % pair for pair in zip(self._fields, self))


for _index, _name in enumerate(Info._fields):
    setattr(Info, _name, property(lambda self, i=_index: self[i]))


class Filter:
    """A Bloom filter in the extension's byte format, held in memory.

    `key in f` / `f.contains(key)`: False means the key was certainly never added; True, that it
    probably was (wrong with probability about error_rate). Keys are str, bytes, int and
    uuid.UUID, hashed as the server hashes text, bytea, bigint and uuid.
    """

    __slots__ = ("_data", "version", "capacity", "error_rate", "hashes", "block_log2", "blocks",
                 "_block_bytes", "_shift", "_bit_mask", "_multipliers", "contains", "_batch",
                 "_vector_check", "_native")

    # The filter's own copy of the bytes it is made from (shared.py's filters read a mapping in
    # place instead).
    _own = bytearray

    def __init__(self, data):
        """Takes the byte format (validated): use from_bytes() or empty()."""
        header = read_header(data)
        self._data = self._own(data)
        (self.version, self.block_log2, self.hashes, self.blocks, self.capacity,
         self.error_rate, _) = header
        self._block_bytes = 1 << (self.block_log2 - 3)
        self._shift = 64 - self.block_log2
        self._bit_mask = (1 << self.block_log2) - 1
        self._multipliers = tuple(position_multiplier(i) for i in range(self.hashes))
        self._native = _native_check.checker(self._data)  # None: the pure-Python check
        self.contains = self._compile_contains() if self._native is None else self._native.contains
        self._batch = None
        self._vector_check = None

    @classmethod
    def from_bytes(cls, data):
        """A filter from its byte format (bytes, bytearray or memoryview; the bytes of SQL's
        bloom::bytea, binary COPY or a bloom column in binary results). Raises ValueError, with
        the server's reason, for anything the server would refuse."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("from_bytes takes bytes, not %s" % type(data).__name__)
        return cls._of(bytes(data))

    @classmethod
    def _of(cls, data):
        # A layered value (format version 3, what bloom_index_filter gives for an index that
        # grows) is a LayeredFilter.
        if cls is Filter and len(data) >= HEADER_BYTES and data[:4] == MAGIC and data[4] == FORMAT_VERSION_LAYERED:
            return LayeredFilter(data)
        return cls(data)

    @classmethod
    def from_text(cls, text):
        """A filter from its text form, "\\x" and the byte format in hex (as bloom prints)."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            text = bytes(text).decode("ascii")
        if not text.startswith("\\x") or len(text) % 2 != 0:
            raise ValueError("invalid bloom text: expected \\x followed by an even number of hex digits")
        try:
            data = bytes.fromhex(text[2:]) if not any(c.isspace() for c in text) else None
        except ValueError:
            data = None
        if data is None:
            raise ValueError("invalid bloom text: expected \\x followed by an even number of hex digits")
        return cls._of(data)

    @classmethod
    def empty(cls, capacity, error_rate=0.01, version=FORMAT_VERSION_2):
        """An empty filter for `capacity` distinct keys at false-positive rate `error_rate`: the
        bytes of SQL's bloom_empty(capacity, error_rate) (version 2; version=1 for the older
        placement)."""
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise TypeError("capacity must be an int")
        if version not in FORMAT_VERSIONS:
            raise ValueError("version must be 1 or 2, got %r" % (version,))
        if capacity > 0x7FFFFFFFFFFFFFFF:
            raise ValueError("capacity out of range for bigint: %d" % capacity)
        hashes, block_log2, blocks = _size(capacity, float(error_rate))
        header = _HEADER.pack(MAGIC, version, block_log2, hashes, blocks, capacity,
                              float(error_rate), 0)
        return cls(header + bytes(blocks << (block_log2 - 3)))

    def to_bytes(self):
        """The byte format (what SQL's bloom::bytea gives)."""
        return bytes(self._data)

    def to_text(self):
        """The text form, as bloom prints: "\\x" and the byte format in lower-case hex."""
        return "\\x" + self._data.hex()

    @property
    def inserted(self):
        """Keys added, duplicates included (saturates at 2^64 - 1)."""
        return _INSERTED.unpack_from(self._data, 28)[0]

    def _set_inserted(self, value):
        _INSERTED.pack_into(self._data, 28, min(value, _MASK64))

    def _block_and_bits(self, data):
        """The block index and the bit positions inside it of a key's bytes."""
        if self.version == FORMAT_VERSION_2:
            h = xxhash.xxh3_64_intdigest(data)
            shift, mask = self._shift, self._bit_mask
            return (h * self.blocks) >> 64, [((h * m) >> shift) & mask for m in self._multipliers]
        h = xxhash.xxh3_128_intdigest(data)
        low, high = h & _MASK64, h >> 64
        step = (((high << 32) | (high >> 32)) & _MASK64) | 1
        bits = []
        g = low
        for _ in range(self.hashes):
            bits.append(_fin(g) >> self._shift)
            g = (g + step) & _MASK64
        return (high * self.blocks) >> 64, bits

    def positions(self, key):
        """(block, [bit positions inside the block]) of a key in this filter."""
        return self._block_and_bits(key_bytes(key))

    def _compile_contains(self):
        """The check of this filter as a function with its parameters as constants and its bit
        positions unrolled. In CPython a check costs a few dozen interpreted operations: the
        loop, attribute loads and arguments would be a third of them, and each bit test's
        shifts and masks another third, which two table lookups replace (_bit_tables)."""
        if self.hashes > 16:
            return self._contains_generic
        tables = _bit_tables(self.block_log2)
        if tables is None:
            test = "    if not (_d[b + (p >> 3)] >> (p & 7)) & 1: return False"
        else:
            test = "    if not _d[b + _byte[p]] & _bit[p]: return False"
        # xxhash hashes a str as its UTF-8 bytes (and refuses lone surrogates as str.encode
        # does): str keys, the common case, skip key_bytes().
        key = "key if key.__class__ is str else _key_bytes(key)"
        if self.version == FORMAT_VERSION_2:
            lines = [
                "def contains(key):",
                "    h = _xxh(%s)" % key,
                "    b = %d + ((h * %d) >> 64) * %d" % (HEADER_BYTES, self.blocks, self._block_bytes),
            ]
            for m in self._multipliers:
                lines.append("    p = (h * %d >> %d) & %d" % (m, self._shift, self._bit_mask))
                lines.append(test)
        else:
            lines = [
                "def contains(key):",
                "    h = _xxh128(%s)" % key,
                "    low, high = h & %d, h >> 64" % _MASK64,
                "    b = %d + ((high * %d) >> 64) * %d" % (HEADER_BYTES, self.blocks, self._block_bytes),
                "    step = (((high << 32) | (high >> 32)) & %d) | 1" % _MASK64,
                "    g = low",
            ]
            for i in range(self.hashes):
                if i:
                    lines.append("    g = (g + step) & %d" % _MASK64)
                lines.append("    z = ((g ^ (g >> 30)) * 0xBF58476D1CE4E5B9) & %d" % _MASK64)
                lines.append("    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & %d" % _MASK64)
                lines.append("    p = (z ^ (z >> 31)) >> %d" % self._shift)
                lines.append(test)
        lines.append("    return True")
        namespace = {"_xxh": xxhash.xxh3_64_intdigest, "_xxh128": xxhash.xxh3_128_intdigest,
                     "_key_bytes": key_bytes, "_d": self._data}
        if tables is not None:
            namespace["_byte"], namespace["_bit"] = tables
        exec("\n".join(lines), namespace)
        contains = namespace["contains"]
        contains.__doc__ = Filter._contains_generic.__doc__
        return contains

    def _contains_generic(self, key):
        """False: `key` was certainly never added; True: it probably was."""
        data = key_bytes(key)
        d = self._data
        if self.version == FORMAT_VERSION_2:
            h = xxhash.xxh3_64_intdigest(data)
            base = HEADER_BYTES + ((h * self.blocks) >> 64) * self._block_bytes
            shift, mask = self._shift, self._bit_mask
            for m in self._multipliers:
                bit = ((h * m) >> shift) & mask
                if not (d[base + (bit >> 3)] >> (bit & 7)) & 1:
                    return False
            return True
        block, bits = self._block_and_bits(data)
        base = HEADER_BYTES + block * self._block_bytes
        for bit in bits:
            if not (d[base + (bit >> 3)] >> (bit & 7)) & 1:
                return False
        return True

    def __contains__(self, key):
        """`key in f`: f.contains(key)."""
        return self.contains(key)

    def contains_hash(self, h):
        """The check of a key by its version 2 hash (key_hash, or composite_hash for a
        multicolumn index's key), an unsigned 64-bit number: False, no key of that hash was
        added; True, one probably was. Pure Python, one key at a time."""
        if self.version != FORMAT_VERSION_2:
            raise ValueError("contains_hash takes a format version 2 filter, not version %d" % self.version)
        return _contains_hash(self._data, HEADER_BYTES, self.blocks, self.block_log2, self._multipliers, h)

    def contains_many(self, keys):
        """[f.contains(key) for key in keys], a list of bools, each step computed for the whole
        batch at once: with NumPy where it is importable (see _vector, and accelerator()),
        else in CPython's big integers (_batch); for many keys, faster per key than the loop.
        A key contains() refuses raises its error here too."""
        if not isinstance(keys, (list, tuple)):
            keys = list(keys)
        if self._native is not None:
            return self._native.contains_many(keys)
        if _vector is not None and len(keys) >= _vector.MIN_KEYS:
            vector = self._vector_check
            if vector is None:
                vector = self._vector_check = _vector.VectorCheck(self)
            return vector(keys, key_bytes)
        return self._contains_many_python(keys)

    def _contains_many_python(self, keys):
        """contains_many without NumPy: the loop for a few keys, else _batch's passes."""
        if len(keys) < _batch.MIN_KEYS or not _batch.USABLE or len(self._data) > _batch.MAX_FILTER_BYTES:
            contains = self.contains
            return [contains(key) for key in keys]
        check = self._batch
        if check is None:
            check = self._batch = _batch.BatchCheck(self)
        digests = _batch.digests(keys, check.digest, key_bytes)
        if len(digests) <= _batch.CHUNK:
            return check(digests)
        answers = []
        for start in range(0, len(digests), _batch.CHUNK):
            answers += check(digests[start:start + _batch.CHUNK])
        return answers

    def add(self, key):
        """Adds a key in place (as SQL's bloom_add does to its copy): its bits are set and
        `inserted` counts it. Returns self."""
        block, bits = self._block_and_bits(key_bytes(key))
        base = HEADER_BYTES + block * self._block_bytes
        d = self._data
        for bit in bits:
            d[base + (bit >> 3)] |= 1 << (bit & 7)
        self._set_inserted(self.inserted + 1)
        return self

    def update(self, keys):
        """Adds every key of an iterable. Returns self."""
        for key in keys:
            self.add(key)
        return self

    def union(self, other):
        """A new filter holding the keys of both (SQL's bloom_union): same version, capacity and
        error_rate, or ValueError naming what differs. `inserted` is the sum."""
        if not isinstance(other, Filter):
            raise TypeError("union takes a Filter")
        if self.version != other.version:
            raise ValueError("the filters have different format versions")
        if self.capacity != other.capacity:
            raise ValueError("the filters have different capacity")
        if struct.pack("<d", self.error_rate) != struct.pack("<d", other.error_rate):
            raise ValueError("the filters have different error_rate")
        a = int.from_bytes(self._data[HEADER_BYTES:], "little")
        b = int.from_bytes(other._data[HEADER_BYTES:], "little")
        bits = (a | b).to_bytes(len(self._data) - HEADER_BYTES, "little")
        result = Filter(bytes(self._data[:HEADER_BYTES]) + bits)
        result._set_inserted(self.inserted + other.inserted)
        return result

    __or__ = union

    def info(self):
        """SQL's bloom_info(filter): capacity, error_rate, bits, hashes, bytes (the value's size,
        with PostgreSQL's 4-byte length word), inserted, bits_set, fill, estimated_count and
        estimated_error_rate, computed in the server's order of operations."""
        bits_set, count_sum, error_sum = self._block_estimates(0, self.blocks)
        bits = self.blocks << self.block_log2
        return Info(self.capacity, self.error_rate, bits, self.hashes, len(self._data) + 4,
                    self.inserted, bits_set, bits_set / float(bits), count_sum,
                    error_sum / self.blocks)

    def _block_estimates(self, first, last):
        """Over blocks [first, last): the bits set, the sum of the blocks' estimated counts and
        the sum of their estimated error rates (bloom_info's sums, in its order)."""
        return _block_estimates(self._data, HEADER_BYTES, self.hashes, self.block_log2, first, last)

    def copy(self):
        return Filter(bytes(self._data))

    def __eq__(self, other):
        """Byte-identical filters, as SQL's `=`."""
        return isinstance(other, Filter) and self._data == other._data

    # Unhashable: a filter changes with add(), update() and a follower's refresh, and a hash of
    # its content would leave it lost in any set or dict it was put in. Key a dict by
    # f.to_bytes() (or by identity, id(f)) where that is meant.
    __hash__ = None

    # No len(): how many distinct keys a filter holds is not known (inserted counts adds,
    # duplicates included; info().estimated_count estimates them), and a size in bytes under the
    # name of a count would be read as one. The size is nbytes.

    @property
    def nbytes(self):
        """The size of the byte format in bytes (what octet_length(bloom::bytea) gives)."""
        return len(self._data)

    def __reduce__(self):
        # Pickled as its byte format (validated again when loaded): for multiprocessing, caches.
        return (Filter.from_bytes, (bytes(self._data),))

    def __bytes__(self):
        return self.to_bytes()

    def __repr__(self):
        return "<bloomfilter.Filter version=%d capacity=%d error_rate=%r hashes=%d blocks=%d>" % (
            self.version, self.capacity, self.error_rate, self.hashes, self.blocks)


def _contains_hash(d, start, blocks, block_log2, multipliers, h):
    """Whether the version 2 filter of `blocks` blocks at d[start:] has every bit of the hash h."""
    if not 0 <= h <= _MASK64:
        raise ValueError("a key hash is an unsigned 64-bit number")
    base = start + ((h * blocks) >> 64) * (1 << (block_log2 - 3))
    shift, mask = 64 - block_log2, (1 << block_log2) - 1
    for m in multipliers:
        bit = ((h * m) >> shift) & mask
        if not (d[base + (bit >> 3)] >> (bit & 7)) & 1:
            return False
    return True


def accelerator():
    """What checks filters made now: "native" for the compiled check (bloomfilter._native,
    built with the package: contains and contains_many); else what contains_many computes its
    batches with, "numpy" when NumPy is importable (pip's extra "fast", Debian's python3-numpy),
    None for pure Python (about half as fast)."""
    if _native_check.native is not None:
        return "native"
    return None if _vector is None else "numpy"


class LayeredFilter(Filter):
    """A layered value (format version 3): the layers of a bloomfilter index that grows, each a
    version 2 filter, as bloom_index_filter gives it (docs/format.md, "Layered values").
    Filter.from_bytes returns one for such a value.

    `key in f` / `f.contains(key)`: False when no layer holds the key (it was certainly never
    added), True when one probably does. It is read, not written: add(), update() and union()
    raise ValueError, as the server's bloom_add and bloom_union refuse a layered value.
    """

    __slots__ = ("expansion", "layers", "_offsets")

    def __init__(self, data):
        """Takes a layered value (validated): use Filter.from_bytes()."""
        capacity, error_rate, expansion, _, layers = read_layers(data)
        self._data = self._own(data)
        self.version = FORMAT_VERSION_LAYERED
        self.capacity, self.error_rate, self.expansion = capacity, error_rate, expansion
        # No one number: each layer has its own (layers).
        self.hashes = self.block_log2 = self.blocks = None
        self._block_bytes = self._shift = self._bit_mask = self._multipliers = None
        # Each layer's (capacity, error_rate, hashes, block_log2, blocks).
        self.layers = tuple(parameters for _, parameters in layers)
        self._offsets = tuple(offset for offset, _ in layers)
        self._native = _native_check.checker(self._data)  # None: the pure-Python check
        self.contains = self._compile_contains() if self._native is None else self._native.contains
        self._batch = None
        self._vector_check = None

    def _compile_contains(self):
        """One function checking every layer, the newest first, each unrolled as
        Filter._compile_contains unrolls one filter's, over the value's bytes (which a follower
        updates in place)."""
        namespace = {"_xxh": xxhash.xxh3_64_intdigest, "_key_bytes": key_bytes, "_d": self._data}
        lines = ["def contains(key):",
                 "    h = _xxh(key if key.__class__ is str else _key_bytes(key))"]
        for n in reversed(range(len(self.layers))):
            _, _, hashes, log2, blocks = self.layers[n]
            tables = _bit_tables(log2)
            if tables is None:
                test = "        if not (_d[b + (p >> 3)] >> (p & 7)) & 1: break"
            else:
                namespace["_byte%d" % log2], namespace["_bit%d" % log2] = tables
                test = "        if not _d[b + _byte%d[p]] & _bit%d[p]: break" % (log2, log2)
            lines.append("    while True:  # layer %d" % n)
            lines.append("        b = %d + ((h * %d) >> 64) * %d"
                         % (self._offsets[n] + HEADER_BYTES, blocks, 1 << (log2 - 3)))
            for i in range(hashes):
                lines.append("        p = (h * %d >> %d) & %d" % (position_multiplier(i), 64 - log2,
                                                                 (1 << log2) - 1))
                lines.append(test)
            lines.append("        return True")
        lines.append("    return False")
        exec("\n".join(lines), namespace)
        contains = namespace["contains"]
        contains.__doc__ = "False: no layer holds `key` (it was certainly never added); True: one probably does."
        return contains

    def contains_many(self, keys):
        """[f.contains(key) for key in keys], a list of bools: each key hashed once, then each
        layer's check computed for the batch at once, with NumPy where it is importable (see
        _vector.LayeredVectorCheck), else in CPython's big integers (_batch), as Filter's. A key
        contains() refuses raises its error here too."""
        if not isinstance(keys, (list, tuple)):
            keys = list(keys)
        if self._native is not None:
            return self._native.contains_many(keys)
        if _vector is not None and len(keys) >= _vector.MIN_KEYS:
            vector = self._vector_check
            if vector is None:
                vector = self._vector_check = _vector.LayeredVectorCheck(self, position_multiplier)
            return vector(keys, key_bytes)
        return self._contains_many_python(keys)

    def _contains_many_python(self, keys):
        """contains_many without NumPy: the loop for a few keys, else _batch's passes, each key
        hashed once and each layer's check, the newest first, run for the keys no newer layer
        holds."""
        if len(keys) < _batch.MIN_KEYS or not _batch.USABLE or len(self._data) > _batch.MAX_FILTER_BYTES:
            contains = self.contains
            return [contains(key) for key in keys]
        checks = self._batch
        if checks is None:
            checks = self._batch = [
                _batch.BatchCheck(_batch.Layer(self._data, hashes, log2, blocks,
                                               tuple(position_multiplier(i) for i in range(hashes))),
                                  start=offset + HEADER_BYTES)
                for offset, (_, _, hashes, log2, blocks) in reversed(list(zip(self._offsets, self.layers)))]
        digests = _batch.digests(keys, xxhash.xxh3_64_digest, key_bytes)
        answers = []
        for start in range(0, len(digests), _batch.CHUNK):
            answers += _batch.layered(checks, digests[start:start + _batch.CHUNK])
        return answers

    def contains_hash(self, h):
        """Filter.contains_hash over the layers, the newest first."""
        for n in reversed(range(len(self.layers))):
            _, _, hashes, log2, blocks = self.layers[n]
            if _contains_hash(self._data, self._offsets[n] + HEADER_BYTES, blocks, log2,
                              tuple(position_multiplier(i) for i in range(hashes)), h):
                return True
        return False

    def _refuse(self, what):
        raise ValueError("%s does not take a layered bloom value (format version 3): it holds the "
                         "layers of an index that grows, which are read, not added to" % what)

    def add(self, key):
        self._refuse("add")

    def update(self, keys):
        self._refuse("update")

    def union(self, other):
        self._refuse("union")

    __or__ = union

    def positions(self, key):
        self._refuse("positions")

    def info(self):
        """SQL's bloom_info of a layered value: capacity and bits summed over the layers, hashes
        None, inserted and bits_set of the whole, estimated_count summed, estimated_error_rate
        the rate of a key absent from every layer (1 - prod(1 - r_i))."""
        capacity = bits = bits_set = 0
        count_sum = 0.0
        absent = 1.0
        for offset, (layer_capacity, _, hashes, log2, blocks) in zip(self._offsets, self.layers):
            layer_set, layer_count, layer_error = _block_estimates(
                self._data, offset + HEADER_BYTES, hashes, log2, 0, blocks)
            capacity += layer_capacity
            bits += blocks << log2
            bits_set += layer_set
            count_sum += layer_count
            absent *= 1.0 - layer_error / blocks
        return Info(min(capacity, 0x7FFFFFFFFFFFFFFF), self.error_rate, bits, None,
                    len(self._data) + 4, self.inserted, bits_set, bits_set / float(bits), count_sum,
                    1.0 - absent)

    def copy(self):
        return LayeredFilter(bytes(self._data))

    def __repr__(self):
        return "<bloomfilter.LayeredFilter capacity=%d error_rate=%r expansion=%d layers=%d>" % (
            self.capacity, self.error_rate, self.expansion, len(self.layers))


def _block_estimates(data, start, hashes, block_log2, first, last):
    """Filter._block_estimates over the blocks of a filter whose bits begin at `start`."""
    block_bytes = 1 << (block_log2 - 3)
    block_bits = float(1 << block_log2)
    full = 1 << block_log2
    k = float(hashes)
    bits_set = 0
    error_sum = 0.0
    count_sum = 0.0
    for b in range(first, last):
        at = start + b * block_bytes
        set_bits = int.from_bytes(data[at:at + block_bytes], "little").bit_count()
        bits_set += set_bits
        fill = set_bits / block_bits
        error_sum += math.pow(fill, k)
        count_sum += math.inf if set_bits == full else -(block_bits / k) * math.log1p(-fill)
    return bits_set, count_sum, error_sum


def filter_from_value(value, cls, what):
    """A `cls` (Filter or a subclass) from a column value as a driver or a serializer gives it:
    an instance already, another Filter (copied), the text form "\\x..." (psycopg2, and psycopg
    without an adapter), that text as bytes (a driver's SQL_ASCII text), or the byte format.
    None stays None; anything else is a TypeError naming `what`."""
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Filter):
        return cls.from_bytes(value.to_bytes())
    if isinstance(value, str):
        return cls.from_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if data.startswith(b"\\x"):
            return cls.from_text(data)
        return cls.from_bytes(data)
    raise TypeError("a %s value is a bloomfilter.Filter, not %s" % (what, type(value).__name__))
