"""BloomField: a model field for the extension's bloom type, whose values are bloomfilter.Filter."""

from django.db import models

from .._core import Filter, filter_from_value

__all__ = ["BloomField"]


def to_filter(value):
    """A Filter from what a driver or a serializer gives: a Filter (a driver adapter registered
    with bloomfilter.psycopg2 or bloomfilter.psycopg), the text form "\\x..." (psycopg2, and
    psycopg without an adapter), or the byte format."""
    return filter_from_value(value, Filter, "BloomField")


class BloomField(models.Field):
    """A bloom column. Values are bloomfilter.Filter (None for NULL), sent in the text form,
    which the server validates as every way in does. Not editable in forms by default, as
    BinaryField: a filter of a million keys is 1.2 MB."""

    description = "Bloom filter (bloom)"
    empty_strings_allowed = False

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if self.editable:
            kwargs["editable"] = True
        else:
            kwargs.pop("editable", None)
        return name, "bloomfilter.django.BloomField", args, kwargs

    def db_type(self, connection):
        return "bloom"

    def from_db_value(self, value, expression, connection):
        return to_filter(value)

    def to_python(self, value):
        return to_filter(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None:
            return None
        if not isinstance(value, Filter):
            raise TypeError("a BloomField value is a bloomfilter.Filter, not %s" % type(value).__name__)
        # A literal of unknown type: the column's type (or the comparison's) makes it a bloom.
        return value.to_text()

    def value_to_string(self, obj):
        # dumpdata and loaddata: the text form, read back by to_python.
        value = self.value_from_object(obj)
        return None if value is None else value.to_text()
