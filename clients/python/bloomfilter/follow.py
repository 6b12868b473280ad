"""A local copy of a bloomfilter index's filter, kept current from the server.

    import psycopg
    from bloomfilter.follow import IndexFollower
    follower = IndexFollower(psycopg.connect(dsn), "users_email_bloom", interval=0.1)
    if not follower.contains(email):   # no round trip
        ...  # certainly not taken as of follower.lag seconds ago; the unique index stays the guard

The follower loads bloom_index_filter(index) once, then asks bloom_index_changes(index, lsn)
every `interval` seconds (in a background thread, or when refresh() is called): one query,
whose first row is the filter's header and the others the pages of bits changed since the
last refresh; after a reconnection, the whole filter again. Every row committed before the start
of the last successful refresh is found; `lag` says how long ago that was. An index that grows
(made with no options, or WITH (expansion = N)) is followed the same way: its filter is a
LayeredFilter, and a header with more layers than the copy's has it read whole again (a reload
with reason "grown"; "rebuilt" is REINDEX or another index under the name).

It works with a psycopg (3) or psycopg2 connection, or a conninfo string, and needs only
SELECT on the indexed column (as bloom_index_contains does), and the extension at version
MIN_EXTENSION_VERSION or later (read when it connects: extension_version). It sets autocommit
on the connection, which it uses from its own thread: give it a connection of its own.
MultiIndexFollower follows several indexes of one database on one connection and thread.
It needs one session: behind a pooler in transaction mode (PgBouncer's pool_mode = transaction),
where its queries may reach other server processes, a refresh raises SessionChangedError.

An answer "absent" is never older than `max_lag` seconds when one is given: past it, contains()
answers True ("maybe: ask the database"), is_fresh() is False, and one warning is logged
(logger "bloomfilter.follow") until a refresh succeeds again.

Watching it: on_event(event, info) is called when the copy goes stale (past max_lag), is fresh
again, is read whole (reload), and when the index holds more keys than its capacity; stats()
gives the counters. A callback that raises is logged, never passed on.

Forking servers (gunicorn --preload, uWSGI, Celery prefork, multiprocessing with fork): a
follower made before the fork keeps working in every child. The child drops the parent's
connection without closing it (that would end the parent's session), opens its own at its next
refresh (reading the filter whole) and starts its own background thread if the parent had one.
"""

import logging
import math
import os
import re
import threading
import time
import uuid
import weakref

from . import _native_check
from ._core import DISTRIBUTION, HEADER_BYTES, Filter, LayeredFilter, __version__, _block_estimates, composite_hash

__all__ = ["IndexFollower", "MultiIndexFollower", "ShardedIndexFollower", "UnsupportedIndexError",
           "ExtensionVersionError", "SessionChangedError", "EVENTS", "MIN_EXTENSION_VERSION"]

# The oldest extension with what the follower reads: the bloomfilter index access method,
# bloom_index_filter and bloom_index_changes (1.4).
MIN_EXTENSION_VERSION = "1.4"

# What on_event(event, info) is called with.
EVENTS = ("stale", "fresh", "reload", "capacity")

# Every query of the follower ends with the column pg_backend_pid(): the first on a connection
# names its server process, and a row from another one raises SessionChangedError (_session_rows).

# Run once on each new connection: the extension's version there.
_CONNECTION = ("SELECT (SELECT e.extversion FROM pg_catalog.pg_extension e "
               "WHERE e.extname OPERATOR(pg_catalog.=) 'bloomfilter'), pg_catalog.pg_backend_pid()")

# Blocks whose estimate the capacity check computes between two chances for other threads (or
# the event loop) to run: about 0.2 ms.
_CAPACITY_BLOCKS_PER_STEP = 256

_CURRENT_LSN = ("SELECT CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() "
                "ELSE pg_catalog.pg_current_wal_insert_lsn() END::text, pg_catalog.pg_backend_pid()")

# The ctype a key column lowers with: its collation's (co, none for the database's default) or the
# database's (d).
_CTYPE = """CASE WHEN co.oid IS NOT NULL
            THEN CASE co.collprovider WHEN 'i'
                 THEN COALESCE(pg_catalog.to_jsonb(co) ->> 'colllocale', pg_catalog.to_jsonb(co) ->> 'colliculocale')
                 ELSE co.collctype::text END
            ELSE CASE d.datlocprovider WHEN 'i'
                 THEN COALESCE(pg_catalog.to_jsonb(d) ->> 'datlocale', pg_catalog.to_jsonb(d) ->> 'daticulocale')
                 ELSE d.datctype::text END END"""
# What the follower must know of the index: its OID, its key's type and, for an expression
# index, the expression, the column it reads and the collation it lowers with (ICU's locale
# column is colliculocale, daticulocale in PostgreSQL 15 and 16, colllocale, datlocale from 17:
# read through to_jsonb, as the Node client does).
_DESCRIBE = """
SELECT i.indexrelid::oid, i.indkey[0] = 0, pg_catalog.pg_get_indexdef(i.indexrelid, 1, true),
       -- A domain's keys are its base type's.
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = ia.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0), am.amname,
       """ + _CTYPE + """,
       i.indnkeyatts, pg_catalog.pg_backend_pid()
  FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_am am ON am.oid = c.relam
  JOIN pg_catalog.pg_attribute ia ON ia.attrelid = i.indexrelid AND ia.attnum = 1
  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
  LEFT JOIN pg_catalog.pg_collation co
         ON co.oid = i.indcollation[0] AND co.oid <> 100  -- 100: the database's default
 WHERE i.indexrelid = %s::text::regclass
"""
_COLUMNS = """
SELECT pg_catalog.quote_ident(a.attname),
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0),
       pg_catalog.pg_backend_pid()
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_index i ON a.attrelid = i.indrelid
 WHERE i.indexrelid = %s::oid AND a.attnum > 0 AND NOT a.attisdropped
"""
# The key columns of a multicolumn index, in order: whether each is an expression, its base type
# (a domain's keys are its base type's), its definition and the ctype it lowers with, as _DESCRIBE.
_KEY_PARTS = """
SELECT a.attnum, i.indkey[a.attnum - 1] = 0,
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0),
       pg_catalog.pg_get_indexdef(i.indexrelid, a.attnum::int, true),
       """ + _CTYPE + """,
       pg_catalog.pg_backend_pid()
  FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indexrelid
  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
  LEFT JOIN pg_catalog.pg_collation co
         ON co.oid = i.indcollation[a.attnum - 1] AND co.oid <> 100  -- 100: the database's default
 WHERE i.indexrelid = %s::oid AND a.attnum BETWEEN 1 AND i.indnkeyatts
 ORDER BY a.attnum
"""
# The filter in rows of _CHUNK_BYTES (the last one shorter): its length, the position of the
# row's first byte (from 1) and the bytes; the value is made once (OFFSET 0 keeps the subquery
# from being inlined into each row). libpq keeps its input buffer as large as the largest message
# it received until the connection closes: the whole value in one row would leave the follower
# holding as much again as its copy (twice that in text format).
_LOAD_CHUNKS = """
SELECT pg_catalog.octet_length(s.v)::bigint, c.at::bigint,
       pg_catalog.substr(s.v, c.at, %s::integer), pg_catalog.pg_backend_pid()
  FROM (SELECT bloom_index_filter(%s::text::oid::regclass)::bytea AS v OFFSET 0) s
 CROSS JOIN LATERAL pg_catalog.generate_series(1, pg_catalog.octet_length(s.v), %s::integer) AS c(at)
"""
_CHUNK_BYTES = 1 << 20
_CHANGES = ("SELECT c.next_lsn::text, c.byte_offset, c.bytes, %s::text::regclass::oid, "
            "pg_catalog.pg_backend_pid() FROM bloom_index_changes(%s::text::regclass, %s::text::pg_lsn) c")

