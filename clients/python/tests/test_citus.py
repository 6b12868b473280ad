"""CitusIndexFollower against a Citus cluster, whose coordinator BLOOM_CITUS_COORDINATOR names (a
conninfo of a superuser; t/015_citus.pl runs this file so, with two workers). Skipped without it:
the cluster of test/run-python.sh has no Citus. On a distributed table of its own (8 shards,
colocated with no other table), followed as a role with SELECT on the indexed column only: every
email found and few others; a new one found after a refresh; a shard moved by
citus_move_shard_placement under 4 writers, every row committed before lag seconds ago found
throughout, the new placement loaded before the old one is forgotten, and nothing missing once
the old placement is dropped; max_lag counting the listing's age; node_conninfo; a forked child;
the refusals (0A000). SharedCitusIndexFollower: two processes (spawned) share one copy per shard
index, every committed key found in each within max_lag and slack, none ever a false negative,
the writer's SIGKILL taken over; a reader whose writer stops answers True past max_lag; a copy a
writer with an old listing refreshed before a shard moved back is not taken as of a time before
the listing that adds it. Then, when t/015_citus.pl's users table is there (after its own shard
move), every one of its emails found.

Without Citus: the nodes' default conninfo, and the node followers' follow(), shared mode's too
(a server, as the other tests)."""

import os
import signal
import threading
import time
import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bloomfilter.citus import CitusIndexFollower, _NodeFollower, _node_template
from bloomfilter.follow import IndexFollower
from bloomfilter.shared import SharedCitusIndexFollower, _SharedCitusNode

COORDINATOR = os.environ.get("BLOOM_CITUS_COORDINATOR")
ROWS = 20000

citus = pytest.mark.skipif(
    not COORDINATOR, reason="no Citus cluster: set BLOOM_CITUS_COORDINATOR to a coordinator's "
                            "conninfo (t/015_citus.pl does)")


def diagnostic(text):
    """A line t/015_citus.pl shows (pytest -s)."""
    print("citus-test: " + text, flush=True)


def emails(first, last):
    return ["user%d@mail.com" % i for i in range(first, last + 1)]


@pytest.fixture(scope="module")
def cluster():
    """(superuser's connection, the follower role's conninfo, table, index)."""
    suffix = uuid.uuid4().hex[:10]
    table, role = "signups_%s" % suffix, "bloom_follower_%s" % suffix
    index = table + "_bloom"
    admin = psycopg.connect(COORDINATOR, autocommit=True)
    try:
        admin.execute("CREATE TABLE %s (email text NOT NULL)" % table)
        admin.execute("SELECT create_distributed_table(%s, 'email', shard_count => 8, colocate_with => 'none')",
                      [table])
        admin.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, %d) i"
                      % (table, ROWS))
        admin.execute("CREATE INDEX %s ON %s USING bloomfilter (email) WITH (capacity = 100000, error_rate = 0.01)"
                      % (index, table))
        # Citus creates the role on every node and grants the column on every shard.
        admin.execute("CREATE ROLE %s LOGIN" % role)
        admin.execute("GRANT SELECT (email) ON %s TO %s" % (table, role))
        yield admin, make_conninfo(COORDINATOR, user=role), table, index
    finally:
        try:
            admin.execute("DROP TABLE IF EXISTS %s" % table)
            # A moved shard's old placement, if a test ended before dropping it, holds a grant.
            admin.execute("CALL citus_cleanup_orphaned_resources()")
            admin.execute("DROP ROLE IF EXISTS %s" % role)
        finally:
            admin.close()


def placements(admin, table):
    rows = admin.execute("SELECT shardid, nodename, nodeport FROM citus_shards "
                         "WHERE table_name = %s::regclass ORDER BY shardid", [table]).fetchall()
    return sorted("%d %s:%d" % row for row in rows)


def listed(follower):
    return sorted("%d %s:%d" % (p.shard_id, p.host, p.port) for p in follower.shards)


