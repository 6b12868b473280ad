// The golden vectors of test/vectors/golden.json (checked against the C++ core by the unit
// tests): key bytes, hashes of both versions, shards, sizing, bit positions, filter bytes and the
// refusal of malformed values, bit for bit. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import {
  Filter, Uuid, BloomFormatError, NewerFormatVersionError, MESSAGES, CLIENT_VERSION, FORMAT_VERSION_LAYERED, keyBytes, keyHash,
  shardOf, compositeHash,
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

test("composite keys: each part's hash and the key's", () => {
  for (const entry of VECTORS.composite) {
    const values = entry.parts.map(jsKey);
    const what = entry.parts.map((p) => `${p.type} ${p.key}`).join(", ");
    assert.deepEqual(values.map((v) => BigInt.asIntN(64, keyHash(v)).toString()), entry.parts.map((p) => p.bloom_hash), what);
    assert.equal(hex64(compositeHash(values)), entry.hash_v2, what);
    assert.equal(BigInt.asIntN(64, compositeHash(values)).toString(), entry.bloom_hash, what);
  }
  assert.equal(compositeHash(["abc"]), keyHash("abc"));
  assert.throws(() => compositeHash([]), RangeError);
  assert.throws(() => compositeHash([1, 2, 3, 4, 5, 6, 7, 8, 9]), RangeError);
});

test("containsHash of a key's hash answers as contains; compositeHash reads values as types", () => {
  const f = Filter.empty(2000);
  const keys = [];
  for (let i = 0; i < 1000; i++) keys.push(`k${i}`, BigInt(i));
  keys.filter((_, i) => i % 2 === 0).forEach((key) => f.add(key));
  assert.deepEqual(keys.map((key) => f.containsHash(keyHash(key))), keys.map((key) => f.contains(key)));
  assert.throws(() => f.containsHash(-1n), RangeError);
  assert.throws(() => Filter.empty(10, 0.01, 1).containsHash(1n), TypeError);
  const text = "00000000-0000-0000-0000-00000000002a";
  assert.equal(compositeHash([1, text], ["bigint", "uuid"]), compositeHash([1n, new Uuid(text)]));
  assert.notEqual(compositeHash([1, text]), compositeHash([1n, new Uuid(text)]));
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
  assert.equal(info.inserted, 1);
  assert.equal(a.inserted, 1n); // the filter's own count stays the exact bigint
  // info() is JSON-safe: every column a number (or null, a layered value's hashes).
  assert.deepEqual(JSON.parse(JSON.stringify(info)), { ...info });
  assert.equal(info.bitsSet, a.hashes);
  assert.equal(info.bytes, a.toBytes().length + 4);
  const cjs = createRequire(import.meta.url)("pg-bloomfilter");
  assert.ok(cjs.Filter.fromBytes(a.toBytes()).contains("x"));
  assert.equal(cjs.shardOf("x", 64), shardOf("x", 64));
});

// Keys for containsMany: every golden key in each of its spellings, strings the batch encodes apart
// (non-ASCII, unpaired surrogates, one string's high surrogate before the next one's low one),
// keys past XXH3's short paths and past the batch's room (its memory grows), integers at the
// edges of both encodings.
function batchKeys() {
  const keys = [...KEYS];
  for (const entry of VECTORS.keys) if (entry.type === "text") keys.push(Buffer.from(entry.key, "utf8"));
  keys.push("", "a", "é", "😀", "\ud800", "\udc00", "x\ud83d", "\ude00y", "\ud83d", "", "\ude00", "a\ud83d\ude00b",
    "ü".repeat(300), "x".repeat(241), "y".repeat(300_000), "Ключ".repeat(70_000), Buffer.alloc(300_000, 7),
    0, 1, -1, 2 ** 32, -(2 ** 32), 2 ** 32 - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 0n, -(2n ** 63n), 2n ** 63n - 1n,
    new Uint8Array(0), new Uint8Array([1, 2, 3]), Buffer.from("abc"), new Uuid("00000000-0000-0000-0000-000000000000"));
  for (let i = 0; i < 3000; i++) keys.push(i % 3 === 0 ? `user${i}@mail.com` : i % 3 === 1 ? i : `Ключ ${i}`);
  return keys;
}