_KEY_TYPES = {
    "text": str, "character varying": str, "bytea": bytes, "smallint": int, "integer": int,
    "bigint": int, "uuid": uuid.UUID,
}


def _text(value):
    """A text column's value as str: psycopg returns text as bytes on a SQL_ASCII database."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "surrogateescape")
    return value


_log = logging.getLogger("bloomfilter.follow")

# Followers alive in this process, set up again in a forked child; the parent's connections a
# child inherited, never used nor closed there (psycopg2 would end the parent's session when one
# is garbage-collected).
_followers = weakref.WeakSet()
_inherited = []
_restart_lock = threading.Lock()


def _after_fork_in_child():
    for follower in list(_followers):
        try:
            follower._after_fork()
        except Exception:  # an at-fork hook cannot raise; the follower's lag says it is stale
            _log.exception("follower of %s: could not restart after fork", follower._name)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _union_contains_many(checkers, keys):
    """[any(c.contains(key) for c in checkers) for key in keys], each checker asked in one batch
    for the keys no checker before it has."""
    keys = keys if isinstance(keys, (list, tuple)) else list(keys)
    answers = [False] * len(keys)
    pending = range(len(keys))
    for checker in checkers:
        found = checker.contains_many([keys[i] for i in pending])
        for i, answer in zip(pending, found):
            if answer:
                answers[i] = True
        pending = [i for i, answer in zip(pending, found) if not answer]
        if not pending:
            break
    return answers

class UnsupportedIndexError(ValueError):
    """The index's key is an expression the follower cannot apply in Python."""


def _ascii_lower(text):
    # PostgreSQL's lower() under the C (or POSIX) ctype lowers ASCII letters only.
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class _Unreproducible(Exception):
    """A key whose lower() the follower cannot compute exactly as the server."""


def _reconnector(conn):
    """A function that opens a new connection like `conn` (a connection or a conninfo string)."""
    if isinstance(conn, str):
        try:
            import psycopg
            return lambda: psycopg.connect(conn, autocommit=True)
        except ImportError:
            import psycopg2
            return lambda: psycopg2.connect(conn)
    module = type(conn).__module__.split(".")[0]
    if module == "psycopg":
        import psycopg
        dsn, password = conn.info.dsn, conn.info.password
        return lambda: psycopg.connect(dsn, password=password, autocommit=True) if password \
            else psycopg.connect(dsn, autocommit=True)
    if module == "psycopg2":
        import psycopg2
        parameters = dict(conn.info.dsn_parameters)
        if conn.info.password:
            parameters["password"] = conn.info.password
        return lambda: psycopg2.connect(**parameters)
    return None


# The values a key column of each type takes, and the range of an integer column's.
_INTEGER_RANGES = {"smallint": 1 << 15, "integer": 1 << 31, "bigint": 1 << 63}


class _Composite:
    """The key rules of a multicolumn index: a key is a tuple (or list) of one value per key
    column, in column order, each hashed as its column's type (composite_hash), an expression
    column's value after its transform (lower() of a text column)."""

    __slots__ = ("index_name", "types", "transforms")

    def __init__(self, index_name, types, transforms=None):
        self.index_name = index_name
        self.types = tuple(types)  # each column's base type, as format_type names it
        self.transforms = tuple(transforms or (None,) * len(self.types))

    def hash(self, key):
        """composite_hash of a key, TypeError/ValueError for a key the index cannot hold, or
        _Unreproducible when an expression column's value is one the follower cannot lower as
        the server would."""
        name, types = self.index_name, self.types
        if not isinstance(key, (tuple, list)):
            raise TypeError("index %s has %d key columns (%s): a key is a tuple of %d values, not %s"
                            % (name, len(types), ", ".join(types), len(types), type(key).__name__))
        if len(key) != len(types):
            raise ValueError("index %s has %d key columns (%s): a key of %d values"
                             % (name, len(types), ", ".join(types), len(key)))
        values = key
        for position, (value, type_, transform) in enumerate(zip(key, types, self.transforms), 1):
            if transform is not None:
                if values is key:
                    values = list(key)
                values[position - 1] = transform(value)  # raises for a value of another type
                continue
            python_type = _KEY_TYPES[type_]
            ok = isinstance(value, python_type) and not isinstance(value, bool)
            if python_type is bytes:
                ok = isinstance(value, (bytes, bytearray, memoryview))
            if not ok:
                raise TypeError("index %s: key column %d is %s, which takes %s, not %s"
                                % (name, position, type_, python_type.__name__, type(value).__name__))
            limit = _INTEGER_RANGES.get(type_)
            if limit is not None and not -limit <= value < limit:
                raise ValueError("index %s: key column %d is %s, out of range: %d"
                                 % (name, position, type_, value))
        return composite_hash(values)


