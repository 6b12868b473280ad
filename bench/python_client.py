"""The Python client's figures for bench/python_client.sh (run there, against its cluster, which
holds users_email_bloom and the stored filters 1 and 2): Filter.contains against the SQL point
lookups, Filter.contains_many against a loop of contains on the same keys, the follower's lag
from COMMIT to a true answer, and the cost of a refresh when nothing changed. Prints a report and, on the last lines, summary rows "what|measured|op target|PASS or
MISS" (also appended to $PYTHON_CLIENT_SUMMARY_FILE if set).

The lookups are measured side by side, round by round in an order that rotates: each SQL query
for BENCH_LOOKUP_SECONDS through pgbench ($BENCH_PGBENCH, -M prepared, 1 client, the Unix
socket in $PGHOST), then Filter.contains over distinct keys of the same kind. A round's ratio is
its SQL time per lookup over its Filter.contains time; the figure is the median of the rounds'.

Other work on the machine changes the SQL lookup's time far more than the Python check's, and
either way. On a VM, most of an idle machine's round trip is spent waking an idle CPU (pgbench
and the backend wake each other in turn): other work that keeps the CPUs busy makes the round
trip several times shorter, and work that competes for them makes it longer. A round counts
when, by /proc/pressure/cpu, tasks waited for a CPU for at most STALL_MARGIN more of its time
than in the calmest round; rounds go on until BENCH_LOOKUP_ROUNDS count (at most three times as
many in all). A round is never left out for its Filter.contains time alone: on some VMs that
time moves between two levels from round to round with no other work running, and counting
only the faster rounds would raise the ratio. Where the kernel gives no pressure figures, the
rounds whose check time is within ROUND_SPREAD of the best round's count instead. Where tasks
waited for a CPU for BUSY_STALL of the counted rounds' time or more, or fewer than three rounds
count, the figure is marked unreliable. After the rounds, one lookup and one
pass of checks run with every CPU kept busy by spinners at the lowest priority, for comparison.
"""

import asyncio
import asyncio.events
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python"))

import psycopg  # noqa: E402

import bloomfilter.psycopg  # noqa: E402
from bloomfilter import _native_check  # noqa: E402
from bloomfilter.follow import (AsyncIndexFollower, IndexFollower, MultiIndexFollower,  # noqa: E402
                                ShardedIndexFollower)

INTERVAL = 0.1
INSERTS = int(os.environ.get("BENCH_FOLLOWER_INSERTS", "10000"))
LOOKUP_SECONDS = int(os.environ.get("BENCH_LOOKUP_SECONDS", "8"))
ROUNDS = int(os.environ.get("BENCH_LOOKUP_ROUNDS", "5"))
PYTHON_SECONDS = max(1.0, LOOKUP_SECONDS / 2)
PGBENCH = os.environ.get("BENCH_PGBENCH", "pgbench")
rows = []


def row(what, measured, op, target):
    ok = {"<=": measured <= target, ">=": measured >= target}[op]
    rows.append("%s|%s|%s %s|%s" % (what, measured, op, target, "PASS" if ok else "MISS"))


def contains_ns(f, keys, seconds):
    """Mean ns per f.contains(key) over the keys, in whole passes, for at least `seconds`."""
    checks, started = 0, time.perf_counter()
    while True:
        for key in keys:
            f.contains(key)
        checks += len(keys)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed / checks * 1e9


def cpu_ns_per_key(check, keys, seconds):
    """Mean CPU ns per key of check(keys), in whole calls, for at least `seconds` of this
    thread's CPU time (time waiting for a CPU, with other work on the machine, left out)."""
    checks, started = 0, time.thread_time()
    while True:
        check(keys)
        checks += len(keys)
        elapsed = time.thread_time() - started
        if elapsed >= seconds:
            return elapsed / checks * 1e9


class pure_python:
    """Within: Filter.contains_many as without NumPy (its pure-Python batch)."""

    def __enter__(self):
        self.saved, bloomfilter._core._vector = bloomfilter._core._vector, None

    def __exit__(self, *exc):
        bloomfilter._core._vector = self.saved


class pure_python_check:
    """Within: filters made (and followers' copies loaded) check in pure Python, as without the
    compiled check (bloomfilter._native). The sections but compiled_against_python measure the
    pure-Python check, as they did before there was a compiled one."""

    def __enter__(self):
        self.saved, _native_check.native = _native_check.native, None

    def __exit__(self, *exc):
        _native_check.native = self.saved


def batch_against_loop(checker, keys, rounds=5, seconds=0.5):
    """(loop ns, batch ns, pure-Python batch ns) of CPU time a key: a loop of checker.contains
    against checker.contains_many (with NumPy if importable) and the same without NumPy, on the
    same keys, each the median of `rounds` passes taken in turn."""
    contains = checker.contains

    def loop(keys):
        for key in keys:
            contains(key)

    loop_ns, batch_ns, pure_ns = [], [], []
    for _ in range(rounds):
        loop_ns.append(cpu_ns_per_key(loop, keys, seconds))
        batch_ns.append(cpu_ns_per_key(checker.contains_many, keys, seconds))
        with pure_python():
            pure_ns.append(cpu_ns_per_key(checker.contains_many, keys, seconds))
    return statistics.median(loop_ns), statistics.median(batch_ns), statistics.median(pure_ns)


ROUND_SPREAD = float(os.environ.get("BENCH_ROUND_SPREAD", "1.3"))
BUSY_STALL = 0.25
STALL_MARGIN = 0.05


