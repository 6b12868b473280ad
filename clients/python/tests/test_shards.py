"""ShardedIndexFollower over three clusters, each holding the emails whose bloom_shard(email, 3)
is its number (docs/multinode.md's layout): every row inserted on any shard is found within two
intervals, no row committed before a refresh of its shard began is ever missed, and with
max_lag a stopped shard makes every answer "maybe"."""

import threading
import time

import psycopg
import pytest

from bloomfilter import shard_of
from bloomfilter.follow import ShardedIndexFollower

from clusters import Cluster

pytestmark = pytest.mark.server

INTERVAL = 0.1
SHARDS = 3


@pytest.fixture(scope="module")
def shards():
    clusters = []
    try:
        for k in range(SHARDS):
            cluster = Cluster("shard%d" % k)
            clusters.append(cluster)
            with psycopg.connect(cluster.dsn(), autocommit=True) as c:
                c.execute("CREATE EXTENSION bloomfilter")
                c.execute("CREATE TABLE users (email text PRIMARY KEY, CHECK (bloom_shard(email, %d) = %d))"
                          % (SHARDS, k))
                c.execute("CREATE INDEX users_email_bloom ON users USING bloomfilter (email) "
                          "WITH (capacity = 100000)")
                c.execute("INSERT INTO users SELECT e FROM (SELECT 'user' || i || '@mail.com' e "
                          "FROM generate_series(1, 3000) i) s WHERE bloom_shard(e, %d) = %d" % (SHARDS, k))
        yield clusters
    finally:
        for cluster in clusters:
            cluster.remove()


def test_union_of_three_shards_under_writers(shards):
    follower = ShardedIndexFollower([c.dsn() for c in shards], "users_email_bloom", interval=INTERVAL)
    committed, lock, stop, errors = [], threading.Lock(), threading.Event(), []

    def writer(number):
        conns = [psycopg.connect(c.dsn(), autocommit=True) for c in shards]
        try:
            i = 0
            while not stop.is_set():
                email = "w%d.%d@mail.com" % (number, i)
                conns[shard_of(email, SHARDS)].execute("INSERT INTO users VALUES (%s)", [email])
                with lock:
                    committed.append((email, time.monotonic()))
                i += 1
                time.sleep(0.002)
        except Exception as error:
            errors.append(error)
        finally:
            for c in conns:
                c.close()

    try:
        assert all(follower.contains("user%d@mail.com" % i) for i in range(1, 3001))
        assert sum(follower.contains("ghost%d@mail.com" % i) for i in range(3000)) < 3000 * 0.03 * 2
        writers = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for t in writers:
            t.start()
        pending, missed, late, checked, per_shard = [], [], [], 0, [0] * SHARDS
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline or pending or committed:
            if time.monotonic() >= deadline:
                stop.set()
                for t in writers:
                    t.join()
            with lock:
                pending.extend(committed)
                committed.clear()
            now, still = time.monotonic(), []
            for email, at in pending:
                shard = follower.followers[shard_of(email, SHARDS)]
                refreshed_at = shard._refreshed_at
                found = follower.contains(email)
                if at < refreshed_at and not found:
                    missed.append(email)
                if found or now - at > 2 * INTERVAL:
                    checked += 1
                    per_shard[shard_of(email, SHARDS)] += 1
                    if not found:
                        late.append((email, now - at))
                else:
                    still.append((email, at))
            pending = still
            time.sleep(0.005)
        assert not errors
        assert min(per_shard) > 100, per_shard
        assert not missed
        assert not late, "%d of %d rows late: %r" % (len(late), checked, late[:3])
        total = 0
        for c in shards:
            with psycopg.connect(c.dsn()) as conn:
                total += conn.execute("SELECT count(*) FROM users WHERE email LIKE 'w%'").fetchone()[0]
        assert total == checked
    finally:
        stop.set()
        follower.close()


def test_a_stopped_shard_makes_answers_maybe(shards):
    with ShardedIndexFollower([c.dsn() for c in shards], "users_email_bloom", interval=INTERVAL,
                              max_lag=0.5) as follower:
        ghosts = [g for g in ("ghost%d@mail.com" % i for i in range(500)) if not follower.contains(g)]
        assert len(ghosts) > 400 and follower.is_fresh()
        shards[1].stop()
        try:
            time.sleep(0.5 + 3 * INTERVAL)
            assert not follower.is_fresh() and follower.lag > 0.5
            assert follower.followers[0].is_fresh() and not follower.followers[1].is_fresh()
            assert all(follower.contains(g) for g in ghosts)
        finally:
            shards[1].start()
        deadline = time.monotonic() + 10
        while not follower.is_fresh() and time.monotonic() < deadline:
            time.sleep(INTERVAL)
        assert follower.is_fresh() and not any(follower.contains(g) for g in ghosts)
