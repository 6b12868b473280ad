"""Django support (Django 3.2 or later, PostgreSQL backend): a model field for bloom columns, the
bloomfilter index in Meta.indexes, the migration that creates the extension, the extension's
functions as query expressions, and one IndexFollower per process.

    from django.db import models
    from bloomfilter.django import BloomField, BloomfilterIndex, follower, index_contains

    class User(models.Model):
        email = models.EmailField(unique=True)

        class Meta:
            indexes = [BloomfilterIndex(fields=["email"], name="accounts_user_email_bloom",
                                        capacity=1_000_000, error_rate=0.01)]

    class Snapshot(models.Model):
        f = BloomField(null=True)            # values are bloomfilter.Filter

    # In the app's first migration, before the models: operations = [BloomfilterExtension()]

    index_contains("accounts_user_email_bloom", email)         # SQL: True, False or None
    follower("accounts_user_email_bloom").contains(email)      # in memory, kept current

Paths are stable: migrations refer to bloomfilter.django.BloomField and
bloomfilter.django.BloomfilterIndex, whatever module defines them.
"""

from .extensions import BloomfilterExtension
from .fields import BloomField
from .followers import close_followers, follower
from .functions import BloomAdd, BloomAgg, BloomContains, IndexContains, index_contains
from .indexes import BloomfilterIndex

__all__ = ["BloomField", "BloomfilterIndex", "BloomfilterExtension", "IndexContains",
           "BloomContains", "BloomAdd", "BloomAgg", "index_contains", "follower",
           "close_followers"]