def _composite_rules(index_name, oid, parts, columns):
    """(OID, _Composite, None) of a multicolumn index from its _KEY_PARTS rows and, when a key
    column is an expression, its table's _COLUMNS rows."""
    types, transforms = [], []
    for position, is_expression, type_, definition, ctype in parts:
        type_ = _text(type_)
        if type_ not in _KEY_TYPES:
            raise UnsupportedIndexError("index %s: key column %d has the type %s, which the follower "
                                        "does not hash" % (index_name, position, type_))
        transforms.append(_lower_rule("index %s: key column %d" % (index_name, position),
                                      _text(definition), columns, _text(ctype))
                          if is_expression else None)
        types.append(type_)
    return oid, _Composite(index_name, types, transforms), None


def _lower_rule(what, definition, columns, ctype):
    """The transform of an index expression (pg_get_indexdef's `definition`), which the follower
    applies only when it is lower() of a text column of `columns` (_COLUMNS rows), lowered in
    `ctype`: UnsupportedIndexError otherwise. `what` names the key for errors."""
    columns = {_text(name): _text(type_) for name, type_ in columns}
    match = re.fullmatch(r"lower\((.+?)(?:::text)?\)", definition)
    column = match.group(1) if match else None
    if column not in columns or columns[column] not in ("text", "character varying"):
        raise UnsupportedIndexError(
            "%s has the key expression %s: the follower applies lower() of a text column only; "
            "check this index in SQL with bloom_index_contains" % (what, definition))
    # Exactly "C" or "POSIX" (as PostgreSQL's lc_ctype_is_c): C.UTF-8 is a full locale.
    c_ctype = ctype in ("C", "POSIX")  # an ICU locale never is
    # Turkish and Azeri lower "I" to a dotless i: not even ASCII keys are certain there.
    turkic = re.match(r"(tr|az)([_.@-]|$)", ctype or "", re.IGNORECASE) is not None

    def lower(key):
        if not isinstance(key, str):
            raise TypeError("%s has keys lower(%s), which takes str, not %s"
                            % (what, column, type(key).__name__))
        if c_ctype:
            return _ascii_lower(key)
        if key.isascii() and not turkic:
            return _ascii_lower(key)
        # Outside the C ctype the server lowers with the operating system's locale tables,
        # which Python's str.lower() does not always match: such keys answer "maybe".
        raise _Unreproducible()

    return lower


def _has_expression(rows, parts):
    """Whether an index (its _DESCRIBE rows, and _KEY_PARTS rows if multicolumn) has an
    expression key column: _key_rules then needs its table's _COLUMNS rows."""
    return bool(rows) and bool(rows[0][1] or any(part[1] for part in parts or ()))


def _key_rules(index_name, rows, columns, parts=None):
    """(OID, key type, key transform or None) of an index from its _DESCRIBE rows and, for an
    expression index, its table's _COLUMNS rows; for a multicolumn index (key type a _Composite)
    from its _KEY_PARTS rows."""
    if not rows:
        raise LookupError("index %s not found" % index_name)
    oid, is_expression, definition, key_type, access_method, ctype, key_columns = rows[0]
    definition, key_type, access_method, ctype = map(
        _text, (definition, key_type, access_method, ctype))
    if access_method != "bloomfilter":
        raise UnsupportedIndexError("%s is not a bloomfilter index (it uses %s)"
                                    % (index_name, access_method))
    # A multicolumn index holds composite keys: a key is a tuple of the columns' values.
    if key_columns != 1:
        return _composite_rules(index_name, oid, parts, columns or ())
    key_type = _KEY_TYPES.get(key_type)
    if not is_expression:
        return oid, key_type, None
    return oid, key_type, _lower_rule("index %s" % index_name, definition, columns, ctype)


def _merge(current, oid, rows):
    """Applies the rows of _CHANGES (non-empty) to the filter `current` of the index `oid`:
    the next LSN, or None when the filter must be read whole (another index under the name,
    or new parameters)."""
    next_lsn, offset, header, row_oid = rows[0]
    header = bytes(header)
    data = current._data
    if row_oid != oid or offset != 0 or header[:28] != data[:28]:
        return None
    data[:HEADER_BYTES] = header
    for _, offset, page, _ in rows[1:]:
        data[offset:offset + len(page)] = page
    return _text(next_lsn)


def _whole_reason(current, oid, rows):
    """Why the rows _merge refused have the filter read whole: "grown" when the same index added
    a layer (a layered header equal to the copy's but for a larger layer count: same expansion,
    layer 0's capacity, error rate and build's keys), else "rebuilt" (another index under the
    name, REINDEX, new parameters)."""
    _, offset, header, row_oid = rows[0]
    header, data = bytes(header), current._data
    if (row_oid == oid and offset == 0 and isinstance(current, LayeredFilter)
            and len(header) >= HEADER_BYTES and header[:6] == data[:6]
            and header[8:HEADER_BYTES] == data[8:HEADER_BYTES]
            and int.from_bytes(header[6:8], "little") > int.from_bytes(data[6:8], "little")):
        return "grown"
    return "rebuilt"


def _capacity(f):
    """bloom_info's capacity of a copy: a layered value's summed over its layers, as
    bloom_index_info and the Node client's stats() give it."""
    if isinstance(f, LayeredFilter):
        return min(sum(layer[0] for layer in f.layers), 0x7FFFFFFFFFFFFFFF)
    return f.capacity


def _maybe_hash(composite, key):
    """composite.hash(key), or None for a key the follower cannot lower (answered "maybe")."""
    try:
        return composite.hash(key)
    except _Unreproducible:
        return None


def _check_key(index_name, key_type, transform, key):
    """The key as the filter holds it (after the index's expression), or _Unreproducible."""
    if isinstance(key_type, _Composite):
        raise AssertionError("composite keys are checked by their hash")
    if transform is not None:
        return transform(key)
    if key_type is not None and not isinstance(key, key_type):
        if not (key_type is bytes and isinstance(key, (bytearray, memoryview))):
            raise TypeError("index %s has keys of type %s, not %s" % (
                index_name, key_type.__name__, type(key).__name__))
    return key


class ExtensionVersionError(RuntimeError):
    """The database has no bloomfilter extension, or one older than the follower needs."""


class SessionChangedError(RuntimeError):
    """The follower's queries on one connection reached two server processes: a pooler in
    transaction or statement mode (PgBouncer's pool_mode = transaction) is in between."""


