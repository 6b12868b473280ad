"""SharedIndexFollower: processes following one index through one shared copy. Every committed
key answers True in every process within the lag bound, and no process ever answers False for a
key committed before what its answers are as of, across a rebuild (REINDEX), a growth (a new
layer), the writer's SIGKILL (another process takes over) and a PostgreSQL restart; a reader
stale past max_lag answers True; a directory or file another user could reach is refused."""

import json
import multiprocessing
import os
import signal
import stat
import time
import uuid

import psycopg
import pytest

from bloomfilter.shared import SharedIndexFollower
from gunicorn_workers import ask_every_worker, gunicorn

from clusters import Cluster
from forked import in_a_child
import pgbouncer
import shared_workers
from shared_workers import Workers

pytestmark = pytest.mark.server

INTERVAL = 0.05
MAX_LAG = 1.5


def make_index(conn, grows=False, rows=2000):
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    options = "capacity = 4000, error_rate = 0.01, expansion = 2" if grows else "capacity = 200000, expansion = 0"
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (%s)" % (table, table, options))
    conn.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, %d) i"
                 % (table, rows))
    return table, table + "_bloom"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster("shared")
    with psycopg.connect(c.dsn(), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION bloomfilter")
    yield c
    c.remove()


def insert(dsn, table, keys):
    """Commits the keys; {key: time.monotonic() once COMMIT had returned}."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
    at = time.monotonic()
    return {key: at for key in keys}


def test_processes_share_one_copy_through_rebuild_growth_kill_and_restart(cluster, tmp_path):
    """Three worker processes follow a growing index through one shared copy while their
    threads check every committed key without pause; then a REINDEX, a new layer, the writer's
    SIGKILL (a survivor takes over, a new worker joins) and a PostgreSQL restart. No answer is
    ever a false negative, and after each every committed key answers True within the bound."""
    dsn = cluster.dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        table, index = make_index(conn, grows=True, rows=2000)
        layers = lambda: conn.execute("SELECT count(*) FROM bloom_index_layers(%s)", [index]).fetchone()[0]
        workers = Workers("single", {"dsn": dsn, "index": index, "path": str(tmp_path / "share")},
                          INTERVAL, MAX_LAG)
        initial = {"user%d@mail.com" % i: time.monotonic() for i in range(1, 2001)}
        workers.committed.update(initial)
        workers.start(3)
        try:
            assert len(workers.writers()) == 1
            bound = MAX_LAG + 2.0

            def round_(tag, count=50):
                keys = ["%s%d.%s@mail.com" % (tag, i, uuid.uuid4().hex[:6]) for i in range(count)]
                at = insert(dsn, table, keys)
                workers.commit(at)
                return workers.wait_all_true(max(at.values()), bound)

            lags = [round_("a")]
            # A rebuild: another filter under the name, a new generation.
            conn.execute("REINDEX INDEX %s" % index)
            lags.append(round_("rebuilt"))
            # Growth: inserts past layer 0's capacity add a layer, a new generation.
            before = layers()
            while layers() == before:
                at = insert(dsn, table, ["grow%s@mail.com" % uuid.uuid4().hex for _ in range(500)])
                workers.commit(at)
            lags.append(round_("grown"))
            # The writer's SIGKILL: a survivor takes over; a new worker (a restarted one) joins.
            writer, = workers.writers()
            workers.kill(writer)
            lags.append(round_("killed"))
            workers.start(1)
            new_writers = workers.writers()
            assert len(new_writers) == 1 and new_writers != [writer]
            (adopted,) = [part["adoptions"] for part in workers.call(new_writers[0], "ask", [])[3]]
            lags.append(round_("joined"))
            # PostgreSQL restarts: every follower goes stale (answering True), then the writer
            # reconnects and reads the filter whole.
            cluster.stop()
            time.sleep(MAX_LAG + 0.5)
            cluster.start()
            lags.append(round_("restarted", 20))
            assert max(lags) < bound
        finally:
            results = workers.stop()
    generations = set()
    for pid, (examples, false_negatives, checks, rounds, seen) in results.items():
        assert false_negatives == 0, (pid, examples)
        assert rounds > 50 and checks > 10000, (pid, rounds, checks)
        generations.update(seen)
    # The first load, the rebuild, the layer and the reconnection; the takeover goes on from the
    # current generation, unless the writer was killed while it published a refresh.
    assert len(generations) >= 5 - adopted, (generations, adopted)


def test_stale_reader_answers_true_and_takes_over(conn, dsn, tmp_path):
    """A reader whose writer stops refreshing (it holds the lock but refreshes no more) answers
    True past max_lag and is not fresh; once the writer closes, the reader takes over, going on
    from the generation it maps (the pages changed since the last writer's position)."""
    table, index = make_index(conn)
    path = str(tmp_path / "share")
    writer = SharedIndexFollower(dsn, index, path=path, background=False)
    reader = SharedIndexFollower(dsn, index, path=path, background=False, max_lag=0.3)
    try:
        assert writer.writer and not reader.writer
        assert reader._conn is None  # a reader keeps no connection
        ghosts = [g for g in ("ghost%d@mail.com" % i for i in range(200)) if not reader.contains(g)]
        assert len(ghosts) > 150
        conn.execute("INSERT INTO %s VALUES ('late@mail.com')" % table)
        time.sleep(0.5)
        reader.refresh()            # the lock is held: it stays a reader, as of the writer's load
        assert not reader.writer and not reader.is_fresh()
        assert all(reader.contains(g) for g in ghosts)     # stale: "maybe"
        assert reader.contains("late@mail.com")
        writer.refresh()
        reader.refresh()
        assert reader.is_fresh() and reader.contains("late@mail.com")
        assert not all(reader.contains(g) for g in ghosts)
        conn.execute("INSERT INTO %s VALUES ('later@mail.com')" % table)
        writer.close()
        reloads = reader.reloads
        reader.refresh()            # the lock is free: it takes over, from generation 1
        assert reader.writer and reader.is_fresh()
        assert reader.stats()["generation"] == 1 and reader.stats()["adoptions"] == 1
        assert reader.reloads == reloads and reader.last_rows < 10
        assert reader.last_bytes < len(reader.filter.to_bytes()) / 4
        assert reader.contains("late@mail.com") and reader.contains("later@mail.com")
    finally:
        writer.close()
        reader.close()
    assert not os.path.exists(path)  # the last one removed the copy


def _position(follower):
    return shared_module()._read_state(follower._generation.header, position=True)[4:]


def shared_module():
    import bloomfilter.shared as shared
    return shared


def test_a_new_writer_goes_on_only_from_a_position_that_holds(cluster, tmp_path):
    """A new writer goes on from the current generation (no whole read) from the position the
    last one published: an LSN no later than the WAL the server had flushed, on the server that
    started then. A writer that died between writing pages in place and publishing leaves pages
    the changes since that position give again; after a server restart (another postmaster: a
    failover could bring one whose WAL went another way) it reads the filter whole."""
    dsn = cluster.dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        table, index = make_index(conn, rows=500)
        path = str(tmp_path / "share")
        first = SharedIndexFollower(dsn, index, path=path, background=False)
        second = SharedIndexFollower(dsn, index, path=path, background=False)
        third = None
        try:
            lsn, server = _position(first)
            flushed, started = conn.execute(
                "SELECT pg_current_wal_flush_lsn()::text, (EXTRACT(EPOCH FROM "
                "pg_postmaster_start_time()) * 1000000)::bigint").fetchone()
            assert 0 < lsn <= shared_module()._lsn_int(flushed) and server == started
            # The writer writes a refresh's pages, then dies before publishing it.
            conn.execute("INSERT INTO %s VALUES ('unpublished@mail.com')" % table)
            first._generation.write = lambda *args, **kwargs: None
            first.refresh()
            assert first.filter.contains("unpublished@mail.com") and _position(first) == (lsn, server)
            first._store.drop_lock()
            first.writer = False
            conn.execute("INSERT INTO %s VALUES ('meanwhile@mail.com')" % table)
            at = time.monotonic()
            second.refresh()
            assert second.writer and second.stats()["adoptions"] == 1
            assert second.stats()["generation"] == 1 and second._refreshed_at > at
            assert all(second.contains(k) for k in ("unpublished@mail.com", "meanwhile@mail.com"))
            assert all(second.contains("user%d@mail.com" % i) for i in range(1, 501))
            assert _position(second)[0] > lsn
            # A restart: another postmaster; the third reads the filter whole.
            third = SharedIndexFollower(dsn, index, path=path, background=False)
            second._store.drop_lock()
            second.writer = False
        finally:
            first.close()
    cluster.stop()
    cluster.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO %s VALUES ('restarted@mail.com')" % table)
        at = time.monotonic()
        third.refresh()
        assert third.writer and third.stats()["adoptions"] == 0
        assert third.stats()["generation"] == 2 and third._refreshed_at > at
        assert third.contains("restarted@mail.com") and third.contains("meanwhile@mail.com")
        assert _position(third)[1] != server
    finally:
        second.close()
        third.close()


def test_a_new_writer_goes_on_from_no_later_than_the_flushed_wal(tmp_path):
    """A server process crashes: the server restarts (the same postmaster), and the WAL it had
    not written (asynchronous commits) is lost: it writes new records at those positions again.
    The last writer's LSN was past them; the position it published is no later than the flushed
    WAL, so a new writer that goes on from it gets the pages changed after the crash."""
    crash = Cluster("crash")
    try:
        with open(os.path.join(crash.data, "postgresql.conf"), "a") as conf:
            # Small WAL records (no full pages) and no one writing the WAL of the asynchronous
            # commits before the crash.
            conf.write("full_page_writes = off\nwal_writer_delay = 10000ms\n"
                       "bgwriter_lru_maxpages = 0\nautovacuum = off\n")
        crash.stop()
        crash.start()
        dsn = crash.dsn()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION bloomfilter")
            table, index = make_index(admin, rows=100)
        path = str(tmp_path / "share")
        first = SharedIndexFollower(dsn, index, path=path, background=False)
        second = SharedIndexFollower(dsn, index, path=path, background=False)
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("SELECT pg_switch_wal()")
                conn.execute("SET synchronous_commit = off")
                for i in range(30):
                    conn.execute("INSERT INTO %s VALUES ('lost%d@mail.com')" % (table, i))
                first.refresh()
                lsn, server = _position(first)
                last = shared_module()._lsn_int(first._lsn)
                flushed, = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
                assert shared_module()._lsn_int(flushed) < last  # WAL not yet written
                # A server process dies: the server restarts, losing the WAL not yet written.
                pid, = conn.execute("SELECT pg_backend_pid()").fetchone()
                os.kill(pid, signal.SIGKILL)
            first._store.drop_lock()
            first.writer = False
            # Until the server is back from the crash (its WAL position moved back).
            deadline = time.monotonic() + 60
            while True:
                assert time.monotonic() < deadline
                try:
                    conn = psycopg.connect(dsn, autocommit=True)
                    again, started = conn.execute(
                        "SELECT pg_current_wal_insert_lsn()::text, (EXTRACT(EPOCH FROM "
                        "pg_postmaster_start_time()) * 1000000)::bigint").fetchone()
                except psycopg.OperationalError:
                    time.sleep(0.1)
                    continue
                if shared_module()._lsn_int(again) < last:  # positions to be written again
                    break
                conn.close()
                time.sleep(0.1)
            with conn:
                assert started == server  # the same postmaster
                keys = ["crashed%d@mail.com" % i for i in range(20)]
                conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
                at = time.monotonic()
            second.refresh()
            assert second.writer and second.stats()["adoptions"] == 1
            assert second._refreshed_at > at
            missing = [key for key in keys if not second.contains(key)]
            assert not missing, (missing, lsn, last, again)
        finally:
            first.close()
            second.close()
    finally:
        crash.remove()


def test_a_new_writer_reads_whole_what_another_server_serves(tmp_path):
    """A failover: the server at the index's address is now another one, a copy of the first
    made earlier (a standby, promoted) whose WAL went another way after it: the same positions
    hold other changes there. A new writer finds another postmaster and reads the filter whole,
    never going on from the last writer's LSN."""
    import shutil
    import tempfile
    primary = Cluster("primary")
    clone = None
    try:
        dsn = primary.dsn()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION bloomfilter")
            table, index = make_index(admin, rows=100)
        clone = Cluster.__new__(Cluster)
        clone.bindir, clone.user, clone.port = primary.bindir, primary.user, primary.port
        clone.dir = tempfile.mkdtemp(prefix="python-clone-", dir=os.environ.get("CLUSTER_ROOT") or None)
        os.chmod(clone.dir, 0o755)
        if clone.user:
            shutil.chown(clone.dir, clone.user)
        clone.data = os.path.join(clone.dir, "data")
        primary._run("pg_basebackup", "-D", clone.data, "-h", primary.dir, "-p", str(primary.port),
                     "-U", "postgres", "-X", "stream", "-c", "fast")
        path = str(tmp_path / "share")
        first = SharedIndexFollower(dsn, index, path=path, background=False)
        second = SharedIndexFollower(dsn, index, path=path, background=False)
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO %s SELECT 'primary' || i || '@mail.com' "
                             "FROM generate_series(1, 20000) i" % table)
            time.sleep(1.1)  # the writer reads the flushed position again (once a second)
            first.refresh()
            published, _ = _position(first)
            first._store.drop_lock()
            first.writer = False
            primary.stop()
            clone.start()  # at the primary's address (its socket directory and port)
            with psycopg.connect(dsn, autocommit=True) as conn:
                keys = ["failover%d@mail.com" % i for i in range(20)]
                conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
                at = time.monotonic()
                # The clone writes at positions the primary had used, before the one published.
                now, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
                assert shared_module()._lsn_int(now) < published
            second.refresh()
            assert second.writer and second._refreshed_at > at
            missing = [key for key in keys if not second.contains(key)]
            assert not missing, missing
            assert second.stats()["adoptions"] == 0 and second.stats()["generation"] == 2
        finally:
            first.close()
            second.close()
    finally:
        if clone is not None:
            clone.remove()
        primary.remove()


def test_forked_child_is_a_reader_of_the_same_mapping(conn, dsn, tmp_path):
    table, index = make_index(conn)
    follower = SharedIndexFollower(dsn, index, path=str(tmp_path / "share"), interval=INTERVAL)
    try:
        assert follower.writer

        def child():
            conn2 = psycopg.connect(dsn, autocommit=True)
            conn2.execute("INSERT INTO %s VALUES ('child@mail.com')" % table)
            conn2.close()
            at = time.monotonic()
            deadline = at + 5
            while follower._refreshed_at < at and time.monotonic() < deadline:
                time.sleep(INTERVAL)
            return follower.writer, follower.contains("child@mail.com")
        status, report = in_a_child(child)
        assert status == 0 and report == [0, 1], (status, report)
        assert follower.writer and follower.contains("child@mail.com")
    finally:
        follower.close()


def test_refuses_what_another_user_could_reach(conn, dsn, tmp_path):
    table, index = make_index(conn, rows=10)
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(PermissionError, match="symbolic link"):
        SharedIndexFollower(dsn, index, path=str(link), background=False)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o755)
    with pytest.raises(PermissionError, match="other users"):
        SharedIndexFollower(dsn, index, path=str(open_dir), background=False)
    # Files planted in a directory that is ours: a symbolic link, a file others may read.
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    (planted / "lock").symlink_to(target / "lock")
    with pytest.raises(PermissionError, match="symbolic link"):
        SharedIndexFollower(dsn, index, path=str(planted), background=False)
    readable = tmp_path / "readable"
    readable.mkdir(mode=0o700)
    (readable / "users").touch(mode=0o644)
    os.chmod(readable / "users", 0o644)
    with pytest.raises(PermissionError, match="other users"):
        SharedIndexFollower(dsn, index, path=str(readable), background=False)
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(PermissionError, match="belongs to uid 65534"):
            SharedIndexFollower(dsn, index, path=str(theirs), background=False)
    # Its own directory and files: the user's alone.
    mine = tmp_path / "mine"
    with SharedIndexFollower(dsn, index, path=str(mine), background=False) as follower:
        assert follower.contains("user1@mail.com")
        assert stat.S_IMODE(os.stat(mine).st_mode) == 0o700
        for name in os.listdir(mine):
            st = os.stat(mine / name)
            assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(), name