def cpu_stall_seconds():
    """Seconds during which some runnable task waited for a CPU (the kernel's pressure stall
    information), or None where the kernel does not give it."""
    try:
        with open("/proc/pressure/cpu") as pressure:
            return int(pressure.readline().split("total=")[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


class CpuWaits:
    """The share of the time from start() to stop() during which some task waited for a CPU:
    about 0 when pgbench, its backend and this process have the machine to themselves (they
    take turns, or use one CPU), more when other work competes. None if unknown."""

    def start(self):
        self.values = (time.monotonic(), cpu_stall_seconds())

    def stop(self):
        started, stalled = self.values
        now = cpu_stall_seconds()
        if stalled is None or now is None:
            return None
        return (now - stalled) / (time.monotonic() - started)


def pgbench_us(script, seconds):
    """Mean µs per transaction of a pgbench script (1 / its TPS)."""
    command = [PGBENCH, "-n", "-M", "prepared", "-c", "1", "-j", "1", "-T", str(seconds),
               "-h", os.environ["PGHOST"], "-p", os.environ["PGPORT"], "-U", "postgres", "-f", script, "postgres"]
    run = subprocess.run(command, capture_output=True, text=True)
    found = re.search(r"^tps = ([0-9.]+)", run.stdout, re.MULTILINE)
    if run.returncode != 0 or not found or re.search(r"^number of failed transactions: [1-9]", run.stdout, re.MULTILINE):
        sys.exit("bench: pgbench -f %s failed:\n%s%s" % (script, run.stdout, run.stderr))
    return 1e6 / float(found.group(1))


# The SQL point lookups, as an application would send them (the key as the text parameter $1).
QUERIES = [
    ("index", "bench/python_lookup_index.sql", "SELECT bloom_index_contains('users_email_bloom', $1)"),
    ("stored", "bench/python_lookup_bloom.sql", "SELECT bloom_contains(f, $1) FROM filters WHERE id = 1"),
]


def lookups(conn):
    """Filter.contains against both SQL point lookups, round by round."""
    if not os.environ.get("PGHOST", "").startswith("/"):
        sys.exit("bench: PGHOST must be the server's Unix socket directory")
    (f,) = conn.cursor(binary=True).execute("SELECT f FROM filters WHERE id = 1").fetchone()
    rng = random.Random(1)
    numbers = rng.sample(range(2_000_000), 100_000)  # distinct; below 1000000: present
    keys = [str(n) for n in numbers]
    # The same answers as the server's, on a sample.
    (sql,) = conn.execute("SELECT array_agg(bloom_contains(f, k) ORDER BY n) FROM filters, "
                          "unnest(%s::text[]) WITH ORDINALITY AS u(k, n) WHERE id = 1", [keys[:2000]]).fetchone()
    assert sql == [f.contains(k) for k in keys[:2000]]
    found = sum(map(f.contains, keys))
    print("\n== point lookup: Filter.contains in Python against SQL through pgbench -M prepared, 1 client, "
          "Unix socket (%s), rounds until %d count" % (os.environ["PGHOST"], ROUNDS))
    print("filter: %s, %d bytes (the index's filter has the same keys and parameters)" % (f, f.nbytes))
    print("keys: the text of n, n random in [0, 2000000), present for n < 1000000; Filter.contains: "
          "%d distinct keys (%d found: %.1f%%) checked in whole passes for %g s a round; SQL: pgbench "
          "draws n afresh for each transaction, %g s a query a round" % (len(keys), found, 100.0 * found / len(keys),
                                                                         PYTHON_SECONDS, LOOKUP_SECONDS))
    for name, script, query in QUERIES:
        print("  %-6s %s   (%s)" % (name, query, script))
    contains_ns(f, keys, 0.5)  # warm-up
    pgbench_us(QUERIES[0][1], 2)
    scripts = dict((name, script) for name, script, _ in QUERIES)
    steps = [name for name, _, _ in QUERIES] + ["python"]
    rounds = []  # (SQL µs by query, Filter.contains ns, share of the time some task waited for a CPU)
    waits = CpuWaits()

    def undisturbed():
        if any(r[2] is None for r in rounds):
            best_ns = min(r[1] for r in rounds)
            return [r for r in rounds if r[1] <= ROUND_SPREAD * best_ns]
        calmest = min(r[2] for r in rounds)
        return [r for r in rounds if r[2] <= calmest + STALL_MARGIN]

    while (not rounds or len(undisturbed()) < ROUNDS) and len(rounds) < 3 * ROUNDS:
        number = len(rounds)
        order = steps[number % len(steps):] + steps[:number % len(steps)]
        sql_us = {}
        waits.start()
        for step in order:
            if step == "python":
                ns = contains_ns(f, keys, PYTHON_SECONDS)
            else:
                sql_us[step] = pgbench_us(scripts[step], LOOKUP_SECONDS)
        stall = waits.stop()
        rounds.append((sql_us, ns, stall))
        print("round %d (%s): index %.2f µs, stored %.2f µs, Filter.contains %.0f ns; ratios %.1fx, %.1fx; %s" % (
            number + 1, ", ".join(order), sql_us["index"], sql_us["stored"], ns,
            sql_us["index"] * 1e3 / ns, sql_us["stored"] * 1e3 / ns,
            "CPU waits unknown" if stall is None else "a task waited for a CPU %.0f%% of the time" % (100 * stall)))
    counted = undisturbed()
    stalls = [r[2] for r in counted if r[2] is not None]
    busy = bool(stalls) and statistics.median(stalls) >= BUSY_STALL
    reliable = len(counted) >= 3 and not busy
    rule = ("tasks waited for a CPU at most %.0f points more than in the calmest round" % (100 * STALL_MARGIN)
            if all(r[2] is not None for r in rounds) else
            "CPU waits unknown: Filter.contains within %gx of its best round" % ROUND_SPREAD)
    print("counted: rounds %s (%s)%s" % (
        ", ".join(str(rounds.index(r) + 1) for r in counted), rule,
        "" if reliable else "; NOT RELIABLE: " + ("too few rounds count" if len(counted) < 3 else
                                                   "tasks waited for a CPU for %.0f%% of the time" % (100 * statistics.median(stalls)))))
    ratios = {name: statistics.median(r[0][name] * 1e3 / r[1] for r in counted) for name in scripts}
    medians = {name: statistics.median(r[0][name] for r in counted) for name in scripts}
    print("medians of the counted rounds: index %.2f µs, stored %.2f µs, Filter.contains %.0f ns; ratio (median of "
          "the rounds') %.1fx the index lookup, %.1fx the stored filter's" % (
              medians["index"], medians["stored"], statistics.median(r[1] for r in counted),
              ratios["index"], ratios["stored"]))
    # The harder target: the SQL query with the lower ratio, the faster one.
    faster = min(ratios, key=ratios.get)
    print("the target row uses the faster SQL query (the lower ratio): %s" % faster)
    every = sorted(r[0][faster] * 1e3 / r[1] for r in rounds)
    print("every round, counted or not: %s lookup / Filter.contains from %.1fx to %.1fx, median %.1fx" % (
        faster, every[0], every[-1], statistics.median(every)))
    # For comparison, outside the rounds: other keys and the older format.
    (emails,) = conn.cursor(binary=True).execute("SELECT f FROM filters WHERE id = 2").fetchone()
    email_keys = ["user%d@mail.com" % n for n in numbers]
    data = f.to_bytes()
    version1 = bloomfilter.Filter.from_bytes(data[:4] + b"\x01" + data[5:])
    print("Filter.contains, median of 3 passes of 1 s: %.0f ns on the same keys; %.0f ns on user<n>@mail.com "
          "keys (filter 2, built from them); %.0f ns on a version 1 filter of the same size" % (
              statistics.median(contains_ns(f, keys, 1) for _ in range(3)),
              statistics.median(contains_ns(emails, email_keys, 1) for _ in range(3)),
              statistics.median(contains_ns(version1, keys, 1) for _ in range(3))))
    present = [str(n) for n in numbers if n < 1_000_000]
    absent = [str(n) for n in numbers if n >= 1_000_000]
    print("Filter.contains, median of 3 passes of 1 s: %.0f ns on present keys (all %d positions tested), "
          "%.0f ns on absent ones (it stops at the first clear bit)" % (
              statistics.median(contains_ns(f, present, 1) for _ in range(3)), f.hashes,
              statistics.median(contains_ns(f, absent, 1) for _ in range(3))))
    # The floor of a check in pure Python: a set of the same strings (which holds the keys
    # themselves, about 60 bytes each plus the table, where the filter keeps 1.2 bytes a key).
    members = set(keys)
    as_set = types.SimpleNamespace(contains=members.__contains__)
    set_ns = statistics.median(contains_ns(as_set, keys, 1) for _ in range(3))
    filter_ns = statistics.median(contains_ns(f, keys, 1) for _ in range(3))
    print("a Python set of the same %d strings, median of 3 passes of 1 s: %.0f ns a lookup; "
          "Filter.contains %.0f ns: %.1fx" % (len(keys), set_ns, filter_ns, filter_ns / set_ns))
    rows.append("python) Filter.contains time / a Python set lookup of the same strings|%.1f|-|-"
                % (filter_ns / set_ns))
    # The batch check, against a loop of contains on the same keys, passes in turn: with NumPy
    # (if importable) and without, side by side.
    accelerator = bloomfilter.accelerator() or "none, pure Python"
    answers = [f.contains(k) for k in keys]
    assert f.contains_many(keys) == answers
    with pure_python():
        assert f.contains_many(keys) == answers
    loop_ns, many_ns, pure_ns = batch_against_loop(f, keys)
    present_loop, present_many, present_pure = batch_against_loop(f, present)
    absent_loop, absent_many, absent_pure = batch_against_loop(f, absent)
    print("Filter.contains_many (the %d keys in one call; accelerator: %s) against a loop of Filter.contains, CPU "
          "time, median of 5 passes of 0.5 s each in turn; the pure-Python batch (without NumPy) beside it:" % (
              len(keys), accelerator))
    for what, loop_, many, pure in (("all keys", loop_ns, many_ns, pure_ns),
                                    ("present keys", present_loop, present_many, present_pure),
                                    ("absent keys", absent_loop, absent_many, absent_pure)):
        print("  %-12s contains_many %.0f ns a key, loop of contains %.0f ns: %.2fx; pure-Python batch %.0f ns: "
              "%.2fx" % (what, many, loop_, loop_ / many, pure, loop_ / pure))
    row("python) contains_many per key vs contains: a loop of Filter.contains time / Filter.contains_many time, "
        "the same keys (accelerator: %s)" % accelerator, round(loop_ns / many_ns, 2), ">=", 3)
    rows.append("python) a loop of Filter.contains time / Filter.contains_many time without NumPy (pure Python)"
                "|%.2f|-|-" % (loop_ns / pure_ns))
    label = {"index": "bloom_index_contains", "stored": "bloom_contains (stored filter)"}
    row("python) SQL point lookup time (%s, the faster) / Filter.contains time, median of %d of %d rounds%s"
        % (label[faster], len(counted), len(rounds), "" if reliable else ", machine busy: unreliable"),
        round(ratios[faster], 1), ">=", 30)
    other = "stored" if faster == "index" else "index"
    rows.append("python) SQL point lookup time (%s) / Filter.contains time|%.1f|-|-" % (label[other], ratios[other]))
    # On a VM, most of an idle machine's round trip is the wake-up of an idle CPU; with every CPU
    # kept busy by spinners at the lowest priority, none is idle, and the round trip is about
    # what the work costs. For comparison, outside the target.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.nice(19))
                for _ in range(os.cpu_count() or 1)]
    try:
        hot_us = pgbench_us(QUERIES[0][1], LOOKUP_SECONDS)
        hot_ns = contains_ns(f, keys, PYTHON_SECONDS)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    print("with every CPU kept busy by nice-19 spinners (no CPU idle, so no wake-up latency): index lookup "
          "%.2f µs, Filter.contains %.0f ns: %.1fx" % (hot_us, hot_ns, hot_us * 1e3 / hot_ns))
    rows.append("python) the index lookup / Filter.contains, every CPU kept busy (no idle wake-ups)|%.1f|-|-"
                % (hot_us * 1e3 / hot_ns))


def compiled_against_python(conn, rounds=5, seconds=0.5):
    """The compiled check (bloomfilter._native) against the pure-Python one on the same filter
    and keys, side by side: a check (a loop of contains), and a key of a batch (contains_many;
    the pure-Python batch with NumPy if importable), on Filter (stored filter 1) and on the
    IndexFollowers of users_email_bloom (a layered value of 1 layer) and grown_email_bloom (6
    layers). CPU time, each figure the median of `rounds` passes of `seconds`, the four passes of
    a round in an order that rotates."""
    print("\n== the compiled check (bloomfilter._native) against pure Python, the same filter and keys")
    if _native_check.native is None:
        print("skipped: bloomfilter._native is not built (cd clients/python && python3 setup.py build_ext --inplace)")
        return
    data = conn.execute("SELECT f::bytea FROM filters WHERE id = 1").fetchone()[0]
    rng = random.Random(1)
    keys = [str(n) for n in rng.sample(range(2_000_000), 100_000)]  # half present, as lookups()'s
    print("%d keys, half present; block check of the compiled path: %s; pure-Python batch: %s" % (
        len(keys), _native_check.native.check_path(),
        "NumPy" if bloomfilter._core._vector is not None else "big integers (no NumPy)"))
    checkers = []  # (what, compiled, pure Python)
    for what, make in (("Filter", lambda: bloomfilter.Filter.from_bytes(data)),
                       ("IndexFollower 1 layer", lambda: IndexFollower(
                           psycopg.connect(autocommit=True), "users_email_bloom", background=False)),
                       ("IndexFollower 6 layers", lambda: IndexFollower(
                           psycopg.connect(autocommit=True), "grown_email_bloom", background=False))):
        compiled = make()
        with pure_python_check():
            python = make()
        f = compiled if what == "Filter" else compiled.filter
        assert f._native is not None and (python if what == "Filter" else python.filter)._native is None
        answers = python.contains_many(keys)
        assert compiled.contains_many(keys) == answers == [compiled.contains(k) for k in keys]
        assert all(a for a, n in zip(answers, keys) if int(n) < 1_000_000)
        print("%-22s %s" % (what, f))
        checkers.append((what, compiled, python))

    def loop_of(checker):
        contains = checker.contains

        def loop(keys):
            for key in keys:
                contains(key)
        return loop

    figures = {}
    for what, compiled, python in checkers:
        passes = [("compiled", "check", loop_of(compiled)), ("python", "check", loop_of(python)),
                  ("compiled", "batch", compiled.contains_many), ("python", "batch", python.contains_many)]
        times = {(path, kind): [] for path, kind, _ in passes}
        for number in range(rounds):
            for path, kind, check in passes[number % 4:] + passes[:number % 4]:
                times[path, kind].append(cpu_ns_per_key(check, keys, seconds))
        medians = {step: statistics.median(values) for step, values in times.items()}
        figures[what] = medians
        print("%-22s a check (loop of contains): compiled %.0f ns, pure Python %.0f ns (%.1fx); a key of "
              "contains_many: compiled %.0f ns, pure Python %.0f ns (%.1fx); compiled batch / check: %.1fx" % (
                  what, medians["compiled", "check"], medians["python", "check"],
                  medians["python", "check"] / medians["compiled", "check"],
                  medians["compiled", "batch"], medians["python", "batch"],
                  medians["python", "batch"] / medians["compiled", "batch"],
                  medians["compiled", "check"] / medians["compiled", "batch"]))
        name = what.split(" ")[0]
        where = what[len(name) + 1:]
        for kind, label in (("check", "contains, CPU ns a check"), ("batch", "contains_many, CPU ns a key")):
            for path, path_name in (("compiled", "compiled"), ("python", "pure Python")):
                rows.append("python) %s.%s%s, median of %d: %s|%.0f|-|-" % (
                    name, label, " (%s)" % where if where else "", rounds, path_name, medians[path, kind]))
        if what != "Filter":
            compiled.close()
            python.close()
    row("python) pure-Python Filter.contains time / compiled Filter.contains time",
        round(figures["Filter"]["python", "check"] / figures["Filter"]["compiled", "check"], 1), ">=", 5)
    row("python) compiled Filter.contains time / compiled Filter.contains_many time a key",
        round(figures["Filter"]["compiled", "check"] / figures["Filter"]["compiled", "batch"], 1), ">=", 4)


PGBOUNCER_SECONDS = float(os.environ.get("BENCH_PGBOUNCER_SECONDS", "1"))


def pgbouncer_checks():
    """The time of a check in SQL, bloom_index_contains, through PgBouncer (session and
    transaction mode, a process of its own on the Unix socket, as the tests start it) against a
    direct connection: psycopg, one connection each, prepare_threshold=None on all three (what
    transaction mode needs), rounds of BENCH_PGBOUNCER_SECONDS each in an order that rotates."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python", "tests"))
    from pgbouncer import PgBouncer, binary
    print("\n== a check in SQL through PgBouncer against a direct connection: psycopg, 1 client, Unix socket, "
          "prepare_threshold=None, %d rounds of %.1f s" % (ROUNDS, PGBOUNCER_SECONDS))
    if binary() is None:
        print("skipped: pgbouncer is not installed (apt-get install pgbouncer)")
        return
    database = "dbname=%s" % os.environ.get("PGDATABASE", "postgres")
    bouncers = {mode: PgBouncer(mode) for mode in ("session", "transaction")}
    conns = {}
    try:
        conns["direct"] = psycopg.connect(autocommit=True, prepare_threshold=None)
        for mode, bouncer in bouncers.items():
            conns[mode] = psycopg.connect(bouncer.dsn(database), autocommit=True, prepare_threshold=None)
        rng = random.Random(3)
        keys = [str(n) for n in rng.sample(range(2_000_000), 100_000)]
        times = {name: [] for name in conns}
        names = list(conns)
        for round_number in range(ROUNDS):
            for name in names[round_number % 3:] + names[:round_number % 3]:
                conn, checks, started = conns[name], 0, time.perf_counter()
                while time.perf_counter() - started < PGBOUNCER_SECONDS:
                    conn.execute("SELECT bloom_index_contains('users_email_bloom', %s)", [keys[checks % len(keys)]])
                    checks += 1
                times[name].append((time.perf_counter() - started) / checks * 1e6)
        medians = {name: statistics.median(values) for name, values in times.items()}
        print("µs a check, median of the rounds: %s" % ", ".join("%s %.1f" % item for item in medians.items()))
        for mode in bouncers:
            ratio = medians[mode] / medians["direct"]
            print("through PgBouncer in %s mode / direct: %.2fx (rounds: %s)" % (mode, ratio, ", ".join(
                "%.2f" % (b / d) for b, d in zip(times[mode], times["direct"]))))
            rows.append("python) a check in SQL through PgBouncer (%s mode) / direct, per-check time|%.2f|-|-"
                        % (mode, ratio))
    finally:
        for conn in conns.values():
            conn.close()
        for bouncer in bouncers.values():
            bouncer.remove()


RELOADS = int(os.environ.get("BENCH_ASYNC_RELOADS", "20"))


class LoopTimes:
    """The wall and CPU time of every callback the event loop runs (a task's step between two
    awaits, a transport's read), from the loop's own Handle._run: how long the loop was held."""

    def __init__(self):
        self.times = []
        original = self.original = asyncio.events.Handle._run
        times = self.times

        def timed(handle):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(handle)
            finally:
                times.append((time.perf_counter() - wall, time.thread_time() - cpu))
        asyncio.events.Handle._run = timed

    def close(self):
        asyncio.events.Handle._run = self.original


async def ticker(stop, gaps, period=0.001):
    """Lateness of a 1 ms timer, tick after tick: the loop held, or the process not scheduled."""
    loop = asyncio.get_running_loop()
    expected = loop.time() + period
    while not stop.is_set():
        await asyncio.sleep(period)
        now = loop.time()
        gaps.append(max(0.0, now - expected))
        expected = now + period


async def measure_reloads(connect):
    """(wall ms, CPU ms) of the longest callback, timer lateness ms (max, p99) while reloading
    the whole 1M-key filter RELOADS times, and the same lateness while idle."""
    follower = AsyncIndexFollower(await connect(), "users_email_bloom")
    await follower.refresh()
    result = {}
    for phase in ("idle", "reloads"):
        stop, gaps = asyncio.Event(), []
        times = LoopTimes()
        try:
            task = asyncio.create_task(ticker(stop, gaps))
            started = time.monotonic()
            if phase == "idle":
                await asyncio.sleep(1.0)
            else:
                for _ in range(RELOADS):
                    follower._lsn = None  # the next refresh reads the filter whole
                    await follower.refresh()
            seconds = time.monotonic() - started
            stop.set()
            await task
        finally:
            times.close()
        gaps.sort()
        longest = max(times.times)
        result[phase] = (longest[0] * 1e3, max(t[1] for t in times.times) * 1e3, gaps[-1] * 1e3,
                         gaps[int(0.99 * (len(gaps) - 1))] * 1e3, seconds)
    reloads = follower.reloads - 1
    size = len(follower.filter.to_bytes())
    await follower.aclose()
    return result, reloads, size


def async_stalls():
    print("\n== AsyncIndexFollower: the event loop during %d full reloads of users_email_bloom "
          "(1,000,000 keys)" % RELOADS)
    drivers = [("psycopg", lambda: psycopg.AsyncConnection.connect(autocommit=True))]
    try:
        import asyncpg
        drivers.append(("asyncpg", lambda: asyncpg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"],
                                                           user="postgres", database="postgres")))
    except ImportError:
        print("asyncpg is not installed: psycopg only")
    worst = 0.0
    for name, connect in drivers:
        result, reloads, size = asyncio.run(measure_reloads(connect))
        wall, cpu, gap, gap99, seconds = result["reloads"]
        _, _, idle_gap, idle_gap99, _ = result["idle"]
        worst = max(worst, cpu)
        print("%s: %d reloads of %d bytes in %.2f s; longest callback %.2f ms (%.2f ms of CPU); a 1 ms "
              "timer late by at most %.1f ms (p99 %.1f ms), idle for comparison %.1f ms (p99 %.1f ms)"
              % (name, reloads, size, seconds, wall, cpu, gap, gap99, idle_gap, idle_gap99))
        rows.append("python) async follower reload, %s: longest loop callback, wall (ms)|%.2f|-|-" % (name, wall))
    print("the CPU time of a callback is how long the follower held the loop; its wall time and the timer's "
          "lateness add the time the process waited for a CPU (other work on the machine), idle or not")
    row("python) async follower, full reload of a 1M-key filter: longest loop callback, CPU (ms)",
        round(worst, 2), "<=", 5)


def shards_lag():
    shard_dsns = os.environ.get("BENCH_SHARDS", "").split(";")
    shard_dsns = [d for d in shard_dsns if d]
    if not shard_dsns:
        return
    print("\n== ShardedIndexFollower over %d shards: lag from COMMIT to a true answer, %d inserts by 3 clients "
          "(interval %.1f)" % (len(shard_dsns), INSERTS, INTERVAL))
    follower = ShardedIndexFollower(shard_dsns, "users_email_bloom", interval=INTERVAL)
    committed, lock, lags, found = {}, threading.Lock(), [], set()
    done = threading.Event()

    def insert(first, count):
        conns = [psycopg.connect(d, autocommit=True) for d in shard_dsns]
        try:
            for i in range(first, first + count):
                key = "lag%d@mail.com" % i
                conns[bloomfilter.shard_of(key, len(conns))].execute("INSERT INTO users VALUES (%s)", [key])
                at = time.monotonic()
                with lock:
                    committed[key] = at
                time.sleep(0.001)
        finally:
            for c in conns:
                c.close()

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
    writers = [threading.Thread(target=insert, args=(n * INSERTS // 3, INSERTS // 3)) for n in range(3)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    checker.join(timeout=30)
    follower.close()
    lags.sort()
    p99 = lags[int(0.99 * (len(lags) - 1))]
    print("%d inserts; lag: median %.3f s, p99 %.3f s, max %.3f s; %s refreshes" % (
        len(lags), statistics.median(lags), p99, lags[-1], "+".join(str(f.refreshes) for f in follower.followers)))
    row("python) sharded follower lag COMMIT to true answer, p99 (s), %d shards, interval 0.1" % len(shard_dsns),
        round(p99, 3), "<=", 0.25)


MULTI_TABLES = ["multi%d" % n for n in range(4)]


def multi_lag():
    """A MultiIndexFollower of the 4 indexes multi<n>_email_bloom on one connection, one writer
    a table: the lag from COMMIT to a true answer from the follower of the key's index."""
    print("\n== MultiIndexFollower of %d indexes on one connection: lag from COMMIT to a true answer, %d inserts by "
          "%d clients, one a table (interval %.1f)" % (len(MULTI_TABLES), INSERTS, len(MULTI_TABLES), INTERVAL))
    names = ["%s_email_bloom" % table for table in MULTI_TABLES]
    follower = MultiIndexFollower(psycopg.connect(autocommit=True), names, interval=INTERVAL)
    committed, lock, lags, found = {}, threading.Lock(), [], set()
    done = threading.Event()
    per_table = INSERTS // len(MULTI_TABLES)

    def insert(table):
        with psycopg.connect(autocommit=True) as c:
            for i in range(per_table):
                key = "%s-lag%d@mail.com" % (table, i)
                c.execute("INSERT INTO %s (email) VALUES (%%s)" % table, [key])
                at = time.monotonic()
                with lock:
                    committed[key] = (table, at)
                time.sleep(0.001)

    indexes = {table: follower.index(name) for table, name in zip(MULTI_TABLES, names)}

    def check():
        while not done.is_set() or len(found) < len(committed):
            with lock:
                pending = [(k, v) for k, v in committed.items() if k not in found]
            for key, (table, at) in pending:
                if indexes[table].contains(key):
                    lags.append(max(0.0, time.monotonic() - at))
                    found.add(key)
            time.sleep(0.002)

    checker = threading.Thread(target=check)
    checker.start()
    started = time.monotonic()
    writers = [threading.Thread(target=insert, args=(table,)) for table in MULTI_TABLES]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    checker.join(timeout=30)
    elapsed = time.monotonic() - started
    stats = follower.stats()
    follower.close()
    if len(lags) < len(committed):
        sys.exit("bench: the multi-index follower never answered true for %d keys" % (len(committed) - len(lags)))
    lags.sort()
    p99 = lags[int(0.99 * (len(lags) - 1))]
    print("%d inserts in %.1f s; lag: median %.3f s, p99 %.3f s, max %.3f s; refreshes per index: %s" % (
        len(lags), elapsed, statistics.median(lags), p99, lags[-1],
        ", ".join("%d" % indexes[t].refreshes for t in MULTI_TABLES)))
    print("the one connection: %d queries in all, %d reconnects" % (
        next(iter(stats.values()))["queries"], next(iter(stats.values()))["reconnects"]))
    row("python) multi-index follower (%d indexes, one connection) lag COMMIT to true answer, p99 (s), interval 0.1"
        % len(MULTI_TABLES), round(p99, 3), "<=", 0.25)


# The followers of layered_batches: (label, index), in bench/python_client.sh's cluster.
LAYERED_INDEXES = (("fixed-size (expansion = 0)", "fixed_email_bloom"), ("1-layer", "users_email_bloom"),
                   ("6-layer", "grown_email_bloom"))


def layered_batches(rounds=7, seconds=0.4):
    """IndexFollower.contains_many against a loop of IndexFollower.contains on the same 100,000
    keys (half present) on a fixed-size index and on the layered values of an index of 1 and of
    6 layers (1M keys each): CPU time a key, the loop, the batch and the batch without NumPy in
    turn, round by round; the ratio of each round, and the median of the rounds' ratios."""
    rng = random.Random(3)
    keys = [str(n) for n in rng.sample(range(2_000_000), 100_000)]
    print("\n== IndexFollower.contains_many on layered indexes: %d keys in one call against a loop of "
          "IndexFollower.contains, CPU time a key, %d rounds of %.1f s each side in turn (accelerator: %s)"
          % (len(keys), rounds, seconds, bloomfilter._core._vector and "numpy" or "none, pure Python"))
    for label, index in LAYERED_INDEXES:
        with pure_python_check():
            follower = IndexFollower(psycopg.connect(autocommit=True), index, background=False)
        f = follower.filter
        layers = len(f.layers) if isinstance(f, bloomfilter.LayeredFilter) else 0
        contains = follower.contains
        answers = [contains(key) for key in keys]
        assert follower.contains_many(keys) == answers

        def loop(keys):
            for key in keys:
                contains(key)

        loop_ns, batch_ns, pure_ns, ratios, pure_ratios = [], [], [], [], []
        for _ in range(rounds):
            loop_ns.append(cpu_ns_per_key(loop, keys, seconds))
            batch_ns.append(cpu_ns_per_key(follower.contains_many, keys, seconds))
            with pure_python():
                pure_ns.append(cpu_ns_per_key(follower.contains_many, keys, seconds))
            ratios.append(loop_ns[-1] / batch_ns[-1])
            pure_ratios.append(loop_ns[-1] / pure_ns[-1])
        follower.close()
        print("  %-28s %s (format version %d, %d layers, %.1f%% true): contains_many %.0f ns a key, loop %.0f ns "
              "(medians); ratio median %.2fx, rounds %s; without NumPy %.0f ns, %.2fx" % (
                  label, index, f.version, layers, 100.0 * sum(answers) / len(answers),
                  statistics.median(batch_ns), statistics.median(loop_ns), statistics.median(ratios),
                  " ".join("%.2f" % r for r in ratios), statistics.median(pure_ns),
                  statistics.median(pure_ratios)))
        what = "python) IndexFollower.contains_many per key vs a loop of contains, %s index (%s), 100,000 keys" % (
            label, index)
        rows.append("%s: batch ns a key|%.0f|-|-" % (what, statistics.median(batch_ns)))
        rows.append("%s: loop ns a key|%.0f|-|-" % (what, statistics.median(loop_ns)))
        row(what + ": loop time / batch time, median of rounds", round(statistics.median(ratios), 2), ">=",
            4 if layers else 3)
        rows.append("%s: loop time / batch time without NumPy (pure Python), median of rounds|%.2f|-|-"
                    % (what, statistics.median(pure_ratios)))


def _pss_rss_kb(pid):
    """(RSS, PSS) of a process in kB, from /proc/PID/smaps_rollup."""
    values = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("Rss", "Pss"):
                values[name] = int(rest.split()[0])
    return values["Rss"], values["Pss"]


def _children(pid):
    children = set()
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            children.update(int(child) for child in f.read().split())
    return sorted(children)


def _gunicorn_memory(mode, index, workers, path):
    """Starts gunicorn with `workers` workers of bench/python_shared_app.py in `mode`, waits
    until every worker follows the index, and returns (master and workers' RSS summed, PSS
    summed, in bytes, workers seen)."""
    import concurrent.futures
    import signal
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, BENCH_SHARED_MODE=mode, BENCH_SHARED_INDEX=index, BENCH_SHARED_PATH=path)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--timeout", "600", "--bind",
         "127.0.0.1:%d" % port, "--log-level", "warning", "python_shared_app:app"],
        env=env, cwd=os.path.dirname(os.path.abspath(__file__)), start_new_session=True)

    def ask(_):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=30) as response:
                pid, ready = response.read().decode().split()
                return int(pid), ready == "1" or mode == "none"
        except OSError:
            return None, False

    try:
        ready, deadline = set(), time.monotonic() + 600
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            while len(ready) < workers:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gunicorn (%s) did not start its %d workers" % (mode, workers))
                ready.update(pid for pid, ok in pool.map(ask, range(32)) if ok)
                time.sleep(0.1)
        time.sleep(2)  # the loads' transient buffers freed, the refreshes running
        pids = [server.pid] + _children(server.pid)
        rss = pss = 0
        for pid in pids:
            r, p = _pss_rss_kb(pid)
            rss, pss = rss + r, pss + p
        return rss * 1024, pss * 1024, len(pids) - 1
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def shared_memory(workers=8):
    """The host's memory for `workers` gunicorn workers following one large index: each with
    its own copy (IndexFollower) against one shared copy (SharedIndexFollower), as the sum of
    the workers' and master's PSS (/proc/PID/smaps_rollup) less that of the same workers
    following nothing (psycopg loaded and a connection made, as in an application using the
    database), over the filter's bytes."""
    import shutil
    index = "big_email_bloom"
    with psycopg.connect(autocommit=True) as conn:
        filter_bytes = conn.execute("SELECT octet_length(bloom_index_filter(%s)::bytea)", [index]).fetchone()[0]
        capacity = conn.execute("SELECT capacity FROM bloom_index_info(%s)", [index]).fetchone()[0]
    print("\n== memory of %d gunicorn workers following %s (capacity %d, a filter of %.1f MB)"
          % (workers, index, capacity, filter_bytes / 1e6))
    path = "/dev/shm/bloomfilter-bench-%d" % os.getpid()
    figures = {}
    try:
        for mode in ("none", "private", "shared"):
            started = time.monotonic()
            rss, pss, seen = _gunicorn_memory(mode, index, workers, path)
            figures[mode] = (rss, pss)
            print("%-8s %d workers: RSS %7.1f MB, PSS %7.1f MB (master and workers summed), up in %.1f s"
                  % (mode, seen, rss / 1e6, pss / 1e6, time.monotonic() - started))
    finally:
        shutil.rmtree(path, ignore_errors=True)
    _, base = figures["none"]
    for mode in ("private", "shared"):
        rss, pss = figures[mode]
        added = (pss - base) / filter_bytes
        print("%-8s PSS added over the workers alone: %.1f MB = %.2fx the filter's bytes; RSS added %.1f MB = %.2fx"
              % (mode, (pss - base) / 1e6, added, (rss - figures["none"][0]) / 1e6,
                 (rss - figures["none"][0]) / filter_bytes))
    private = (figures["private"][1] - base) / filter_bytes
    shared = (figures["shared"][1] - base) / filter_bytes
    rows.append("python) %d workers following a %.0f MB filter, private copies: PSS added / filter bytes|%.2f|-|-"
                % (workers, filter_bytes / 1e6, private))
    row("python) %d workers following a %.0f MB filter, SharedIndexFollower: PSS added / filter bytes"
        % (workers, filter_bytes / 1e6), round(shared, 2), "<=", 1.2)


