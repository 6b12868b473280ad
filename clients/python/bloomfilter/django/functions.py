"""The extension's functions as query expressions (IndexContains, BloomContains, BloomAdd,
BloomAgg), and index_contains(), one check through Django's connection.

A key given as a Python value is cast to the SQL type the client hashes it as (str: text,
bytes: bytea, int: bigint, uuid.UUID: uuid), so the call picks its overload whatever the driver
sends; an expression (F("email"), Lower("email")) is passed as it is. A plain string is a key,
never a field name: name a column with F().

An index of a composite key (BloomfilterIndex(fields=["tenant", "email"])) is checked with one
value per key column, in column order: IndexContains(name, F("tenant"), F("email")),
index_contains(name, 42, "a@x.com"); a tuple stands for its values (index_contains(name,
(42, "a@x.com")), as Filter.contains takes it).
"""

import uuid

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import (Aggregate, BigIntegerField, BinaryField, BooleanField, FloatField,
                              Func, TextField, UUIDField, Value)
from django.db.models.functions import Cast

from .._core import Filter
from .fields import BloomField

__all__ = ["IndexContains", "BloomContains", "BloomAdd", "BloomAgg", "index_contains"]

_BIGINT = 1 << 63


def _key_type(value):
    """(SQL type, parameter) of a key given as a Python value, as the client hashes it."""
    if value is None or isinstance(value, str):
        return "text", value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytea", bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not -_BIGINT <= value < _BIGINT:
            raise ValueError("key out of range for bigint: %d" % value)
        return "bigint", value
    if isinstance(value, uuid.UUID):
        return "uuid", value
    raise TypeError("a key is str, bytes, int or uuid.UUID (or an expression), not %s"
                    % type(value).__name__)


_FIELDS = {"text": TextField, "bytea": BinaryField, "bigint": BigIntegerField, "uuid": UUIDField}


def _key(value):
    if hasattr(value, "resolve_expression"):
        return value
    sql_type, value = _key_type(value)
    return Cast(Value(value), _FIELDS[sql_type]())


def _index_name(index_name):
    # Cast to text: the overload that resolves the name at each call (a regclass is frozen when
    # the transaction first uses it, and raises 40001 after a REINDEX CONCURRENTLY).
    if not isinstance(index_name, str):
        raise TypeError("index_name is the index's name, a str, not %s" % type(index_name).__name__)
    return Cast(Value(index_name), TextField())


def _filter(value):
    if isinstance(value, Filter):
        return Cast(Value(value.to_text()), BloomField())
    return value  # a field name or an expression


def _values(key, keys):
    """The values of a check in column order: key and keys, or a tuple key's items."""
    if isinstance(key, tuple):
        if keys:
            raise TypeError("give a composite key as one tuple or as several values, not both")
        if not key:
            raise ValueError("a composite key has at least one value")
        return key
    return (key,) + tuple(keys)


class IndexContains(Func):
    """bloom_index_contains(index_name, key[, key, ...]): False when no row of the index's table
    has the key, True when one probably has (NULL for a NULL key). An index of several columns
    takes one value per column, in column order.

        Invite.objects.annotate(registered=IndexContains("accounts_user_email_bloom", F("email")))
        Invite.objects.exclude(IndexContains("accounts_user_email_bloom", F("email")))
        Invite.objects.annotate(registered=IndexContains("accounts_member_bloom", F("tenant"), F("email")))
    """

    function = "bloom_index_contains"
    output_field = BooleanField()

    def __init__(self, index_name, key, *keys, **extra):
        super().__init__(_index_name(index_name), *[_key(k) for k in _values(key, keys)], **extra)


class BloomContains(Func):
    """bloom_contains(filter, key): False when the key was never added to the filter (a BloomField
    name or expression, or a Filter)."""

    function = "bloom_contains"
    output_field = BooleanField()

    def __init__(self, filter, key, **extra):
        super().__init__(_filter(filter), _key(key), **extra)


class BloomAdd(Func):
    """bloom_add(filter, key): the filter with the key added. In an update, the server adds the
    key to the stored filter (no concurrent writer's key lost):
    Snapshot.objects.filter(pk=1).update(f=BloomAdd("f", email))."""

    function = "bloom_add"
    output_field = BloomField()

    def __init__(self, filter, key, **extra):
        super().__init__(_filter(filter), _key(key), **extra)


class BloomAgg(Aggregate):
    """bloom_agg(expression[, capacity, error_rate]): a filter of the rows' non-NULL values, sized
    for their distinct count (at error_rate, 0.01 if not given) or for `capacity` keys. None over
    no rows."""

    function = "bloom_agg"
    name = "BloomAgg"
    output_field = BloomField()

    def __init__(self, expression, capacity=None, error_rate=None, **extra):
        arguments = [expression]
        if capacity is not None:
            arguments.append(Cast(Value(capacity), BigIntegerField()))
            arguments.append(Cast(Value(0.01 if error_rate is None else error_rate), FloatField()))
        elif error_rate is not None:
            arguments.append(Cast(Value(error_rate), FloatField()))
        super().__init__(*arguments, **extra)


def index_contains(index_name, key, *keys, using=DEFAULT_DB_ALIAS):
    """SELECT bloom_index_contains(index_name, key[, key, ...]) through Django's connection
    `using`: False when no row has the key, True when one probably has, None for a None key (or a
    None value of a composite key). An index of several columns takes one value per column, in
    column order (or one tuple of them): index_contains("accounts_member_bloom", 42, "a@x.com")."""
    if not isinstance(index_name, str):
        raise TypeError("index_name is the index's name, a str, not %s" % type(index_name).__name__)
    casts, params = [], [index_name]
    for value in _values(key, keys):
        sql_type, value = _key_type(value)
        if sql_type == "uuid":
            value = str(value)  # as text, cast by the server: no driver adapter needed
        casts.append("%%s::%s" % sql_type)
        params.append(value)
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT bloom_index_contains(%%s::text, %s)" % ", ".join(casts), params)
        return cursor.fetchone()[0]