def test_default_path_is_per_index_and_user(conn, dsn, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    table, index = make_index(conn, rows=10)
    table2, index2 = make_index(conn, rows=10)
    mine = "/dev/shm/bloomfilter-%d" % os.geteuid()
    with SharedIndexFollower(dsn, index, background=False) as a, \
            SharedIndexFollower(dsn, index2, background=False) as b, \
            SharedIndexFollower(dsn, "public." + index, background=False) as c:
        assert os.path.dirname(a.path) == mine
        assert a.path != b.path and a.path == c.path
        assert a.writer and b.writer and not c.writer
        assert c.index_name == "public." + index
    assert not os.path.exists(a.path) and not os.path.exists(b.path)
    # The user's directory stays, so that no other user can make it meanwhile.
    st = os.lstat(mine)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700


def _follow_in_a_process(dsn, index, env):
    """A process of its own following the index with the default path: its path and whether it
    is the writer."""
    import subprocess
    import sys
    program = ("import sys; sys.path.insert(0, %r)\n"
               "from bloomfilter.shared import SharedIndexFollower\n"
               "f = SharedIndexFollower(%r, %r, background=False)\n"
               "assert f.contains('user1@mail.com')\n"
               "print(f.path, int(f.writer))\n"
               % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), dsn, index))
    out = subprocess.run([sys.executable, "-c", program], check=True, timeout=60, env=env,
                         capture_output=True, text=True).stdout.split()
    return out[0], out[1] == "1"


