// The filter against a server: every answer over 100,000 present and 100,000 absent keys of each
// type equals bloom_contains (contains and containsMany); add then toBytes equals bloom_add; empty, union, info, shardOf and
// the refusal of malformed values equal the server's; the pg and postgres.js adapters.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import postgres from "postgres";
import {
  Filter, BloomFormatError, BinaryResultsUnsupportedError, MESSAGES, registerPg, registerPostgres, shardOf,
} from "pg-bloomfilter";
import { HAVE_SERVER, TYPES, createDatabase, jsKey } from "./helpers.mjs";

const PRESENT = 100_000;
const ABSENT = 100_000;

describe("against the server", { skip: !HAVE_SERVER && "no server: set PGHOST (test/run-node.sh does)" }, () => {
  let db, conn;
  before(async () => {
    db = await createDatabase("bloomfilter_node");
    conn = await db.client();
    await registerPg(conn);
  });
  after(async () => {
    await conn?.end();
    await db?.drop();
  });

  const emptySql = (version) => version === 1
    ? "overlay(bloom_empty($1, $2)::bytea PLACING '\\x01' FROM 5)::bloom"
    : "bloom_empty($1, $2)";

  // (capacity, error_rate, version, keys added): both versions, one hash and several.
  const SPECS = [
    [100_000, 0.01, 2, PRESENT],
    [100_000, 0.01, 1, PRESENT],
    [200_000, 0.001, 2, 20_000],
    [1000, 0.05, 1, 1000],
    [30, 0.9, 2, 30],
  ];

  for (const type of TYPES) {
    test(`${type}: answers over ${PRESENT} present and ${ABSENT} absent keys equal bloom_contains`, async () => {
      const keys = Array.from({ length: PRESENT + ABSENT }, (_, i) => jsKey(type, i));
      for (const [capacity, errorRate, version, added] of SPECS) {
        const what = `${type} ${capacity}@${errorRate} v${version}`;
        const { rows: [row] } = await conn.query({
          text: `WITH f AS MATERIALIZED (
                   SELECT (SELECT bloom_add(${emptySql(version)}, array_agg(key_${type}(i) ORDER BY i))
                             FROM generate_series(0, $3 - 1) i) AS f)
                 SELECT f.f, (SELECT string_agg(CASE WHEN bloom_contains(f.f, key_${type}(i)) THEN '1' ELSE '0' END, ''
                                                ORDER BY i) FROM generate_series(0, $4 - 1) i) AS answers
                   FROM f`,
          values: [capacity, errorRate, added, PRESENT + ABSENT],
        });
        const f = row.f;
        assert.ok(f instanceof Filter, what);
        assert.equal(f.version, version, what);
        let answers = "";
        const parts = [];
        for (let i = 0; i < keys.length; i++) {
          answers += f.contains(keys[i]) ? "1" : "0";
          if (answers.length === 8192) { parts.push(answers); answers = ""; }
        }
        parts.push(answers);
        const ours = parts.join("");
        assert.equal(ours.length, row.answers.length, what);
        const first = [...ours].findIndex((c, i) => c !== row.answers[i]);
        assert.equal(first, -1, `${what}: first disagreement at key ${first}`);
        assert.ok(!ours.slice(0, added).includes("0"), `${what}: a false negative`);
        // containsMany: the same answers, in one call.
        const many = f.containsMany(keys).map((c) => (c ? "1" : "0")).join("");
        const firstMany = [...many].findIndex((c, i) => c !== row.answers[i]);
        assert.equal(firstMany, -1, `${what}: containsMany's first disagreement at key ${firstMany}`);
        if (added === PRESENT) {
          const falsePositives = [...ours.slice(PRESENT)].filter((c) => c === "1").length;
          assert.ok(falsePositives < ABSENT * errorRate * 1.5, `${what}: ${falsePositives} false positives`);
        }
      }
    });

    test(`${type}: add then toBytes equals bloom_add, shardOf equals bloom_shard`, async () => {
      const n = 2000;
      for (const version of [1, 2]) {
        const base = Filter.empty(1000, 0.01, version);
        for (let i = 0; i < 50; i++) base.add(jsKey(type, 199_900 + i));
        const { rows } = await conn.query({
          text: `SELECT i, bloom_add($1::bloom, key_${type}(i))::bytea AS added FROM generate_series(0, $2 - 1) i ORDER BY i`,
          values: [base, n],
        });
        for (const { i, added } of rows) {
          const ours = base.copy().add(jsKey(type, i)).toBytes();
          assert.ok(ours.equals(added), `${type} v${version} key ${i}`);
        }
      }
      const counts = [1, 2, 7, 64, 1000, 2147483647];
      const { rows } = await conn.query({
        text: `SELECT i, array_agg(bloom_shard(key_${type}(i), c) ORDER BY c) AS shards
                 FROM generate_series(0, $1 - 1) i, unnest($2::int4[]) c GROUP BY i ORDER BY i`,
        values: [n, counts],
      });
      for (const { i, shards } of rows) {
        assert.deepEqual(counts.map((c) => shardOf(jsKey(type, i), c)), shards, `${type} key ${i}`);
      }
    });
  }

  test("bloom_agg over 100,000 keys equals empty() and add() of each", async () => {
    const { rows: [row] } = await conn.query(
      "SELECT bloom_agg(key_text(i), 100000, 0.01)::bytea AS agg FROM generate_series(0, 99999) i");
    const f = Filter.empty(100000, 0.01);
    for (let i = 0; i < 100000; i++) f.add(jsKey("text", i));
    assert.ok(f.toBytes().equals(row.agg));
  });

  test("empty, union and info equal the server's", async () => {
    for (const [capacity, errorRate] of [[1, 0.5], [10, 0.01], [1000, 0.001], [123457, 0.0001], [30, 0.9], [5, 0.99]]) {
      const { rows: [row] } = await conn.query({ text: "SELECT bloom_empty($1, $2)::bytea AS b", values: [capacity, errorRate] });
      assert.ok(Filter.empty(capacity, errorRate).toBytes().equals(row.b), `${capacity}@${errorRate}`);
    }
    const a = Filter.empty(5000, 0.01), b = Filter.empty(5000, 0.01);
    for (let i = 0; i < 3000; i++) (i % 2 ? a : b).add(jsKey("text", i));
    const { rows: [row] } = await conn.query({ text: "SELECT bloom_union($1::bloom, $2::bloom)::bytea AS u", values: [a, b] });
    assert.ok(a.union(b).toBytes().equals(row.u));
    const { rows: [info] } = await conn.query({ text: "SELECT * FROM bloom_info($1::bloom)", values: [a] });
    const ours = a.info();
    assert.equal(ours.capacity, Number(info.capacity));
    assert.equal(ours.errorRate, info.error_rate);
    assert.equal(ours.bits, Number(info.bits));
    assert.equal(ours.hashes, info.hashes);
    assert.equal(ours.bytes, Number(info.bytes));
    assert.equal(ours.inserted, Number(info.inserted));
    assert.equal(ours.bitsSet, Number(info.bits_set));
    for (const [mine, theirs] of [[ours.fill, info.fill], [ours.estimatedCount, info.estimated_count],
      [ours.estimatedErrorRate, info.estimated_error_rate]]) {
      assert.ok(Math.abs(mine - theirs) <= 1e-12 * Math.abs(theirs), `${mine} != ${theirs}`);
    }
  });

  test("fromBytes refuses what the server refuses, for the same reason", async () => {
    const bases = [Filter.empty(10, 0.01).toBytes(), Filter.empty(1000, 0.001, 1).toBytes(), Filter.empty(50, 0.9).toBytes()];
    let seed = 12345;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
    let refused = 0;
    for (let n = 0; n < 400; n++) {
      const data = Buffer.from(bases[n % bases.length]);
      const where = random() % 36;
      data[where] = random() % 256;
      if (n % 7 === 0) data[5] = 12 + (random() % 3);
      const cut = n % 11 === 0 ? data.subarray(0, data.length - 1 - (random() % 40)) : data;
      let ours = "ok";
      try {
        Filter.fromBytes(cut);
      } catch (error) {
        assert.ok(error instanceof BloomFormatError);
        // The server's reason (for a newer version, followed by the advice to upgrade).
        ours = MESSAGES[error.status];
      }
      let theirs = "ok";
      try {
        await conn.query({ text: "SELECT $1::bytea::bloom AS f", values: [cut] });
      } catch (error) {
        assert.equal(error.code, "22P03");
        theirs = error.message;
        refused += 1;
      }
      if (ours === "ok" || theirs === "ok") assert.equal(ours, theirs, `mutation ${n}: ${cut.toString("hex").slice(0, 72)}`);
      else assert.ok(theirs.includes(ours), `${ours} / ${theirs}`);
    }
    assert.ok(refused > 100, `${refused} refused`);
  });

  test("pg: text results, Filter parameters, binary results, a Pool", async () => {
    await conn.query("CREATE TABLE filters (id int PRIMARY KEY, f bloom)");
    const f = Filter.empty(1000, 0.01).add("a@mail.com");
    await conn.query({ text: "INSERT INTO filters VALUES (1, $1)", values: [f] });
    const { rows: [row] } = await conn.query("SELECT f, bloom_contains(f, 'a@mail.com') AS c FROM filters");
    assert.ok(row.f instanceof Filter && row.f.equals(f) && row.c === true);
    assert.equal((await conn.query({ text: "SELECT $1::bloom = f AS same FROM filters", values: [f] })).rows[0].same, true);
    // A Filter parameter where the server expects bytea is the byte format itself.
    assert.ok((await conn.query({ text: "SELECT $1::bytea AS b", values: [f] })).rows[0].b.equals(f.toBytes()));
    // pg 8 decodes binary results as UTF-8 text: a bloom value there is refused, never misread.
    const registration = await registerPg(conn);
    if (registration.binaryResults) {
      const { rows: [bin] } = await conn.query({ text: "SELECT f FROM filters WHERE id = $1", values: [1], binary: true });
      assert.ok(bin.f.equals(f));
    } else {
      await assert.rejects(conn.query({ text: "SELECT f FROM filters WHERE id = $1", values: [1], binary: true }),
        BinaryResultsUnsupportedError);
    }
    const pool = new pg.Pool({ database: db.name, max: 3 });
    await registerPg(pool);
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => pool.query("SELECT f FROM filters")));
    for (const r of results) assert.ok(r.rows[0].f.equals(f));
    await pool.end();
    const fresh = await db.client();
    await assert.rejects(registerPg(fresh, { schema: "nowhere" }), /type bloom not found/);
    await fresh.end();
  });

  test("postgres.js: results and parameters", async () => {
    const sql = postgres({ database: db.name, max: 2, onnotice: () => undefined });
    try {
      const oid = await registerPostgres(sql);
      assert.ok(oid > 0);
      await sql`CREATE TABLE pjs (id int PRIMARY KEY, f bloom)`;
      const f = Filter.empty(1000, 0.01).add(42).add("x");
      await sql`INSERT INTO pjs VALUES (1, ${f})`;
      const [row] = await sql`SELECT f, bloom_contains(${f}, 42::int8) AS c FROM pjs`;
      assert.ok(row.f instanceof Filter && row.f.equals(f) && row.c === true);
      const [same] = await sql`SELECT f = ${f} AS same FROM pjs`;
      assert.equal(same.same, true);
      const [typed] = await sql`SELECT bloom_contains(${sql.typed(f, oid)}, 'x'::text) AS c`;
      assert.equal(typed.c, true);
    } finally {
      await sql.end();
    }
  });
});
