"""psycopg (3) adapter: bloom values load as bloomfilter.Filter, in text and binary results,
and Filter parameters dump as bloom (binary by default, text with %t placeholders).

    import psycopg, bloomfilter.psycopg
    conn = psycopg.connect(...)
    bloomfilter.psycopg.register(conn)
    f = conn.execute("SELECT f FROM filters WHERE id = 1").fetchone()[0]
    conn.execute("UPDATE filters SET f = %s WHERE id = 1", [f])

register() takes a Connection or a cursor, and is a pool's configure function as it is:
ConnectionPool(dsn, configure=bloomfilter.psycopg.register). On an AsyncConnection (or async
cursor) it returns an awaitable, so that `await register(aconn)` and
AsyncConnectionPool(dsn, configure=bloomfilter.psycopg.register) work; register_async() is the
same awaitable form by name. The type is looked up in a transaction of its own (or a savepoint
inside the caller's), so a connection outside a transaction is left outside one. It works on
databases of any encoding, SQL_ASCII included.
"""

from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from ._core import Filter

__all__ = ["register", "register_async"]

# Numbers only: on a SQL_ASCII database psycopg returns text as bytes, which TypeInfo.fetch()
# (and the array adapters it registers) cannot take.
_LOOKUP = ("SELECT t.oid, t.typarray FROM pg_catalog.pg_type t "
           "WHERE t.oid = pg_catalog.to_regtype(%s)")
_NOT_FOUND = ("type bloom not found: is the bloomfilter extension installed "
              "(CREATE EXTENSION bloomfilter) and in the search_path?")


class FilterTextLoader(Loader):
    format = Format.TEXT

    def load(self, data):
        return Filter.from_text(bytes(data))


class FilterBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        return Filter.from_bytes(data)


def _type_name(schema):
    return "bloom" if schema is None else "%s.bloom" % schema


def _is_async(context):
    from psycopg import AsyncConnection, AsyncCursor
    return isinstance(context, (AsyncConnection, AsyncCursor))


def _install(context, name, row):
    if row is None or row[0] is None:
        raise LookupError(_NOT_FOUND)
    oid, array_oid = row
    info = TypeInfo(name, oid, array_oid)
    info.register(context)

    class FilterTextDumper(Dumper):
        format = Format.TEXT

        def dump(self, obj):
            return obj.to_text().encode("ascii")

    class FilterBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj):
            return obj.to_bytes()

    FilterTextDumper.oid = FilterBinaryDumper.oid = oid
    adapters = context.adapters
    adapters.register_loader(oid, FilterTextLoader)
    adapters.register_loader(oid, FilterBinaryLoader)
    adapters.register_dumper(Filter, FilterTextDumper)
    adapters.register_dumper(Filter, FilterBinaryDumper)
    return info


def register(context, schema=None):
    """Registers the adapters on a connection or cursor (context), looking up the bloom type's
    OID there (in `schema` when given, else through the search_path). Returns the TypeInfo; on
    an async connection or cursor, an awaitable of it (see register_async)."""
    if _is_async(context):
        return register_async(context, schema)
    connection = getattr(context, "connection", context)
    name = _type_name(schema)
    with connection.transaction(), connection.cursor() as cursor:
        row = cursor.execute(_LOOKUP, [name]).fetchone()
    return _install(context, name, row)


async def register_async(context, schema=None):
    """register() for an AsyncConnection or async cursor: `await register_async(aconn)`, or
    AsyncConnectionPool(configure=register_async)."""
    connection = getattr(context, "connection", context)
    name = _type_name(schema)
    async with connection.transaction():
        async with connection.cursor() as cursor:
            await cursor.execute(_LOOKUP, [name])
            row = await cursor.fetchone()
    return _install(context, name, row)
