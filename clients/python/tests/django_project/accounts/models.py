from django.db import models
from django.db.models import F
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


class Tenant(models.Model):
    name = models.CharField(max_length=100, unique=True)


class Member(models.Model):
    """A multi-tenant signup table: UNIQUE (tenant_id, email), one composite-key index on the
    pair and one on the tenant and the lower-cased email."""
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    email = models.EmailField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "email"], name="accounts_member_unique")]
        indexes = [
            BloomfilterIndex(fields=["tenant", "email"], name="accounts_member_bloom",
                             capacity=10000, error_rate=0.01),
            BloomfilterIndex(F("tenant"), Lower("email"), name="accounts_member_lower_bloom"),
        ]