@citus
def test_every_email_found_a_new_one_after_a_refresh(cluster):
    admin, follow, table, index = cluster
    with CitusIndexFollower(follow, index, background=False) as follower:
        assert listed(follower) == placements(admin, table)
        assert all(p.index == "%s_%d" % (index, p.shard_id) for p in follower.shards), \
            "each shard's index, named by Citus"
        nodes = {p.split(" ")[1] for p in placements(admin, table)}
        assert len(follower.nodes) == len(nodes), "one follower (one connection) per node"
        assert len(nodes) >= 2, "the shards are on %d nodes" % len(nodes)
        keys = emails(1, ROWS)
        assert follower.contains_many(keys).count(False) == 0, "no false negative (contains_many)"
        assert [k for k in keys if not follower.contains(k)] == [], "no false negative (contains)"
        ghosts = ["x" + k for k in emails(ROWS + 1, ROWS + 2000)]
        positives = sum(follower.contains(k) for k in ghosts)
        assert positives <= 40, "%d of 2000 never inserted answered True" % positives
        assert follower.contains_many(ghosts) == [follower.contains(k) for k in ghosts]
        admin.execute("INSERT INTO %s VALUES ('new@mail.com')" % table)
        follower.refresh()
        assert follower.contains("new@mail.com") is True
        assert "new@mail.com" in follower
        stats = follower.stats()
        assert (stats["shards"], len(stats["nodes"]), stats["listings"], stats["listing_errors"],
                stats["errors"]) == (8, len(nodes), 2, 0, 0)
        assert sum(len(node["indexes"]) for node in stats["nodes"]) == 8
        assert stats["checks"] == 2 * ROWS + 2 * 2000 + 2000 + 2
        assert stats["reloads"] == 8 and stats["refreshes"] == 16 and stats["fresh"] is True
        assert stats["extension_version"] and stats["last_refresh"] <= time.time()
        assert follower.lag < 60 and follower.is_fresh()
        with pytest.raises(TypeError):
            follower.contains(5)


@citus
def test_node_conninfo(cluster):
    admin, follow, table, index = cluster
    asked = []

    def node_conninfo(host, port):
        asked.append("%s:%d" % (host, port))
        return make_conninfo(follow, host=host, port=str(port))

    with CitusIndexFollower(follow, index, background=False, node_conninfo=node_conninfo) as follower:
        assert sorted(asked) == sorted("%s:%d" % (n.host, n.port) for n in follower.nodes)
        assert follower.contains_many(emails(1, ROWS)).count(False) == 0
    # A connection as the coordinator: the nodes' default conninfo is its parameters.
    with CitusIndexFollower(psycopg.connect(follow), index, background=False) as follower:
        assert follower.contains_many(emails(1, ROWS)).count(False) == 0
        assert all(n.follower.indexes for n in follower.nodes)