def test_default_directory_no_other_user_can_make_or_block(conn, dsn, tmp_path, monkeypatch):
    """The default directory is in $XDG_RUNTIME_DIR when that is the user's (0700), and every
    process of the user with it finds the same copy; else in bloomfilter-<uid> under /dev/shm,
    refused (naming path=) when another user made it, a symbolic link or open to others."""
    import bloomfilter.shared as shared
    _, index = make_index(conn, rows=10)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with SharedIndexFollower(dsn, index, background=False) as follower:
        assert os.path.dirname(follower.path) == str(runtime) and follower.writer
        assert os.path.basename(follower.path).startswith("bloomfilter-")
        # Another process of the user, with the same XDG_RUNTIME_DIR, reads this copy.
        path, writer = _follow_in_a_process(dsn, index, dict(os.environ))
        assert path == follower.path and not writer
    assert not os.path.exists(follower.path) and os.path.isdir(runtime)
    # An XDG_RUNTIME_DIR others may access (or not a directory) is not used.
    shm = tmp_path / "shm"
    shm.mkdir()
    shm.chmod(0o1777)
    monkeypatch.setattr(shared, "_SHARED_MEMORY", str(shm))
    mine = shm / ("bloomfilter-%d" % os.geteuid())
    for wrong in ("open", "file", "relative"):
        if wrong == "open":
            (tmp_path / "open").mkdir(mode=0o755)
            os.chmod(tmp_path / "open", 0o755)
            monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "open"))
        elif wrong == "file":
            (tmp_path / "file").touch(mode=0o600)
            monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "file"))
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", "run")
        with SharedIndexFollower(dsn, index, background=False) as follower:
            assert os.path.dirname(follower.path) == str(mine), wrong
            assert follower.contains("user1@mail.com")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    # bloomfilter-<uid> made first by someone else: a symbolic link, open to others, another
    # user's (as root: chown).
    mine.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    mine.symlink_to(elsewhere)
    with pytest.raises(PermissionError, match="not a directory.*path="):
        SharedIndexFollower(dsn, index, background=False)
    mine.unlink()
    mine.mkdir()
    mine.chmod(0o777)
    with pytest.raises(PermissionError, match="other users may access it.*path="):
        SharedIndexFollower(dsn, index, background=False)
    if os.geteuid() == 0:
        mine.chmod(0o700)
        os.chown(mine, 65534, 65534)
        with pytest.raises(PermissionError, match="belongs to uid 65534.*path="):
            SharedIndexFollower(dsn, index, background=False)
    assert os.listdir(elsewhere) == [] and os.listdir(mine) == []
    # path= still works when the default is blocked.
    with SharedIndexFollower(dsn, index, path=str(tmp_path / "given"), background=False) as f:
        assert f.writer and f.contains("user1@mail.com")


