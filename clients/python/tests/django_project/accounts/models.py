from django.db import models
from django.db.models.functions import Lower

from bloomfilter.django import BloomField, BloomfilterIndex


class User(models.Model):
    email = models.EmailField(unique=True)

    class Meta:
        indexes = [
            BloomfilterIndex(fields=["email"], name="accounts_user_email_bloom",
                             capacity=10000, error_rate=0.01),
            BloomfilterIndex(Lower("email"), name="accounts_user_email_lower_bloom"),
        ]


class Invite(models.Model):
    email = models.EmailField()


class Snapshot(models.Model):
    name = models.CharField(max_length=100, unique=True)
    f = BloomField(null=True)