@citus
def test_composite_index(cluster):
    """A table UNIQUE (tenant_id, email) distributed by tenant_id, its (tenant_id, lower(email))
    index followed: every row's pair found, the same emails under other tenants few, answers equal
    to SQL's bloom_index_contains on the coordinator."""
    admin, follow, _, _ = cluster
    table = "tenants_%s" % uuid.uuid4().hex[:10]
    role = conninfo_to_dict(follow)["user"]
    admin.execute("CREATE TABLE %s (tenant_id int NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email))"
                  % table)
    try:
        admin.execute("SELECT create_distributed_table(%s, 'tenant_id', shard_count => 4, colocate_with => 'none')",
                      [table])
        admin.execute("INSERT INTO %s SELECT i %% 100, 'User' || i || '@mail.com' FROM generate_series(1, 5000) i"
                      % table)
        admin.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (tenant_id, lower(email))" % (table, table))
        admin.execute("GRANT SELECT (tenant_id, email) ON %s TO %s" % (table, role))
        rows = admin.execute(
            "SELECT p.t, p.e, bloom_index_contains(%%s, p.t, p.e) FROM ("
            "  SELECT tenant_id AS t, email AS e FROM %s"
            "  UNION ALL SELECT pg_catalog.mod(tenant_id + 1, 100), email FROM %s) p" % (table, table),
            [table + "_bloom"]).fetchall()
        assert all(answer for _, _, answer in rows[:5000])
        with CitusIndexFollower(follow, table + "_bloom", background=False) as follower:
            keys = [(t, e) for t, e, _ in rows]
            assert follower.contains_many(keys) == [answer for _, _, answer in rows]
            assert [follower.contains(key) for key in keys[:500]] == [a for _, _, a in rows[:500]]
            assert follower.contains((1, "USER1@MAIL.COM"))
            others = sum(answer for _, _, answer in rows[5000:])
            assert others <= 100, "%d of 5000 other tenants' pairs answered True" % others
            admin.execute("INSERT INTO %s VALUES (7, 'New@mail.com')" % table)
            follower.refresh()
            (other,), = admin.execute("SELECT bloom_index_contains(%s, 8, 'new@mail.com')",
                                      [table + "_bloom"]).fetchall()
            assert follower.contains((7, "new@mail.com")) and follower.contains((8, "new@mail.com")) == other
    finally:
        admin.execute("DROP TABLE IF EXISTS %s" % table)


@citus
def test_refusals(cluster):
    admin, follow, table, index = cluster
    # The coordinator's index is the empty shell's: IndexFollower is refused, as a plain table's
    # index is by CitusIndexFollower.
    with pytest.raises(psycopg.Error) as refused:
        IndexFollower(follow, index, background=False)
    assert refused.value.sqlstate == "0A000"
    plain = "plain_%s" % uuid.uuid4().hex[:10]
    admin.execute("CREATE TABLE %s (email text)" % plain)
    admin.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email)" % (plain, plain))
    try:
        with pytest.raises(psycopg.Error) as refused:
            CitusIndexFollower(COORDINATOR, plain + "_bloom", background=False)
        assert refused.value.sqlstate == "0A000"
        diagnostic("bloom_index_shards on a plain table's index: %s %s"
                   % (refused.value.sqlstate, str(refused.value).splitlines()[0]))
    finally:
        admin.execute("DROP TABLE %s" % plain)
    with pytest.raises(ValueError, match="longer than shards_interval"):
        CitusIndexFollower(follow, index, shards_interval=1.0, max_lag=1.0)


def _first_shard_and_another_node(admin, table):
    """(shard id, host, port) of the table's first shard, and (host, port) of another primary
    node that can hold it: a move's arguments."""
    shard, host, port = admin.execute(
        "SELECT shardid, nodename, nodeport FROM citus_shards WHERE table_name = %s::regclass "
        "ORDER BY shardid LIMIT 1", [table]).fetchone()
    other_host, other_port = admin.execute(
        "SELECT nodename, nodeport FROM pg_dist_node WHERE isactive AND noderole = 'primary' "
        "AND shouldhaveshards AND (nodename, nodeport) <> (%s, %s) ORDER BY nodeport LIMIT 1",
        [host, port]).fetchone()
    return shard, host, port, other_host, other_port


