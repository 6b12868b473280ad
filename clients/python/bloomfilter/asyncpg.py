"""asyncpg adapter: bloom values load as bloomfilter.Filter and Filter parameters are sent as
bloom (in binary by default; format="text" for the hex text form).

    import asyncpg, bloomfilter.asyncpg
    conn = await asyncpg.connect(...)
    await bloomfilter.asyncpg.register(conn)
    f = await conn.fetchval("SELECT f FROM filters WHERE id = 1")
    await conn.execute("UPDATE filters SET f = $1 WHERE id = 1", f)

    pool = await asyncpg.create_pool(dsn, init=bloomfilter.asyncpg.register)

Arrays of bloom follow. Without register(), asyncpg gives a bloom value as its text form (a
str), which Filter.from_text() reads.
"""

from ._core import Filter

__all__ = ["register"]

# The schema holding the type (asyncpg's set_type_codec wants it), found through the
# search_path as the name would be in SQL.
_LOOKUP = """
SELECT n.nspname, t.typname FROM pg_catalog.pg_type t
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
 WHERE t.oid = pg_catalog.to_regtype($1)
"""


def _encode_binary(value):
    if isinstance(value, Filter):
        return value.to_bytes()
    if isinstance(value, str):  # the text form (what an ORM may hand over)
        return Filter.from_text(value).to_bytes()
    raise TypeError("a bloom parameter takes a bloomfilter.Filter, not %s" % type(value).__name__)


def _encode_text(value):
    if isinstance(value, Filter):
        return value.to_text()
    if isinstance(value, str):
        return Filter.from_text(value).to_text()
    raise TypeError("a bloom parameter takes a bloomfilter.Filter, not %s" % type(value).__name__)


async def register(conn, schema=None, format="binary"):
    """Registers the bloom codec on an asyncpg connection (usable as create_pool(init=...)).
    schema: where the extension is (default: found through the search_path)."""
    if format not in ("binary", "text"):
        raise ValueError("format is 'binary' or 'text', not %r" % (format,))
    row = await conn.fetchrow(_LOOKUP, "bloom" if schema is None else "%s.bloom" % schema)
    if row is None:
        raise LookupError("type bloom not found: is the bloomfilter extension installed "
                          "(CREATE EXTENSION bloomfilter) and in the search_path?")
    if format == "binary":
        encoder, decoder = _encode_binary, Filter.from_bytes
    else:
        encoder, decoder = _encode_text, Filter.from_text
    await conn.set_type_codec(row["typname"], schema=row["nspname"], encoder=encoder,
                              decoder=decoder, format=format)