SPEED_SECONDS = float(os.environ.get("BENCH_SPEED_SECONDS", "1"))


def loop_ns(check, keys, seconds):
    """Mean wall ns per check(key) over the keys, in whole passes, for at least `seconds`: the
    loop an application writes, the check bound to a local name (no attribute lookup a key)."""
    checks, started = 0, time.perf_counter()
    while True:
        for key in keys:
            check(key)
        checks += len(keys)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed / checks * 1e9


def batch_ns(check_many, keys, seconds):
    """Mean wall ns per key of check_many(keys), in whole calls, for at least `seconds`."""
    checks, started = 0, time.perf_counter()
    while True:
        check_many(keys)
        checks += len(keys)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed / checks * 1e9


def without_registers(measure):
    """measure() with the compiled batch's AVX-512 registers path off (sorted by region)."""
    was = _native_check.native.set_batch_registers(False)
    try:
        return measure()
    finally:
        _native_check.native.set_batch_registers(was)


def without_lanes(measure):
    """measure() with a follower's composite keys hashed one at a time in its batch, not eight
    at a time in AVX-512 registers."""
    was = _native_check.native.set_batch_lanes(False)
    try:
        return measure()
    finally:
        _native_check.native.set_batch_lanes(was)


def speed(conn, rounds=ROUNDS):
    """Issue #44's figures, side by side in rounds whose order rotates: the SQL round trip
    (bloom_index_contains through pgbench -M prepared, 1 client, the Unix socket) against the
    compiled Filter.contains, IndexFollower.contains (without and with max_lag, and a composite
    (id, email) key), the pure-Python check, a frozenset lookup of the same strings (the floor of
    a compiled set lookup from Python: what rbloom-like libraries approach), the pure-Python
    followers (as when the issue was filed), the follower's Python method over the compiled
    Filter check (what answers the keys FollowerCheck hands back), and the batches per key
    against the single checks. Wall time; each figure the median of the rounds', each
    ratio the median of the rounds' ratios."""
    print("\n== speed: a check against a SQL round trip, the batch against the single check (issue #44)")
    if _native_check.native is None:
        print("skipped: bloomfilter._native is not built (cd clients/python && python3 setup.py build_ext --inplace)")
        return
    rng = random.Random(1)
    numbers = rng.sample(range(2_000_000), 100_000)  # present for n < 1000000
    keys = [str(n) for n in numbers]
    pairs = [(n, str(n)) for n in numbers]
    # The signup case: keys not taken (n >= 1000000), as a batch of new emails would be.
    absent = [str(n) for n in rng.sample(range(1_000_000, 3_000_000), 100_000)]
    data = conn.execute("SELECT f::bytea FROM filters WHERE id = 1").fetchone()[0]
    compiled = bloomfilter.Filter.from_bytes(data)
    with pure_python_check():
        python = bloomfilter.Filter.from_bytes(data)
    plain = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom", background=False)
    # max_lag far beyond the run: compared on every check, never passed.
    bounded = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom", background=False,
                            max_lag=86400)
    composite = IndexFollower(psycopg.connect(autocommit=True), "pairs_bloom", background=False,
                              max_lag=86400)
    # The followers as they were when issue #44 was filed: pure Python throughout.
    with pure_python_check():
        python_plain = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom",
                                     background=False)
        python_bounded = IndexFollower(psycopg.connect(autocommit=True), "users_email_bloom",
                                       background=False, max_lag=86400)
    for follower in (python_plain, python_bounded):
        assert follower._fast is None and follower.filter._native is None
    members = frozenset(keys)
    sample, pair_sample = keys[:3000], pairs[:3000]
    (sql,) = conn.execute("SELECT array_agg(bloom_index_contains('users_email_bloom', k) ORDER BY n) "
                          "FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n)", [sample]).fetchone()
    (pair_sql,) = conn.execute("SELECT array_agg(bloom_index_contains('pairs_bloom', i, e) ORDER BY n) "
                               "FROM unnest(%s::int[], %s::text[]) WITH ORDINALITY AS u(i, e, n)",
                               [[p[0] for p in pair_sample], [p[1] for p in pair_sample]]).fetchone()
    (stored_sql,) = conn.execute("SELECT array_agg(bloom_contains(f, k) ORDER BY n) FROM filters, "
                                 "unnest(%s::text[]) WITH ORDINALITY AS u(k, n) WHERE id = 1", [sample]).fetchone()
    assert compiled.contains_many(absent) == [compiled.contains(k) for k in absent]
    for answers in ([compiled.contains(k) for k in sample], compiled.contains_many(sample),
                    [python.contains(k) for k in sample]):
        assert answers == stored_sql
    for answers in ([plain.contains(k) for k in sample], [bounded.contains(k) for k in sample],
                    bounded.contains_many(sample), [python_plain.contains(k) for k in sample],
                    [python_bounded.contains(k) for k in sample]):
        assert answers == sql
    assert [composite.contains(p) for p in pair_sample] == pair_sql
    assert [composite._contains_python(p) for p in pair_sample] == pair_sql
    assert composite.contains_many(pair_sample) == pair_sql
    assert without_lanes(lambda: composite.contains_many(pairs)) == composite.contains_many(pairs)
    print("keys: %d distinct texts of n, n random in [0, 2000000), present for n < 1000000 (%d present); "
          "composite keys (n, text of n) in pairs_bloom (id integer, email text); compiled block check: %s; "
          "Filter's batch: %s; composite keys hashed eight at a time: %s" % (
              len(keys), sum(compiled.contains_many(keys)), _native_check.native.check_path(),
              compiled._native.batch_path(len(keys)), _native_check.native.batch_lanes()))
    steps = {
        "sql": lambda: pgbench_us(QUERIES[0][1], LOOKUP_SECONDS) * 1e3,
        "Filter.contains": lambda: loop_ns(compiled.contains, keys, SPEED_SECONDS),
        "Filter.contains_many": lambda: batch_ns(compiled.contains_many, keys, SPEED_SECONDS),
        "Filter.contains_many, registers off": lambda: without_registers(
            lambda: batch_ns(compiled.contains_many, keys, SPEED_SECONDS)),
        "Filter.contains, absent keys": lambda: loop_ns(compiled.contains, absent, SPEED_SECONDS),
        "Filter.contains_many, absent keys": lambda: batch_ns(compiled.contains_many, absent, SPEED_SECONDS),
        "IndexFollower.contains": lambda: loop_ns(plain.contains, keys, SPEED_SECONDS),
        "IndexFollower.contains max_lag": lambda: loop_ns(bounded.contains, keys, SPEED_SECONDS),
        "IndexFollower.contains_many max_lag": lambda: batch_ns(bounded.contains_many, keys, SPEED_SECONDS),
        "IndexFollower.contains (id, email)": lambda: loop_ns(composite.contains, pairs, SPEED_SECONDS),
        "IndexFollower.contains_many (id, email)": lambda: batch_ns(composite.contains_many, pairs, SPEED_SECONDS),
        "IndexFollower.contains_many (id, email), lanes off": lambda: without_lanes(
            lambda: batch_ns(composite.contains_many, pairs, SPEED_SECONDS)),
        "Python method, IndexFollower": lambda: loop_ns(plain._contains_python, keys, SPEED_SECONDS),
        "Python method, IndexFollower max_lag": lambda: loop_ns(bounded._contains_python, keys, SPEED_SECONDS),
        "Python method, (id, email)": lambda: loop_ns(composite._contains_python, pairs, SPEED_SECONDS),
        "pure-Python Filter.contains": lambda: loop_ns(python.contains, keys, SPEED_SECONDS),
        "pure-Python IndexFollower.contains": lambda: loop_ns(python_plain.contains, keys, SPEED_SECONDS),
        "pure-Python IndexFollower.contains max_lag": lambda: loop_ns(python_bounded.contains, keys,
                                                                      SPEED_SECONDS),
        "frozenset.__contains__": lambda: loop_ns(members.__contains__, keys, SPEED_SECONDS),
    }
    names = list(steps)
    if not _native_check.native.batch_registers():
        names.remove("Filter.contains_many, registers off")  # the same path as with them
    if not _native_check.native.batch_lanes():
        names.remove("IndexFollower.contains_many (id, email), lanes off")
    loop_ns(compiled.contains, keys, 0.3)  # warm-up
    pgbench_us(QUERIES[0][1], 2)
    figures = {name: [] for name in names}
    for number in range(rounds):
        order = names[number % len(names):] + names[:number % len(names)]
        for name in order:
            figures[name].append(steps[name]())
        print("round %d: SQL %.2f µs; %s" % (number + 1, figures["sql"][-1] / 1e3, ", ".join(
            "%s %.1f ns" % (name, figures[name][-1]) for name in names[1:])))
    for closing in (plain, bounded, composite, python_plain, python_bounded):
        closing.close()

    def ratio(over, under):
        return statistics.median(a / b for a, b in zip(figures[over], figures[under]))
    print("medians of %d rounds (wall ns a check or a batch's key):" % rounds)
    for name in names:
        value = statistics.median(figures[name])
        print("  %-52s %10.1f ns   SQL round trip / this: %7.1fx" % (name, value, ratio("sql", name)))
    for name in ("Filter.contains", "IndexFollower.contains", "IndexFollower.contains max_lag",
                 "IndexFollower.contains (id, email)"):
        row("speed) SQL round trip (bloom_index_contains, pgbench -M prepared, Unix socket) / %s, "
            "median of %d rounds" % (name, rounds), round(ratio("sql", name), 1), ">=", 100)
    for name in ("pure-Python Filter.contains", "frozenset.__contains__", "Python method, IndexFollower max_lag"):
        rows.append("speed) SQL round trip / %s|%.1f|-|-" % (name, ratio("sql", name)))
    # The ">= 5x today's": the checks when it was filed, pure Python (the Filter's and
    # the followers' alike), against the compiled ones, measured in the same run.
    row("speed) pure-Python Filter.contains (as when #44 was filed) / compiled Filter.contains",
        round(ratio("pure-Python Filter.contains", "Filter.contains"), 1), ">=", 5)
    row("speed) pure-Python IndexFollower.contains (as when #44 was filed) / compiled",
        round(ratio("pure-Python IndexFollower.contains", "IndexFollower.contains"), 1), ">=", 5)
    row("speed) pure-Python IndexFollower.contains max_lag (as when #44 was filed) / compiled",
        round(ratio("pure-Python IndexFollower.contains max_lag", "IndexFollower.contains max_lag"), 1),
        ">=", 5)
    # Its Python method is _Index.contains, as it answers the keys FollowerCheck hands back
    # (over the compiled Filter check; a composite key hashed in pure Python):
    # FollowerCheck's share of the compiled follower's gain.
    for name, under, over in (("IndexFollower", "IndexFollower.contains", "over the compiled Filter check"),
                              ("IndexFollower max_lag", "IndexFollower.contains max_lag",
                               "over the compiled Filter check"),
                              ("(id, email)", "IndexFollower.contains (id, email)", "hashing in pure Python")):
        rows.append("speed) %s: its Python method %s / FollowerCheck|%.1f|-|-"
                    % (under, over, ratio("Python method, " + name, under)))
    row("speed) compiled Filter.contains / Filter.contains_many a key",
        round(ratio("Filter.contains", "Filter.contains_many"), 2), ">=", 4)
    row("speed) IndexFollower.contains max_lag / IndexFollower.contains_many max_lag a key",
        round(ratio("IndexFollower.contains max_lag", "IndexFollower.contains_many max_lag"), 2), ">=", 4)
    row("speed) IndexFollower.contains (id, email) / IndexFollower.contains_many (id, email) a key",
        round(ratio("IndexFollower.contains (id, email)", "IndexFollower.contains_many (id, email)"), 2), ">=", 4)
    if "Filter.contains_many, registers off" in figures:
        rows.append("speed) Filter.contains_many a key: registers off (sorted by region) / on (by block, AVX-512)|%.2f|-|-"
                    % ratio("Filter.contains_many, registers off", "Filter.contains_many"))
    if "IndexFollower.contains_many (id, email), lanes off" in figures:
        rows.append("speed) IndexFollower.contains_many (id, email) a key: lanes off (hashed one at a time) / on "
                    "(eight at a time, AVX-512)|%.2f|-|-"
                    % ratio("IndexFollower.contains_many (id, email), lanes off", "IndexFollower.contains_many (id, email)"))
    rows.append("speed) compiled Filter.contains / Filter.contains_many a key, keys all absent (the signup case)|%.2f|-|-"
                % ratio("Filter.contains, absent keys", "Filter.contains_many, absent keys"))
    rows.append("speed) compiled Filter.contains / frozenset.__contains__ (the rbloom-like bound)|%.2f|-|-"
                % ratio("Filter.contains", "frozenset.__contains__"))


