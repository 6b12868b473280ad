// IndexFollower against a server: it finds every row committed before its last refresh, under 8
// concurrent writers, through a dropped connection and REINDEX CONCURRENTLY; costs one query per
// index when nothing changed; applies lower(); answers "maybe" past maxLag; and answers several
// indexes as their union.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { IndexFollower, ShardedIndexFollower, UnsupportedIndexError, Uuid } from "pg-bloomfilter";
import { HAVE_SERVER, createDatabase, sleep } from "./helpers.mjs";

const INTERVAL = 50;

describe("IndexFollower", { skip: !HAVE_SERVER && "no server: set PGHOST (test/run-node.sh does)" }, () => {
  let db, conn;
  before(async () => {
    db = await createDatabase("bloomfilter_node_follow");
    conn = await db.client();
  });
  after(async () => {
    await conn?.end();
    await db?.drop();
  });

  async function makeTable({ expression = "email", capacity = 200000, errorRate = 0.01, columnType = "text" } = {}) {
    const table = `users_${randomBytes(5).toString("hex")}`;
    await conn.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, email ${columnType} NOT NULL)`);
    await conn.query(`CREATE INDEX ${table}_bloom ON ${table} USING bloomfilter (${expression})
                        WITH (capacity = ${capacity}, error_rate = ${errorRate})`);
    return [table, `${table}_bloom`];
  }

  test("follows inserts; one query and no filter bytes when nothing changed", async () => {
    const [table, index] = await makeTable();
    await conn.query(`INSERT INTO ${table} (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 5000) i`);
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    try {
      for (let i = 1; i <= 5000; i++) assert.ok(follower.contains(`user${i}@mail.com`));
      let ghosts = 0;
      for (let i = 0; i < 5000; i++) ghosts += follower.contains(`ghost${i}@mail.com`) ? 1 : 0;
      assert.ok(ghosts < 100, `${ghosts} false positives`);
      const { rows: [row] } = await conn.query({ text: "SELECT bloom_index_filter($1)::bytea AS b", values: [index] });
      assert.ok(follower.filters[0].toBytes().equals(row.b));
      const queries = follower.queries;
      await follower.refresh();
      assert.equal(follower.queries, queries + 1);
      assert.deepEqual([follower.lastRows, follower.lastBytes], [1, 36]);
      await conn.query(`INSERT INTO ${table} (email) VALUES ('new@mail.com')`);
      assert.equal(follower.contains("new@mail.com"), false);
      await follower.refresh();
      assert.equal(follower.contains("new@mail.com"), true);
      assert.equal(follower.reloads, 1);
      assert.throws(() => follower.contains(42), TypeError);
    } finally {
      await follower.close();
    }
  });

  test("8 concurrent writers: every row committed before the last refresh is found", async () => {
    const [table, index] = await makeTable();
    const follower = await IndexFollower.open(() => db.client(), index, { interval: INTERVAL });
    const committed = []; // [key, time the COMMIT returned]
    let checks = 0, misses = 0, stop = false;
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
    const writers = Array.from({ length: 8 }, async (_, w) => {
      const client = await db.client();
      for (let i = 0; i < 150; i++) {
        const key = `w${w}-${i}@mail.com`;
        await client.query(`INSERT INTO ${table} (email) VALUES ($1)`, [key]);
        committed.push([key, performance.now()]);
      }
      await client.end();
    });
    await Promise.all(writers);
    await sleep(3 * INTERVAL);
    stop = true;
    await checker;
    try {
      assert.equal(misses, 0, `${misses} of ${checks} checks missed a committed row`);
      assert.ok(checks > 1000, `${checks} checks`);
      assert.ok(follower.refreshes > 5, `${follower.refreshes} refreshes`);
      for (const [key] of committed) assert.ok(follower.contains(key), key);
      assert.ok(follower.lag < 10 * INTERVAL, `lag ${follower.lag}`);
    } finally {
      await follower.close();
    }
  });

  test("a dropped connection: reconnects, reloads, misses nothing", async () => {
    const [table, index] = await makeTable();
    await conn.query(`INSERT INTO ${table} (email) VALUES ('before@mail.com')`);
    const first = await db.client();
    const follower = await IndexFollower.open(first, index, { interval: INTERVAL });
    try {
      assert.ok(follower.contains("before@mail.com"));
      const pid = follower.backendPid;
      await conn.query("SELECT pg_terminate_backend($1)", [pid]);
      await conn.query(`INSERT INTO ${table} (email) VALUES ('after@mail.com')`);
      const insertedAt = performance.now();
      for (let i = 0; i < 100 && !(follower.lag < performance.now() - insertedAt && follower.reconnects >= 1); i++) {
        await sleep(INTERVAL);
      }
      assert.ok(follower.reconnects >= 1, `${follower.reconnects} new connections; last error: ${follower.lastError}`);
      assert.notEqual(follower.backendPid, pid);
      assert.ok(follower.reloads >= 2, `${follower.reloads} loads`);
      assert.ok(follower.contains("after@mail.com"));
      assert.ok(follower.contains("before@mail.com"));
    } finally {
      await follower.close();
    }
  });

  test("REINDEX CONCURRENTLY under writers, and a rebuild with new parameters", async () => {
    const [table, index] = await makeTable({ capacity: 20000 });
    const follower = await IndexFollower.open(() => db.client(), index, { interval: INTERVAL });
    const committed = [];
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      const client = await db.client();
      for (let i = 0; writing; i++) {
        const key = `r${w}-${i}@mail.com`;
        await client.query(`INSERT INTO ${table} (email) VALUES ($1)`, [key]);
        committed.push([key, performance.now()]);
      }
      await client.end();
    });
    try {
      await sleep(200);
      const { rows: [{ oid: before }] } = await conn.query({ text: "SELECT $1::regclass::oid AS oid", values: [index] });
      await conn.query(`REINDEX INDEX CONCURRENTLY ${index}`);
      await sleep(200);
      await conn.query(`DROP INDEX ${index}`);
      await conn.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (email) WITH (capacity = 50000, error_rate = 0.001)`);
      await sleep(200);
      writing = false;
      await Promise.all(writers);
      const { rows: [{ oid: now }] } = await conn.query({ text: "SELECT $1::regclass::oid AS oid", values: [index] });
      assert.notEqual(now, before);
      await follower.refresh();
      assert.ok(follower.reloads >= 3, `${follower.reloads} loads`);
      assert.equal(follower.filters[0].capacity, 50000);
      const missing = committed.filter(([key]) => !follower.contains(key));
      assert.equal(missing.length, 0, `${missing.length} of ${committed.length} missing`);
      assert.ok(committed.length > 100, `${committed.length} rows`);
    } finally {
      writing = false;
      await follower.close();
    }
  });

  test("lower(email): applied where certain, maybe elsewhere", async () => {
    const [table, index] = await makeTable({ expression: "lower(email)" });
    await conn.query(`INSERT INTO ${table} (email) VALUES ('Alice@Mail.com'), ('ÉMILE@mail.com')`);
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    try {
      assert.ok(follower.contains("ALICE@mail.COM"));
      assert.ok(follower.contains("alice@mail.com"));
      assert.equal(follower.contains("bob@mail.com"), false);
      // C.UTF-8 is not the C ctype: a non-ASCII key is lowered by the server's tables, "maybe" here.
      assert.equal(follower.contains("Ünknown@mail.com"), true);
      assert.throws(() => follower.contains(Buffer.from("x")), TypeError);
    } finally {
      await follower.close();
    }
    const [ctable, cindex] = await makeTable({ expression: "lower(email)", columnType: 'text COLLATE "C"' });
    await conn.query(`INSERT INTO ${ctable} (email) VALUES ('ÉMILE@Mail.com')`);
    const c = await IndexFollower.open(() => db.client(), cindex, { start: false });
    try {
      // Under the C ctype lower() changes ASCII letters only.
      assert.ok(c.contains("ÉMILE@MAIL.COM"));
      assert.equal(c.contains("émile@mail.com"), false);
    } finally {
      await c.close();
    }
  });

  test("key types, unsupported indexes, maxLag, several indexes as a union", async () => {
    const [bigTable, bigIndex] = await makeTable({ columnType: "bigint" });
    await conn.query(`INSERT INTO ${bigTable} (email) VALUES (-9223372036854775808), (42)`);
    const [uuidTable, uuidIndex] = await makeTable({ columnType: "uuid" });
    await conn.query(`INSERT INTO ${uuidTable} (email) VALUES ('123e4567-e89b-12d3-a456-426614174000')`);
    // Domains (over domains) have their base type's keys, lower() included.
    await conn.query("CREATE DOMAIN email_d AS text; CREATE DOMAIN email_dd AS email_d CHECK (VALUE <> '')");
    const [domTable, domIndex] = await makeTable({ expression: "lower(email)", columnType: "email_dd" });
    await conn.query(`INSERT INTO ${domTable} (email) VALUES ('Dom@Mail.com')`);
    const dom = await IndexFollower.open(() => db.client(), domIndex, { start: false });
    try {
      assert.ok(dom.contains("DOM@mail.com"));
      assert.equal(dom.contains("other@mail.com"), false);
    } finally {
      await dom.close();
    }
    const big = await IndexFollower.open(() => db.client(), bigIndex, { start: false, maxLag: 300 });
    const uuid = await IndexFollower.open(() => db.client(), uuidIndex, { start: false });
    try {
      assert.ok(big.contains(-9223372036854775808n) && big.contains(42) && big.contains("42"));
      assert.equal(big.contains(43), false);
      assert.ok(uuid.contains("123E4567-E89B-12D3-A456-426614174000"));
      assert.ok(uuid.contains(new Uuid("123e4567e89b12d3a456426614174000")));
      assert.equal(uuid.contains("00000000-0000-0000-0000-000000000000"), false);
      // Stale past maxLag: every answer is "maybe".
      await sleep(350);
      assert.equal(big.contains(43), true);
      await big.refresh();
      assert.equal(big.contains(43), false);
    } finally {
      await big.close();
      await uuid.close();
    }
    await conn.query("CREATE TABLE plain (email text)");
    await conn.query("CREATE INDEX plain_btree ON plain (email)");
    await assert.rejects(IndexFollower.open(() => db.client(), "plain_btree"), UnsupportedIndexError);
    const [, exprIndex] = await makeTable({ expression: "upper(email)" });
    await assert.rejects(IndexFollower.open(() => db.client(), exprIndex), UnsupportedIndexError);
    // Shards: a partitioned table's partitions, followed together.
    await conn.query(`CREATE TABLE sharded (email text NOT NULL) PARTITION BY HASH (email);
      CREATE TABLE sharded_0 PARTITION OF sharded FOR VALUES WITH (MODULUS 2, REMAINDER 0);
      CREATE TABLE sharded_1 PARTITION OF sharded FOR VALUES WITH (MODULUS 2, REMAINDER 1);
      CREATE INDEX sharded_bloom ON sharded USING bloomfilter (email) WITH (capacity = 10000, error_rate = 0.01);`);
    await assert.rejects(IndexFollower.open(() => db.client(), "sharded_bloom"), /partitioned index/);
    const { rows } = await conn.query(`SELECT indexrelid::regclass::text AS name FROM pg_index
      WHERE indrelid IN ('sharded_0'::regclass, 'sharded_1'::regclass) ORDER BY 1`);
    const shards = await IndexFollower.open(() => db.client(), rows.map((r) => r.name), { start: false });
    try {
      await conn.query("INSERT INTO sharded SELECT 's' || i || '@mail.com' FROM generate_series(1, 2000) i");
      await shards.refresh();
      const counts = await conn.query("SELECT count(*)::int AS n FROM sharded_0");
      assert.ok(counts.rows[0].n > 500 && counts.rows[0].n < 1500);
      for (let i = 1; i <= 2000; i++) assert.ok(shards.contains(`s${i}@mail.com`), `s${i}`);
      assert.equal(shards.filters.length, 2);
    } finally {
      await shards.close();
    }
  });

  test("ShardedIndexFollower: the same index on several servers, answered as their union", async () => {
    // Two databases stand for two servers: each shard has its own connections.
    const other = await createDatabase("bloomfilter_node_shard");
    const shards = [db, other];
    const conns = await Promise.all(shards.map((d) => d.client()));
    try {
      for (const c of conns) {
        await c.query("CREATE TABLE signups (email text NOT NULL)");
        await c.query("CREATE INDEX signups_bloom ON signups USING bloomfilter (email) WITH (capacity = 10000, error_rate = 0.01)");
      }
      const follower = await ShardedIndexFollower.open(shards.map((d) => () => d.client()), "signups_bloom",
        { start: false, maxLag: 400 });
      try {
        await conns[0].query("INSERT INTO signups SELECT 'a' || i || '@mail.com' FROM generate_series(1, 1000) i");
        await conns[1].query("INSERT INTO signups SELECT 'b' || i || '@mail.com' FROM generate_series(1, 1000) i");
        assert.equal(follower.contains("a1@mail.com") || follower.contains("b1@mail.com"), false);
        await follower.refresh();
        for (let i = 1; i <= 1000; i++) {
          assert.ok(follower.contains(`a${i}@mail.com`) && follower.contains(`b${i}@mail.com`), `key ${i}`);
        }
        let ghosts = 0, absent = null;
        for (let i = 0; i < 2000; i++) {
          if (follower.contains(`c${i}@mail.com`)) ghosts += 1;
          else absent ??= `c${i}@mail.com`;
        }
        assert.ok(ghosts < 100, `${ghosts} false positives`);
        assert.ok(follower.isFresh());
        // One shard stale past maxLag: every answer is "maybe".
        await sleep(300);
        await follower.followers[0].refresh();
        await sleep(150);
        assert.ok(!follower.isFresh() && follower.lag > 400);
        assert.equal(follower.contains(absent), true);
      } finally {
        await follower.close();
      }
    } finally {
      await Promise.all(conns.map((c) => c.end()));
      await other.drop();
    }
  });
});
