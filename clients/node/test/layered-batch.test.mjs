// containsMany of a layered value (format version 3, an index that grows): each key hashed once
// and placed in every layer by the WebAssembly module, then tested layer by layer. Its answers are
// those of a loop of contains, key for key: on the golden layered values with their layers' bits
// set at random (any bit pattern is valid), for every key type and batches around the module's
// 1024 keys a call; and on a server, a follower of an index of 1 and of 6 layers and its
// bloom_index_filter, equal to SQL's bloom_index_contains over present and absent keys of every
// key type.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Filter, IndexFollower, Uuid } from "pg-bloomfilter";
import { HAVE_SERVER, TYPES, createDatabase, jsKey } from "./helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../../../test/vectors/golden.json", import.meta.url), "utf8")
  .replace(/"bloom_hash": (-?\d+)/g, '"bloom_hash": "$1"'));

let seed = 12345;
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };

/** The golden layered value `spec` with each bit of its layers' blocks set with probability
 * `density` (its headers kept). */
function randomized(spec, density) {
  const data = Buffer.from(spec.bytes, "hex");
  for (const layer of spec.layers) {
    const start = layer.offset + 36, end = start + layer.blocks * 2 ** (layer.block_log2 - 3);
    for (let i = start; i < end; i++) {
      let byte = 0;
      for (let b = 0; b < 8; b++) if (random() < density) byte |= 1 << b;
      data[i] = byte;
    }
  }
  return Filter.fromBytes(data);
}

const loop = (checker, keys, type) => keys.map((key) => checker.contains(key, type));

describe("containsMany on layered values", () => {
  test("the answers of contains, for every key type and batch size", () => {
    const keys = [];
    for (let i = 0; i < 3000; i++) keys.push(jsKey(TYPES[i % 4], i));
    for (let i = 0; i < 300; i++) keys.push(i, `${i}`, new Uuid(`00000000-0000-0000-0000-${String(i).padStart(12, "0")}`));
    for (const spec of VECTORS.layered) {
      for (const density of [0.5, 0.7, 0.8]) {
        const f = randomized(spec, density);
        assert.equal(f.layers.length, spec.layers.length);
        const expected = loop(f, keys);
        const found = expected.filter(Boolean).length;
        assert.ok(found > 0 && found < keys.length, `${spec.layers.length} layers at ${density}: ${found} found`);
        for (const count of [0, 1, 2, 1023, 1024, 1025, 2048, 2049, keys.length]) {
          assert.deepEqual(f.containsMany(keys.slice(0, count)), expected.slice(0, count), `${count} keys`);
        }
        for (const type of TYPES) {
          const some = Array.from({ length: 1500 }, (_, i) => jsKey(type, i));
          assert.deepEqual(f.containsMany(some, type), loop(f, some, type), type);
        }
        // Keys as a string of another type, an iterable.
        const digits = Array.from({ length: 1100 }, (_, i) => String(i * 7919));
        assert.deepEqual(f.containsMany(digits, "bigint"), loop(f, digits, "bigint"));
        assert.deepEqual(f.containsMany(new Set(keys.slice(0, 50))), expected.slice(0, 50));
        // Long keys: fewer to a call.
        const long = Array.from({ length: 300 }, (_, i) => `${"ü".repeat(2000)}${i}`);
        assert.deepEqual(f.containsMany(long), loop(f, long));
      }
    }
  });

  test("refuses what contains refuses", () => {
    const f = randomized(VECTORS.layered[2], 0.9);
    for (const bad of [1.5, 2n ** 63n, {}, null, true]) {
      assert.throws(() => f.containsMany(["a", bad]), (error) => {
        assert.throws(() => f.contains(bad), { name: error.name, message: error.message });
        return true;
      });
    }
    assert.throws(() => f.containsMany(["a"], "json"), TypeError);
  });
});

describe("containsMany on a grown index", { skip: !HAVE_SERVER && "no server: set PGHOST (test/run-node.sh does)" }, () => {
  let db, conn;
  before(async () => {
    db = await createDatabase("bloomfilter_node_layered_batch");
    conn = await db.client();
  });
  after(async () => {
    await conn?.end();
    await db?.drop();
  });

  const ROWS = 20000;
  for (const layers of [1, 6]) {
    for (const type of TYPES) {
      test(`${layers} layer${layers > 1 ? "s" : ""}, ${type}: a follower and bloom_index_filter answer as bloom_index_contains`, async () => {
        const table = `layered_${type}_${layers}`;
        await conn.query(`CREATE TABLE ${table} (k ${type} NOT NULL)`);
        // 6 layers: 500 x (1 + 2 + ... + 16) < 20,000 keys <= 500 x (2^6 - 1).
        await conn.query(`CREATE INDEX ${table}_bloom ON ${table} USING bloomfilter (k)
                            WITH (capacity = ${layers === 6 ? 500 : 2 * ROWS}, expansion = 2)`);
        await conn.query(`INSERT INTO ${table} SELECT key_${type}(i) FROM generate_series(1, ${ROWS}) AS i`);
        const index = `${table}_bloom`;
        const { rows: [{ n }] } = await conn.query({ text: "SELECT count(*)::int AS n FROM bloom_index_layers($1)", values: [index] });
        assert.equal(n, layers);
        // Present and absent keys, shuffled.
        const numbers = Array.from({ length: 2 * ROWS }, (_, i) => i + 1);
        for (let i = numbers.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1));
          [numbers[i], numbers[j]] = [numbers[j], numbers[i]];
        }
        const keys = numbers.map((i) => jsKey(type, i));
        const { rows: [{ answers: sql }] } = await conn.query({
          text: `SELECT array_agg(bloom_index_contains($1, key_${type}(i)) ORDER BY n) AS answers
                   FROM unnest($2::int8[]) WITH ORDINALITY AS u(i, n)`, values: [index, numbers] });
        assert.ok(sql.filter(Boolean).length >= ROWS && !sql.every(Boolean));
        const follower = await IndexFollower.open(() => db.client(), index, { start: false });
        try {
          assert.equal(follower.filters[0].layers.length, layers);
          const answers = follower.containsMany(keys);
          assert.deepEqual(answers, sql);
          assert.deepEqual(answers, loop(follower, keys));
        } finally {
          await follower.close();
        }
        const { rows: [{ value }] } = await conn.query({ text: "SELECT bloom_index_filter($1)::bytea AS value", values: [index] });
        const f = Filter.fromBytes(value);
        assert.deepEqual(f.containsMany(keys, type), sql);
        const { rows: [{ answers: stored }] } = await conn.query({
          text: `SELECT bloom_contains(bloom_index_filter($1), array_agg(key_${type}(i) ORDER BY n)) AS answers
                   FROM unnest($2::int8[]) WITH ORDINALITY AS u(i, n)`, values: [index, numbers] });
        assert.deepEqual(stored, sql);
      });
    }
  }
});
