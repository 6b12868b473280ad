"""The migration operation that creates the bloomfilter extension (and drops it when the
migration is reversed), as django.contrib.postgres.operations.BloomExtension does for contrib's
bloom."""

from django.contrib.postgres.operations import CreateExtension

__all__ = ["BloomfilterExtension"]


class BloomfilterExtension(CreateExtension):
    """CREATE EXTENSION IF NOT EXISTS bloomfilter: in the app's first migration, before any
    BloomField column or BloomfilterIndex. Needs a role allowed to create it (the extension is
    trusted: the database's owner, or a role with CREATE on the database)."""

    def __init__(self):
        self.name = "bloomfilter"