def test_the_sequence_lock_fences_its_writes_and_reads(conn, dsn, tmp_path, monkeypatch):
    """The writer's refresh writes the filter's pages in place, then a fence, seq odd, a fence,
    the fields, a fence, seq even; a reader loads seq, a fence, the fields, a fence, seq again:
    the order a CPU that reorders memory accesses (ARM64) keeps only with the fences. (Run here
    on x86-64, where they are needed by no one: this checks they are where they must be.)"""
    import bloomfilter
    import bloomfilter.shared as shared
    import bloomfilter._native as native
    assert bloomfilter.accelerator() == "native" and shared._fence is native.fence
    table, index = make_index(conn, rows=10)
    path = str(tmp_path / "share")
    writer = SharedIndexFollower(dsn, index, path=path, background=False)
    reader = SharedIndexFollower(dsn, index, path=path, background=False)
    try:
        header = writer._generation.header
        trace = []
        real = {"_load_seq": shared._load_seq, "_store_seq": shared._store_seq}

        class State:
            size = shared._STATE.size

            def unpack_from(self, buffer, offset):
                trace.append(("unpack", None))
                return shared._STATE_REAL.unpack_from(buffer, offset)

            def pack_into(self, buffer, offset, *fields):
                trace.append(("pack", None))
                return shared._STATE_REAL.pack_into(buffer, offset, *fields)

        def traced(name):
            def call(*args):
                trace.append((name, args[1] if name == "_store_seq" else None))
                return real[name](*args)
            return call

        def fence():
            # What the mapping holds at each fence: the new key's bits, seq, refreshed_at.
            trace.append(("fence", (writer.filter.contains("fenced@mail.com"), real["_load_seq"](header),
                                    shared._STATE_REAL.unpack_from(header, 16)[0])))
            native.fence()

        monkeypatch.setattr(shared, "_STATE_REAL", shared._STATE, raising=False)
        monkeypatch.setattr(shared, "_STATE", State())
        monkeypatch.setattr(shared, "_fence", fence)
        for name in real:
            monkeypatch.setattr(shared, name, traced(name))
        seq, at = real["_load_seq"](header), shared._STATE_REAL.unpack_from(header, 16)[0]
        assert seq % 2 == 0 and not writer.filter.contains("fenced@mail.com")
        conn.execute("INSERT INTO %s VALUES ('fenced@mail.com')" % table)
        writer.refresh()
        steps = [name for name, _ in trace]
        assert steps == ["_load_seq", "fence", "_store_seq", "fence", "pack", "fence", "_store_seq"], trace
        first, second, third = (value for name, value in trace if name == "fence")
        # The pages were written before the first fence, seq still even and the time old.
        assert first == (True, seq, at), trace
        assert second[1:] == (seq + 1, at) and third[1] == seq + 1 and third[2] > at, trace
        assert trace[-1] == ("_store_seq", seq + 2)
        del trace[:]
        reader.refresh()
        assert [name for name, _ in trace] == ["_load_seq", "fence", "unpack", "fence", "_load_seq"], trace
        assert reader.contains("fenced@mail.com") and reader._refreshed_at == third[2]
    finally:
        monkeypatch.undo()
        writer.close()
        reader.close()


