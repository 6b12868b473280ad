"""psycopg (3) adapter: bloom values load as bloomfilter.Filter, in text and binary results,
and Filter parameters dump as bloom (binary by default, text with %t placeholders).

    import psycopg, bloomfilter.psycopg
    conn = psycopg.connect(...)
    bloomfilter.psycopg.register(conn)
    f = conn.execute("SELECT f FROM filters WHERE id = 1").fetchone()[0]
    conn.execute("UPDATE filters SET f = %s WHERE id = 1", [f])
"""

from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from ._core import Filter

__all__ = ["register"]


class FilterTextLoader(Loader):
    format = Format.TEXT

    def load(self, data):
        return Filter.from_text(bytes(data))


class FilterBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        return Filter.from_bytes(data)


def register(context, schema=None):
    """Registers the adapters on a connection or cursor (context), looking up the bloom type's
    OID there (in `schema` when given, else through the search_path). Returns the TypeInfo."""
    connection = getattr(context, "connection", context)
    name = "bloom" if schema is None else "%s.bloom" % schema
    info = TypeInfo.fetch(connection, name)
    if info is None:
        raise LookupError("type bloom not found: is the bloomfilter extension installed "
                          "(CREATE EXTENSION bloomfilter) and in the search_path?")
    info.register(context)
    adapters = context.adapters

    class FilterTextDumper(Dumper):
        format = Format.TEXT
        oid = info.oid

        def dump(self, obj):
            return obj.to_text().encode("ascii")

    class FilterBinaryDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj):
            return obj.to_bytes()

    adapters.register_loader(info.oid, FilterTextLoader)
    adapters.register_loader(info.oid, FilterBinaryLoader)
    adapters.register_dumper(Filter, FilterTextDumper)
    adapters.register_dumper(Filter, FilterBinaryDumper)
    return info
