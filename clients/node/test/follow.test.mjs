// IndexFollower against a server: it finds every row committed before its last refresh, under 8
// concurrent writers, through a dropped connection and REINDEX CONCURRENTLY; costs one query per
// index when nothing changed; applies lower(); answers "maybe" past maxLag; answers several
// indexes as their union, or one of them (index(); 4 on one connection under a writer each);
// follow() changes the indexes; containsMany answers as contains; its events, stats() and the
// extension's version.
import { once } from "node:events";
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

  // Of fixed size (expansion = 0): one filter, whose capacity stats() and "capacity" watch
  // (a followed layered index: test/layered.test.mjs).
  async function makeTable({ expression = "email", capacity = 200000, errorRate = 0.01, columnType = "text" } = {}) {
    const table = `users_${randomBytes(5).toString("hex")}`;
    await conn.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, email ${columnType} NOT NULL)`);
    await conn.query(`CREATE INDEX ${table}_bloom ON ${table} USING bloomfilter (${expression})
                        WITH (capacity = ${capacity}, error_rate = ${errorRate}, expansion = 0)`);
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

  test("4 indexes on one connection, a writer a table: each index finds its committed rows", async () => {
    // bench/node_client.sh measures this follower's lag; here, no row committed before the last
    // refresh began is answered absent by its index's answerer, on one server process.
    const tables = [];
    for (let n = 0; n < 4; n++) tables.push(await makeTable());
    const follower = await IndexFollower.open(() => db.client(), tables.map(([, index]) => index), { interval: INTERVAL });
    const answerers = tables.map(([, index]) => follower.index(index));
    const committed = []; // [table number, key, time the COMMIT returned]
    let checks = 0, misses = 0, stop = false;
    const backend = follower.backendPid;
    const checker = (async () => {
      while (!stop) {
        await sleep(5);
        const asOf = performance.now() - follower.lag;
        for (const [n, key, at] of committed) {
          if (at >= asOf) continue;
          checks += 1;
          if (!answerers[n].contains(key)) misses += 1;
        }
      }
    })();
    const writers = tables.map(async ([table], n) => {
      const client = await db.client();
      for (let i = 0; i < 150; i++) {
        const key = `${table}-${i}@mail.com`;
        await client.query(`INSERT INTO ${table} (email) VALUES ($1)`, [key]);
        committed.push([n, key, performance.now()]);
        await sleep(2); // several refreshes while they write
      }
      await client.end();
    });
    try {
      await Promise.all(writers);
      await sleep(3 * INTERVAL);
      stop = true;
      await checker;
      assert.equal(misses, 0, `${misses} of ${checks} checks missed a committed row`);
      assert.ok(checks > 1000, `${checks} checks`);
      for (const [n, key] of committed) assert.ok(answerers[n].contains(key), key);
      // Each answers for its own table: another's keys are mostly absent.
      const others = committed.filter(([n, key]) => answerers[(n + 1) % 4].contains(key)).length;
      assert.ok(others < 0.05 * committed.length, `${others} keys found in another table's index`);
      assert.equal(follower.backendPid, backend);
      assert.equal(follower.reconnects, 1);
      assert.ok(follower.refreshes > 5, `${follower.refreshes} refreshes`);
      assert.equal(follower.queries >= 4 * follower.refreshes, true);
    } finally {
      stop = true;
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
      await big.refresh();  // maxLag's 300 ms from here, not from before uuid's opening
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
    // A multicolumn index with an expression column other than lower() of a text column.
    await conn.query("CREATE INDEX plain_pair ON plain USING bloomfilter (email, upper(email))");
    await assert.rejects(IndexFollower.open(() => db.client(), "plain_pair"), /key column 2 has the key expression upper/);
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

  test("containsMany: the answers of contains for every key type, one check of the copy's age per call", async () => {
    const [table, index] = await makeTable();
    await conn.query(`INSERT INTO ${table} (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 3000) i`);
    const [lowerTable, lowerIndex] = await makeTable({ expression: "lower(email)" });
    await conn.query(`INSERT INTO ${lowerTable} (email) SELECT 'User' || i || '@Mail.com' FROM generate_series(1, 500) i`);
    const [bigTable, bigIndex] = await makeTable({ columnType: "bigint" });
    await conn.query(`INSERT INTO ${bigTable} (email) SELECT i * 7 FROM generate_series(1, 500) i`);
    const [uuidTable, uuidIndex] = await makeTable({ columnType: "uuid" });
    await conn.query(`INSERT INTO ${uuidTable} (email) SELECT md5(i::text)::uuid FROM generate_series(1, 500) i`);
    const text = await IndexFollower.open(() => db.client(), index, { start: false, maxLag: 300 });
    const lower = await IndexFollower.open(() => db.client(), lowerIndex, { start: false });
    const big = await IndexFollower.open(() => db.client(), bigIndex, { start: false });
    const uuid = await IndexFollower.open(() => db.client(), uuidIndex, { start: false });
    // Two indexes answered as their union: each asked only for the keys the one before said no to.
    const union = await IndexFollower.open(() => db.client(), [index, lowerIndex], { start: false });
    try {
      const same = (follower, keys) => assert.deepEqual(follower.containsMany(keys), keys.map((k) => follower.contains(k)));
      const emails = Array.from({ length: 6000 }, (_, i) => `user${i}@mail.com`);
      // maxLag's 300 ms from a refresh, not from the opening: on a slow machine the openings
      // above take longer, and past maxLag every answer is "maybe".
      await text.refresh();
      same(text, emails);
      assert.equal(text.containsMany(emails).filter(Boolean).length >= 3000, true);
      // Non-ASCII keys of a lower() index under C.UTF-8 answer "maybe", in a batch too.
      const mixedCase = Array.from({ length: 1500 }, (_, i) => [`USER${i}@mail.com`, `user${i}@MAIL.COM`, `Ünknown${i}@mail.com`][i % 3]);
      same(lower, mixedCase);
      assert.ok(lower.containsMany(["Ünknown@mail.com"])[0]);
      same(union, [...emails.slice(0, 500), ...mixedCase]);
      const numbers = Array.from({ length: 1000 }, (_, i) => [i, BigInt(i), String(i)][i % 3]);
      same(big, numbers);
      const { rows } = await conn.query("SELECT md5(i::text)::uuid::text AS u FROM generate_series(1, 1000) i");
      same(uuid, rows.flatMap((r, i) => (i % 2 ? [r.u] : [new Uuid(r.u.toUpperCase())])));
      // A key of another type is refused, as by contains(), within maxLag.
      await text.refresh();
      assert.throws(() => text.containsMany(["a", 42]), TypeError);
      assert.throws(() => lower.containsMany(["a", Buffer.from("x")]), TypeError);
      assert.throws(() => big.containsMany([1, Buffer.from("x")]), TypeError);
      // One reading of the clock for a whole batch, as the age check is once per call.
      // (Node.js 18's performance.now cannot be replaced: there the count is not taken.)
      const checks = text.stats().checks;
      const clock = performance.now;
      let readings = 0, counted = true;
      try {
        performance.now = function () { readings += 1; return clock.call(this); };
      } catch (error) {
        if (!(error instanceof TypeError)) throw error;
        counted = false;
      }
      try {
        text.containsMany(emails);
      } finally {
        if (counted) performance.now = clock;
      }
      if (counted) assert.equal(readings, 1);
      assert.equal(text.stats().checks, checks + emails.length);
      // Past maxLag, every answer is "maybe", as contains() says.
      await sleep(350);
      assert.deepEqual(text.containsMany(["ghost@mail.com", "user1@mail.com"]), [true, true]);
      assert.equal(text.contains("ghost@mail.com"), true);
      await text.refresh();
      assert.deepEqual(text.containsMany(["ghost@mail.com", "user1@mail.com"]), [false, true]);
    } finally {
      await Promise.all([text, lower, big, uuid, union].map((f) => f.close()));
    }
  });

  test("one connection, several unrelated indexes: index(name) answers for one", async () => {
    const [textTable, textIndex] = await makeTable();
    const [bigTable, bigIndex] = await makeTable({ columnType: "bigint" });
    await conn.query(`INSERT INTO ${textTable} (email) VALUES ('a@mail.com')`);
    await conn.query(`INSERT INTO ${bigTable} (email) VALUES (42)`);
    const follower = await IndexFollower.open(() => db.client(), [textIndex, bigIndex], { start: false });
    try {
      const emails = follower.index(textIndex), ids = follower.index([bigIndex]);
      assert.equal(emails.contains("a@mail.com"), true);
      assert.equal(emails.contains("b@mail.com"), false);
      assert.equal(ids.contains(42), true);
      assert.deepEqual(ids.containsMany([42, 43n, "42"]), [true, false, true]);
      assert.throws(() => emails.contains(42), TypeError);
      assert.throws(() => follower.index("no_such_index"), RangeError);
      await conn.query(`INSERT INTO ${bigTable} (email) VALUES (43)`);
      const queries = follower.queries;
      await follower.refresh();
      assert.equal(follower.queries, queries + 2);
      assert.equal(ids.contains(43), true);
      assert.equal(follower.stats().checks, 8);
      // The extension's version, read with the connection.
      const { rows: [row] } = await conn.query("SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter'");
      assert.equal(follower.extensionVersion, row.extversion);
      assert.match(follower.extensionVersion, /^\d+\.\d+/);
    } finally {
      await follower.close();
    }
  });

  test("events: stale and fresh, reload and its reason, a listener that throws; stats()", async () => {
    const [table, index] = await makeTable();
    const opened = Date.now();
    const follower = await IndexFollower.open(() => db.client(), index, { start: false, maxLag: 200 });
    const events = [];
    for (const name of ["stale", "fresh", "reload", "capacity"]) follower.on(name, (e) => events.push([name, e]));
    follower.on("stale", () => { throw new Error("a listener's bug"); });
    let after = 0;
    follower.on("stale", () => { after += 1; });
    const warned = once(process, "warning");
    try {
      let stats = follower.stats();
      assert.ok(stats.lastRefresh >= opened && stats.lastRefresh <= Date.now());
      assert.deepEqual([stats.refreshes, stats.reloads, stats.errors, stats.checks, stats.stale], [1, 1, 0, 0, false]);
      assert.ok(stats.lag >= 0 && stats.lag < 200);
      // No check and no refresh: the copy passes maxLag, and "stale" says so when it does.
      await sleep(300);
      assert.deepEqual(events.map(([name]) => name), ["stale"]);
      assert.ok(events[0][1].lag > 200 && events[0][1].maxLag === 200);
      const [warning] = await warned;
      assert.equal(warning.code, "BLOOMFILTER_LISTENER");
      assert.equal(after, 1);
      assert.equal(follower.stats().listenerErrors, 1);
      assert.ok(follower.stats().stale);
      assert.equal(follower.contains("x@mail.com"), true);
      await follower.refresh();
      assert.equal(events[1][0], "fresh");
      assert.ok(events[1][1].staleFor >= 80);
      assert.equal(follower.contains("x@mail.com"), false);
      // Stale again: one "stale", however many checks see it (and never inside a check).
      await sleep(210);
      assert.equal(follower.contains("x@mail.com"), true);
      assert.equal(follower.contains("x@mail.com"), true);
      await sleep(20);
      assert.deepEqual(events.map(([name]) => name), ["stale", "fresh", "stale"]);
      await follower.reload();
      assert.deepEqual(events.slice(3).map(([name, e]) => [name, e.reason ?? null]), [["reload", "requested"], ["fresh", null]]);
      assert.equal(events[3][1].index, index);
      assert.ok(events[3][1].bytes > 36 && events[3][1].rows >= 1);
      // A new connection reads the filter whole: "reconnect". (The refresh that finds the
      // connection gone fails, when the driver has not said so before.)
      const reloads = () => events.filter(([name]) => name === "reload").map(([, e]) => e.reason);
      let failures = 0;
      await conn.query("SELECT pg_terminate_backend($1)", [follower.backendPid]);
      await sleep(50);
      await follower.refresh().catch(async () => { failures += 1; await follower.refresh(); });
      assert.deepEqual(reloads(), ["requested", "reconnect"]);
      // A failed refresh counts as an error; the index made again is read whole: "rebuilt".
      await conn.query(`DROP INDEX ${index}`);
      await assert.rejects(follower.refresh());
      await conn.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (email) WITH (capacity = 1000, error_rate = 0.01)`);
      await follower.refresh();
      assert.deepEqual(reloads(), ["requested", "reconnect", "rebuilt"]);
      stats = follower.stats();
      assert.equal(stats.errors, failures + 1);
      assert.equal(stats.refreshes, 5);
      assert.equal(stats.reloads, 4);
      assert.equal(stats.checks, 4);
      assert.equal(follower.contains("x@mail.com"), false);
    } finally {
      await follower.close();
    }
  });

  test("capacity: once the index holds more keys than it was built for, as bloom_index_info says", async () => {
    const [table, index] = await makeTable({ capacity: 1000 });
    await conn.query(`INSERT INTO ${table} (email) SELECT 'c' || i || '@mail.com' FROM generate_series(1, 900) i`);
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    const over = [];
    follower.on("capacity", (e) => over.push(e));
    const serverInfo = async () => (await conn.query({ text: "SELECT * FROM bloom_index_info($1)", values: [index] })).rows[0];
    const sameAsServer = async () => {
      const [ours] = follower.stats().indexes, theirs = await serverInfo();
      assert.equal(ours.index, index);
      assert.ok(Math.abs(ours.estimatedCount - theirs.estimated_count) <= 1e-9 * theirs.estimated_count, `${ours.estimatedCount} / ${theirs.estimated_count}`);
      assert.ok(Math.abs(ours.estimatedErrorRate - theirs.estimated_error_rate) <= 1e-9 * theirs.estimated_error_rate);
      assert.equal(ours.needsRebuild, theirs.needs_rebuild);
      return ours;
    };
    try {
      await follower.refresh();
      assert.equal((await sameAsServer()).needsRebuild, false);
      assert.equal(over.length, 0);
      await conn.query(`INSERT INTO ${table} (email) SELECT 'd' || i || '@mail.com' FROM generate_series(1, 3000) i`);
      await follower.refresh();
      assert.equal((await sameAsServer()).needsRebuild, true);
      assert.equal(over.length, 1);
      assert.equal(over[0].index, index);
      assert.ok(over[0].estimatedCount > 3000 && over[0].capacity === 1000 && over[0].needsRebuild);
      await conn.query(`INSERT INTO ${table} (email) SELECT 'e' || i || '@mail.com' FROM generate_series(1, 100) i`);
      await follower.refresh();
      await follower.reload();
      assert.equal(over.length, 1);
      await sameAsServer();
      // Resized: within capacity again; over it later, said again.
      await conn.query(`ALTER INDEX ${index} SET (capacity = 100000)`);
      await conn.query(`REINDEX INDEX ${index}`);
      await follower.refresh();
      assert.equal((await sameAsServer()).needsRebuild, false);
    } finally {
      await follower.close();
    }
    // Over capacity from the start: told at the first refresh after open().
    await conn.query(`ALTER INDEX ${index} SET (capacity = 100)`);
    await conn.query(`REINDEX INDEX ${index}`);
    const early = await IndexFollower.open(() => db.client(), index, { start: false });
    const told = [];
    try {
      early.on("capacity", (e) => told.push(e));
      assert.equal(early.stats().indexes[0].needsRebuild, true);
      await early.refresh();
      await early.refresh();
      assert.equal(told.length, 1);
    } finally {
      await early.close();
    }
  });

  test("follow(): new indexes loaded before the ones no longer named are forgotten", async () => {
    const [aTable, aIndex] = await makeTable();
    const [bTable, bIndex] = await makeTable();
    await conn.query(`INSERT INTO ${aTable} (email) VALUES ('a@mail.com')`);
    await conn.query(`INSERT INTO ${bTable} (email) VALUES ('b@mail.com')`);
    const follower = await IndexFollower.open(() => db.client(), aIndex, { interval: INTERVAL });
    try {
      const a = follower.index(aIndex);
      assert.deepEqual(follower.containsMany(["a@mail.com", "b@mail.com"]), [true, false]);
      // Loaded while the timer refreshes: then both, in the order named.
      await follower.follow([bIndex, aIndex]);
      assert.deepEqual(follower.indexNames, [bIndex, aIndex]);
      assert.deepEqual(follower.containsMany(["a@mail.com", "b@mail.com"]), [true, true]);
      assert.equal(follower.filters.length, 2);
      assert.equal(a.contains("a@mail.com"), true, "index() answers for its index after follow()");
      assert.equal(follower.index(bIndex).contains("a@mail.com"), false);
      // An index that cannot be loaded: rejected, and the follower follows what it followed.
      await assert.rejects(follower.follow([aIndex, bIndex, "no_such_index"]), /no_such_index/);
      assert.deepEqual(follower.indexNames, [bIndex, aIndex]);
      await conn.query(`INSERT INTO ${bTable} (email) VALUES ('b2@mail.com')`);
      await follower.refresh();
      assert.equal(follower.contains("b2@mail.com"), true);
      // Forgotten: a no longer answers, and index() for it says so.
      const reloads = follower.reloads;
      await follower.follow(bIndex);
      assert.deepEqual(follower.indexNames, [bIndex]);
      assert.deepEqual(follower.containsMany(["a@mail.com", "b@mail.com"]), [false, true]);
      assert.throws(() => a.contains("a@mail.com"), RangeError);
      assert.equal(follower.reloads, reloads, "the index kept is not read again");
      assert.deepEqual(follower.stats().indexes.map((i) => i.index), [bIndex]);
      await follower.refresh();
      assert.equal(follower.errors, 0);
    } finally {
      await follower.close();
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
        const keys = [];
        for (let i = 1; i <= 1000; i++) keys.push(`a${i}@mail.com`, `b${i}@mail.com`, `c${i}@mail.com`);
        const checks = follower.stats().checks;
        assert.deepEqual(follower.containsMany(keys), keys.map((k) => follower.contains(k)));
        assert.equal(follower.stats().checks, checks + 2 * keys.length);
        assert.deepEqual(follower.index("signups_bloom").containsMany(keys.slice(0, 30)), keys.slice(0, 30).map((k) => follower.contains(k)));
        assert.ok(follower.isFresh());
        // One shard stale past maxLag: every answer is "maybe".
        await sleep(300);
        await follower.followers[0].refresh();
        await sleep(150);
        assert.ok(!follower.isFresh() && follower.lag > 400);
        assert.equal(follower.contains(absent), true);
        assert.deepEqual(follower.containsMany([absent, absent]), [true, true]);
        assert.ok(follower.stats().stale && follower.stats().shards[1].stale && !follower.stats().shards[0].stale);
      } finally {
        await follower.close();
      }
    } finally {
      await Promise.all(conns.map((c) => c.end()));
      await other.drop();
    }
  });
});
