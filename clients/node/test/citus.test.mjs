// CitusIndexFollower against a Citus cluster, whose coordinator BLOOM_CITUS_COORDINATOR names (a
// connection string of a superuser; t/015_citus.pl runs this file so, with two workers). Skipped
// without it: the cluster of test/run-node.sh has no Citus. On a distributed table of its own (8
// shards, colocated with no other table), followed as a role with SELECT on the indexed column
// only: every email found and few others; a new one found after a refresh; a shard moved by
// citus_move_shard_placement under 4 writers, every row committed before lag ms ago found
// throughout, the new placement loaded before the old one is forgotten, and nothing missing once
// the old placement is dropped; maxLag counting the listing's age; nodeConnection; the refusals.
// A (tenant_id, lower(email)) index of a table distributed by tenant_id answers as SQL does. Then,
// when t/015_citus.pl's users table is there (after its own shard move), every one of its emails
// found.
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { CitusIndexFollower, IndexFollower } from "pg-bloomfilter";

const COORDINATOR = process.env.BLOOM_CITUS_COORDINATOR;
const ROWS = 20000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("CitusIndexFollower", {
  // A test that waits for an event it missed ends here, not in the TAP test's hour.
  timeout: 180000,
  skip: !COORDINATOR && "no Citus cluster: set BLOOM_CITUS_COORDINATOR to a coordinator's connection string (t/015_citus.pl does)",
}, () => {
  const suffix = randomBytes(5).toString("hex");
  const table = `signups_${suffix}`, index = `${table}_bloom`, role = `bloom_follower_${suffix}`;
  let admin, follow; // the superuser's connection; the role's connection string

  before(async () => {
    admin = new pg.Client({ connectionString: COORDINATOR });
    await admin.connect();
    await admin.query(`CREATE TABLE ${table} (email text NOT NULL)`);
    await admin.query("SELECT create_distributed_table($1, 'email', shard_count => 8, colocate_with => 'none')", [table]);
    await admin.query(`INSERT INTO ${table} SELECT 'user' || i || '@mail.com' FROM generate_series(1, ${ROWS}) i`);
    await admin.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (email) WITH (capacity = 100000, error_rate = 0.01)`);
    // Citus creates the role on every node and grants the column on every shard.
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    await admin.query(`GRANT SELECT (email) ON ${table} TO ${role}`);
    const url = new URL(COORDINATOR);
    url.username = role;
    url.password = "";
    follow = url.toString();
  });
  after(async () => {
    try {
      await admin?.query(`DROP TABLE IF EXISTS ${table}`);
      // A moved shard's old placement, if a test ended before dropping it, holds a grant to the role.
      await admin?.query("CALL citus_cleanup_orphaned_resources()");
      await admin?.query(`DROP ROLE IF EXISTS ${role}`);
    } finally {
      await admin?.end();
    }
  });

  const emails = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => `user${from + i}@mail.com`);
  async function placements() {
    const { rows } = await admin.query(`SELECT shardid::int8::text AS shard, nodename, nodeport
      FROM citus_shards WHERE table_name = $1::regclass ORDER BY shardid`, [table]);
    return rows.map((r) => `${r.shard} ${r.nodename}:${r.nodeport}`);
  }
  const listed = (follower) => follower.shards.map((s) => `${s.shardId} ${s.host}:${s.port}`).sort();

  test("a (tenant_id, lower(email)) index distributed by tenant_id: answers equal SQL's", async () => {
    const tenants = `tenants_${suffix}`;
    await admin.query(`CREATE TABLE ${tenants} (tenant_id int NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email))`);
    try {
      await admin.query("SELECT create_distributed_table($1, 'tenant_id', shard_count => 4, colocate_with => 'none')", [tenants]);
      await admin.query(`INSERT INTO ${tenants} SELECT i % 100, 'User' || i || '@mail.com' FROM generate_series(1, 5000) i`);
      await admin.query(`CREATE INDEX ${tenants}_bloom ON ${tenants} USING bloomfilter (tenant_id, lower(email))`);
      await admin.query(`GRANT SELECT (tenant_id, email) ON ${tenants} TO ${role}`);
      const { rows } = await admin.query(`SELECT p.t, p.e, bloom_index_contains($1, p.t, p.e) AS sql FROM (
          SELECT tenant_id AS t, email AS e FROM ${tenants}
          UNION ALL SELECT (tenant_id + 1) % 100, email FROM ${tenants}) p`, [`${tenants}_bloom`]);
      assert.ok(rows.slice(0, 5000).every((row) => row.sql));
      const follower = await CitusIndexFollower.open(follow, `${tenants}_bloom`, { start: false });
      try {
        const keys = rows.map((row) => [row.t, row.e]);
        assert.deepEqual(follower.containsMany(keys), rows.map((row) => row.sql));
        assert.deepEqual(keys.slice(0, 500).map((key) => follower.contains(key)), rows.slice(0, 500).map((row) => row.sql));
        assert.ok(follower.contains([1, "USER1@MAIL.COM"]));
        const others = rows.slice(5000).filter((row) => row.sql).length;
        assert.ok(others <= 100, `${others} of 5000 other tenants' pairs answered true`);
      } finally {
        await follower.close();
      }
    } finally {
      await admin.query(`DROP TABLE IF EXISTS ${tenants}`);
    }
  });

  test("every email of every shard found; a new one after a refresh; the refusals", async () => {
    const follower = await CitusIndexFollower.open(follow, index, { start: false });
    try {
      assert.deepEqual(listed(follower), (await placements()).sort());
      assert.ok(follower.shards.every((s) => s.index === `${index}_${s.shardId}`), "each shard's index, named by Citus");
      const nodes = new Set((await placements()).map((p) => p.split(" ")[1]));
      assert.equal(follower.nodes.length, nodes.size, "one follower (one connection) per node");
      assert.ok(nodes.size >= 2, `the shards are on ${nodes.size} nodes`);
      const keys = emails(1, ROWS);
      const found = follower.containsMany(keys);
      assert.equal(found.filter((f) => !f).length, 0, "no false negative (containsMany)");
      assert.equal(keys.filter((k) => !follower.contains(k)).length, 0, "no false negative (contains)");
      const ghosts = emails(ROWS + 1, ROWS + 2000).map((k) => `x${k}`);
      const positives = ghosts.filter((k) => follower.contains(k)).length;
      assert.ok(positives <= 40, `${positives} of 2000 never inserted answered true`);
      assert.deepEqual(follower.containsMany(ghosts), ghosts.map((k) => follower.contains(k)));
      await admin.query(`INSERT INTO ${table} VALUES ('new@mail.com')`);
      await follower.refresh();
      assert.equal(follower.contains("new@mail.com"), true);
      const stats = follower.stats();
      assert.deepEqual([stats.shards, stats.nodes.length, stats.listings, stats.listingErrors, stats.errors],
        [8, nodes.size, 2, 0, 0]);
      assert.equal(stats.indexes.length, 8);
      assert.equal(stats.checks, 2 * ROWS + 2 * 2000 + 2000 + 1);
    } finally {
      await follower.close();
    }
    // nodeConnection: called for each node, by the host and port of the coordinator's metadata.
    const asked = [];
    const own = await CitusIndexFollower.open(follow, index, {
      start: false,
      nodeConnection: (host, port) => {
        asked.push(`${host}:${port}`);
        const url = new URL(follow);
        url.hostname = host;
        url.port = String(port);
        return url.toString();
      },
    });
    try {
      assert.deepEqual(asked.sort(), own.nodes.map((n) => `${n.host}:${n.port}`).sort());
      assert.equal(own.containsMany(emails(1, ROWS)).filter((f) => !f).length, 0);
    } finally {
      await own.close();
    }
    // The coordinator's index is the empty shell's: IndexFollower is refused, as a plain table's
    // index is by CitusIndexFollower.
    await assert.rejects(IndexFollower.open(follow, index), { code: "0A000" });
    await admin.query(`CREATE TABLE plain_${suffix} (email text); CREATE INDEX plain_${suffix}_bloom ON plain_${suffix} USING bloomfilter (email)`);
    try {
      await assert.rejects(CitusIndexFollower.open(COORDINATOR, `plain_${suffix}_bloom`), { code: "0A000" });
    } finally {
      await admin.query(`DROP TABLE plain_${suffix}`);
    }
  });

  test("a shard moved under 4 writers: every row committed before lag ms ago found throughout", async (t) => {
    const follower = await CitusIndexFollower.open(follow, index, { interval: 50, shardsInterval: 200 });
    const changes = [];
    follower.on("shards", (change) => changes.push(change));
    const committed = []; // [key, when its COMMIT returned]
    let checks = 0, misses = 0, stop = false, writing = true;
    const checker = (async () => {
      while (!stop) {
        await sleep(5);
        const asOf = performance.now() - follower.lag;
        for (const [key, at] of committed) {
          if (at >= asOf) continue;
          checks += 1;
          if (!follower.contains(key)) misses += 1;
        }
      }
    })();
    const writers = Array.from({ length: 4 }, async (_, w) => {
      const client = new pg.Client({ connectionString: COORDINATOR });
      await client.connect();
      for (let i = 0; writing; i++) {
        const key = `m${w}-${i}@mail.com`;
        await client.query(`INSERT INTO ${table} VALUES ($1)`, [key]);
        committed.push([key, performance.now()]);
      }
      await client.end();
    });
    let moved, from, to;
    try {
      await sleep(500);
      const { rows: [shard] } = await admin.query(`SELECT shardid::int8::text AS shard, nodename, nodeport
        FROM citus_shards WHERE table_name = $1::regclass ORDER BY shardid LIMIT 1`, [table]);
      const { rows: [target] } = await admin.query(`SELECT nodename, nodeport FROM pg_dist_node
        WHERE isactive AND noderole = 'primary' AND shouldhaveshards AND (nodename, nodeport) <> ($1, $2)
        ORDER BY nodeport LIMIT 1`, [shard.nodename, shard.nodeport]);
      [moved, from, to] = [Number(shard.shard), `${shard.nodename}:${shard.nodeport}`, `${target.nodename}:${target.nodeport}`];
      const started = performance.now();
      await admin.query(`SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode := 'block_writes')`,
        [moved, shard.nodename, shard.nodeport, target.nodename, target.nodeport]);
      t.diagnostic(`shard ${moved} moved from ${from} to ${to} (block_writes) in ${Math.round(performance.now() - started)} ms, `
        + `${committed.length} rows written by then`);
      for (let i = 0; i < 100 && !listed(follower).includes(`${moved} ${to}`); i++) await sleep(100);
      await sleep(500);
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    try {
      // Until every commit is older than the copy.
      const last = Math.max(...committed.map(([, at]) => at));
      for (let i = 0; i < 200 && !(performance.now() - follower.lag > last); i++) await sleep(25);
      stop = true;
      await checker;
      t.diagnostic(`${checks} checks of ${committed.length} rows written, ${misses} missed; ${follower.stats().listings} listings`);
      assert.equal(misses, 0, `${misses} of ${checks} checks missed a committed row`);
      assert.ok(checks > 1000 && committed.length > 100, `${checks} checks of ${committed.length} rows`);
      assert.deepEqual(listed(follower), (await placements()).sort());
      assert.ok(listed(follower).includes(`${moved} ${to}`), `shard ${moved} followed on ${to}`);
      const node = (address) => follower.nodes.find((n) => `${n.host}:${n.port}` === address)?.follower;
      assert.ok(node(to).indexNames.includes(`${index}_${moved}`), `${to} follows ${index}_${moved}`);
      assert.ok(!(node(from)?.indexNames ?? []).includes(`${index}_${moved}`), `${from} no longer follows it`);
      // The "shards" events: the new placement added, the old one removed (in one listing, or the
      // new one listed first).
      const named = (list) => list.map((p) => `${p.shardId} ${p.host}:${p.port}`);
      assert.deepEqual([changes.flatMap((c) => named(c.added)), changes.flatMap((c) => named(c.removed))],
        [[`${moved} ${to}`], [`${moved} ${from}`]]);
      // The old placement dropped: nothing it held is missing, and the refreshes go on.
      await admin.query("CALL citus_cleanup_orphaned_resources()");
      await follower.refresh();
      const keys = [...emails(1, ROWS), ...committed.map(([key]) => key)];
      assert.equal(follower.containsMany(keys).filter((f) => !f).length, 0, `no false negative among ${keys.length} rows`);
      const stats = follower.stats();
      assert.ok(stats.listings > 3 && stats.listingErrors === 0, `${stats.listings} listings, ${stats.listingErrors} failed`);
    } finally {
      stop = true;
      await checker;
      await follower.close();
    }
  });

  test("maxLag: the listing's age counts; stale, then fresh", async () => {
    await assert.rejects(CitusIndexFollower.open(follow, index, { shardsInterval: 1000, maxLag: 1000 }), RangeError);
    const follower = await CitusIndexFollower.open(follow, index, { start: false, shardsInterval: 100, maxLag: 400 });
    const absent = "nobody@example.org";
    // Listened for first: the timer may fire while the nodes refresh, on a busy machine.
    const stale = once(follower, "stale");
    try {
      assert.equal(follower.contains(absent), false);
      await sleep(300);
      // The nodes refreshed, the listing not: past maxLag, every answer is "maybe".
      await Promise.all(follower.nodes.map((n) => n.follower.refresh()));
      await sleep(150);
      assert.ok(follower.lag > 400 && follower.nodes.every((n) => n.follower.lag < follower.lag));
      assert.equal(follower.contains(absent), true);
      assert.deepEqual(follower.containsMany([absent, absent]), [true, true]);
      assert.equal((await stale)[0].maxLag, 400);
      assert.equal(follower.stats().stale, true);
      const fresh = once(follower, "fresh");
      await follower.refreshShards();
      assert.ok((await fresh)[0].staleFor > 0);
      assert.equal(follower.contains(absent), false);
    } finally {
      await follower.close();
    }
  });

  test("t/015_citus.pl's users, after its shard move: every email found", async (t) => {
    const { rows: [{ present }] } = await admin.query("SELECT to_regclass('users_email_bloom') IS NOT NULL AS present");
    if (!present) return t.skip("no users_email_bloom: not run by t/015_citus.pl");
    const follower = await CitusIndexFollower.open(COORDINATOR, "users_email_bloom", { start: false });
    try {
      const { rows } = await admin.query("SELECT email FROM users");
      const keys = rows.map((r) => r.email);
      assert.ok(keys.length >= 10000, `${keys.length} emails`);
      assert.equal(follower.containsMany(keys).filter((f) => !f).length, 0, `no false negative among ${keys.length} emails`);
      assert.equal(follower.shards.length, 8);
    } finally {
      await follower.close();
    }
  });
});