def test_without_a_fence_a_follower_is_refused(conn, dsn, tmp_path, monkeypatch):
    """Without the compiled module, x86 needs no fence (its memory ordering), any other CPU has
    none in Python: there the shared follower is refused, naming why."""
    import bloomfilter.shared as shared
    import bloomfilter._native as native
    assert shared._choose_fence(native.fence, "aarch64") is native.fence
    assert shared._choose_fence(None, "x86_64") is shared._no_fence
    assert shared._choose_fence(None, "AMD64") is shared._no_fence
    for machine in ("aarch64", "arm64", "ppc64le", "riscv64", "s390x"):
        assert shared._choose_fence(None, machine) is None
    _, index = make_index(conn, rows=10)
    monkeypatch.setattr(shared, "_fence", None)
    with pytest.raises(RuntimeError, match="memory fence.*bloomfilter._native"):
        SharedIndexFollower(dsn, index, path=str(tmp_path / "share"), background=False)
    assert not os.path.exists(tmp_path / "share")


def test_a_path_shared_by_two_indexes_is_refused(conn, dsn, tmp_path):
    _, index = make_index(conn, rows=10)
    _, index2 = make_index(conn, rows=10)
    path = str(tmp_path / "share")
    with SharedIndexFollower(dsn, index, path=path, background=False):
        with pytest.raises(ValueError, match="give each index a path of its own"):
            SharedIndexFollower(dsn, index2, path=path, background=False, timeout=1)


@pytest.mark.parametrize("grows", [False, True], ids=["fixed", "layered"])
def test_a_reader_between_every_step_of_a_new_generation(conn, dsn, tmp_path, monkeypatch, grows):
    """A reader takes in the writer's state, and a new follower starts, between every two steps
    of the writing and publication of a new generation (REINDEX CONCURRENTLY, then, for an index
    that grows, a new layer): every committed key answers True at every step, from the old
    generation until the new one is complete and named."""
    import bloomfilter.shared as shared
    table, index = make_index(conn, grows=grows, rows=3000)
    path = str(tmp_path / "share")
    writer = SharedIndexFollower(dsn, index, path=path, background=False)
    reader = SharedIndexFollower(dsn, index, path=path, background=False, max_lag=60)
    committed = ["user%d@mail.com" % i for i in range(1, 3001)]
    steps = []

    def look(step):
        # The reader, and a follower starting now (which maps whatever generation is named).
        reader.refresh()
        with SharedIndexFollower(dsn, index, path=path, background=False, timeout=5) as starting:
            for follower in (reader, starting):
                missing = [key for key in committed if not follower.contains(key)]
                steps.append((step, follower.stats()["generation"], len(missing)))
                assert not missing, (step, missing[:3], steps)

    def watched(step, function):
        def wrapper(*args, **kwargs):
            look("before " + step)
            result = function(*args, **kwargs)
            look("after " + step)
            return result
        return wrapper

    monkeypatch.setattr(shared, "_write_all", watched("write", shared._write_all))
    monkeypatch.setattr(shared._Store, "_publish", watched("publish", shared._Store._publish))
    monkeypatch.setattr(shared._Store, "retire", watched("retire", shared._Store.retire))
    try:
        # Another index under the name (a fixed-size index rebuilt in place keeps its layout, and
        # its pages are written into the generation as any changed page).
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        writer.refresh()
        assert writer.stats()["generation"] == 2
        look("rebuilt")
        if not grows:
            assert reader.stats()["generation"] == 2
            return
        layers = lambda: conn.execute("SELECT count(*) FROM bloom_index_layers(%s)", [index]).fetchone()[0]
        before = layers()
        while layers() == before:
            keys = ["grow%s@mail.com" % uuid.uuid4().hex for _ in range(1000)]
            conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
            writer.refresh()
            committed.extend(keys)
        look("grown")
        assert reader.stats()["generation"] == writer.stats()["generation"] >= 3
        assert reader.reloads >= 3 and len(steps) > 10
    finally:
        writer.close()
        reader.close()


def _answers_of_every_worker(port, email, workers):
    """{worker pid: ([its answers for email, True for present], whether it is the writer)}."""
    answers = ask_every_worker(port, "/?" + email, workers, timeout=15, spread=24)
    assert len(answers) >= workers, answers
    return {pid: ([words[0] == "1" for words in replies], replies[0][1] == "1")
            for pid, replies in answers.items()}


@pytest.mark.parametrize("preload", [True, False], ids=["preload", "no-preload"])
def test_gunicorn_workers_share_one_copy(conn, dsn, tmp_path, preload):
    """gunicorn, 3 workers, with and without --preload: one writer (the master when preloaded,
    else one worker), every worker answers from the shared copy; a worker killed (the writer,
    without --preload) is restarted, and every worker finds a new key within the bound."""
    pytest.importorskip("gunicorn")
    table, index = make_index(conn)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, BLOOM_DSN=dsn, BLOOM_INDEX=index, BLOOM_INTERVAL=str(INTERVAL),
               BLOOM_SHARED=str(tmp_path / "share"), BLOOM_MAX_LAG=str(MAX_LAG),
               PYTHONPATH=os.pathsep.join([os.path.dirname(here), here]))
    with gunicorn("wsgi_follower:app", 3, here, env, preload=preload, probe="/?user1@mail.com") as (_, port):
        before = _answers_of_every_worker(port, "user1@mail.com", 3)
        assert all(all(answers) for answers, _ in before.values()), before
        writers = [pid for pid, (_, writer) in before.items() if writer]
        assert len(writers) == (0 if preload else 1), before  # preloaded: the master writes

        def new_key_everywhere(round_):
            email = next(e for e in ("new%d.%d.%s@mail.com" % (round_, i, uuid.uuid4().hex[:6])
                                     for i in range(100))
                         if not conn.execute("SELECT bloom_index_contains(%s, %s)", [index, e]).fetchone()[0])
            conn.execute("INSERT INTO %s VALUES (%%s)" % table, [email])
            time.sleep(MAX_LAG + 1.0)
            after = _answers_of_every_worker(port, email, 3)
            assert all(all(answers) for answers, _ in after.values()), after
            return after

        new_key_everywhere(0)
        victim = writers[0] if writers else sorted(before)[0]
        os.kill(victim, signal.SIGKILL)
        after = new_key_everywhere(1)
        assert victim not in after and len(after) >= 3, after
        if not preload:
            assert sum(writer for _, writer in after.values()) <= 1, after


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_a_filter_of_several_chunks_is_the_servers_value(conn, dsn, tmp_path, driver):
    """The writer reads the filter in rows of 1 MB (so that libpq does not keep a buffer of
    the filter's size): a 3.6 MB filter read through either driver is the server's value."""
    import bloomfilter.follow as follow_module
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (capacity = 3000000, "
                 "expansion = 0)" % (table, table))
    conn.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i" % table)
    if driver == "psycopg":
        connect = lambda: psycopg.connect(dsn, autocommit=True)
    else:
        psycopg2 = pytest.importorskip("psycopg2")
        connect = lambda: psycopg2.connect(dsn)
    with SharedIndexFollower(connect, table + "_bloom", path=str(tmp_path / "share"),
                             background=False) as follower:
        value = conn.execute("SELECT bloom_index_filter(%s)::bytea", [table + "_bloom"]).fetchone()[0]
        assert len(value) > 3 * follow_module._CHUNK_BYTES
        assert follower.last_rows == 4 and follower.filter.to_bytes() == value
        assert all(follower.contains("user%d@mail.com" % i) for i in range(1, 5001))


