import os

from django.db import IntegrityError, transaction
from django.http import HttpResponse

from bloomfilter.django import follower, index_contains

from .apps import EMAIL_INDEX
from .models import User


def signup(request):
    email = request.POST["email"]
    # False: certainly no user has it, and the lookup is skipped; True: probably, so look.
    if index_contains(EMAIL_INDEX, email) and User.objects.filter(email=email).exists():
        return HttpResponse("taken", status=409)
    try:
        with transaction.atomic():
            User.objects.create(email=email)
    except IntegrityError:  # signed up since the check: the unique index is the guard
        return HttpResponse("taken", status=409)
    return HttpResponse("created", status=201)


def taken(request):
    """The follower's answer, with no query: "<process id> <1 or 0>"."""
    answer = follower(EMAIL_INDEX).contains(request.GET["email"])
    return HttpResponse("%d %d" % (os.getpid(), answer), content_type="text/plain")
