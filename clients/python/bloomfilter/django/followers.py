"""One IndexFollower per index and process, connected as Django's database settings say; or one
SharedIndexFollower, whose copy of the filter the processes of the host share
(BLOOMFILTER_FOLLOWER_SHARED = True in the settings, or follower(..., shared=True))."""

import os
import threading

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from ..follow import IndexFollower
from ..shared import SharedIndexFollower

__all__ = ["follower", "close_followers"]

# (database alias, index name): (follower, the options it was made with)
_followers = {}
_lock = threading.Lock()


def _after_fork_in_child():
    # The parent's lock may have been held by another thread at the fork. (The followers
    # themselves set up their own connection and thread in the child: bloomfilter.follow.)
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def follower(index_name, using=DEFAULT_DB_ALIAS, **options):
    """This process's IndexFollower of index_name on the database `using`, made at the first call
    (which connects and loads the filter: it waits for that, and raises the driver's error if the
    server cannot be reached; the next call tries again). Later calls return the same follower.

    options are IndexFollower's (interval, max_lag, background), given at the first call; a later
    call giving other options raises ValueError. The follower has a connection of its own, opened
    with the driver and parameters Django uses for `using` (its NAME, USER, PASSWORD, HOST, PORT
    and OPTIONS), and opened again the same way after a dropped connection or a fork.

    shared=True (default: the setting BLOOMFILTER_FOLLOWER_SHARED, else False) makes it a
    SharedIndexFollower: one copy of the filter for every process of the host, under /dev/shm;
    shared="/a/directory" puts that index's copy there (SharedIndexFollower's path).
    """
    key = (using, index_name)
    entry = _followers.get(key)
    if entry is None:
        with _lock:
            entry = _followers.get(key)
            if entry is None:
                wrapper = connections[using]
                driver, parameters = wrapper.Database, wrapper.get_connection_params()
                made = _make(lambda: driver.connect(**parameters), index_name, options)
                entry = _followers[key] = (made, options)
    if options and options != entry[1]:
        raise ValueError("the follower of %s on %r was made with other options: %r"
                         % (index_name, using, entry[1]))
    return entry[0]


def _make(connect, index_name, options):
    options = dict(options)
    shared = options.pop("shared", getattr(settings, "BLOOMFILTER_FOLLOWER_SHARED", False))
    if shared:
        path = None if shared is True else shared
        return SharedIndexFollower(connect, index_name, path=path, **options)
    return IndexFollower(connect, index_name, **options)


def close_followers():
    """Closes the followers follower() made in this process and forgets them (at shutdown, or
    between tests); a later follower() call makes a new one."""
    with _lock:
        entries = list(_followers.values())
        _followers.clear()
    for made, _ in entries:
        made.close()