def test_the_last_process_to_exit_removes_the_copy(conn, dsn, tmp_path):
    """A process that exits without closing its follower (atexit closes it): the last one
    removes the directory; the readers answered from a mapping, not a copy."""
    import mmap
    import subprocess
    import sys
    _, index = make_index(conn, rows=10)
    path = str(tmp_path / "share")
    program = ("import sys; sys.path.insert(0, %r)\n"
               "from bloomfilter.shared import SharedIndexFollower\n"
               "f = SharedIndexFollower(%r, %r, path=%r)\n"
               "assert f.contains('user1@mail.com')\n"
               % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), dsn, index, path))
    with SharedIndexFollower(dsn, index, path=path, background=False) as follower:
        assert isinstance(follower.filter._data, mmap.mmap)
        subprocess.run([sys.executable, "-c", program], check=True, timeout=60)
        assert os.path.exists(os.path.join(path, "current"))  # this process still follows
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60)
    assert not os.path.exists(path)


def test_what_a_writer_killed_mid_write_leaves(conn, dsn, tmp_path):
    """A writer killed while it wrote a generation leaves a temporary file, or its header's
    fields half-changed (the sequence number odd): the next writer removes the first, and a
    reader takes the second as retired and as of no time (stale), never spinning on it."""
    import bloomfilter.shared as shared
    _, index = make_index(conn, rows=10)
    path = tmp_path / "share"
    first = SharedIndexFollower(dsn, index, path=str(path), background=False, max_lag=1)
    reader = SharedIndexFollower(dsn, index, path=str(path), background=False, max_lag=1)
    try:
        fd = os.open(path / "tmp-999999-2", os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, b"half a generation")
        os.close(fd)
        # The writer dies in the middle of publishing its refresh.
        header = first._generation.header
        shared._store_seq(header, shared._load_seq(header) + 1)
        first._store.drop_lock()
        first.writer = False
        assert reader._generation.read()[2] == 1  # retired: look for a newer generation
        reader.refresh()                          # takes over: a new generation, leftovers gone
        assert reader.writer and reader.stats()["generation"] == 2
        assert sorted(os.listdir(path)) == ["current", "gen-2", "lock", "users"]
        assert reader.is_fresh() and reader.contains("user1@mail.com")
    finally:
        first.close()
        reader.close()


def test_a_follower_starting_while_the_last_one_removes_the_copy(conn, dsn, tmp_path, monkeypatch):
    """The last follower removes the directory while another starts (it waited for the lock
    the last one held): the new one starts again in a new directory."""
    import bloomfilter.shared as shared
    _, index = make_index(conn, rows=10)
    path = str(tmp_path / "share")
    last = SharedIndexFollower(dsn, index, path=path, background=False)
    entered = []
    enter = shared._Store._enter

    def closing_meanwhile(store):
        if not entered:  # the first try: the last follower goes between its open and its lock
            entered.append(True)
            real_flock = shared.fcntl.flock

            def flock(fd, operation):
                if operation == shared.fcntl.LOCK_SH:
                    monkeypatch.setattr(shared.fcntl, "flock", real_flock)
                    last.close()
                return real_flock(fd, operation)
            monkeypatch.setattr(shared.fcntl, "flock", flock)
        return enter(store)

    monkeypatch.setattr(shared._Store, "_enter", closing_meanwhile)
    with SharedIndexFollower(dsn, index, path=path, background=False) as follower:
        assert follower.writer and follower.contains("user1@mail.com")
        assert sorted(os.listdir(path)) == ["current", "gen-1", "lock", "users"]
    assert not os.path.exists(path)


def test_a_load_failing_midway_leaves_the_current_generation(conn, dsn, tmp_path, monkeypatch):
    """The writer's whole read fails after its first rows: no new generation is named, the
    readers keep answering from the current one, and the next refresh reads it whole again on a
    new connection."""
    import bloomfilter.shared as shared
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_bloom ON %s USING bloomfilter (email) WITH (capacity = 3000000, "
                 "expansion = 0)" % (table, table))
    conn.execute("INSERT INTO %s SELECT 'user' || i || '@mail.com' FROM generate_series(1, 3000) i" % table)
    index = table + "_bloom"
    path = str(tmp_path / "share")
    writer = SharedIndexFollower(dsn, index, path=path, background=False)
    reader = SharedIndexFollower(dsn, index, path=path, background=False)
    try:
        real = shared._write_all
        calls = []

        def failing(fd, data, offset):
            calls.append(offset)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return real(fd, data, offset)

        monkeypatch.setattr(shared, "_write_all", failing)
        conn.execute("REINDEX INDEX CONCURRENTLY %s" % index)
        with pytest.raises(OSError):
            writer.refresh()
        monkeypatch.setattr(shared, "_write_all", real)
        reader.refresh()
        assert reader.stats()["generation"] == 1 and reader.contains("user1@mail.com")
        assert sorted(os.listdir(path)) == ["current", "gen-1", "lock", "users"]
        writer.refresh()
        reader.refresh()
        assert writer.stats()["generation"] == reader.stats()["generation"] == 2
        assert writer.reconnects == 2
        assert all(reader.contains("user%d@mail.com" % i) for i in range(1, 3001))
    finally:
        writer.close()
        reader.close()