@citus
def test_shard_moved_under_writers(cluster):
    """A shard moved under 4 writers: every row committed before lag seconds ago found
    throughout."""
    admin, follow, table, index = cluster
    changes, reloads, followers = [], [], []

    def on_event(event, info):
        if event == "shards":
            changes.append(info)
        elif event == "reload" and followers:
            # The new placement's, read by the listing: a callback may list again.
            followers[0].refresh_shards()
            reloads.append(info)

    follower = CitusIndexFollower(follow, index, interval=0.05, shards_interval=0.2, on_event=on_event)
    followers.append(follower)
    committed, lock = [], threading.Lock()  # (key, time.monotonic() once its COMMIT returned)
    counts, stop, writing, errors = {"checks": 0, "misses": 0}, threading.Event(), threading.Event(), []
    missed = []

    def checker():
        while not stop.wait(0.005):
            as_of = time.monotonic() - follower.lag
            with lock:
                keys = [key for key, at in committed if at < as_of]
            found = follower.contains_many(keys)
            counts["checks"] += len(keys)
            counts["misses"] += found.count(False)
            missed.extend(key for key, f in zip(keys, found) if not f)
            # contains() too, on the latest.
            for key in keys[-20:]:
                counts["checks"] += 1
                if not follower.contains(key):
                    counts["misses"] += 1
                    missed.append(key)

    def writer(number):
        try:
            with psycopg.connect(COORDINATOR, autocommit=True) as conn:
                i = 0
                while writing.is_set():
                    key = "m%d-%d@mail.com" % (number, i)
                    conn.execute("INSERT INTO %s VALUES (%%s)" % table, [key])
                    with lock:
                        committed.append((key, time.monotonic()))
                    i += 1
        except Exception as error:
            errors.append(error)

    writing.set()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    check = threading.Thread(target=checker)
    for thread in threads + [check]:
        thread.start()
    try:
        time.sleep(0.5)
        moved, from_host, from_port, to_host, to_port = _first_shard_and_another_node(admin, table)
        source, target = "%s:%d" % (from_host, from_port), "%s:%d" % (to_host, to_port)
        started = time.monotonic()
        admin.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode := 'block_writes')",
                      [moved, from_host, from_port, to_host, to_port])
        with lock:
            written = len(committed)
        diagnostic("shard %d moved from %s to %s (block_writes) in %.2f s, %d rows written by then"
                   % (moved, source, target, time.monotonic() - started, written))
        for _ in range(100):
            if "%d %s" % (moved, target) in listed(follower):
                break
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        writing.clear()
        for thread in threads:
            thread.join()
    try:
        assert errors == []
        # Until every commit is older than the copy.
        last = max(at for _, at in committed)
        for _ in range(200):
            if time.monotonic() - follower.lag > last:
                break
            time.sleep(0.025)
        stop.set()
        check.join()
        diagnostic("%d checks of %d rows written, %d missed; %d listings"
                   % (counts["checks"], len(committed), counts["misses"], follower.stats()["listings"]))
        assert counts["misses"] == 0, "%d of %d checks missed a committed row: %s" % (
            counts["misses"], counts["checks"], missed[:10])
        assert counts["checks"] > 1000 and len(committed) > 100
        assert listed(follower) == placements(admin, table)
        assert "%d %s" % (moved, target) in listed(follower), "shard %d followed on %s" % (moved, target)
        nodes = {"%s:%d" % (n.host, n.port): n.follower for n in follower.nodes}
        shard_index = "%s_%d" % (index, moved)
        assert shard_index in nodes[target].indexes, "%s follows %s" % (target, shard_index)
        assert source not in nodes or shard_index not in nodes[source].indexes, "%s no longer follows it" % source
        # The "shards" events: the new placement added, the old one removed (in one listing, or
        # the new one listed first).
        named = lambda ps: ["%d %s:%d" % (p.shard_id, p.host, p.port) for p in ps]  # noqa: E731
        assert ([p for c in changes for p in named(c["added"])], [p for c in changes for p in named(c["removed"])]) \
            == (["%d %s" % (moved, target)], ["%d %s" % (moved, source)])
        assert [(r["index"], "%s:%d" % (r["host"], r["port"]), r["reason"]) for r in reloads] \
            == [(shard_index, target, "start")]
        # The old placement dropped: nothing it held is missing, and the refreshes go on.
        admin.execute("CALL citus_cleanup_orphaned_resources()")
        follower.refresh()
        keys = emails(1, ROWS) + [key for key, _ in committed]
        assert follower.contains_many(keys).count(False) == 0, "no false negative among %d rows" % len(keys)
        stats = follower.stats()
        assert stats["listings"] > 3 and stats["listing_errors"] == 0, stats
        assert stats["shards"] == 8 and stats["errors"] == 0, stats
    finally:
        stop.set()
        check.join()
        follower.close()


