"""An asyncio follower of a bloomfilter index: IndexFollower's answers, on psycopg's
AsyncConnection or asyncpg, refreshed by a task of the event loop that never blocks it.

    from bloomfilter.follow import AsyncIndexFollower
    async with AsyncIndexFollower(await psycopg.AsyncConnection.connect(dsn),
                                  "users_email_bloom", interval=0.1, max_lag=5) as follower:
        if not follower.contains(email):   # no round trip, no await
            ...

The queries are the sync follower's; results are read in binary (the filter's bytes as they
come, no hex to decode), and what is done with them between two awaits is a copy of the
filter's bytes on a reload and a slice assignment per changed page (and, after a reload, the
check against the index's capacity, in slices of blocks with an await between them): make bench
measures the longest stall of the loop during reloads of a 1M-key filter. The answers,
contains_many, stats() and on_event are IndexFollower's.
"""

import asyncio
import time

from ._core import Filter
from . import follow as _follow

__all__ = ["AsyncIndexFollower"]


def _dollar(sql):
    """%s placeholders as asyncpg's $1, $2... (the follower's SQL has no other %)."""
    parts = sql.split("%s")
    return "".join(p + ("$%d" % (i + 1) if i < len(parts) - 1 else "") for i, p in enumerate(parts))


def _driver(conn):
    module = type(conn).__module__.split(".")[0]
    if module not in ("psycopg", "asyncpg"):
        raise TypeError("AsyncIndexFollower takes a psycopg AsyncConnection or an asyncpg "
                        "connection, not %s" % type(conn).__name__)
    return module


def _async_reconnector(conn):
    if isinstance(conn, str):
        try:
            import psycopg
            return lambda: psycopg.AsyncConnection.connect(conn, autocommit=True)
        except ImportError:
            import asyncpg
            return lambda: asyncpg.connect(conn)
    if _driver(conn) == "psycopg":
        import psycopg
        dsn, password = conn.info.dsn, conn.info.password
        if password:
            return lambda: psycopg.AsyncConnection.connect(dsn, password=password, autocommit=True)
        return lambda: psycopg.AsyncConnection.connect(dsn, autocommit=True)
    return None  # asyncpg: give a function to reconnect (lambda: asyncpg.connect(dsn))