def test_readers_apply_the_key_rules_the_writer_read(conn, dsn, tmp_path):
    """A reader has no connection: it takes the index's key rules (an expression, a multicolumn
    key) from the rows the writer's description of the index read."""
    table = "users_%s" % uuid.uuid4().hex[:10]
    conn.execute("CREATE TABLE %s (tenant_id bigint NOT NULL, email text NOT NULL)" % table)
    conn.execute("CREATE INDEX %s_lower ON %s USING bloomfilter (lower(email))" % (table, table))
    conn.execute("CREATE INDEX %s_pair ON %s USING bloomfilter (tenant_id, email)" % (table, table))
    conn.execute("INSERT INTO %s SELECT i %% 7, 'User' || i || '@mail.com' FROM generate_series(1, 500) i"
                 % table)
    for suffix, present, absent in (
            ("_lower", ["user%d@mail.com" % i for i in range(1, 501)], "user999@mail.com"),
            ("_pair", [(i % 7, "User%d@mail.com" % i) for i in range(1, 501)], (1, "User999@mail.com"))):
        path = str(tmp_path / suffix)
        with SharedIndexFollower(dsn, table + suffix, path=path, background=False) as writer, \
                SharedIndexFollower(dsn, table + suffix, path=path, background=False) as reader:
            assert writer.writer and not reader.writer and reader._conn is None
            assert all(reader.contains_many(present)) and all(map(reader.contains, present))
            assert reader._state[1:] and writer.contains(absent) == reader.contains(absent)
            with pytest.raises(TypeError):
                reader.contains(5 if suffix == "_lower" else ("x", "y"))


class Ordered:
    """Followers each in a process of its own (shared_workers.manual), without their threads
    until told: the test orders their steps."""

    def __init__(self, dsn, index, path):
        self.args = (dsn, index, path, INTERVAL)
        self.context = multiprocessing.get_context("spawn")
        self.followers = {}  # name: (process, pipe)

    def start(self, name, max_lag):
        """Starts a follower in a new process: whether it is the writer."""
        mine, theirs = self.context.Pipe()
        process = self.context.Process(target=shared_workers.manual,
                                       args=(theirs,) + self.args + (max_lag,), daemon=True)
        process.start()
        theirs.close()
        assert mine.poll(60), "%s did not start" % name
        _, _, writer = mine.recv()
        self.followers[name] = (process, mine)
        return writer

    def call(self, name, command, argument=None):
        _, pipe = self.followers[name]
        pipe.send((command, argument))
        assert pipe.poll(60), "%s did not answer %s" % (name, command)
        return pipe.recv()

    def killed_during(self, name, command):
        """Sends a command the process is killed during (die_after_publish)."""
        process, pipe = self.followers.pop(name)
        pipe.send((command, None))
        process.join(60)
        pipe.close()
        assert process.exitcode == -signal.SIGKILL, process.exitcode

    def close(self, name):
        self.call(name, "close")
        process, pipe = self.followers.pop(name)
        process.join(10)
        pipe.close()

    def stop(self):
        for name in list(self.followers):
            process, pipe = self.followers.pop(name)
            try:
                pipe.send(("close", None))
                if pipe.poll(30):
                    pipe.recv()
            except (OSError, EOFError):
                pass
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join(10)
            pipe.close()


def _commit_keys_they_lack(conn, table, followers, name):
    """Commits keys the follower's generation answers False for: (keys, time.monotonic() once
    COMMIT had returned)."""
    keys = ["late%d.%s@mail.com" % (i, uuid.uuid4().hex[:6]) for i in range(50)]
    _, answers, _, _ = followers.call(name, "ask", keys)
    keys = [key for key, answer in zip(keys, answers) if not answer]
    assert len(keys) > 40
    conn.execute("INSERT INTO %s SELECT unnest(%%s::text[])" % table, [keys])
    return keys, time.monotonic()


def _every_follower_reaches(followers, names, keys, since, path):
    """Within max_lag and some slack, every follower named maps the generation `current` names,
    as of after `since`, and answers True for every key: the generation's number."""
    with open(os.path.join(path, "current")) as f:
        current = json.load(f)["generation"]
    bound = MAX_LAG + 2.0
    pending = list(names)
    while pending:
        late = []
        for name in pending:
            as_of, answers, _, stats = followers.call(name, "ask", keys)
            if stats["generation"] == current and as_of is not None and as_of > since:
                assert all(answers), (name, stats)
            else:
                late.append((name, "%s on generation %s, as of %.2f s before the commit, %d of "
                                   "%d keys False" % (name, stats["generation"], since - as_of,
                                                      answers.count(False), len(keys))))
        pending = [name for name, _ in late]
        assert not pending or time.monotonic() < since + bound, (
            "generation %d is current; after %.1f s: %s" % (
                current, time.monotonic() - since, "; ".join(text for _, text in late)))
        if pending:
            time.sleep(INTERVAL)
    return current


def _drop_and_create(conn, table, index):
    conn.execute("DROP INDEX %s" % index)
    conn.execute("CREATE INDEX %s ON %s USING bloomfilter (email) WITH (capacity = 20000, "
                 "expansion = 0)" % (index, table))


