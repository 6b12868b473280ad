# Written by hand: makemigrations never adds an extension. The models' migration (0002_initial,
# from makemigrations) comes after it.
from django.db import migrations

from bloomfilter.django import BloomfilterExtension


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [BloomfilterExtension()]
