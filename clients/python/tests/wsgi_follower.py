"""A WSGI application checking emails with an IndexFollower made at import: under gunicorn
--preload it is made in the master, before the workers are forked. GET /?EMAIL answers
"<worker pid> <1 or 0>". Configured by the environment: BLOOM_DSN, BLOOM_INDEX, BLOOM_INTERVAL."""

import os

import psycopg

from bloomfilter.follow import IndexFollower

follower = IndexFollower(psycopg.connect(os.environ["BLOOM_DSN"]), os.environ["BLOOM_INDEX"],
                         interval=float(os.environ["BLOOM_INTERVAL"]))


def app(environ, start_response):
    body = ("%d %d" % (os.getpid(), follower.contains(environ["QUERY_STRING"]))).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