def test_a_takeover_leaves_no_reader_on_the_generation_current_before(conn, dsn, tmp_path):
    """W writes generation 1 and B maps it; the index is dropped and created again, W writes 2,
    which C (max_lag) and D (max_lag=None) map; W closes, and B takes over before it looked for
    a newer generation, writing 3. C and D go to 3 (B retires 2, the one `current` named, and a
    reader looks at `current` anyway): they answer True for a key committed after, D too."""
    table, index = make_index(conn, rows=100)
    path = str(tmp_path / "share")
    followers = Ordered(dsn, index, path)
    try:
        assert followers.start("W", None)
        assert not followers.start("B", MAX_LAG)
        _drop_and_create(conn, table, index)
        assert followers.call("W", "refresh") == (True, 2)
        assert not followers.start("C", MAX_LAG)
        assert not followers.start("D", None)
        assert followers.call("C", "ask", [])[3]["generation"] == 2
        assert followers.call("D", "ask", [])[3]["generation"] == 2
        followers.close("W")
        assert followers.call("B", "refresh") == (True, 3)  # takes over, still on 1
        for name in ("B", "C", "D"):
            followers.call(name, "start")
        keys, since = _commit_keys_they_lack(conn, table, followers, "D")
        assert _every_follower_reaches(followers, ["B", "C", "D"], keys, since, path) == 3
        assert sorted(os.listdir(path)) == ["current", "gen-3", "lock", "users"]
    finally:
        followers.stop()


def test_a_writer_killed_between_naming_a_generation_and_retiring_the_old_one(conn, dsn, tmp_path):
    """The writer is killed once it named generation 2 in `current`, before it retired 1: the
    readers still on 1 (one with max_lag=None) go to the generation the next writer writes (it
    retires the files it removes; a reader looks at `current` anyway), and answer True for a
    key committed after."""
    table, index = make_index(conn, rows=100)
    path = str(tmp_path / "share")
    followers = Ordered(dsn, index, path)
    try:
        assert followers.start("W", None)
        assert not followers.start("R", MAX_LAG)
        assert not followers.start("S", MAX_LAG)
        assert not followers.start("D", None)
        followers.call("W", "die_after_publish")
        _drop_and_create(conn, table, index)
        followers.killed_during("W", "refresh")
        assert sorted(os.listdir(path)) == ["current", "gen-1", "gen-2", "lock", "users"]
        assert followers.call("R", "refresh") == (True, 3)  # takes over, still on 1
        for name in ("R", "S", "D"):
            followers.call(name, "start")
        keys, since = _commit_keys_they_lack(conn, table, followers, "D")
        assert _every_follower_reaches(followers, ["R", "S", "D"], keys, since, path) == 3
        assert sorted(os.listdir(path)) == ["current", "gen-3", "lock", "users"]
    finally:
        followers.stop()


def test_a_writer_stopped_between_naming_a_generation_and_retiring_the_old_one(conn, dsn, tmp_path):
    """The writer stops (SIGSTOP) once it named generation 2, before it retired 1, keeping the
    lock: the readers on 1 (one with max_lag=None) look at `current` and go to 2, which holds
    the keys committed before its load, without waiting for the writer."""
    table, index = make_index(conn, rows=100)
    path = str(tmp_path / "share")
    followers = Ordered(dsn, index, path)
    try:
        assert followers.start("W", None)
        assert not followers.start("R", MAX_LAG)
        assert not followers.start("D", None)
        for name in ("R", "D"):
            followers.call(name, "start")
        keys, since = _commit_keys_they_lack(conn, table, followers, "D")
        followers.call("W", "stop_after_publish")
        _drop_and_create(conn, table, index)
        process, pipe = followers.followers["W"]
        pipe.send(("refresh", None))
        deadline = time.monotonic() + 30
        while _process_state(process.pid) != "T":
            assert time.monotonic() < deadline, "the writer did not stop"
            time.sleep(INTERVAL)
        assert sorted(os.listdir(path)) == ["current", "gen-1", "gen-2", "lock", "users"]
        assert _every_follower_reaches(followers, ["R", "D"], keys, since, path) == 2
        os.kill(process.pid, signal.SIGCONT)
        assert pipe.poll(30) and pipe.recv() == (True, 2)
        assert sorted(os.listdir(path)) == ["current", "gen-2", "lock", "users"]
    finally:
        for process, _ in followers.followers.values():
            os.kill(process.pid, signal.SIGCONT)
        followers.stop()


def _process_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(pgbouncer.binary() is None, reason="pgbouncer is not installed")
def test_two_servers_behind_one_address_share_no_copy(tmp_path):
    """A pooler's entries for a primary and its standby on two hosts (here 127.0.0.1 and
    127.0.0.2, one port: one database name, one system identifier, one address connected to):
    each server's followers have a copy of their own, and a key committed on the primary while
    the standby lags is found by the primary's."""
    primary = Cluster("primary")
    standby = bouncer = None
    followers = []
    try:
        with psycopg.connect(primary.dsn(), autocommit=True) as c:
            c.execute("CREATE DATABASE app")
        with psycopg.connect(primary.dsn("app"), autocommit=True) as c:
            c.execute("CREATE EXTENSION bloomfilter")
            c.execute("CREATE TABLE users (email text NOT NULL)")
            c.execute("CREATE INDEX users_email_bloom ON users USING bloomfilter (email)")
        standby = Cluster.standby_of(primary, "standby", "127.0.0.2")
        bouncer = pgbouncer.PgBouncer("session", entries={
            "app_rw": "host=127.0.0.1 port=%d dbname=app" % primary.port,
            "app_ro": "host=127.0.0.2 port=%d dbname=app" % primary.port})
        directory = str(tmp_path / "copies")
        reading = SharedIndexFollower(bouncer.dsn("dbname=app_ro"), "users_email_bloom",
                                      background=False, directory=directory)
        followers.append(reading)
        writing = SharedIndexFollower(bouncer.dsn("dbname=app_rw"), "users_email_bloom",
                                      background=False, directory=directory)
        followers.append(writing)
        with psycopg.connect(standby.dsn("app"), autocommit=True) as c:
            c.execute("SELECT pg_catalog.pg_wal_replay_pause()")  # the standby lags
        with psycopg.connect(bouncer.dsn("dbname=app_rw"), autocommit=True) as c:
            c.execute("INSERT INTO users VALUES ('on.the.primary@mail.com')")
        committed = time.monotonic()
        reading.refresh()
        writing.refresh()
        assert writing._refreshed_at > committed
        assert writing.contains("on.the.primary@mail.com")
        assert reading.path != writing.path and reading.writer and writing.writer
    finally:
        for follower in followers:
            follower.close()
        if bouncer is not None:
            bouncer.remove()
        if standby is not None:
            standby.remove()
        primary.remove()
