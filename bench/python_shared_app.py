"""The WSGI application of bench/python_client.py's shared-memory row: each gunicorn worker
follows BENCH_SHARED_INDEX with an IndexFollower (BENCH_SHARED_MODE=private: a copy each), a
SharedIndexFollower (shared: one copy for the host) or nothing (none: the workers' own memory
with psycopg loaded and a connection made, subtracted). GET / answers "<pid> <1 or 0>": whether the worker follows the index yet."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))

from bloomfilter.follow import IndexFollower  # noqa: E402
from bloomfilter.shared import SharedIndexFollower  # noqa: E402

mode = os.environ["BENCH_SHARED_MODE"]
index = os.environ["BENCH_SHARED_INDEX"]
follower = None
if mode == "none":
    # The baseline: the workers of an application that uses the database (psycopg imported,
    # libpq loaded, a connection made), following nothing.
    import psycopg
    psycopg.connect("").close()
elif mode == "private":
    follower = IndexFollower("", index, interval=0.1)
elif mode == "shared":
    follower = SharedIndexFollower("", index, path=os.environ.get("BENCH_SHARED_PATH") or None,
                                   interval=0.1, max_lag=5, timeout=300)

# A full collection in every mode before the memory is read: it writes to the objects each worker
# inherited from the master (their pages copied on write), in the baseline's workers as in the
# others'. Without it, one that ran in a follower's workers and not in the baseline's would count
# the heap it copied (about 4 MB a process) as the follower's.
import gc  # noqa: E402
gc.collect()


def app(environ, start_response):
    body = ("%d %d" % (os.getpid(), follower is not None and follower.contains("1"))).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
