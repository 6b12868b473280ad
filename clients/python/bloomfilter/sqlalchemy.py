"""SQLAlchemy support: a `Bloom` column type whose values are bloomfilter.Filter, and the
extension's functions with their SQL types (Boolean for the checks, Bloom for the filters).

    from sqlalchemy import Column, Index, Integer, Text, select
    from bloomfilter.sqlalchemy import Bloom, bloom_index_contains

    class User(Base):
        __tablename__ = "users"
        id = Column(Integer, primary_key=True)
        email = Column(Text, nullable=False)
        __table_args__ = (Index("users_email_bloom", email, postgresql_using="bloomfilter",
                                postgresql_with={"capacity": 1_000_000, "error_rate": 0.01}),)

    session.scalar(select(bloom_index_contains("users_email_bloom", "a@b.c")))   # a bool

Importing the module also types func.bloom_index_contains(...), func.bloom_contains(...)
(Boolean) and func.bloom_agg(...), func.bloom_union_agg(...), func.bloom_index_filter(...),
func.bloom_empty(...), func.bloom_add(...), func.bloom_union(...) (Bloom). Values cross the
driver in the text form, so no driver adapter is needed (psycopg2, psycopg 3, asyncpg; one
registered with bloomfilter.psycopg or bloomfilter.asyncpg is fine too).
"""

from sqlalchemy import Boolean, cast
from sqlalchemy.sql.functions import GenericFunction
from sqlalchemy.types import UserDefinedType

from ._core import Filter

__all__ = ["Bloom", "bloom_index_contains", "bloom_contains", "bloom_agg", "bloom_union_agg",
           "bloom_index_filter", "bloom_empty", "bloom_add", "bloom_union"]


def _to_filter(value):
    if value is None or isinstance(value, Filter):
        return value
    if isinstance(value, str):
        return Filter.from_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        # The text form as bytes (a driver's SQL_ASCII text), else the byte format.
        return Filter.from_text(data) if data.startswith(b"\\x") else Filter.from_bytes(data)
    raise TypeError("a Bloom value is a bloomfilter.Filter, not %s" % type(value).__name__)


class Bloom(UserDefinedType):
    """The extension's bloom type: Python values are bloomfilter.Filter."""

    cache_ok = True

    def get_col_spec(self, **kw):
        return "bloom"

    def bind_processor(self, dialect):
        def process(value):
            if value is None:
                return None
            if not isinstance(value, Filter):
                raise TypeError("a Bloom value is a bloomfilter.Filter, not %s" % type(value).__name__)
            return value.to_text()
        return process

    def bind_expression(self, bindvalue):
        # The text form, cast to bloom by the server (which validates it as every way in does).
        return cast(bindvalue, _BloomCast())

    def result_processor(self, dialect, coltype):
        return _to_filter


class _BloomCast(UserDefinedType):
    """bloom as the target of the parameters' cast (no bind processing of its own)."""

    cache_ok = True

    def get_col_spec(self, **kw):
        return "bloom"


class bloom_index_contains(GenericFunction):
    """bloom_index_contains(index, key): False if no row of the index has the key."""
    type = Boolean()
    inherit_cache = True


class bloom_contains(GenericFunction):
    """bloom_contains(filter, key or array): False if the key was never added."""
    type = Boolean()
    inherit_cache = True


class bloom_agg(GenericFunction):
    type = Bloom()
    inherit_cache = True


class bloom_union_agg(GenericFunction):
    type = Bloom()
    inherit_cache = True


class bloom_index_filter(GenericFunction):
    type = Bloom()
    inherit_cache = True


class bloom_empty(GenericFunction):
    type = Bloom()
    inherit_cache = True


class bloom_add(GenericFunction):
    type = Bloom()
    inherit_cache = True


class bloom_union(GenericFunction):
    type = Bloom()
    inherit_cache = True
