"""BloomfilterIndex: the extension's index access method in a model's Meta.indexes."""

import math

from django.contrib.postgres.indexes import PostgresIndex

__all__ = ["BloomfilterIndex"]


class BloomfilterIndex(PostgresIndex):
    """CREATE INDEX name ON table USING bloomfilter (key, ...) WITH (capacity = ..., error_rate = ...).

    One key: a field (fields=["email"]) or an expression (Lower("email")), with a name (up to 38
    characters). Or a composite key of up to 8 columns, as a multi-tenant unique constraint has:
    fields=["tenant", "email"], or expressions (F("tenant"), Lower("email")) for a field and an
    expression; checked with the values in column order (index_contains(name, 42, "a@x.com")). capacity and error_rate are the index's reloptions; without them the server's
    defaults apply (from 2.2: an index that grows by layers, its first layer sized for twice the
    rows the build finds, at least 10,000, at error_rate 0.01; its bloom_index_filter is a
    layered value, which a BloomField reads as a LayeredFilter). condition=Q(...) makes a partial
    index."""

    suffix = "bloomfilter"
    max_keys = 8  # the access method's key columns

    def __init__(self, *expressions, capacity=None, error_rate=None, **kwargs):
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                     or capacity < 1):
            raise ValueError("BloomfilterIndex.capacity must be None or a positive integer.")
        if error_rate is not None and (isinstance(error_rate, bool)
                                       or not isinstance(error_rate, (int, float))
                                       or math.isnan(error_rate) or not 0 < error_rate < 1):
            raise ValueError("BloomfilterIndex.error_rate must be None or a number between 0 and 1.")
        super().__init__(*expressions, **kwargs)
        if not 1 <= len(self.fields) + len(self.expressions) <= self.max_keys:
            raise ValueError("A BloomfilterIndex has 1 to %d keys: fields or expressions."
                             % self.max_keys)
        if any(order for _, order in self.fields_orders):
            raise ValueError("A BloomfilterIndex has no order: name its field without '-'.")
        self.capacity = capacity
        self.error_rate = error_rate

    def deconstruct(self):
        _, args, kwargs = super().deconstruct()
        if self.capacity is not None:
            kwargs["capacity"] = self.capacity
        if self.error_rate is not None:
            kwargs["error_rate"] = self.error_rate
        return "bloomfilter.django.BloomfilterIndex", args, kwargs

    def create_sql(self, model, schema_editor, using="", **kwargs):
        # PostgresIndex.create_sql, with a space before WITH: ("email") WITH (capacity = ...).
        self.check_supported(schema_editor)
        statement = super(PostgresIndex, self).create_sql(
            model, schema_editor, using=" USING %s" % self.suffix, **kwargs)
        with_params = self.get_with_params()
        if with_params:
            statement.parts["extra"] = " WITH (%s)%s" % (", ".join(with_params), statement.parts["extra"])
        return statement

    def get_with_params(self):
        with_params = []
        if self.capacity is not None:
            with_params.append("capacity = %d" % self.capacity)
        if self.error_rate is not None:
            with_params.append("error_rate = %r" % float(self.error_rate))
        return with_params