test("containsMany answers as contains, for every key type, both versions", () => {
  const keys = batchKeys();
  for (const spec of VECTORS.filters) {
    const f = Filter.empty(spec.capacity, spec.error_rate, spec.version);
    const what = `${spec.capacity}@${spec.error_rate} v${spec.version}`;
    // Half the keys added, and every string with a surrogate (add() refuses unpaired ones: their
    // UTF-8 with U+FFFD, which is what contains() hashes): both answers occur.
    keys.forEach((key, i) => {
      if (typeof key === "string" && /[\ud800-\udfff]/.test(key)) f.add(Buffer.from(key, "utf8"));
      else if (i % 2 === 0) f.add(key);
    });
    const many = f.containsMany(keys);
    assert.equal(many.length, keys.length, what);
    keys.forEach((key, i) => assert.equal(many[i], f.contains(key), `${what}: key ${i}`));
    assert.ok(many.includes(true) && many.includes(false), what);
    // Other iterables, typed strings, empty input.
    assert.deepEqual(f.containsMany(new Set(keys.slice(0, 50))), many.slice(0, 50), what);
    assert.deepEqual(f.containsMany((function* () { yield* keys.slice(0, 10); })()), many.slice(0, 10), what);
    const uuids = VECTORS.keys.filter((e) => e.type === "uuid").map((e) => e.key);
    assert.deepEqual(f.containsMany(uuids, "uuid"), uuids.map((u) => f.contains(u, "uuid")), what);
    const bigints = VECTORS.keys.filter((e) => e.type === "bigint").map((e) => e.key);
    assert.deepEqual(f.containsMany(bigints, "bigint"), bigints.map((b) => f.contains(b, "bigint")), what);
    assert.deepEqual(f.containsMany(["a", "é"], "bytea"), [f.contains("a", "bytea"), f.contains("é", "bytea")], what);
    assert.deepEqual(f.containsMany([]), [], what);
  }
  // A key contains() refuses is refused with the same error, wherever it is in the list.
  const f = Filter.empty(1000, 0.01);
  for (const [bad, type] of [[true, undefined], [1.5, undefined], [2 ** 53, undefined], [2n ** 63n, undefined], [null, undefined],
    [{}, undefined], [7, "text"], ["x", "uuid"], ["12a", "bigint"], [Buffer.from("x"), "uuid"], ["x", "int"]]) {
    const expected = (() => { try { f.contains(bad, type); } catch (error) { return error; } })();
    assert.ok(expected instanceof Error, `${String(bad)} ${type}`);
    const list = type === undefined ? ["a", 1, bad, "b"] : [bad];
    assert.throws(() => f.containsMany(list, type), (error) => error.constructor === expected.constructor && error.message === expected.message);
  }
});

test("a format version newer than the client's is refused, saying to upgrade it", () => {
  const version = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
  assert.equal(CLIENT_VERSION, version);
  const data = Filter.empty(1000, 0.01).toBytes();
  data[4] = 4;
  assert.throws(() => Filter.fromBytes(data), (error) => {
    assert.ok(error instanceof NewerFormatVersionError && error instanceof BloomFormatError);
    assert.equal(error.status, "unsupported_version");
    assert.equal(error.formatVersion, 4);
    assert.equal(error.message, `invalid bloom value: unsupported bloom format version 4: newer than this client `
      + `(pg-bloomfilter ${version} reads format versions 1, 2, 3): upgrade the Node client`);
    return true;
  });
  data[4] = 0;
  assert.throws(() => Filter.fromBytes(data), (error) => !(error instanceof NewerFormatVersionError)
    && error.message === "invalid bloom value: unsupported bloom format version");
});

test("layered values (format version 3): layers, every key present, absent keys as the core answers", () => {
  for (const spec of VECTORS.layered) {
    const data = Buffer.from(spec.bytes, "hex");
    const f = Filter.fromBytes(data);
    const what = `${spec.capacity}@${spec.error_rate} x${spec.expansion}`;
    assert.deepEqual([f.version, f.capacity, f.errorRate, f.expansion], [FORMAT_VERSION_LAYERED, spec.capacity, spec.error_rate, spec.expansion], what);
    assert.deepEqual(f.layers.map((l) => [l.capacity, l.errorRate, l.hashes, l.blockLog2, l.blocks, l.offset]),
      spec.layers.map((l) => [l.capacity, l.error_rate, l.hashes, l.block_log2, l.blocks, l.offset]), what);
    assert.equal(f.inserted, BigInt(KEYS.length));
    for (const key of KEYS) assert.ok(f.contains(key), `${what}: ${key}`);
    assert.deepEqual(f.containsMany(KEYS), KEYS.map(() => true));
    const absent = spec.absent.map(([key]) => key);
    assert.deepEqual(absent.map((key) => f.contains(key)), spec.absent.map(([, answer]) => answer));
    assert.deepEqual(f.containsMany(absent), spec.absent.map(([, answer]) => answer));
    // Key i is in layer i % layers: with that layer's bits cleared, some of its keys are missed.
    for (let n = 0; n < spec.layers.length; n++) {
      const stripped = Buffer.from(data);
      const start = spec.layers[n].offset + 36;
      const end = n + 1 < spec.layers.length ? spec.layers[n + 1].offset : data.length;
      stripped.fill(0, start, end);
      const g = Filter.fromBytes(stripped);
      const layerKeys = KEYS.filter((_, i) => i % spec.layers.length === n);
      assert.ok(layerKeys.filter((key) => g.contains(key)).length < layerKeys.length, `${what}: layer ${n}`);
    }
    assert.ok(f.toBytes().equals(data));
    assert.ok(Filter.fromText(f.toText()).equals(f));
    assert.ok(f.copy().equals(f));
    assert.equal(f.info().hashes, null);
    for (const refused of [() => f.add("x"), () => f.addAll(["x"]), () => f.union(f), () => Filter.empty(10).union(f), () => f.positions("x")]) {
      assert.throws(refused, /layered bloom value/);
    }
    assert.ok(f.toBytes().equals(data));
  }
});