class AsyncIndexFollower(_follow._Index):
    """Follows a bloomfilter index from an asyncio event loop; contains(key) and
    contains_many(keys) answer locally.

    conn: a psycopg AsyncConnection or asyncpg connection (used by the follower alone), a
    conninfo string, or an async function returning a new connection (after a dropped
    connection the follower opens a new one the same way; an asyncpg connection given as it is
    cannot be reopened). interval, max_lag, on_event: as IndexFollower's (on_event is called
    from the loop). Start it with `async with AsyncIndexFollower(...)` or
    `await follower.start()`; `await follower.aclose()`.
    """

    def __init__(self, conn, index_name, interval=0.1, max_lag=None, on_event=None):
        if callable(conn) and not isinstance(conn, str) and not hasattr(conn, "cursor") \
                and not hasattr(conn, "fetch"):
            self._connect, self._conn = conn, None
        elif isinstance(conn, str):
            self._connect, self._conn = _async_reconnector(conn), None
        else:
            self._connect, self._conn = _async_reconnector(conn), conn
        self._init_index(index_name, max_lag, on_event)
        self._connection_owner = self
        self.interval = interval
        self._lock = None
        self._task = None
        self._prepared = False
        self.reconnects = 0
        self.queries = 0
        self.backend_pid = None
        self.extension_version = None

    # -- keeping current ---------------------------------------------------------------------

    async def start(self):
        """Loads the filter (if not yet) and starts the refreshing task on the running loop."""
        if self._state is None:
            await self.refresh()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.aclose()

    async def aclose(self):
        """Stops the task and closes the connection."""
        task, self._task = self._task, None
        if task is not None:
            # Cancelled again until it ends: a driver may swallow a cancellation (asyncpg's
            # compat.wait_for returns what completed as it was cancelled, for one), and the
            # task would go on to its next refresh, never ending.
            while not task.done():
                task.cancel()
                await asyncio.wait([task], timeout=0.5)
        await self._close_connection()

    async def refresh(self):
        """Brings the copy up to date now; raises the driver's error if the server cannot be
        reached (the next refresh reconnects)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            started, wall = time.monotonic(), time.time()
            try:
                if self._conn is None:
                    await self._open()
                if not self._prepared:
                    await self._prepare_connection()
                await self._refresh_index()
            except Exception as error:
                self._failed(error)
                if self._connection_lost():
                    await self._close_connection()
                raise
            self._refreshed(started, wall)
            if self._capacity_due():
                for _ in self._capacity_steps():
                    await asyncio.sleep(0)  # the loop runs between slices of blocks

    async def _refresh_index(self):
        """Reads the filter whole, or the changes since the last refresh, on a prepared
        connection."""
        if self._state is None or self._lsn is None:
            await self._load()
        else:
            await self._apply_changes()

    async def _run(self):
        next_start = time.monotonic() + self.interval
        while True:
            await asyncio.sleep(max(0.0, next_start - time.monotonic()))
            next_start = max(next_start + self.interval, time.monotonic())
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:
                pass  # kept in last_error; lag grows until a refresh succeeds

    # -- queries -----------------------------------------------------------------------------

    async def _open(self):
        if self._connect is None:
            raise RuntimeError("the follower's connection is closed and it cannot open another "
                               "(give AsyncIndexFollower a function that connects)")
        self._conn = await self._connect()
        self.reconnects += 1
        self._lsn = None  # maybe another server: read the filter whole (as IndexFollower)
        if self._reload_reason is None:
            self._reload_reason = "reconnect"
        self._prepared = False

    async def _prepare_connection(self):
        if _driver(self._conn) == "psycopg":
            if not self._conn.autocommit:
                await self._conn.set_autocommit(True)
            self._conn.prepare_threshold = None  # as IndexFollower's
        self.backend_pid = None
        (version,), = await self._query(_follow._CONNECTION, [])
        self.extension_version = _follow._check_extension(version)
        self._prepared = True

    def _connection_lost(self):
        conn = self._conn
        if conn is None:
            return False
        if _driver(conn) == "asyncpg":
            return conn.is_closed()
        return bool(conn.closed or conn.broken)

    async def _close_connection(self):
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._prepared = False
            try:
                await conn.close()
            except Exception:
                pass

    async def _query(self, sql, parameters):
        self.queries += 1
        if _driver(self._conn) == "asyncpg":
            rows = await self._conn.fetch(_dollar(sql), *parameters)
        else:
            async with self._conn.cursor(binary=True) as cursor:
                await cursor.execute(sql, parameters)
                rows = await cursor.fetchall()
        try:
            return _follow._session_rows(self, rows)
        except _follow.SessionChangedError:
            await self._conn.close()  # a lost connection (_connection_lost): the next refresh reconnects
            raise

    async def _describe(self, query):
        """(OID, key type, key transform or None) of the index now under the name, from the
        queries of IndexFollower's _describe, in its order, run by `query`."""
        rows = await query(_follow._DESCRIBE, [self.index_name])
        parts = await query(_follow._KEY_PARTS, [rows[0][0]]) if rows and rows[0][6] != 1 else None
        columns = (await query(_follow._COLUMNS, [rows[0][0]])
                   if _follow._has_expression(rows, parts) else None)
        return _follow._key_rules(self.index_name, rows, columns, parts)

    async def _whole(self, oid):
        """bloom_index_filter(oid) as (its length, offset, bytes) rows, counted in last_rows and
        last_bytes."""
        # In rows of 1 MB, as IndexFollower reads it (libpq's buffer stays as large as the largest
        # row); the OID as text, which asyncpg takes for the query's text parameter.
        rows = await self._query(_follow._LOAD_CHUNKS, [_follow._CHUNK_BYTES, str(oid), _follow._CHUNK_BYTES])
        self.last_rows, self.last_bytes = len(rows), sum(len(piece) for _, _, piece in rows)
        return [(length, at - 1, piece) for length, at, piece in rows]

    async def _load(self):
        oid, key_type, transform = await self._describe(self._query)
        (lsn,), = await self._query(_follow._CURRENT_LSN, [])
        chunks = await self._whole(oid)
        data = bytearray(chunks[0][0])
        for _, at, piece in chunks:
            data[at:at + len(piece)] = piece
        f = Filter.from_bytes(data)
        self._state = (f, key_type, transform)
        self._oid, self._lsn = oid, _follow._text(lsn)
        self._loaded(f, len(data))

    async def _apply_changes(self):
        rows = await self._query(_follow._CHANGES, [self.index_name, self.index_name, self._lsn])
        self.last_rows = len(rows)
        self.last_bytes = sum(len(row[2]) for row in rows)
        if not rows:
            return
        next_lsn = _follow._merge(self._state[0], self._oid, rows)
        if next_lsn is None:
            self._reload_reason = _follow._whole_reason(self._state[0], self._oid, rows)
            await self._load()
            return
        if len(rows) > 1:
            self._pages_changed = True
        self._lsn = next_lsn