@citus
def test_max_lag_counts_the_listing(cluster):
    """The nodes refreshed, the listing not: past max_lag every answer is "maybe"; stale, then
    fresh."""
    admin, follow, table, index = cluster
    events = []
    follower = CitusIndexFollower(follow, index, background=False, shards_interval=0.1, max_lag=0.4,
                                  on_event=lambda event, info: events.append((event, info))
                                  if event in ("stale", "fresh") else None)
    absent = "nobody@example.org"
    try:
        assert follower.contains(absent) is False
        time.sleep(0.3)
        for node in follower.nodes:
            node.follower.refresh()
        time.sleep(0.15)
        assert follower.lag > 0.4
        assert all(i.lag < 0.4 for n in follower.nodes for i in n.follower.indexes.values())
        assert follower.contains(absent) is True
        assert follower.contains_many([absent, absent]) == [True, True]
        assert not follower.is_fresh()
        assert [e for e, _ in events] == ["stale"]
        assert events[0][1]["max_lag"] == 0.4 and events[0][1]["lag"] > 0.4
        assert follower.stats()["fresh"] is False
        follower.refresh_shards()
        assert [e for e, _ in events] == ["stale", "fresh"]
        assert events[1][1]["lag"] > 0.4
        assert follower.contains(absent) is False
        assert follower.is_fresh()
    finally:
        follower.close()


@citus
def test_forked_child(cluster):
    """A follower made before a fork: the child lists and refreshes on its own connections."""
    admin, follow, table, index = cluster
    with CitusIndexFollower(follow, index, interval=0.05, shards_interval=0.2, max_lag=2) as follower:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with psycopg.connect(COORDINATOR, autocommit=True) as conn:
                    conn.execute("INSERT INTO %s VALUES ('child@mail.com')" % table)
                listings = follower.listings
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    if follower.contains("child@mail.com") and follower.listings > listings:
                        code = 0 if follower.contains_many(emails(1, 1000)).count(False) == 0 else 2
                        break
                    time.sleep(0.05)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The parent's connections were left alone.
        follower.refresh()
        assert follower.contains("child@mail.com") is True
        assert follower.stats()["listing_errors"] == 0


@citus
def test_tap_users(cluster):
    """t/015_citus.pl's users, after its shard move: every email found."""
    admin = cluster[0]
    if not admin.execute("SELECT to_regclass('users_email_bloom') IS NOT NULL").fetchone()[0]:
        pytest.skip("no users_email_bloom: not run by t/015_citus.pl")
    with CitusIndexFollower(COORDINATOR, "users_email_bloom", background=False) as follower:
        keys = [row[0] for row in admin.execute("SELECT email FROM users")]
        assert len(keys) >= 10000
        assert follower.contains_many(keys).count(False) == 0, "no false negative among %d emails" % len(keys)
        assert len(follower.shards) == 8


# -- SharedCitusIndexFollower ----------------------------------------------------------------

SHARED_INTERVAL = 0.05
SHARED_MAX_LAG = 1.5
SHARED_BOUND = SHARED_MAX_LAG + 2.0


def shared_table(admin, shards=8):
    """A distributed table of its own (emails "s-user<i>@mail.com", 1 to 2000) and its index."""
    table = "shared_%s" % uuid.uuid4().hex[:10]
    admin.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    admin.execute("SELECT create_distributed_table(%%s, 'email', shard_count => %d, colocate_with => 'none')"
                  % shards, [table])
    admin.execute("INSERT INTO %s SELECT 's-user' || i || '@mail.com' FROM generate_series(1, 2000) i" % table)
    admin.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (capacity = 100000)"
                  % (table, table))
    return table, table + "_bloom"


def commit_keys(table, keys):
    """Commits the keys on the coordinator: {key: time.monotonic() once COMMIT had returned}."""
    with psycopg.connect(COORDINATOR, autocommit=True) as conn:
        conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
    at = time.monotonic()
    return {key: at for key in keys}


