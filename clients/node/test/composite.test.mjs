// IndexFollower of a multicolumn index: a key is an array of the key columns' values, hashed as
// the server hashes a composite key; its answers equal bloom_index_contains(index, v1, v2) over
// 100,000 pairs (a layered index and one of fixed size), and a key of the wrong length or types
// is an error, never an answer. An expression column lower(text column) is applied as the server
// does (ASCII lowered; a key it cannot lower as the server would answers true).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { IndexFollower, Uuid } from "pg-bloomfilter";
import { HAVE_SERVER, createDatabase } from "./helpers.mjs";

const TENANTS = 1000;
const ROWS = 50000;

describe("IndexFollower of a multicolumn index", { skip: !HAVE_SERVER && "no server: set PGHOST (test/run-node.sh does)" }, () => {
  let db, conn;
  before(async () => {
    db = await createDatabase("bloomfilter_node_composite");
    conn = await db.client();
  });
  after(async () => {
    await conn?.end();
    await db?.drop();
  });

  for (const options of ["capacity = 5000", "capacity = 100000, expansion = 0"]) {
    test(`(tenant_id, email): answers equal SQL over 100,000 pairs (${options})`, async () => {
      const table = `accounts_${randomBytes(5).toString("hex")}`, index = `${table}_bloom`;
      await conn.query(`CREATE TABLE ${table} (tenant_id integer NOT NULL, email text NOT NULL, UNIQUE (tenant_id, email))`);
      // Created before the rows, so that a default index grows into layers as they arrive.
      await conn.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (tenant_id, email) WITH (${options})`);
      await conn.query(`INSERT INTO ${table} SELECT i % ${TENANTS} + 1, 'user' || i || '@x.com' FROM generate_series(1, ${ROWS}) i`);
      const { rows: [{ layers }] } = await conn.query({ text: "SELECT count(*)::int AS layers FROM bloom_index_layers($1)", values: [index] });
      assert.ok(options.includes("expansion = 0") ? layers === 1 : layers > 1, `${layers} layers`);
      // Every row, then each row's email under another tenant.
      const { rows } = await conn.query({
        text: `SELECT p.t, p.e, bloom_index_contains($1, p.t, p.e) AS sql FROM (
                 SELECT tenant_id AS t, email AS e FROM ${table}
                 UNION ALL SELECT tenant_id % ${TENANTS} + 1, email FROM ${table}) p`,
        values: [index],
      });
      assert.equal(rows.length, 2 * ROWS);
      const follower = await IndexFollower.open(() => db.client(), index, { start: false });
      try {
        const keys = rows.map((row) => [row.t, row.e]);
        const expected = rows.map((row) => row.sql);
        assert.deepEqual(keys.map((key) => follower.contains(key)), expected);
        assert.deepEqual(follower.containsMany(keys), expected);
        assert.ok(expected.slice(0, ROWS).every(Boolean));
        const wrong = expected.slice(ROWS).filter(Boolean).length;
        assert.ok(wrong < 0.02 * ROWS, `${wrong} other tenants' pairs answered true`);
        // A bigint and a string of digits are the same integer column's value.
        assert.ok(follower.contains([1n, "user1000@x.com"]) && follower.contains(["1", "user1000@x.com"]));
        await conn.query(`INSERT INTO ${table} VALUES (7, 'new@x.com')`);
        await follower.refresh();
        assert.ok(follower.contains([7, "new@x.com"]));
      } finally {
        await follower.close();
      }
    });
  }

  test("(provider, subject) of text and a domain; errors; every key type", async () => {
    const table = `logins_${randomBytes(5).toString("hex")}`, index = `${table}_bloom`;
    await conn.query(`CREATE DOMAIN ${table}_subject AS text`);
    await conn.query(`CREATE TABLE ${table} (provider text NOT NULL, subject ${table}_subject NOT NULL, UNIQUE (provider, subject))`);
    await conn.query(`INSERT INTO ${table} SELECT (ARRAY['google', 'github', 'apple'])[i % 3 + 1], 's' || i
                        FROM generate_series(1, 30000) i`);
    await conn.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (provider, subject)`);
    const { rows } = await conn.query({
      text: `SELECT p.a, p.b, bloom_index_contains($1, p.a, p.b::text) AS sql FROM (
               SELECT provider AS a, subject::text AS b FROM ${table}
               UNION ALL SELECT subject, provider FROM ${table}
               UNION ALL SELECT 'gitlab', subject FROM ${table}) p`,
      values: [index],
    });
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    try {
      assert.deepEqual(follower.containsMany(rows.map((row) => [row.a, row.b])), rows.map((row) => row.sql));
      assert.ok(rows.slice(0, 30000).every((row) => row.sql));
      assert.throws(() => follower.contains(["google"]), { name: "RangeError", message: /2 key columns \(text, text\): a key of 1 values/ });
      assert.throws(() => follower.containsMany([["google", "s1", "x"]]), RangeError);
      assert.throws(() => follower.contains("google"), { name: "TypeError", message: /a key is an array of 2 values, not String/ });
      assert.throws(() => follower.contains(["google", 1]), { name: "TypeError", message: /key column 2 is text, which takes text, not Number/ });
    } finally {
      await follower.close();
    }

    const ints = `ints_${randomBytes(5).toString("hex")}`;
    await conn.query(`CREATE TABLE ${ints} (a smallint, b bigint, c bytea, d uuid)`);
    await conn.query(`INSERT INTO ${ints} VALUES (-3, 2^40, '\\x00ff', '00000000-0000-0000-0000-00000000002a')`);
    await conn.query(`CREATE INDEX ${ints}_bloom ON ${ints} USING bloomfilter (a, b, c, d)`);
    const typed = await IndexFollower.open(() => db.client(), `${ints}_bloom`, { start: false });
    try {
      assert.ok(typed.contains([-3, 2n ** 40n, Buffer.from([0, 255]), "00000000-0000-0000-0000-00000000002a"]));
      assert.ok(typed.contains([-3, 2 ** 40, new Uint8Array([0, 255]), new Uuid("00000000-0000-0000-0000-00000000002a")]));
      assert.ok(!typed.contains([-3, 2n ** 40n, Buffer.from([0, 254]), "00000000-0000-0000-0000-00000000002a"]));
      assert.throws(() => typed.contains([40000, 1, Buffer.alloc(0), "00000000-0000-0000-0000-000000000001"]),
        { name: "RangeError", message: /key column 1 is smallint, out of range: 40000/ });
      assert.throws(() => typed.contains([1, 1, "x", "00000000-0000-0000-0000-000000000001"]),
        { name: "TypeError", message: /key column 3 is bytea, which takes bytea, not String/ });
    } finally {
      await typed.close();
    }
  });

  test("(org_id, lower(username)): the expression applied, answers equal SQL", async () => {
    const table = `users_${randomBytes(5).toString("hex")}`, index = `${table}_bloom`;
    await conn.query(`CREATE TABLE ${table} (org_id bigint NOT NULL, username text NOT NULL)`);
    await conn.query(`CREATE INDEX ${index} ON ${table} USING bloomfilter (org_id, lower(username)) WITH (capacity = 5000)`);
    await conn.query(`INSERT INTO ${table} SELECT i % 100, CASE WHEN i % 2 = 0 THEN 'User' || i ELSE 'user' || i END
                        FROM generate_series(1, 20000) i`);
    await conn.query(`INSERT INTO ${table} VALUES (1, 'Ärger')`);
    // Each row as stored, upper-cased, and under another org.
    const { rows } = await conn.query({
      text: `SELECT p.o, p.u, bloom_index_contains($1, p.o, p.u) AS sql FROM (
               SELECT org_id AS o, username AS u FROM ${table}
               UNION ALL SELECT org_id, upper(username) FROM ${table}
               UNION ALL SELECT org_id + 1, username FROM ${table}) p`,
      values: [index],
    });
    const follower = await IndexFollower.open(() => db.client(), index, { start: false });
    try {
      const keys = rows.map((row) => [row.o, row.u]);
      const answers = follower.containsMany(keys);
      assert.deepEqual(keys.map((key) => follower.contains(key)), answers);
      let differ = 0;
      rows.forEach((row, i) => {
        // Never absent where SQL says present; a non-ASCII key the follower cannot lower is "maybe".
        if (row.sql) assert.ok(answers[i], `(${row.o}, ${row.u})`);
        else if (answers[i]) differ++;
      });
      assert.ok(differ <= 2, `${differ} answers true where SQL answers false`);
      assert.ok(rows.slice(0, 40002).every((row) => row.sql));
      assert.ok(follower.contains([1, "USER1"]) && follower.contains([1, "Ärger"]) && follower.contains([1, "ÄRGER"]));
      assert.throws(() => follower.contains([1, 7]), { name: "TypeError", message: /key column 2 has keys lower\(username\), which takes a string/ });
    } finally {
      await follower.close();
    }
    await conn.query(`CREATE INDEX ${table}_upper ON ${table} USING bloomfilter (org_id, upper(username))`);
    await assert.rejects(IndexFollower.open(() => db.client(), `${table}_upper`),
      /key column 2 has the key expression upper\(username\)/);
  });
});
