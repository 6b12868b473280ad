from django.apps import AppConfig
from django.core.signals import request_started

from bloomfilter.django import follower

EMAIL_INDEX = "accounts_user_email_bloom"


def start_follower(**kwargs):
    follower(EMAIL_INDEX, interval=0.2, max_lag=5)


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        # No query here: ready() also runs in manage.py migrate, before the index exists, and
        # in gunicorn's master before the fork. The follower is made by the first request each
        # process serves, after any fork.
        request_started.connect(start_follower, dispatch_uid="accounts.start_follower")