def print_rows():
    print("\n== python client rows")
    for line in rows:
        print(line)
    summary = os.environ.get("PYTHON_CLIENT_SUMMARY_FILE")
    if summary:
        with open(summary, "a") as out:
            out.write("".join(line + "\n" for line in rows))


def main():
    if os.environ.get("BENCH_CLIENT_ONLY") == "layered":
        layered_batches()
        print_rows()
        return
    if os.environ.get("BENCH_CLIENT_ONLY") == "shared":
        shared_memory()
        print_rows()
        return
    conn = psycopg.connect(autocommit=True)
    bloomfilter.psycopg.register(conn)
    if os.environ.get("BENCH_CLIENT_ONLY") == "speed":
        speed(conn)
        print_rows()
        return
    speed(conn)
    with pure_python_check():
        lookups(conn)
    compiled_against_python(conn)
    pgbouncer_checks()

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
    with pure_python_check():
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
    # The follower's batch check: one freshness check and the filter's batch for the keys.
    rng = random.Random(2)
    keys = [str(n) for n in rng.sample(range(2_000_000), 100_000)]
    follower_loop, follower_many, follower_pure = batch_against_loop(idle, keys)
    print("IndexFollower.contains_many: %.0f ns a key against %.0f ns for a loop of IndexFollower.contains (CPU "
          "time, as above): %.2fx; without NumPy %.0f ns: %.2fx"
          % (follower_many, follower_loop, follower_loop / follower_many, follower_pure,
             follower_loop / follower_pure))
    row("python) contains_many per key vs contains on IndexFollower: a loop of IndexFollower.contains time / "
        "IndexFollower.contains_many time", round(follower_loop / follower_many, 2), ">=", 3)
    idle.close()
    row("python) follower refresh, nothing changed: queries", per_refresh, "<=", 1)
    row("python) follower refresh, nothing changed: filter bytes moved", max(moved), "<=", 0)

    layered_batches()
    multi_lag()
    async_stalls()
    shards_lag()
    shared_memory()
    print_rows()


main()