def as_of(follower):
    """The time a SharedCitusIndexFollower's answers are as of (its listing's and its copies')."""
    return min([follower._listed_at] + [index._refreshed_at for index in follower._active])


@citus
def test_shared_processes_share_each_shard_copy(cluster, tmp_path):
    """Two processes (spawned) follow the table's index with SharedCitusIndexFollower: one copy
    per shard index (a store each), the first process writing every copy and the second reading
    them; every committed key answers True in both within max_lag and slack, none is ever a false
    negative; the writer's SIGKILL has the other take every copy over."""
    from shared_workers import Workers

    admin = cluster[0]
    table, index = shared_table(admin)
    directory = str(tmp_path / "copies")
    workers = Workers("citus", {"coordinator": COORDINATOR, "index": index, "directory": directory,
                                "shards_interval": 0.5}, SHARED_INTERVAL, SHARED_MAX_LAG)
    workers.committed.update({"s-user%d@mail.com" % i: time.monotonic() for i in range(1, 2001)})
    try:
        first, = workers.start()
        second, = workers.start()
        assert workers.roles() == {first: [True] * 8, second: [False] * 8}
        assert len(os.listdir(directory)) == 8, "one store per shard index"

        def round_(tag):
            at = commit_keys(table, ["s-%s%d.%s@mail.com" % (tag, i, uuid.uuid4().hex[:6]) for i in range(40)])
            workers.commit(at)
            return workers.wait_all_true(max(at.values()), SHARED_BOUND)

        lags = [round_("a")]
        workers.kill(first)
        lags.append(round_("b"))
        assert workers.roles() == {second: [True] * 8}
        assert len(os.listdir(directory)) == 8
        diagnostic("shared mode: every key found within %.2f s and %.2f s (the writer killed)" % tuple(lags))
        assert max(lags) < SHARED_BOUND
    finally:
        for pid, (examples, false_negatives, checks, rounds, _) in workers.stop().items():
            assert false_negatives == 0, (pid, examples)
            assert rounds > 20 and checks > 1000, (pid, rounds, checks)
        admin.execute("DROP TABLE IF EXISTS %s" % table)


@citus
def test_shared_reader_past_max_lag_answers_true(cluster, tmp_path):
    """A reader whose writer (another process, stopped) holds the locks but refreshes no more:
    past max_lag every answer is True, its listing fresh; fresh again once the writer goes on,
    and it takes every copy over once the writer is killed."""
    from shared_workers import Workers

    admin = cluster[0]
    table, index = shared_table(admin)
    directory = str(tmp_path / "copies")
    workers = Workers("citus", {"coordinator": COORDINATOR, "index": index, "directory": directory,
                                "shards_interval": 0.5}, SHARED_INTERVAL, SHARED_MAX_LAG)
    writer, = workers.start()
    reader = SharedCitusIndexFollower(COORDINATOR, index, background=False, shards_interval=0.1,
                                      max_lag=0.5, directory=directory)
    stopped = False
    try:
        copies = reader._active
        assert len(copies) == 8 and not any(copy.writer for copy in copies)
        ghosts = ["s-ghost%d.%s@mail.com" % (i, uuid.uuid4().hex[:6]) for i in range(400)]
        absent = [key for key in ghosts if not reader.contains(key)]
        assert len(absent) > 350
        os.kill(writer, signal.SIGSTOP)
        stopped = True
        time.sleep(0.8)
        reader.refresh()  # the listing read again, the copies as of the writer's last refresh
        assert time.monotonic() - reader._listed_at < 0.5 and reader.lag > 0.5
        assert not reader.is_fresh() and not any(copy.writer for copy in reader._active)
        assert all(reader.contains_many(absent))
        assert all(reader.contains(key) for key in absent)
        os.kill(writer, signal.SIGCONT)
        stopped = False
        time.sleep(0.3)
        reader.refresh()
        assert reader.is_fresh() and not all(reader.contains_many(absent))
        workers.kill(writer)
        reader.refresh()
        assert all(copy.writer for copy in reader._active) and len(reader._active) == 8
        assert reader.is_fresh() and reader.contains_many(["s-user%d@mail.com" % i for i in range(1, 2001)]) \
            == [True] * 2000
    finally:
        if stopped:
            os.kill(writer, signal.SIGCONT)
        reader.close()
        workers.stop()
        admin.execute("DROP TABLE IF EXISTS %s" % table)