def _session_rows(follower, rows):
    """The rows of one of the follower's queries without their last column, pg_backend_pid().
    The WAL positions the follower keeps are those of the server that gave them: a pooler that
    sends each transaction to any server connection could send the next query to another server
    (after a failover, or to one of several hosts), where changes since that position could leave
    out committed keys. So the follower keeps to one session and refuses any other."""
    for row in rows:
        if follower.backend_pid is None:
            follower.backend_pid = row[-1]
        elif row[-1] != follower.backend_pid:
            raise SessionChangedError(
                "the follower's connection reached server process %s after %s: a pooler in "
                "transaction or statement mode (PgBouncer's pool_mode = transaction) is in between, "
                "and the follower needs one session (its WAL positions are one server's). Connect it "
                "directly, or through a pool in session mode (PgBouncer: pool_mode = session, for "
                "the follower's database entry or user)" % (row[-1], follower.backend_pid))
    return [tuple(row[:-1]) for row in rows]


def _version_tuple(text):
    return tuple(int(number) for number in re.findall(r"\d+", text))


def _check_extension(version):
    """The extension's version on a new connection, if the follower can follow its indexes."""
    if version is None:
        raise ExtensionVersionError(
            "the extension bloomfilter is not installed in this database: CREATE EXTENSION "
            "bloomfilter (the follower of %s %s needs version %s or later)"
            % (DISTRIBUTION, __version__, MIN_EXTENSION_VERSION))
    version = _text(version)
    if _version_tuple(version) < _version_tuple(MIN_EXTENSION_VERSION):
        raise ExtensionVersionError(
            "the extension bloomfilter is at version %s in this database, older than the follower "
            "of %s %s needs (%s or later, for bloom_index_filter and bloom_index_changes): "
            "ALTER EXTENSION bloomfilter UPDATE" % (version, DISTRIBUTION, __version__,
                                                   MIN_EXTENSION_VERSION))
    return version


def _past_capacity(f, estimated_count, estimated_error_rate):
    """bloom_index_info's needs_rebuild: the estimated error rate past 1.05 x error_rate, or the
    estimated count past capacity by more than the estimate's own error (0.1% and four
    standard deviations at capacity keys)."""
    bits = float(f.blocks << f.block_log2)
    x = f.hashes * float(f.capacity) / bits
    margin = 4.0 * math.sqrt(bits / float(f.hashes * f.hashes) * ((math.exp(x) - 1.0) - x))
    return (estimated_error_rate > 1.05 * f.error_rate
            or estimated_count > 1.001 * float(f.capacity) + margin)


# The key rules as bloomfilter._native.FollowerCheck takes them (native.cpp's KeyKind): a key
# type's kind, and a composite key's column's (kind, lowest, highest).
_FAST_KINDS = {None: 1, str: 2, bytes: 3, int: 4, uuid.UUID: 5}
_FAST_COMPOSITE = 6
_FAST_COLUMNS = {"text": (2, 0, 0), "character varying": (2, 0, 0), "bytea": (3, 0, 0),
                 "smallint": (4, -(1 << 15), (1 << 15) - 1), "integer": (4, -(1 << 31), (1 << 31) - 1),
                 "bigint": (4, -(1 << 63), (1 << 63) - 1), "uuid": (5, 0, 0)}


def _fast_rules(state):
    """FollowerCheck.set_state's arguments for a state (filter, key type, key transform): the
    copy's compiled check and its key rules, or None (every key to _Index.contains)."""
    if state is None:
        return None, 0, ()
    f, key_type, transform = state
    checker = f._native
    if checker is None or transform is not None:
        return None, 0, ()
    if isinstance(key_type, _Composite):
        # Only columns whose values are hashed as they are: a column with an expression (a
        # transform, where the key rules have one) is applied by contains() in Python.
        columns = tuple(_FAST_COLUMNS.get(name) for name in key_type.types)
        transforms = getattr(key_type, "transforms", None) or ()
        if None in columns or any(t is not None for t in transforms):
            return None, 0, ()
        return checker, _FAST_COMPOSITE, columns
    kind = _FAST_KINDS.get(key_type)
    return (None, 0, ()) if kind is None else (checker, kind, ())


