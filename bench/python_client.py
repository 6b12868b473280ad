"""The Python client's figures for bench/python_client.sh (run there, against its cluster):
Filter.contains per check, the follower's lag from COMMIT to a true answer, and the cost of a
refresh when nothing changed. Prints a report and, on the last lines, summary rows
"what|measured|op target|PASS or MISS" (also appended to $PYTHON_CLIENT_SUMMARY_FILE if set).

Usage: python_client.py "INDEX_TPS..." "BLOOM_TPS..."  (pgbench TPS, one per round, of
bloom_index_contains on the index and of bloom_contains on the stored filter)
"""

import os
import random
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python"))

import psycopg  # noqa: E402

import bloomfilter.psycopg  # noqa: E402
from bloomfilter.follow import IndexFollower  # noqa: E402

INTERVAL = 0.1
INSERTS = int(os.environ.get("BENCH_FOLLOWER_INSERTS", "10000"))
rows = []


def row(what, measured, op, target):
    ok = {"<=": measured <= target, ">=": measured >= target}[op]
    rows.append("%s|%s|%s %s|%s" % (what, measured, op, target, "PASS" if ok else "MISS"))


def contains_ns(f, keys, seconds=1.0):
    """Mean ns per f.contains(key) over the keys, looped for about `seconds`."""
    checks, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for key in keys:
            f.contains(key)
        checks += len(keys)
    return (time.perf_counter() - started) / checks * 1e9


def main():
    index_tps = [float(x) for x in sys.argv[1].split()]
    bloom_tps = [float(x) for x in sys.argv[2].split()]
    conn = psycopg.connect(autocommit=True)
    bloomfilter.psycopg.register(conn)
    (f,) = conn.cursor(binary=True).execute("SELECT f FROM filters WHERE id = 1").fetchone()
    rng = random.Random(1)
    keys = ["user%d@mail.com" % rng.randrange(2_000_000) for _ in range(100_000)]
    assert f.contains("user7@mail.com") and not f.contains("ghost@mail.com")
    print("\n== Filter.contains in Python: %s, %d bytes, keys user<n>@mail.com, n random in [0, 2000000)"
          % (f, len(f)))
    contains_ns(f, keys, 0.3)  # warm-up
    per_round = [contains_ns(f, keys) for _ in index_tps]
    index_ratios, bloom_ratios = [], []
    for index, bloom, ns in zip(index_tps, bloom_tps, per_round):
        index_ratios.append(1e9 / index / ns)
        bloom_ratios.append(1e9 / bloom / ns)
        print("round: Filter.contains %.0f ns; bloom_index_contains %.1f us (%.1fx); bloom_contains on the "
              "stored filter %.1f us (%.1fx)" % (ns, 1e6 / index, index_ratios[-1], 1e6 / bloom, bloom_ratios[-1]))
    version1 = bloomfilter.Filter.from_bytes(f.to_bytes()[:4] + b"\x01" + f.to_bytes()[5:])
    print("median: %.1fx the index lookup, %.1fx the stored filter's (a version 1 filter of the same size: "
          "%.0f ns a check)" % (statistics.median(index_ratios), statistics.median(bloom_ratios),
                                contains_ns(version1, keys, 0.5)))
    row("python) bloom_index_contains time / Filter.contains time", round(statistics.median(index_ratios), 1), ">=", 30)
    rows.append("python) bloom_contains (stored filter) time / Filter.contains time|%.1f|-|-"
                % statistics.median(bloom_ratios))

    print("\n== follower lag: %d inserts by 2 clients, IndexFollower(interval=%.1f) on users_email_bloom"
          % (INSERTS, INTERVAL))
    follower = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom", interval=INTERVAL)
    committed = {}
    lock = threading.Lock()
    done = threading.Event()

    def insert(first, count):
        with psycopg.connect(autocommit=True) as c:
            for i in range(first, first + count):
                key = "lag%d@mail.com" % i
                c.execute("INSERT INTO users (id, email) VALUES (%s, %s)", [2_000_000 + i, key])
                at = time.monotonic()
                with lock:
                    committed[key] = at
                time.sleep(0.001)

    lags = []
    found = set()

    def check():
        while not done.is_set() or len(found) < len(committed):
            with lock:
                pending = [(k, at) for k, at in committed.items() if k not in found]
            for key, at in pending:
                if follower.contains(key):
                    lags.append(max(0.0, time.monotonic() - at))
                    found.add(key)
            time.sleep(0.002)

    checker = threading.Thread(target=check)
    checker.start()
    started = time.monotonic()
    writers = [threading.Thread(target=insert, args=(n * INSERTS // 2, INSERTS // 2)) for n in range(2)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    checker.join(timeout=30)
    elapsed = time.monotonic() - started
    follower.close()
    lags.sort()
    p99 = lags[int(0.99 * (len(lags) - 1))]
    print("%d inserts in %.1f s; lag from COMMIT to a true answer: median %.3f s, p99 %.3f s, max %.3f s"
          % (len(lags), elapsed, statistics.median(lags), p99, lags[-1]))
    print("follower: %d refreshes, %d whole loads, %d queries" % (follower.refreshes, follower.reloads, follower.queries))
    row("python) follower lag COMMIT to true answer, p99 (s), interval 0.1", round(p99, 3), "<=", 0.25)

    print("\n== follower refresh when nothing changed")
    idle = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom", background=False)
    idle.refresh()
    queries, refreshes = idle.queries, 200
    moved = []
    started = time.perf_counter()
    for _ in range(refreshes):
        idle.refresh()
        moved.append(idle.last_bytes - 36)
    seconds = time.perf_counter() - started
    per_refresh = (idle.queries - queries) / refreshes
    print("%d refreshes: %.2f queries each, %.0f us each, filter bytes moved: %d (header rows of 36 bytes aside)"
          % (refreshes, per_refresh, seconds / refreshes * 1e6, max(moved)))
    idle.close()
    row("python) follower refresh, nothing changed: queries", per_refresh, "<=", 1)
    row("python) follower refresh, nothing changed: filter bytes moved", max(moved), "<=", 0)

    print("\n== python client rows")
    for line in rows:
        print(line)
    summary = os.environ.get("PYTHON_CLIENT_SUMMARY_FILE")
    if summary:
        with open(summary, "a") as out:
            out.write("".join(line + "\n" for line in rows))


main()
