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

A composite key, as UNIQUE (tenant_id, email) has: an index on several columns (or expressions,
func.lower(email)), checked with the values in column order:

    Index("accounts_bloom", accounts.c.tenant_id, accounts.c.email, postgresql_using="bloomfilter")
    session.scalar(select(func.bloom_index_contains("accounts_bloom", 42, "a@x.com")))

A Bloom attribute of a mapped class tracks its filter's changes in place: its values are
MutableFilter (a Filter subclass), whose add() and update() mark the row changed, so

    snapshot.f.add("a@b.c")
    session.commit()                  # UPDATE ... SET f = ...

stores the key. A plain Filter assigned to the attribute is copied into a MutableFilter (change it
through the attribute afterwards), and assigning the same filter again (snapshot.f = snapshot.f)
always counts as a change.

A layered value (format version 3: what func.bloom_index_filter(...) gives for an index that
grows, which an index made with no options is) is read as a MutableLayeredFilter, a read-only
LayeredFilter: it answers contains() and contains_many() for every layer, and its add(),
update() and union() raise ValueError, as the server's bloom_add refuses such a value.

    f = session.scalar(select(func.bloom_index_filter("users_email_bloom")))
    f.contains("a@b.c")               # a LayeredFilter, when the index grows

Importing the module also types func.bloom_index_contains(...), func.bloom_contains(...)
(Boolean) and func.bloom_agg(...), func.bloom_union_agg(...), func.bloom_index_filter(...),
func.bloom_empty(...), func.bloom_add(...), func.bloom_union(...) (Bloom). Values cross the
driver in the text form, so no driver adapter is needed (psycopg2, psycopg 3, asyncpg; one
registered with bloomfilter.psycopg or bloomfilter.asyncpg is fine too).
"""

import weakref

from sqlalchemy import Boolean, cast
from sqlalchemy.ext.mutable import Mutable
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.functions import GenericFunction
from sqlalchemy.types import UserDefinedType

from ._core import Filter, LayeredFilter, filter_from_value

__all__ = ["Bloom", "MutableFilter", "MutableLayeredFilter", "bloom_index_contains", "bloom_contains", "bloom_agg",
           "bloom_union_agg", "bloom_index_filter", "bloom_empty", "bloom_add", "bloom_union"]


class MutableFilter(Mutable, Filter):
    """A Filter that tells the ORM when it changes in place: add() and update() mark the rows
    whose Bloom attribute holds it as changed (sqlalchemy.ext.mutable), so the next flush sends
    their UPDATE. The values of Bloom columns; Filter itself has no such hook, and its add() and
    checks cost the same as before."""

    def add(self, key):
        Filter.add(self, key)
        if self._parents:            # held by no mapped object: nothing to mark
            self.changed()
        return self

    def update(self, keys):
        # Filter.add for each key and one changed() for them all (also when a key is refused
        # halfway: the keys before it were added).
        add = Filter.add
        try:
            for key in keys:
                add(self, key)
        finally:
            if self._parents:
                self.changed()
        return self

    @classmethod
    def coerce(cls, key, value):
        """The value an attribute holds for what is assigned (or loaded): a Filter is copied into
        a MutableFilter; a SQL expression (snapshot.f = bloom_add(Snapshot.f, k)) is kept for the
        flush to send."""
        if value is None or isinstance(value, (cls, MutableLayeredFilter)):
            return value
        if isinstance(value, LayeredFilter):
            return MutableLayeredFilter(value.to_bytes())
        if isinstance(value, Filter):
            return cls(value.to_bytes())
        if isinstance(value, ClauseElement) or hasattr(value, "__clause_element__"):
            return _Expression(value)
        raise TypeError("a Bloom value is a bloomfilter.Filter, not %s" % type(value).__name__)

    def __reduce__(self):
        # Pickled as its byte format, and a MutableFilter again (the ORM re-attaches it to the
        # objects it belongs to when they are unpickled).
        return (MutableFilter.from_bytes, (self.to_bytes(),))


class MutableLayeredFilter(Mutable, LayeredFilter):
    """A layered value (format version 3) of a Bloom column or function, as read: the filter of
    an index that grows (func.bloom_index_filter of an index made with no options). Read-only:
    add(), update() and union() raise ValueError, so nothing changes in place and no UPDATE is
    ever owed for it; assigning another value to the attribute is tracked as any assignment."""

    def _refuse(self, what):
        raise ValueError(
            "%s() refused: this Bloom value is a layered bloom value (format version 3), the "
            "filter of a bloomfilter index that grows, as bloom_index_filter gives it; it is "
            "read-only (a key added here would be in no layer of the index). Insert the row into "
            "the indexed table, or build a filter to add to with bloom_agg(...) or "
            "Filter.empty(...)" % what)

    # add, update and union are LayeredFilter's: each refuses through _refuse.

    @classmethod
    def coerce(cls, key, value):
        return MutableFilter.coerce(key, value)

    def __reduce__(self):
        return (MutableLayeredFilter.from_bytes, (self.to_bytes(),))


class _Expression:
    """A SQL expression assigned to a Bloom attribute, as the flush takes it (__clause_element__),
    with the _parents a mutable attribute's value must have."""

    __slots__ = ("expression", "_parents", "__weakref__")

    def __init__(self, expression):
        self.expression = expression
        self._parents = weakref.WeakKeyDictionary()

    def __clause_element__(self):
        expression = self.expression
        if hasattr(expression, "__clause_element__"):
            return expression.__clause_element__()
        return expression


def _to_filter(value):
    # One filter (format version 1 or 2) is a MutableFilter; a layered value a read-only
    # MutableLayeredFilter.
    if isinstance(value, LayeredFilter):
        return MutableFilter.coerce(None, value)
    try:
        return filter_from_value(value, MutableFilter, "Bloom")
    except ValueError as error:
        if getattr(error, "status", None) != "layered":
            raise
    return filter_from_value(value, MutableLayeredFilter, "Bloom")


class Bloom(UserDefinedType):
    """The extension's bloom type: Python values are bloomfilter.Filter (MutableFilter as read,
    and in mapped attributes, which track their changes in place; a layered value, format
    version 3, a read-only MutableLayeredFilter)."""

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

    def compare_values(self, x, y):
        # The ORM's test for "changed" when an attribute was assigned: the same filter assigned
        # again may have changed in place since it was loaded (its old bytes are gone), so it
        # counts as changed; distinct filters are compared by their bytes.
        if x is y:
            return x is None
        return x == y


class _BloomCast(UserDefinedType):
    """bloom as the target of the parameters' cast (no bind processing of its own)."""

    cache_ok = True

    def get_col_spec(self, **kw):
        return "bloom"


class bloom_index_contains(GenericFunction):
    """bloom_index_contains(index, key[, key, ...]): False if no row of the index has the key; an
    index of several columns takes one value per column, in column order."""
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


# Every mapped column of type Bloom (or a subclass) holds MutableFilter values, tracked.
MutableFilter.associate_with(Bloom)