class _Index:
    """One followed index: the copy of its filter and its key rules, its WAL position, its
    counters and events, and the answers from them. IndexFollower is one with a connection and
    a thread of its own, MultiIndexFollower holds several on one connection, AsyncIndexFollower
    is one refreshed by a task of an event loop.

    With the compiled check, an instance's contains is a bloomfilter._native.FollowerCheck's:
    contains() below in C for the keys and states it can answer as that method does (the copy,
    key rules and bound it is given as _state, _refreshed_at and max_lag are set), and that
    method for everything else (past max_lag, other keys, errors)."""

    # Seconds between two checks of the copy against the index's capacity while pages change
    # (each full read is checked at once). A check reads every block of the copy: 2 ms for a
    # 1M-key filter, in slices between which the application's threads run.
    capacity_check_interval = 60.0

    def _init_index(self, index_name, max_lag, on_event):
        self._fast = None
        self._checks = 0
        native = _native_check.native
        if native is not None:
            self._fast = native.FollowerCheck(self._contains_python)
            self.contains = self._fast.contains
        self.index_name = index_name
        self.max_lag = max_lag
        self.on_event = on_event
        # (filter, key type, key transform) of the index, replaced as one by a reload, so that
        # contains() never pairs a filter with another index's key rules.
        self._state = None
        self._oid = None
        self._lsn = None
        self._refreshed_at = None    # time.monotonic() at the start of the last successful refresh
        self._refreshed_wall = None  # the same, as time.time()
        self._stale_warned = False
        self._flag_lock = threading.Lock()
        self._deferred = None  # events kept until a refresh's lock is released
        self._reload_reason = "start"
        self._capacity_checked_at = None
        self._pages_changed = False
        self.last_error = None
        self.refreshes = 0
        self.reloads = 0
        self.errors = 0             # refreshes that failed
        self.last_rows = 0          # rows of the last refresh's query
        self.last_bytes = 0         # filter bytes the last refresh's query moved (header included)
        self.estimated_count = None  # keys in the copy, as of the last capacity check
        self.over_capacity = False

    # -- what FollowerCheck answers from, given to it as it is set ---------------------------

    @property
    def _state(self):
        """(filter, key type, key transform) of the index, replaced as one by a reload, so that
        contains() never pairs a filter with another index's key rules."""
        return self._state_value

    # The setters tolerate an object whose _init_index has not run yet (no _fast): a subclass
    # may set its state first.
    @_state.setter
    def _state(self, state):
        self._state_value = state
        fast = self.__dict__.get("_fast")
        if fast is not None:
            fast.set_state(*_fast_rules(state))

    @property
    def _refreshed_at(self):
        """time.monotonic() at the start of the last successful refresh."""
        return self._refreshed_at_value

    @_refreshed_at.setter
    def _refreshed_at(self, value):
        self._refreshed_at_value = value
        fast = self.__dict__.get("_fast")
        if fast is not None:
            fast.set_bound(value, self.__dict__.get("_max_lag"))

    @property
    def max_lag(self):
        """Seconds: once the last successful refresh is older, contains() answers True (None:
        no bound)."""
        return self._max_lag

    @max_lag.setter
    def max_lag(self, value):
        self._max_lag = value
        fast = self.__dict__.get("_fast")
        if fast is not None:
            fast.set_bound(self.__dict__.get("_refreshed_at_value"), value)

    @property
    def checks(self):
        """Keys checked, by contains() and contains_many()."""
        return self._checks + (0 if self._fast is None else self._fast.checks)

    @checks.setter
    def checks(self, value):
        self._checks = value - (0 if self._fast is None else self._fast.checks)

    # -- answers --------------------------------------------------------------------------

    def contains(self, key):
        """False: no row committed before the last successful refresh has this key (after the
        index's expression, if any); True: one probably has."""
        self._checks += 1
        f, key_type, transform = self._state_value
        if isinstance(key_type, _Composite):
            # A tuple of the key columns' values: hashed here (composite_hash) and checked by its
            # hash in pure Python, never handed to the compiled check as a key.
            try:
                h = key_type.hash(key)
            except _Unreproducible:
                return True
            if self._max_lag is not None and time.monotonic() - self._refreshed_at_value > self._max_lag:
                self._stale()
                return True
            return f.contains_hash(h)
        try:
            key = _check_key(self.index_name, key_type, transform, key)
        except _Unreproducible:
            return True
        if self._max_lag is not None and time.monotonic() - self._refreshed_at_value > self._max_lag:
            self._stale()
            return True
        return f.contains(key)

    _contains_python = contains

    def __contains__(self, key):
        return self.contains(key)

    def contains_many(self, keys):
        """[contains(key) for key in keys], a list of bools, from one look at the copy: one
        freshness check for the batch (past max_lag every answer is True) and the filter's
        batch check (Filter.contains_many). A key contains() refuses raises its error."""
        if not isinstance(keys, (list, tuple)):
            keys = list(keys)
        f, key_type, transform = self._state_value
        self._checks += len(keys)
        # With the compiled check, this method in C where it answers as below (None: not there,
        # a key of another type, an error or past the bound).
        if self._fast is not None:
            answers = self._fast.contains_many(keys)
            if answers is not None:
                return answers
        maybe = ()
        if isinstance(key_type, _Composite):
            # A loop of composite_hash and the pure-Python check.
            hashes = [_maybe_hash(key_type, key) for key in keys]
            if self._max_lag is not None and time.monotonic() - self._refreshed_at_value > self._max_lag:
                self._stale()
                return [True] * len(keys)
            contains_hash = f.contains_hash
            return [h is None or contains_hash(h) for h in hashes]
        if transform is not None:
            checked, maybe = [], []
            for key in keys:
                try:
                    checked.append(transform(key))
                except _Unreproducible:
                    maybe.append(len(checked))
                    checked.append("")
            keys = checked
        elif key_type is not None:
            kinds = set(map(type, keys))
            if not all(issubclass(kind, key_type) for kind in kinds):
                for key in keys:  # the error of the first key contains() refuses
                    _check_key(self.index_name, key_type, None, key)
        if self._max_lag is not None and time.monotonic() - self._refreshed_at_value > self._max_lag:
            self._stale()
            return [True] * len(keys)
        answers = f.contains_many(keys)
        for position in maybe:
            answers[position] = True
        return answers

    @property
    def filter(self):
        """The current copy, a bloomfilter.Filter (format version 2), or for an index that grows
        (made with no options, or WITH (expansion = N)) a bloomfilter.LayeredFilter (format
        version 3)."""
        return self._state[0]

    @property
    def lag(self):
        """Seconds since the start of the last successful refresh: an answer "absent" is as of
        then."""
        return time.monotonic() - self._refreshed_at

    def is_fresh(self, max_lag=None):
        """True when the copy is at most max_lag seconds old (the follower's max_lag if not
        given; with neither, True): contains() then answers from the copy."""
        bound = self.max_lag if max_lag is None else max_lag
        return bound is None or self.lag <= bound

    def stats(self):
        """The counters, for an application to export: a dict of index, lag (seconds, None
        before the first refresh), fresh, last_refresh (time.time() at the start of the last
        successful refresh), checks (keys checked), refreshes, reloads, reconnects, errors
        (failed refreshes), last_error, queries, last_rows, last_bytes, extension_version,
        capacity, estimated_count and over_capacity (as of the last capacity check). For an index
        that grows, capacity and estimated_count are summed over its layers (as bloom_index_info
        and the Node client's stats() give them), and over_capacity stays False."""
        connection = self._connection_owner
        state = self._state
        lag = None if self._refreshed_at is None else self.lag
        return {
            "index": self.index_name,
            "lag": lag,
            "fresh": lag is not None and (self.max_lag is None or lag <= self.max_lag),
            "last_refresh": self._refreshed_wall,
            "checks": self.checks,
            "refreshes": self.refreshes,
            "reloads": self.reloads,
            "reconnects": connection.reconnects,
            "errors": self.errors,
            "last_error": None if self.last_error is None else str(self.last_error),
            "queries": connection.queries,
            "last_rows": self.last_rows,
            "last_bytes": self.last_bytes,
            "extension_version": connection.extension_version,
            "capacity": None if state is None else _capacity(state[0]),
            "estimated_count": self.estimated_count,
            "over_capacity": self.over_capacity,
        }

    # -- events ---------------------------------------------------------------------------

    def _event(self, event, info):
        if self.on_event is None:
            return
        with self._flag_lock:
            if self._deferred is not None:
                self._deferred.append((event, info))
                return
        self._call(event, info)

    def _call(self, event, info):
        callback = self.on_event
        try:
            callback(event, info)
        except Exception:
            _log.exception("follower of %s: the on_event callback raised on %r", self.index_name, event)

    def _stale(self):
        # A child forked where Python's at-fork handlers did not run (uWSGI without
        # py-call-osafterfork forks from C) has neither thread nor connection of its own: the
        # first stale answer there sets the follower up again.
        owner = self._connection_owner
        if getattr(owner, "_pid", None) not in (None, os.getpid()):
            with _restart_lock:  # taken in such a child only, so never held across a fork
                if owner._pid != os.getpid():
                    owner._after_fork()
        with self._flag_lock:  # the answering threads and the refreshing one: one warning
            if self._stale_warned:
                return
            self._stale_warned = True
        lag = self.lag
        _log.warning("follower of %s: last refresh %.1f s ago, more than max_lag=%s s (%s); "
                     "contains() answers True until a refresh succeeds", self.index_name,
                     lag, self.max_lag, self.last_error or "no refresh since")
        self._event("stale", {"index": self.index_name, "lag": lag, "max_lag": self.max_lag,
                              "error": self.last_error})

    def _refreshed(self, started, wall):
        """After a successful refresh that started at `started` (time.monotonic())."""
        before = self._refreshed_at
        self._refreshed_at = started
        self._refreshed_wall = wall
        self.refreshes += 1
        self.last_error = None
        with self._flag_lock:
            was_stale, self._stale_warned = self._stale_warned, False
        if was_stale:
            _log.warning("follower of %s: fresh again", self.index_name)
            self._event("fresh", {"index": self.index_name,
                                  "lag": None if before is None else time.monotonic() - before})

    def _failed(self, error):
        self.last_error = error
        self.errors += 1
        if self.max_lag is not None and self._refreshed_at is not None and self.lag > self.max_lag:
            self._stale()

    def _loaded(self, f, data_bytes):
        reason, self._reload_reason = self._reload_reason or "reload", None
        self.reloads += 1
        self._capacity_checked_at = None  # a new copy: checked at once
        if isinstance(f, LayeredFilter):
            _log.info("follower of %s: read the whole filter (%s), %d bytes, %d layers",
                      self.index_name, reason, data_bytes, len(f.layers))
        else:
            _log.info("follower of %s: read the whole filter (%s), %d bytes", self.index_name,
                      reason, data_bytes)
        self._event("reload", {"index": self.index_name, "reason": reason, "bytes": data_bytes,
                               "capacity": _capacity(f), "error_rate": f.error_rate})

    def _capacity_due(self):
        if self._state is None:
            return False
        if self._capacity_checked_at is None:
            return True
        return (self._pages_changed
                and time.monotonic() - self._capacity_checked_at >= self.capacity_check_interval)

    def _capacity_steps(self):
        """Estimates the keys in the copy as bloom_index_info does, yielding between slices of
        blocks; past capacity (its needs_rebuild), logs a warning and calls on_event once."""
        self._capacity_checked_at = time.monotonic()
        self._pages_changed = False
        f = self._state[0]
        if isinstance(f, LayeredFilter):
            # An index that grows adds a layer when one is full: never past its capacity. Its
            # estimated count is its layers', summed (bloom_index_info's).
            count_sum = 0.0
            for offset, (_, _, hashes, log2, blocks) in zip(f._offsets, f.layers):
                for first in range(0, blocks, _CAPACITY_BLOCKS_PER_STEP):
                    yield
                    count_sum += _block_estimates(f._data, offset + HEADER_BYTES, hashes, log2, first,
                                                  min(blocks, first + _CAPACITY_BLOCKS_PER_STEP))[1]
            self.estimated_count = count_sum
            self.over_capacity = False
            return
        count_sum = error_sum = 0.0
        for first in range(0, f.blocks, _CAPACITY_BLOCKS_PER_STEP):
            yield  # before each slice: not in the same turn as the reading of the filter
            _, counts, errors = f._block_estimates(first, min(f.blocks, first + _CAPACITY_BLOCKS_PER_STEP))
            count_sum += counts
            error_sum += errors
        estimated_error_rate = error_sum / f.blocks
        self.estimated_count = count_sum
        passed = _past_capacity(f, count_sum, estimated_error_rate)
        if passed and not self.over_capacity:
            _log.warning("follower of %s: the index holds about %.0f keys, past its capacity %d "
                         "(estimated error rate %.3g, asked %.3g): resize it (ALTER INDEX ... SET "
                         "(capacity = ...), REINDEX INDEX CONCURRENTLY)", self.index_name, count_sum,
                         f.capacity, estimated_error_rate, f.error_rate)
            self.over_capacity = True
            self._event("capacity", {"index": self.index_name, "capacity": f.capacity,
                                     "error_rate": f.error_rate, "estimated_count": count_sum,
                                     "estimated_error_rate": estimated_error_rate})
        elif not passed:
            self.over_capacity = False

    # -- refreshing (over a blocking connection: IndexFollower, MultiIndexFollower) --------

    def _refresh_index(self):
        if self._state is None or self._lsn is None:
            self._load()
        else:
            self._apply_changes()

    def _check_capacity(self):
        if self._capacity_due():
            for _ in self._capacity_steps():
                time.sleep(0)  # the application's threads run between slices

    def _describe(self):
        """(OID, key type, key transform or None) of the index now under the name."""
        rows = self._query(_DESCRIBE, [self.index_name])
        parts = self._query(_KEY_PARTS, [rows[0][0]]) if rows and rows[0][6] != 1 else None
        columns = self._query(_COLUMNS, [rows[0][0]]) if _has_expression(rows, parts) else None
        return _key_rules(self.index_name, rows, columns, parts)

    def _load(self):
        oid, key_type, transform = self._describe()
        (lsn,), = self._query(_CURRENT_LSN, [])
        self.last_rows = self.last_bytes = 0
        data = None
        for length, at, piece in self._filter_chunks(oid):
            if data is None:
                data = bytearray(length)
            data[at:at + len(piece)] = piece
        f = Filter.from_bytes(data)
        self._state = (f, key_type, transform)
        self._oid, self._lsn = oid, _text(lsn)
        self._loaded(f, len(data))

    def _apply_changes(self):
        rows = self._query(_CHANGES, [self.index_name, self.index_name, self._lsn])
        self.last_rows = len(rows)
        self.last_bytes = sum(len(row[2]) for row in rows)
        if not rows:
            return
        next_lsn = _merge(self._state[0], self._oid, rows)
        if next_lsn is None:
            # Another index under the name (REINDEX CONCURRENTLY, or dropped and created) or
            # new parameters: read it whole. Until the new copy is complete (and if reading it
            # fails) contains() answers from the current one, as of the last refresh. An index
            # that added a layer is read whole too, for the new layer.
            self._reload_reason = _whole_reason(self._state[0], self._oid, rows)
            self._load()
            return
        if len(rows) > 1:
            self._pages_changed = True
        self._lsn = next_lsn


