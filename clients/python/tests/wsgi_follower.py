"""A WSGI application checking emails with an IndexFollower made at import: under gunicorn
--preload it is made in the master, before the workers are forked. GET /?EMAIL answers
"<worker pid> <1 or 0>", and " <1 or 0>" more for a shared follower: whether the worker is its
writer. Configured by the environment: BLOOM_DSN, BLOOM_INDEX, BLOOM_INTERVAL; BLOOM_SHARED (a
directory) for a SharedIndexFollower there, with BLOOM_MAX_LAG."""

import os

import psycopg

from bloomfilter.follow import IndexFollower
from bloomfilter.shared import SharedIndexFollower

if os.environ.get("BLOOM_SHARED"):
    follower = SharedIndexFollower(os.environ["BLOOM_DSN"], os.environ["BLOOM_INDEX"],
                                   path=os.environ["BLOOM_SHARED"],
                                   interval=float(os.environ["BLOOM_INTERVAL"]),
                                   max_lag=float(os.environ["BLOOM_MAX_LAG"]))
else:
    follower = IndexFollower(psycopg.connect(os.environ["BLOOM_DSN"]), os.environ["BLOOM_INDEX"],
                             interval=float(os.environ["BLOOM_INTERVAL"]))


def app(environ, start_response):
    body = "%d %d" % (os.getpid(), follower.contains(environ["QUERY_STRING"]))
    if isinstance(follower, SharedIndexFollower):
        body += " %d" % follower.writer
    body = body.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