@citus
def test_shared_copy_as_of_no_earlier_than_the_listing(cluster, tmp_path):
    """A copy written by a process whose listing is old is never taken as of a time before the
    listing that adds its placement. The writer's listing has shard X on node B; X moves to A
    (its old placement on B kept until the cleanup), keys are committed (X's into A), the writer
    refreshes its copies (X's from the old placement, without them), the old placement is
    dropped and X moved back to B (with them). A new follower, listing X on B, waits for a
    refresh of that copy begun after it started (the writer's, which reads the new index whole):
    every key committed before its answers' time answers True."""
    admin = cluster[0]
    table, index = shared_table(admin, shards=4)
    directory = str(tmp_path / "copies")
    writer = SharedCitusIndexFollower(COORDINATOR, index, background=False, directory=directory)
    refreshing, done = threading.Event(), threading.Event()
    try:
        moved, b_host, b_port, a_host, a_port = _first_shard_and_another_node(admin, table)
        move = ("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, "
                "shard_transfer_mode := 'block_writes')")
        admin.execute(move, [moved, b_host, b_port, a_host, a_port])
        committed = commit_keys(table, ["s-late%d@mail.com" % i for i in range(200)])
        in_moved = [row[0] for row in admin.execute(
            "SELECT k FROM unnest(%s::text[]) k WHERE get_shard_id_for_distribution_column(%s, k) = %s",
            [list(committed), table, moved])]
        assert in_moved, "no key in shard %d" % moved
        for node in writer.nodes:
            node.follower.refresh()
        admin.execute("CALL citus_cleanup_orphaned_resources()")
        admin.execute(move, [moved, a_host, a_port, b_host, b_port])

        def refresh_later():
            # The writer's copies refreshed again only once the new follower has started.
            if refreshing.wait(30):
                time.sleep(1.0)
                while not done.is_set():
                    for node in writer.nodes:
                        try:
                            node.follower.refresh()
                        except Exception:
                            pass
                    time.sleep(0.05)

        thread = threading.Thread(target=refresh_later, daemon=True)
        thread.start()
        refreshing.set()
        with SharedCitusIndexFollower(COORDINATOR, index, background=False, directory=directory,
                                      timeout=20) as reader:
            assert not any(copy.writer for copy in reader._active)
            at = as_of(reader)
            assert at > max(committed.values())
            missing = [key for key, found in zip(committed, reader.contains_many(list(committed)))
                       if not found]
            assert missing == [], "false negatives (%d in shard %d) as of %.2f s after they were committed" % (
                len(missing), moved, at - max(committed.values()))
    finally:
        done.set()
        refreshing.set()
        writer.close()
        admin.execute("DROP TABLE IF EXISTS %s" % table)
        admin.execute("CALL citus_cleanup_orphaned_resources()")


# -- without Citus ---------------------------------------------------------------------------


def test_default_node_conninfo(monkeypatch):
    """A node's connection: the coordinator's parameters, its host and port replaced (and no
    hostaddr of the coordinator's)."""
    calls = []
    monkeypatch.setattr(psycopg, "connect", lambda conninfo, **kw: calls.append((conninfo_to_dict(conninfo), kw)))
    monkeypatch.delenv("PGHOSTADDR", raising=False)
    connect = _node_template("postgresql://app:secret@coordinator:5432/shop?sslmode=require&hostaddr=10.0.0.1")
    connect("10.0.0.7", 6432)
    assert calls == [({"user": "app", "password": "secret", "host": "10.0.0.7", "port": "6432",
                       "dbname": "shop", "sslmode": "require"}, {"autocommit": True})]
    monkeypatch.setenv("PGHOSTADDR", "10.0.0.1")
    _node_template("host=coordinator dbname=shop")("worker1", 5432)
    assert calls[-1][0] == {"host": "worker1", "port": "5432", "dbname": "shop", "hostaddr": ""}