class _Connected:
    """A follower's connection (reopened after it drops) and background thread, for the
    indexes of _followed()."""

    def _init_connection(self, conn, interval):
        if callable(conn) and not hasattr(conn, "cursor"):
            self._connect, self._conn = conn, None
        elif isinstance(conn, str):
            self._connect, self._conn = _reconnector(conn), None
        else:
            self._connect, self._conn = _reconnector(conn), conn
        self.interval = interval
        self._closed = False
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.reconnects = 0
        self.queries = 0            # queries sent, all refreshes together
        self.backend_pid = None     # the server process of the follower's connection
        self.extension_version = None  # the extension's version there (pg_extension.extversion)

    def refresh(self):
        """Brings the copy up to date now (one query per index when it is the same). Raises the
        driver's error if the server cannot be reached; the next refresh reconnects."""
        # on_event is called once the lock is released, so that a callback may call refresh().
        indexes = self._followed()
        pending = []
        try:
            with self._lock:
                for index in indexes:
                    with index._flag_lock:
                        index._deferred = []
                try:
                    self._refresh_locked(indexes)
                finally:
                    for index in indexes:
                        with index._flag_lock:
                            pending.append((index, index._deferred or ()))
                            index._deferred = None
        finally:
            for index, events in pending:
                for event, info in events:
                    index._call(event, info)

    def _refresh_locked(self, indexes):
        try:
            if self._conn is None:
                self._open()
        except Exception as error:
            for index in indexes:
                index._failed(error)
            if self._connection_lost():
                self._close_connection()
            raise
        first_error = None
        for position, index in enumerate(indexes):
            started, wall = time.monotonic(), time.time()
            try:
                index._refresh_index()
            except Exception as error:
                index._failed(error)
                first_error = first_error or error
                if self._connection_lost():
                    self._close_connection()
                    for rest in indexes[position + 1:]:
                        rest._failed(error)
                    break
                continue
            index._refreshed(started, wall)
            index._check_capacity()
        if first_error is not None:
            raise first_error

    def start(self):
        """Starts the background thread (refreshing every `interval` seconds)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="bloomfilter-follower", daemon=True)
        self._thread.start()

    def close(self):
        """Stops the background thread and closes the connection the follower opened or was given."""
        if getattr(self, "_pid", None) not in (None, os.getpid()):
            # A child forked where the at-fork handlers did not run (see _stale): the thread to
            # join is the parent's, and the connection and any lock the parent's too.
            with _restart_lock:
                if self._pid != os.getpid():
                    self._closed = True  # so that _after_fork starts no thread
                    self._after_fork()
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._close_connection()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _after_fork(self):
        # In a forked child: the parent's locks may have been held by its thread, which does not
        # exist here, and its connection is the parent's session.
        running = self._thread is not None and not self._closed
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if self._conn is not None:
            _inherited.append(self._conn)
            self._conn = None
        for index in self._followed():
            index._flag_lock = threading.Lock()
            index._deferred = None
            index._lsn = None
            index._reload_reason = "fork"
        self.backend_pid = None
        self._pid = os.getpid()
        if running:
            self.start()

    def _run(self):
        # A fixed rate: a refresh starts every `interval` seconds however long the last took.
        next_start = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_start - time.monotonic())):
            next_start = max(next_start + self.interval, time.monotonic())
            try:
                self.refresh()
            except Exception:
                pass  # kept in last_error; lag grows until a refresh succeeds

    def _open(self):
        if self._connect is None:
            raise RuntimeError("the follower's connection is closed and it cannot open another")
        self._conn = self._connect()
        self.reconnects += 1
        # The new connection may reach another server (a standby promoted when the primary
        # failed), whose WAL positions are not the old one's: changes since the old position
        # could leave out keys committed there. The next refresh reads each filter whole.
        for index in self._followed():
            index._lsn = None
            if index._reload_reason is None:
                index._reload_reason = "reconnect"
        self._prepare_connection()

    def _prepare_connection(self):
        if getattr(self._conn, "autocommit", True) is not True:
            self._conn.autocommit = True
        if hasattr(self._conn, "prepare_threshold"):
            # psycopg 3 prepares a query run 5 times on the server process of the moment; behind a
            # pooler in transaction mode the next query may reach one without it (or with another
            # client's statement of that name). Unprepared, that query is refused as any other.
            self._conn.prepare_threshold = None
        self.backend_pid = None
        (version,), = self._query(_CONNECTION, [])
        self.extension_version = _check_extension(version)

    def _connection_lost(self):
        conn = self._conn
        if conn is None:
            return False
        closed = getattr(conn, "closed", False)
        if closed:
            return True
        broken = getattr(conn, "broken", False)
        return bool(broken)

    def _close_connection(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None

    def _query(self, sql, parameters):
        cursor = self._conn.cursor()
        self.queries += 1
        try:
            cursor.execute(sql, parameters)
            rows = cursor.fetchall()
        finally:
            cursor.close()
        try:
            return _session_rows(self, rows)
        except SessionChangedError:
            self._conn.close()  # a lost connection, as far as the follower goes: it opens another
            raise

    def _filter_chunks(self, oid):
        return self._filter_chunks_of(self, oid)

    def _filter_chunks_of(self, index, oid):
        """bloom_index_filter(oid) as (its length, offset, bytes) rows of _CHUNK_BYTES, from one
        query, each row as it comes (psycopg 3: one row at a time; psycopg2: a few), counted in
        `index`'s last_rows and last_bytes."""
        self.queries += 1
        cursor = self._conn.cursor()
        parameters = [_CHUNK_BYTES, oid, _CHUNK_BYTES]
        if hasattr(cursor, "stream"):
            rows = cursor.stream(_LOAD_CHUNKS, parameters, binary=True)
        else:
            cursor.execute(_LOAD_CHUNKS, parameters)
            rows = (row for batch in iter(lambda: cursor.fetchmany(8), []) for row in batch)
        try:
            for row in rows:
                try:
                    (length, at, piece), = _session_rows(self, [row])
                except SessionChangedError:
                    self._conn.close()
                    raise
                index.last_rows += 1
                index.last_bytes += len(piece)
                yield length, at - 1, piece
        finally:
            cursor.close()


