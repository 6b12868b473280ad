// Layered values (format version 3) against a server: the golden vectors' answers and
// bloom_info equal to the server's, a grown index's bloom_index_filter read here, and an
// IndexFollower that follows an index while it grows by layers, never answering "absent" for a
// key committed before its last refresh.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Filter, FORMAT_VERSION_LAYERED, IndexFollower } from "pg-bloomfilter";
import { HAVE_SERVER, createDatabase, sleep } from "./helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../../../test/vectors/golden.json", import.meta.url), "utf8")
  .replace(/"bloom_hash": (-?\d+)/g, '"bloom_hash": "$1"'));

describe("layered values", { skip: !HAVE_SERVER && "no server: set PGHOST (test/run-node.sh does)" }, () => {
  let db, conn;
  before(async () => {
    db = await createDatabase("bloomfilter_node_layered");
    conn = await db.client();
  });
  after(async () => {
    await conn?.end();
    await db?.drop();
  });

  async function grownTable(capacity = 1000) {
    const table = `grown_${randomBytes(5).toString("hex")}`;
    await conn.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, email text NOT NULL)`);
    await conn.query(`CREATE INDEX ${table}_bloom ON ${table} USING bloomfilter (email)
                        WITH (capacity = ${capacity}, error_rate = 0.01, expansion = 2)`);
    return [table, `${table}_bloom`];
  }

  async function layerCount(client, index) {
    const { rows: [row] } = await client.query({ text: "SELECT count(*)::int AS n FROM bloom_index_layers($1)", values: [index] });
    return row.n;
  }

  test("the golden layered values answer as the server", async () => {
    for (const spec of VECTORS.layered) {
      const data = Buffer.from(spec.bytes, "hex");
      const f = Filter.fromBytes(data);
      const keys = [...VECTORS.keys.filter((k) => k.type === "text").map((k) => k.key), ...spec.absent.map(([key]) => key)];
      const { rows: [row] } = await conn.query({ text: "SELECT bloom_contains($1::bytea::bloom, $2::text[]) AS answers", values: [data, keys] });
      assert.deepEqual(row.answers, f.containsMany(keys));
      const { rows: [info] } = await conn.query({ text: "SELECT (bloom_info($1::bytea::bloom)).*", values: [data] });
      const mine = f.info();
      assert.deepEqual(
        [Number(info.capacity), info.error_rate, Number(info.bits), info.hashes, Number(info.bytes), Number(info.inserted),
          Number(info.bits_set), info.fill, info.estimated_count, info.estimated_error_rate],
        [mine.capacity, mine.errorRate, mine.bits, mine.hashes, mine.bytes, mine.inserted, mine.bitsSet, mine.fill,
          mine.estimatedCount, mine.estimatedErrorRate]);
      assert.deepEqual(JSON.parse(JSON.stringify(mine)), { ...mine }); // JSON-safe, hashes null
    }
  });

  test("a grown index's bloom_index_filter, read here", async () => {
    const [table, index] = await grownTable();
    await conn.query(`INSERT INTO ${table} (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i`);
    const layers = await layerCount(conn, index);
    assert.ok(layers >= 4, `${layers} layers`);
    const { rows: [row] } = await conn.query({ text: "SELECT bloom_index_filter($1)::bytea AS b", values: [index] });
    const f = Filter.fromBytes(row.b);
    assert.equal(f.version, FORMAT_VERSION_LAYERED);
    assert.equal(f.layers.length, layers);
    const { rows } = await conn.query({ text: "SELECT capacity, error_rate FROM bloom_index_layers($1) ORDER BY layer", values: [index] });
    assert.deepEqual(f.layers.map((l) => [l.capacity, l.errorRate]), rows.map((r) => [Number(r.capacity), r.error_rate]));
    const keys = Array.from({ length: 20000 }, (_, i) => `user${i + 1}@mail.com`);
    assert.ok(f.containsMany(keys).every(Boolean));
    assert.ok(keys.every((key) => f.contains(key)));
    const ghosts = Array.from({ length: 100000 }, (_, i) => `ghost${i}@mail.com`);
    const falsePositives = f.containsMany(ghosts).filter(Boolean).length;
    assert.ok(falsePositives < 1150, `${falsePositives} false positives in 100,000`);
  });

  test("a follower while the index grows: no committed key answered absent after a refresh", async () => {
    const [table, index] = await grownTable(500);
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    const committed = [];
    let done = false;
    const writer = (async () => {
      const client = await db.client();
      try {
        for (let batch = 0; ; batch++) {
          const keys = Array.from({ length: 250 }, (_, i) => `w${batch}.${i}@mail.com`);
          await client.query({ text: `INSERT INTO ${table} (email) SELECT unnest($1::text[])`, values: [keys] });
          committed.push(...keys);
          if (batch % 8 === 7 && (await layerCount(client, index)) >= 6) break;
          await sleep(2);
        }
      } finally {
        done = true;
        await client.end();
      }
    })();
    const layersSeen = new Set();
    let refreshes = 0, checked = 0;
    const missed = [];
    try {
      assert.equal(follower.filters[0].layers.length, 1);
      const deadline = performance.now() + 120000;
      while (!done && performance.now() < deadline) {
        const before = committed.length; // committed before this refresh starts
        await follower.refresh();
        refreshes += 1;
        layersSeen.add(follower.filters[0].layers.length);
        const keys = committed.slice(0, before);
        follower.containsMany(keys).forEach((present, i) => { if (!present) missed.push(keys[i]); });
        checked += keys.length;
      }
      await writer;
      await follower.refresh();
      follower.containsMany(committed).forEach((present, i) => { if (!present) missed.push(committed[i]); });
      const layers = await layerCount(conn, index);
      assert.deepEqual(missed, [], `${missed.length} committed keys answered absent`);
      assert.ok(layers >= 6 && follower.filters[0].layers.length === layers, `${layers} layers`);
      assert.ok(layersSeen.size >= 4, `layers seen ${[...layersSeen]}`);
      assert.ok(follower.reloads >= layersSeen.size, `${follower.reloads} reloads`);
      assert.ok(follower.refreshes > follower.reloads);
      const { rows: [row] } = await conn.query({ text: "SELECT bloom_index_filter($1)::bytea AS b", values: [index] });
      assert.ok(follower.filters[0].toBytes().equals(row.b));
      // stats() counts a grown index too, as bloom_index_info does over its layers.
      const [usage] = follower.stats().indexes;
      const { rows: [info] } = await conn.query({ text: "SELECT (bloom_index_info($1)).*", values: [index] });
      assert.equal(usage?.index, index);
      assert.equal(usage.capacity, Number(info.capacity));
      assert.ok(Math.abs(usage.estimatedCount - Number(info.estimated_count)) <= 1e-6 * Number(info.estimated_count) + 1,
        `estimatedCount ${usage.estimatedCount}, bloom_index_info ${info.estimated_count}`);
      assert.equal(usage.needsRebuild, false);
      console.log(`# ${refreshes} refreshes, ${follower.reloads} reloads, layers seen ${[...layersSeen].sort((a, b) => a - b)}, `
        + `${checked} keys checked, ${committed.length} committed`);
    } finally {
      await follower.close();
    }
  });
  test("reload reasons: a layer added is \"grown\", REINDEX \"rebuilt\"; stats() sums the layers", async () => {
    const [table, index] = await grownTable(500);
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    const reasons = [];
    follower.on("reload", (info) => reasons.push(info.reason));
    const checkStats = async () => {
      const [usage] = follower.stats().indexes;
      const { rows: [info] } = await conn.query({ text: "SELECT (bloom_index_info($1)).*", values: [index] });
      assert.equal(usage.capacity, Number(info.capacity));
      assert.ok(Math.abs(usage.estimatedCount - info.estimated_count) <= 1e-9 * info.estimated_count,
        `estimatedCount ${usage.estimatedCount}, bloom_index_info ${info.estimated_count}`);
    };
    try {
      await conn.query(`INSERT INTO ${table} (email) SELECT 'g' || i || '@mail.com' FROM generate_series(1, 2000) i`);
      assert.ok((await layerCount(conn, index)) >= 3);
      await follower.refresh();
      assert.deepEqual(reasons, ["grown"]);
      await checkStats();
      await conn.query(`REINDEX INDEX ${index}`);
      await follower.refresh();
      await conn.query(`REINDEX INDEX CONCURRENTLY ${index}`);
      await follower.refresh();
      assert.deepEqual(reasons, ["grown", "rebuilt", "rebuilt"]);
      await checkStats();
      assert.ok(follower.containsMany(Array.from({ length: 2000 }, (_, i) => `g${i + 1}@mail.com`)).every(Boolean));
    } finally {
      await follower.close();
    }
  });
});
