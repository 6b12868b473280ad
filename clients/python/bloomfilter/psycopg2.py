"""psycopg2 adapter: bloom values load as bloomfilter.Filter and Filter parameters are sent
as bloom. (psycopg2 reads every result in text form; for binary results use psycopg 3 and
bloomfilter.psycopg.)

    import psycopg2, bloomfilter.psycopg2
    conn = psycopg2.connect(...)
    bloomfilter.psycopg2.register(conn)
"""

import psycopg2
import psycopg2.extensions

from ._core import Filter

__all__ = ["register"]


class FilterAdapter:
    """A Filter as an SQL literal: its byte format as a bytea literal, cast to bloom (the cast
    validates it as every way in does)."""

    def __init__(self, value):
        self._bytes = psycopg2.extensions.Binary(value.to_bytes())

    def prepare(self, connection):
        self._bytes.prepare(connection)

    def getquoted(self):
        return self._bytes.getquoted() + b"::bloom"


def _cast(value, cursor):
    return None if value is None else Filter.from_text(value)


def register(connection, schema=None):
    """Registers the bloom type's loader on a connection (or cursor) and the Filter adapter
    (psycopg2 adapters are global). Returns the bloom type's OID. A connection that was not in a
    transaction is not left in one."""
    is_cursor = not hasattr(connection, "cursor")
    conn = connection.connection if is_cursor else connection
    # Outside a transaction before, outside one after: psycopg2 opens one at the first query of
    # a connection not in autocommit, which would leave it idle in transaction (and a pool's
    # connection returned that way).
    was_idle = (not conn.autocommit and
                conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE)
    cursor = connection if is_cursor else connection.cursor()
    try:
        cursor.execute("SELECT pg_catalog.to_regtype(%s)::oid",
                       ["bloom" if schema is None else "%s.bloom" % schema])
        row = cursor.fetchone()
    finally:
        if not is_cursor:
            cursor.close()
        if was_idle:
            conn.rollback()
    if row is None or row[0] is None:
        raise LookupError("type bloom not found: is the bloomfilter extension installed "
                          "(CREATE EXTENSION bloomfilter) and in the search_path?")
    oid = row[0]
    bloom = psycopg2.extensions.new_type((oid,), "BLOOM", _cast)
    psycopg2.extensions.register_type(bloom, connection)
    psycopg2.extensions.register_adapter(Filter, FilterAdapter)
    return oid