class IndexFollower(_Index, _Connected):
    """Follows a bloomfilter index and answers contains(key) and contains_many(keys) locally.

    conn: a psycopg or psycopg2 connection (used by the follower alone), a conninfo string, or
    a function returning a new connection; after a dropped connection the follower opens a new
    one the same way. index_name: the index, as in SQL (schema-qualified or through the
    search_path). interval: seconds between refreshes of the background thread; background=False
    for none (call refresh() yourself). max_lag: seconds; once the last successful refresh is
    older, contains() answers True (None: no bound). on_event: a function called as
    on_event(event, info) on "stale", "fresh", "reload" and "capacity" (see the README).
    """

    def __init__(self, conn, index_name, interval=0.1, background=True, max_lag=None,
                 on_event=None):
        self._init_connection(conn, interval)
        self._init_index(index_name, max_lag, on_event)
        self._connection_owner = self
        if self._conn is not None:
            self._prepare_connection()
        self.refresh()
        _followers.add(self)
        if background:
            self.start()

    def _followed(self):
        return (self,)

    @property
    def _name(self):
        return self.index_name


class _SharedIndex(_Index):
    """One index of a MultiIndexFollower: IndexFollower's answers, counters and events; the
    connection, thread, refresh() and close() are the MultiIndexFollower's."""

    def __init__(self, follower, index_name, max_lag, on_event):
        self._init_index(index_name, max_lag, on_event)
        self._connection_owner = follower

    def _query(self, sql, parameters):
        return self._connection_owner._query(sql, parameters)

    def _filter_chunks(self, oid):
        for chunk in self._connection_owner._filter_chunks_of(self, oid):
            yield chunk

    @property
    def extension_version(self):
        return self._connection_owner.extension_version

    def __repr__(self):
        return "<bloomfilter.follow index %s of a MultiIndexFollower>" % self.index_name


