"""Settings of the test project: the database from the environment (test_django.py sets it)."""

import os

SECRET_KEY = "bloomfilter-tests"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
INSTALLED_APPS = ["accounts"]
MIDDLEWARE = []
ROOT_URLCONF = "bloomsite.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["BLOOM_DJANGO_DB"],
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "USER": os.environ.get("PGUSER", "postgres"),
    }
}
# One copy of each followed filter for the host's processes (test_django.py's shared tests).
BLOOMFILTER_FOLLOWER_SHARED = os.environ.get("BLOOM_DJANGO_SHARED") == "1"