def _three_indexes(conn, prefix):
    """Three tables <prefix><n>_<suffix> of 100 keys '<prefix><n>.<i>', each with a bloomfilter
    index: (suffix, the indexes' names)."""
    suffix = uuid.uuid4().hex[:10]
    names = []
    for n in range(3):
        table = "%s%d_%s" % (prefix, n, suffix)
        conn.execute("CREATE TABLE %s (email text)" % table)
        conn.execute("INSERT INTO %s SELECT '%s%d.' || i FROM generate_series(1, 100) i"
                     % (table, prefix, n))
        conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email)" % (table, table))
        names.append(table + "_bloom")
    return suffix, names


@pytest.mark.server
def test_node_follower_follow(conn, dsn):
    """The node's MultiIndexFollower follows new indexes (loaded before follow() returns) and
    drops others; an index that cannot be loaded is refused, with the others kept."""
    suffix, names = _three_indexes(conn, "t")
    follower = _NodeFollower(dsn, names[:1], 0.05, False, None, None)
    try:
        first = follower.indexes[names[0]]
        follower.follow(names[:1] + names[1:])
        assert list(follower.indexes) == names and follower.indexes[names[0]] is first
        assert all(follower.indexes[names[n]].contains("t%d.7" % n) for n in range(3))
        assert first.reloads == 1, "the index followed before is not read again"
        with pytest.raises(psycopg.Error):
            follower.follow(names + ["missing_%s" % suffix])
        assert list(follower.indexes) == names
        follower.follow([names[2], names[0]])
        assert list(follower.indexes) == [names[2], names[0]]
        conn.execute("INSERT INTO t2_%s VALUES ('late')" % suffix)
        follower.refresh()
        assert follower.indexes[names[2]].contains("late")
        with pytest.raises(ValueError):
            follower.follow([])
    finally:
        follower.close()


@pytest.mark.server
def test_shared_node_follower_follow(conn, dsn, tmp_path):
    """The shared mode's node follower: a store per index, opened as follow() adds the index (a
    second follower a reader of it) and closed as it drops it (the last follower's close removes
    the store's files); an index that cannot be followed refused, the others kept."""
    suffix, names = _three_indexes(conn, "s")
    directory = str(tmp_path / "copies")
    first = _SharedCitusNode(dsn, names[:1], 0.05, True, None, None, directory, 10.0)
    second = _SharedCitusNode(dsn, names[:1], 0.05, False, None, None, directory, 10.0)
    try:
        assert first.indexes[names[0]].writer and not second.indexes[names[0]].writer
        assert len(os.listdir(directory)) == 1
        first.follow(names)
        second.follow(names)
        assert len(os.listdir(directory)) == 3
        assert all(first.indexes[name].writer and not second.indexes[name].writer for name in names)
        assert all(second.indexes[names[n]].contains("s%d.7" % n) for n in range(3))
        with pytest.raises(psycopg.Error):
            second.follow(names + ["missing_%s" % suffix])
        assert list(second.indexes) == names and len(os.listdir(directory)) == 3
        first.follow(names[1:])
        second.follow(names[1:])
        assert sorted(os.listdir(directory)) == sorted(
            os.path.basename(second.indexes[name].path) for name in names[1:]), "the dropped one's removed"
        conn.execute("INSERT INTO s2_%s VALUES ('late')" % suffix)
        time.sleep(0.3)
        second.refresh()
        assert second.indexes[names[2]].contains("late")
        assert second._conn is None, "a reader holds no connection"
    finally:
        first.close()
        second.close()