class MultiIndexFollower(_Connected):
    """Follows several bloomfilter indexes of one database on one connection and one thread.

        follower = MultiIndexFollower(dsn, ["users_email_bloom", "orders_ref_bloom"], max_lag=5)
        follower.index("users_email_bloom").contains(email)

    index(name) (or follower[name]) is that index's follower: contains, contains_many, lag,
    is_fresh, filter, stats and counters as IndexFollower's; each index has its own lag, since a
    refresh that fails for one (it was dropped) goes on with the others. The other arguments are
    IndexFollower's, the same for every index; on_event's info names the index.
    """

    def __init__(self, conn, index_names, interval=0.1, background=True, max_lag=None,
                 on_event=None):
        if isinstance(index_names, str):
            raise TypeError("MultiIndexFollower takes a list of index names, not one name")
        names = list(index_names)
        if not names:
            raise ValueError("MultiIndexFollower needs at least one index name")
        if len(set(names)) != len(names):
            raise ValueError("an index is named twice: %r" % (names,))
        self._init_connection(conn, interval)
        self.max_lag = max_lag
        self.indexes = {name: self._index_class(self, name, max_lag, on_event) for name in names}
        try:
            if self._conn is not None:
                self._prepare_connection()
            self._first_refresh()
        except BaseException:
            self._close_connection()
            raise
        self._track()
        if background:
            self.start()

    # What a subclass changes (bloomfilter.shared's SharedMultiIndexFollower): each index's
    # follower, the first refresh and the registry of followers set up again after a fork.
    _index_class = _SharedIndex

    def _first_refresh(self):
        self.refresh()

    def _track(self):
        _followers.add(self)

    def _followed(self):
        return tuple(self.indexes.values())

    @property
    def _name(self):
        return ", ".join(self.indexes)

    def index(self, index_name):
        """The follower of one of the indexes (KeyError for another name)."""
        return self.indexes[index_name]

    __getitem__ = index

    @property
    def lag(self):
        """The largest of the indexes' lags."""
        return max(index.lag for index in self.indexes.values())

    def is_fresh(self, max_lag=None):
        return all(index.is_fresh(max_lag) for index in self.indexes.values())

    def stats(self):
        """{index name: that index's stats()}."""
        return {name: index.stats() for name, index in self.indexes.items()}


class ShardedIndexFollower:
    """Follows the same index on several servers (the shards of a table) and answers for their
    union: contains(key) is False only if no shard's copy has the key. Each shard has its own
    IndexFollower (connection, thread, reconnection); with max_lag, one stale shard is enough
    for contains() to answer True.

    conns: connections, conninfo strings or functions returning a connection, one per shard.
    The other arguments are IndexFollower's, the same for every shard; on_event's info also
    has "shard", the shard's position in conns.
    """

    def __init__(self, conns, index_name, interval=0.1, background=True, max_lag=None,
                 on_event=None):
        self.index_name = index_name
        self.followers = []
        try:
            for shard, conn in enumerate(conns):
                self.followers.append(self._shard_follower(
                    conn, index_name, interval=interval, background=background, max_lag=max_lag,
                    on_event=None if on_event is None else _for_shard(on_event, shard)))
        except BaseException:
            self.close()
            raise
        if not self.followers:
            raise ValueError("ShardedIndexFollower needs at least one connection")

    def _shard_follower(self, conn, index_name, **options):
        """A shard's follower (bloomfilter.shared's SharedShardedIndexFollower makes another)."""
        return IndexFollower(conn, index_name, **options)

    def contains(self, key):
        """False: no shard has a row with this key committed before its last successful
        refresh; True: one probably has."""
        for follower in self.followers:
            if follower.contains(key):
                return True
        return False

    __contains__ = contains

    def contains_many(self, keys):
        """[contains(key) for key in keys]: each shard checks, in one batch, the keys no shard
        before it has."""
        return _union_contains_many(self.followers, keys)

    @property
    def lag(self):
        """The largest of the shards' lags: every "absent" is as of at most this long ago."""
        return max(follower.lag for follower in self.followers)

    def is_fresh(self, max_lag=None):
        return all(follower.is_fresh(max_lag) for follower in self.followers)

    def stats(self):
        """The shards' stats(), in the order of conns."""
        return [follower.stats() for follower in self.followers]

    def refresh(self):
        """Refreshes every shard; raises the first shard's error once all were tried."""
        errors = []
        for follower in self.followers:
            try:
                follower.refresh()
            except Exception as error:
                errors.append(error)
        if errors:
            raise errors[0]

    def close(self):
        for follower in self.followers:
            follower.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _for_shard(on_event, shard):
    return lambda event, info: on_event(event, dict(info, shard=shard))


from .follow_async import AsyncIndexFollower  # noqa: E402 (it builds on this module)

__all__.append("AsyncIndexFollower")
