// The golden vectors of test/vectors/golden.json (checked against the C++ core by the unit
// tests): key bytes, hashes of both versions, shards, sizing, bit positions, filter bytes and the
// refusal of malformed values, bit for bit. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import {
  Filter, Uuid, BloomFormatError, MESSAGES, keyBytes, keyHash, shardOf,
} from "pg-bloomfilter";

const GOLDEN = process.env.BLOOMFILTER_GOLDEN
  ?? new URL("../../../test/vectors/golden.json", import.meta.url);
// bloom_hash is a signed 64-bit number: read it as text, not as a lossy JavaScript number.
const VECTORS = JSON.parse(readFileSync(GOLDEN, "utf8").replace(/"bloom_hash": (-?\d+)/g, '"bloom_hash": "$1"'));

function jsKey(entry) {
  switch (entry.type) {
    case "text": return entry.key;
    case "bytea": return Buffer.from(entry.key, "hex");
    case "bigint": return BigInt(entry.key);
    case "uuid": return new Uuid(entry.key);
  }
  throw new Error(entry.type);
}
const KEYS = VECTORS.keys.map(jsKey);
const hex64 = (n) => n.toString(16).padStart(16, "0");

test("every key type is covered", () => {
  assert.deepEqual(new Set(VECTORS.keys.map((e) => e.type)), new Set(["text", "bytea", "bigint", "uuid"]));
});

test("key bytes, hashes and shards", () => {
  for (const [i, entry] of VECTORS.keys.entries()) {
    const key = KEYS[i];
    const what = `${entry.type} ${entry.key}`;
    assert.equal(keyBytes(key).toString("hex"), entry.bytes, what);
    assert.equal(hex64(keyHash(key)), entry.hash_v2, what);
    const [low, high] = keyHash(key, 1);
    assert.deepEqual([hex64(low), hex64(high)], [entry.hash_v1_low, entry.hash_v1_high], what);
    assert.equal(BigInt.asIntN(64, keyHash(key)).toString(), entry.bloom_hash, what);
    assert.deepEqual(VECTORS.shard_counts.map((n) => shardOf(key, n)), entry.shards, what);
    // The same key in its other JavaScript spellings.
    if (entry.type === "uuid") {
      assert.equal(keyHash(entry.key, 2, "uuid"), keyHash(key));
      assert.equal(shardOf(entry.key.toUpperCase(), 64, "uuid"), entry.shards[3]);
    }
    if (entry.type === "bigint") {
      assert.equal(keyHash(entry.key, 2, "bigint"), keyHash(key));
      const n = Number(entry.key);
      if (Number.isSafeInteger(n)) assert.equal(keyHash(n), keyHash(key));
    }
    if (entry.type === "bytea") assert.equal(keyHash(new Uint8Array(key)), keyHash(key));
  }
});

test("filters: sizing, headers, positions and bytes", () => {
  for (const spec of VECTORS.filters) {
    const what = `${spec.capacity}@${spec.error_rate} v${spec.version}`;
    const f = Filter.empty(spec.capacity, spec.error_rate, spec.version);
    assert.deepEqual([f.hashes, f.blockLog2, f.blocks], [spec.hashes, spec.block_log2, spec.blocks], what);
    assert.equal(f.toBytes().subarray(0, 36).toString("hex"), spec.empty_header, what);
    for (const [i, key] of KEYS.entries()) {
      assert.deepEqual(f.positions(key), spec.positions[i], what);
      assert.equal(f.contains(key), f.contains(key), what);
      f.add(key);
      assert.equal(f.contains(key), true, what);
    }
    assert.equal(f.toBytes().toString("hex"), spec.all_keys_added, what);
    assert.ok(Filter.fromBytes(Buffer.from(spec.all_keys_added, "hex")).equals(f), what);
    assert.ok(Filter.fromText("\\x" + spec.all_keys_added).equals(f), what);
    assert.equal(f.inserted, BigInt(KEYS.length));
  }
});

test("malformed values are refused with the server's reason", () => {
  for (const c of VECTORS.malformed) {
    const data = Buffer.from(c.bytes, "hex");
    if (c.status === "ok") {
      assert.ok(Filter.fromBytes(data), c.what);
      continue;
    }
    assert.throws(() => Filter.fromBytes(data), (error) => {
      assert.ok(error instanceof BloomFormatError, c.what);
      assert.equal(error.status, c.status, c.what);
      assert.ok(error.message.includes(MESSAGES[c.status]), c.what);
      return true;
    });
  }
});

test("operations, errors and the CommonJS build", () => {
  const a = Filter.empty(1000, 0.01);
  const b = Filter.empty(1000, 0.01);
  a.add("x");
  b.add(Buffer.from("y"));
  b.add(7);
  const u = a.union(b);
  assert.ok(u.contains("x") && u.contains(Buffer.from("y")) && u.contains(7n) && u.contains("y"));
  assert.equal(u.inserted, 3n);
  assert.throws(() => a.union(Filter.empty(1001, 0.01)), /different capacity/);
  assert.throws(() => a.union(Filter.empty(1000, 0.02)), /different error_rate/);
  assert.throws(() => a.union(Filter.empty(1000, 0.01, 1)), /different format versions/);
  assert.throws(() => Filter.empty(0), /capacity must be at least 1/);
  assert.throws(() => Filter.empty(10, 1.0), /error_rate must be greater than 0/);
  assert.throws(() => Filter.empty(2 ** 40, 0.01), /1 GB/);
  assert.throws(() => a.contains(2n ** 63n), /bigint out of range/);
  assert.throws(() => a.contains(2 ** 53), /safe integer/);
  assert.throws(() => a.contains(1.5), /safe integer/);
  assert.throws(() => a.contains(true), TypeError);
  assert.throws(() => a.contains("not-a-uuid", "uuid"), /invalid uuid/);
  assert.throws(() => a.add("\ud800"), /unpaired surrogate/);
  assert.throws(() => Filter.fromText("\\x0"), /invalid bloom text/);
  assert.throws(() => shardOf("x", 0), /shards must be between/);
  assert.ok(Filter.fromText(a.toText()).equals(a));
  const info = a.info();
  assert.equal(info.capacity, 1000);
  assert.equal(info.inserted, 1n);
  assert.equal(info.bitsSet, a.hashes);
  assert.equal(info.bytes, a.toBytes().length + 4);
  const cjs = createRequire(import.meta.url)("pg-bloomfilter");
  assert.ok(cjs.Filter.fromBytes(a.toBytes()).contains("x"));
  assert.equal(cjs.shardOf("x", 64), shardOf("x", 64));
});
