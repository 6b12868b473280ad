// The bloom byte format, sizing and hashing of the PostgreSQL extension bloomfilter, as
// docs/format.md specifies them ("Byte format", "Validation", "Keys: what is hashed", "Placing a
// key", "Shards", "Sizing"). Every computation follows src/core/bloom.cpp in the same
// floating-point operations, so a filter made or changed here is byte for byte the one the server
// makes, and a value the server refuses is refused here with the same reason.

import { xxh3 } from "@node-rs/xxhash";
import { KeyBatch } from "./batch.js";
import { CLIENT_NAME, CLIENT_VERSION } from "./version.js";

export const FORMAT_VERSION_1 = 1;
export const FORMAT_VERSION_2 = 2;
export const FORMAT_VERSIONS: readonly number[] = [FORMAT_VERSION_1, FORMAT_VERSION_2];
/** A layered value: the layers of an index that grows, each a version 2 filter (docs/format.md,
 * "Layered values"). Filter.fromBytes reads it; `layers` describes them. */
export const FORMAT_VERSION_LAYERED = 3;
const MAX_LAYERS = 32;
const LAYER_MAX_HASHES = 8;
const MAX_EXPANSION = 1024;
export const HEADER_BYTES = 36;
const MIN_BLOCK_LOG2 = 12;
const MAX_BLOCK_LOG2 = 24;
// PostgreSQL values are limited to 1 GB (0x3fffffff bytes) including their 4-byte length word.
const MAX_ENCODED_BYTES = 0x3fffffff - 4;
const MAX_BITS = (MAX_ENCODED_BYTES - HEADER_BYTES) * 8;
const SHARD_SEED = 0x5348415244n; // "SHARD"
const MASK64 = (1n << 64n) - 1n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const LN2 = Math.log(2.0);
const TWO32 = 4294967296;

/** The core's name for each reason a value is refused, and the server's message for it. */
export const MESSAGES = {
  truncated: "the value is shorter than a bloom header",
  bad_magic: 'the value does not start with the bloom magic "BLOM"',
  unsupported_version: "unsupported bloom format version",
  bad_block_size: "the block size in the header is out of range",
  bad_parameters: "capacity or error_rate in the header is out of range",
  inconsistent_sizing: "hashes or blocks in the header do not match capacity and error_rate",
  bad_length: "the value's length does not match its number of blocks",
  too_large: "the filter would exceed the 1 GB limit of a PostgreSQL value",
  bad_layer_count: "the layer count or expansion in the layered header is out of range",
  bad_layer: "a layer's header does not match its place in the layered value",
} as const;

export type Status = keyof typeof MESSAGES;

/** A value the server would refuse: `status` names the fault as the core does. */
export class BloomFormatError extends Error {
  readonly status: Status;
  constructor(status: Status) {
    super("invalid bloom value: " + MESSAGES[status]);
    this.name = "BloomFormatError";
    this.status = status;
  }
}

/** A value of a format version newer than this client reads (status "unsupported_version"):
 * made by a newer server; the message says to upgrade the client. */
export class NewerFormatVersionError extends BloomFormatError {
  /** The value's format version. */
  readonly formatVersion: number;
  /** This client's version. */
  readonly clientVersion = CLIENT_VERSION;
  constructor(formatVersion: number) {
    super("unsupported_version");
    this.name = "NewerFormatVersionError";
    this.formatVersion = formatVersion;
    this.message += ` ${formatVersion}: newer than this client (${CLIENT_NAME} ${CLIENT_VERSION} reads format versions `
      + `${[...FORMAT_VERSIONS, FORMAT_VERSION_LAYERED].join(", ")}): upgrade the Node client`;
  }
}

/** A key as the server sees it: text (string), bytea (Buffer, Uint8Array), bigint (bigint or a
 * safe integer number) or uuid (a Uuid). */
export type Key = string | Uint8Array | bigint | number | Uuid;
/** The SQL type a key is hashed as. */
export type KeyType = "text" | "bytea" | "bigint" | "uuid";

const UUID_HEX = /^[0-9a-fA-F]{32}$/;

/** A uuid key: its 16 bytes in RFC 4122 order. `new Uuid("123e4567-e89b-12d3-a456-426614174000")`
 * accepts what PostgreSQL's uuid input accepts: upper or lower case, braces, hyphens. */
export class Uuid {
  readonly bytes: Buffer;
  constructor(text: string | Uint8Array) {
    if (typeof text === "string") {
      let body = text;
      if (body.startsWith("{") && body.endsWith("}")) body = body.slice(1, -1);
      const hex = body.replace(/-/g, "");
      if (!UUID_HEX.test(hex) || body.startsWith("-") || body.endsWith("-") || body.includes("--")) {
        throw new TypeError(`invalid uuid: ${JSON.stringify(text)}`);
      }
      this.bytes = Buffer.from(hex, "hex");
    } else {
      if (text.byteLength !== 16) throw new TypeError("a uuid is 16 bytes");
      this.bytes = Buffer.from(text);
    }
  }
  toString(): string {
    const h = this.bytes.toString("hex");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

// A key's bytes for the hash. The returned Buffer may be a shared scratch buffer: hash it
// before the next call.
const scratch8 = Buffer.alloc(8);

function bigintBytes(value: bigint): Buffer {
  if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`bigint out of range: ${value}`);
  scratch8.writeBigInt64LE(value, 0);
  return scratch8;
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

const KEY_TYPES: readonly string[] = ["text", "bytea", "bigint", "uuid"];
// The hasher of containsMany, made at its first call (it compiles a WebAssembly module).
let keyBatch: KeyBatch | undefined;

function theKeyBatch(): KeyBatch {
  return keyBatch ??= new KeyBatch((key, keyType) => hashInput(key as Key, keyType as KeyType | undefined), Uuid);
}

function unknownKeyType(type: unknown): TypeError {
  return new TypeError(`unknown key type ${JSON.stringify(type)}: text, bytea, bigint or uuid`);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const DECIMAL = /^[+-]?[0-9]+$/;

/** What xxh3 hashes for a key: a string (hashed as its UTF-8 bytes) or a Buffer. */
function hashInput(key: Key, type?: KeyType): string | Buffer {
  if (type === undefined) {
    switch (typeof key) {
      case "string":
        return key;
      case "bigint":
        return bigintBytes(key);
      case "number":
        if (!Number.isSafeInteger(key)) {
          throw new RangeError(`a number key must be a safe integer (use a bigint): ${key}`);
        }
        return bigintBytes(BigInt(key));
      case "object":
        if (key instanceof Uint8Array) return asBuffer(key);
        if (key instanceof Uuid) return key.bytes;
    }
    throw new TypeError(`bloom keys are string, Buffer, Uint8Array, bigint, number or Uuid, not ${describe(key)}`);
  }
  switch (type) {
    case "text":
      if (typeof key === "string") return key;
      break;
    case "bytea":
      if (key instanceof Uint8Array) return asBuffer(key);
      if (typeof key === "string") return Buffer.from(key, "utf8");
      break;
    case "bigint":
      if (typeof key === "string" && DECIMAL.test(key)) return bigintBytes(BigInt(key));
      if (typeof key === "bigint" || typeof key === "number") return hashInput(key);
      break;
    case "uuid":
      if (typeof key === "string") return new Uuid(key).bytes;
      if (key instanceof Uuid) return key.bytes;
      break;
    default:
      throw unknownKeyType(type);
  }
  throw new TypeError(`a ${type} key cannot be ${describe(key)}`);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return (value as object).constructor?.name ?? "object";
  return typeof value;
}

/** The bytes the server hashes for a key: text as UTF-8, bytea as they are, bigint as 8 bytes
 * little-endian two's complement, uuid as its 16 bytes. `type` reads a string as that type
 * ("uuid": a uuid's text, "bigint": decimal digits). */
export function keyBytes(key: Key, type?: KeyType): Buffer {
  const input = hashInput(key, type);
  return typeof input === "string" ? Buffer.from(input, "utf8") : Buffer.from(input);
}

/** A key's hash as a filter of `version` uses it: version 2, XXH3_64 (SQL's bloom_hash, as an
 * unsigned number); version 1, XXH3_128 as [low, high] 64-bit halves. */
export function keyHash(key: Key, version: 1, type?: KeyType): [bigint, bigint];
export function keyHash(key: Key, version?: 2, type?: KeyType): bigint;
export function keyHash(key: Key, version: number = FORMAT_VERSION_2, type?: KeyType): bigint | [bigint, bigint] {
  const input = hashInput(key, type);
  if (version === FORMAT_VERSION_1) {
    const h = xxh3.xxh128(input);
    return [h & MASK64, h >> 64n];
  }
  return xxh3.xxh64(input);
}

/** The most values a composite key has: a multicolumn index's key columns. */
export const MAX_KEY_PARTS = 8;

/** The hash of a composite key, unsigned: a multicolumn index's key, SQL's bloom_hash(a, b, ...).
 * Each value's version 2 hash (keyHash), 8 bytes little-endian each in column order, hashed
 * again with XXH3_64; a key of one value is that value's hash (docs/format.md, "Composite
 * keys"). */
export function compositeHash(values: readonly Key[], types?: readonly (KeyType | undefined)[]): bigint {
  if (values.length < 1 || values.length > MAX_KEY_PARTS) {
    throw new RangeError(`a composite key has 1 to ${MAX_KEY_PARTS} values, not ${values.length}`);
  }
  // `types` reads each value as that SQL type, as keyHash's `type` (a string for a uuid column).
  if (values.length === 1) return keyHash(values[0], 2, types?.[0]);
  const parts = Buffer.alloc(8 * values.length);
  values.forEach((value, i) => parts.writeBigUInt64LE(keyHash(value, 2, types?.[i]), 8 * i));
  return xxh3.xxh64(parts);
}

/** SQL's bloom_shard(key, shards): a shard number in [0, shards), from hash bits independent of
 * the positions a filter sets for the key. */
export function shardOf(key: Key, shards: number, type?: KeyType): number {
  if (!Number.isInteger(shards) || shards < 1 || shards > 0x7fffffff) {
    throw new RangeError(`shards must be between 1 and 2147483647, got ${shards}`);
  }
  const h = xxh3.xxh64(hashInput(key, type), SHARD_SEED);
  return Number((h * BigInt(shards)) >> 64n);
}

// -- 64-bit arithmetic on pairs of 32-bit halves, for the version 2 check ---------------------

/** The high 32 bits of the 64-bit product of two unsigned 32-bit numbers. */
function mulhi32(a: number, b: number): number {
  const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
  const lo = a0 * b0, mid1 = a1 * b0, mid2 = a0 * b1;
  const carry = (lo >>> 16) + (mid1 & 0xffff) + (mid2 & 0xffff);
  return (a1 * b1 + Math.floor(mid1 / 65536) + Math.floor(mid2 / 65536) + Math.floor(carry / 65536)) >>> 0;
}

// The hash as two 32-bit halves, through one typed array (no BigInt arithmetic).
const hash64 = new BigUint64Array(1);
const hash32 = new Uint32Array(hash64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LOW = LITTLE_ENDIAN ? 0 : 1;
const HIGH = LITTLE_ENDIAN ? 1 : 0;

function fin(z: bigint): bigint {
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

/** M_i of format version 2: fin((i + 1) * 0x9e3779b97f4a7c15) | 1. */
export function positionMultiplier(i: number): bigint {
  return fin((BigInt(i + 1) * 0x9e3779b97f4a7c15n) & MASK64) | 1n;
}

// -- sizing ------------------------------------------------------------------------------------

class SizingError extends RangeError {
  constructor(readonly status: "capacity_out_of_range" | "error_rate_out_of_range" | "too_large", message: string) {
    super(message);
  }
}

/** C's round() for x >= 0: halves go away from zero. */
function roundHalfAway(x: number): number {
  const whole = Math.floor(x);
  return x - whole >= 0.5 ? whole + 1 : whole;
}

/** size_filter() of bloom.cpp: [hashes, blockLog2, blocks]. capacity as an exact integer. */
function size(capacity: bigint, errorRate: number): [number, number, number] {
  if (capacity < 1n) throw new SizingError("capacity_out_of_range", `capacity must be at least 1, got ${capacity}`);
  if (!(errorRate > 0.0 && errorRate < 1.0)) {
    throw new SizingError("error_rate_out_of_range", `error_rate must be greater than 0 and less than 1, got ${errorRate}`);
  }
  const tooLarge = () => new SizingError("too_large",
    `a bloom filter for capacity ${capacity} at error_rate ${errorRate} would exceed the 1 GB limit of a PostgreSQL value`);
  const n = Number(capacity);
  let m = -(n * Math.log(errorRate)) / (LN2 * LN2);
  if (Number.isFinite(m)) m = Math.ceil(m);
  if (!(m <= MAX_BITS)) throw tooLarge();
  let bits = m < 1 ? 1 : Math.trunc(m);
  let k = roundHalfAway((bits / n) * LN2);
  if (k < 1) {
    k = 1;
    let oneHashBits = -n / Math.log1p(-errorRate);
    if (Number.isFinite(oneHashBits)) oneHashBits = Math.ceil(oneHashBits);
    if (!(oneHashBits <= MAX_BITS)) throw tooLarge();
    bits = Math.max(bits, Math.trunc(oneHashBits));
  }
  const hashes = k;
  const log2 = blockLog2For(hashes, bits);
  const padded = Math.ceil(bits * 1.005);
  const blocks = Math.floor((padded + 2 ** log2 - 1) / 2 ** log2);
  if (HEADER_BYTES + blocks * 2 ** (log2 - 3) > MAX_ENCODED_BYTES) throw tooLarge();
  return [hashes, log2, blocks];
}

/** block_log2_for() of bloom.cpp. */
function blockLog2For(hashes: number, bits: number): number {
  const wanted = 4096.0 * Math.pow(hashes / 7.0, 3.0);
  let log2 = MIN_BLOCK_LOG2;
  while (log2 < MAX_BLOCK_LOG2 && 2 ** log2 < wanted && 2 ** log2 < bits) log2 += 1;
  return log2;
}

/** size_filter_capped() of bloom.cpp: size() with at most maxHashes hashes. */
function sizeCapped(capacity: bigint, errorRate: number, maxHashes: number): [number, number, number] {
  const sized = size(capacity, errorRate);
  if (sized[0] <= maxHashes) return sized;
  const tooLarge = () => new SizingError("too_large", "too large");
  const k = maxHashes;
  let bits = (-k * Number(capacity)) / Math.log1p(-Math.pow(errorRate, 1.0 / k));
  if (Number.isFinite(bits)) bits = Math.ceil(bits);
  if (!(bits <= MAX_BITS)) throw tooLarge();
  const log2 = blockLog2For(maxHashes, Math.trunc(bits));
  const padded = Math.ceil(bits * 1.005);
  const blocks = Math.floor((padded + 2 ** log2 - 1) / 2 ** log2);
  if (HEADER_BYTES + blocks * 2 ** (log2 - 3) > MAX_ENCODED_BYTES) throw tooLarge();
  return [maxHashes, log2, blocks];
}

/** One layer of a layered value: its parameters and where its own header begins. */
export interface Layer {
  capacity: number;
  errorRate: number;
  hashes: number;
  blockLog2: number;
  blocks: number;
  offset: number;
}

/** layer_error_rate() of bloom.cpp: errorRate x (1/4) x (3/4)^n, as the same double (3^n is
 * exact, then one rounded product and an exact scaling). */
function layerErrorRate(errorRate: number, n: number): number {
  let threeToN = 1;
  for (let i = 0; i < n; i++) threeToN *= 3;
  return errorRate * threeToN * 2 ** (-2 * (n + 1));
}

/** layer_parameters() of bloom.cpp: layer n, expansion^n times the capacity at
 * layerErrorRate(errorRate, n), past layer 0 with at most 8 hashes. */
function layerParameters(capacity: bigint, errorRate: number, expansion: number, n: number): Omit<Layer, "offset"> {
  let layerCapacity = Number(capacity);
  for (let i = 0; i < n; i++) layerCapacity *= expansion;
  if (layerCapacity > 9223372036854775807) throw new SizingError("too_large", "too large");
  const rate = layerErrorRate(errorRate, n);
  const c = BigInt(layerCapacity);
  const [hashes, blockLog2, blocks] = n === 0 ? size(c, rate) : sizeCapped(c, rate, LAYER_MAX_HASHES);
  return { capacity: layerCapacity, errorRate: rate, hashes, blockLog2, blocks };
}

/** A valid layered value's header and layers. */
export interface LayeredHeader {
  capacity: number;
  errorRate: number;
  expansion: number;
  inserted: bigint;
  layers: Layer[];
}

/** Checks a layered value as read_layers() in bloom.cpp does, in the same order; throws
 * BloomFormatError with the server's reason. */
export function readLayers(data: Uint8Array): LayeredHeader {
  if (data.byteLength < HEADER_BYTES) throw new BloomFormatError("truncated");
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data[0] !== 0x42 || data[1] !== 0x4c || data[2] !== 0x4f || data[3] !== 0x4d) {
    throw new BloomFormatError("bad_magic");
  }
  if (data[4] !== FORMAT_VERSION_LAYERED || data[5] !== 0) throw new BloomFormatError("unsupported_version");
  const count = view.getUint16(6, true), expansion = view.getUint32(8, true);
  const capacity = view.getBigUint64(12, true), errorRate = view.getFloat64(20, true);
  if (count < 1 || count > MAX_LAYERS || expansion < 2 || expansion > MAX_EXPANSION) {
    throw new BloomFormatError("bad_layer_count");
  }
  if (capacity < 1n || !(errorRate > 0.0 && errorRate < 1.0)) throw new BloomFormatError("bad_parameters");
  const layers: Layer[] = [];
  let offset = HEADER_BYTES;
  for (let n = 0; n < count; n++) {
    let layer: Omit<Layer, "offset">;
    try {
      layer = layerParameters(capacity, errorRate, expansion, n);
    } catch (error) {
      if (error instanceof SizingError) {
        throw new BloomFormatError(error.status === "too_large" ? "too_large" : "bad_parameters");
      }
      throw error;
    }
    layers.push({ ...layer, offset });
    offset += HEADER_BYTES + layer.blocks * 2 ** (layer.blockLog2 - 3);
    if (offset > MAX_ENCODED_BYTES) throw new BloomFormatError("too_large");
  }
  for (const layer of layers) {
    if (layer.offset + HEADER_BYTES > data.byteLength) throw new BloomFormatError("bad_length");
    const at = layer.offset;
    if (data[at] !== 0x42 || data[at + 1] !== 0x4c || data[at + 2] !== 0x4f || data[at + 3] !== 0x4d
      || data[at + 4] !== FORMAT_VERSION_2 || data[at + 5] !== layer.blockLog2
      || view.getUint16(at + 6, true) !== layer.hashes || view.getUint32(at + 8, true) !== layer.blocks
      || view.getBigUint64(at + 12, true) !== BigInt(layer.capacity)
      || !Object.is(view.getFloat64(at + 20, true), layer.errorRate)) {
      throw new BloomFormatError("bad_layer");
    }
  }
  if (data.byteLength !== offset) throw new BloomFormatError("bad_length");
  return { capacity: Number(capacity), errorRate, expansion, inserted: view.getBigUint64(28, true), layers };
}

/** Whether `data` is a layered value (format version 3) by its first bytes. */
function isLayered(data: Uint8Array): boolean {
  return data.byteLength >= HEADER_BYTES && data[0] === 0x42 && data[1] === 0x4c && data[2] === 0x4f
    && data[3] === 0x4d && data[4] === FORMAT_VERSION_LAYERED;
}

/** The parameters read from a valid header. */
export interface Header {
  version: number;
  blockLog2: number;
  hashes: number;
  blocks: number;
  capacity: number;
  errorRate: number;
  inserted: bigint;
}

/** Checks an encoded filter as read_header() in bloom.cpp does, in the same order; throws
 * BloomFormatError with the server's reason. */
export function readHeader(data: Uint8Array): Header {
  if (data.byteLength < HEADER_BYTES) throw new BloomFormatError("truncated");
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data[0] !== 0x42 || data[1] !== 0x4c || data[2] !== 0x4f || data[3] !== 0x4d) {
    throw new BloomFormatError("bad_magic");
  }
  const version = data[4];
  if (version > FORMAT_VERSION_LAYERED) throw new NewerFormatVersionError(version);
  if (version === FORMAT_VERSION_LAYERED) {
    const error = new BloomFormatError("unsupported_version");
    error.message = "a layered bloom value (format version 3) has no single header: readLayers() reads it";
    throw error;
  }
  if (version !== FORMAT_VERSION_1 && version !== FORMAT_VERSION_2) throw new BloomFormatError("unsupported_version");
  const blockLog2 = data[5];
  const hashes = view.getUint16(6, true);
  const blocks = view.getUint32(8, true);
  const capacity = view.getBigUint64(12, true);
  const errorRate = view.getFloat64(20, true);
  const inserted = view.getBigUint64(28, true);
  let expected: [number, number, number];
  try {
    expected = size(capacity, errorRate);
  } catch (error) {
    if (error instanceof SizingError) {
      throw new BloomFormatError(error.status === "too_large" ? "too_large" : "bad_parameters");
    }
    throw error;
  }
  if (blockLog2 < MIN_BLOCK_LOG2 || blockLog2 > MAX_BLOCK_LOG2) throw new BloomFormatError("bad_block_size");
  if (hashes !== expected[0] || blockLog2 !== expected[1] || blocks !== expected[2]) {
    throw new BloomFormatError("inconsistent_sizing");
  }
  if (data.byteLength !== HEADER_BYTES + blocks * 2 ** (blockLog2 - 3)) throw new BloomFormatError("bad_length");
  return { version, blockLog2, hashes, blocks, capacity: Number(capacity), errorRate, inserted };
}

/** The columns of SQL's bloom_info(filter). */
export interface Info {
  capacity: number;
  errorRate: number;
  bits: number;
  /** null for a layered value, whose layers each have their own. */
  hashes: number | null;
  /** The value's size, with PostgreSQL's 4-byte length word. */
  bytes: number;
  /** Keys added, duplicates included: a number, so that JSON.stringify(info()) works (exact up
   * to Number.MAX_SAFE_INTEGER, 2^53 - 1; a saturated count is rounded). filter.inserted is the
   * exact bigint. */
  inserted: number;
  bitsSet: number;
  fill: number;
  estimatedCount: number;
  estimatedErrorRate: number;
}

const POPCOUNT8 = Uint8Array.from({ length: 256 }, (_, byte) => {
  let bits = 0;
  for (let b = byte; b !== 0; b >>= 1) bits += b & 1;
  return bits;
});

/** The bits set in bytes [start, end) of `bytes`. @internal */
export function bitsSet(bytes: Uint8Array, start: number, end: number): number {
  let set = 0;
  for (let i = start; i < end; i++) set += POPCOUNT8[bytes[i]];
  return set;
}

function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * A Bloom filter in the extension's byte format, held in memory.
 *
 * `contains(key)`: false means the key was certainly never added; true, that it probably was
 * (wrong with probability about errorRate). Keys are hashed as the server hashes text (string),
 * bytea (Buffer, Uint8Array), bigint (bigint, safe integer numbers) and uuid (Uuid, or a string
 * with the type "uuid").
 */
export class Filter {
  readonly version: number;
  readonly capacity: number;
  readonly errorRate: number;
  readonly hashes: number;
  readonly blockLog2: number;
  readonly blocks: number;
  /** The byte format, owned by the filter. */
  private readonly data: Uint8Array;
  private readonly blockBytes: number;
  private readonly shift: number;
  // Version 2's multipliers M_i as 32-bit halves.
  private readonly multLow: Uint32Array;
  private readonly multHigh: Uint32Array;
  private readonly multipliers: bigint[];
  /** A layered value's layers (format version 3), the oldest first; empty for one filter. */
  readonly layers: readonly Layer[];
  /** A layered value's expansion; 0 for one filter. */
  readonly expansion: number;

  /** Takes ownership of `data`, an encoded filter (validated): use fromBytes() or empty(). */
  private constructor(data: Uint8Array) {
    if (isLayered(data)) {
      // A layered value: version 3, no one number of hashes or blocks (each layer has its own).
      const layered = readLayers(data);
      this.data = data;
      this.version = FORMAT_VERSION_LAYERED;
      this.capacity = layered.capacity;
      this.errorRate = layered.errorRate;
      this.expansion = layered.expansion;
      this.layers = Object.freeze(layered.layers.map((layer) => Object.freeze(layer)));
      this.hashes = this.blockLog2 = this.blocks = this.blockBytes = this.shift = 0;
      const most = Math.max(...layered.layers.map((layer) => layer.hashes));
      this.multipliers = [];
      this.multLow = new Uint32Array(most);
      this.multHigh = new Uint32Array(most);
      for (let i = 0; i < most; i++) {
        const m = positionMultiplier(i);
        this.multipliers.push(m);
        this.multLow[i] = Number(m & 0xffffffffn);
        this.multHigh[i] = Number(m >> 32n);
      }
      return;
    }
    this.layers = [];
    this.expansion = 0;
    const header = readHeader(data);
    this.data = data;
    this.version = header.version;
    this.capacity = header.capacity;
    this.errorRate = header.errorRate;
    this.hashes = header.hashes;
    this.blockLog2 = header.blockLog2;
    this.blocks = header.blocks;
    this.blockBytes = 2 ** (header.blockLog2 - 3);
    this.shift = 32 - header.blockLog2;
    this.multipliers = [];
    this.multLow = new Uint32Array(header.hashes);
    this.multHigh = new Uint32Array(header.hashes);
    for (let i = 0; i < header.hashes; i++) {
      const m = positionMultiplier(i);
      this.multipliers.push(m);
      this.multLow[i] = Number(m & 0xffffffffn);
      this.multHigh[i] = Number(m >> 32n);
    }
  }

  /** A filter from its byte format (SQL's bloom::bytea, a bloom column in binary results, binary
   * COPY). The bytes are copied. Throws BloomFormatError, with the server's reason, for anything
   * the server would refuse. */
  static fromBytes(data: Uint8Array): Filter {
    if (!(data instanceof Uint8Array)) throw new TypeError(`fromBytes takes a Buffer or Uint8Array, not ${describe(data)}`);
    return new Filter(new Uint8Array(data));
  }

  /** A filter from its text form, "\x" and the byte format in hex (as bloom prints). */
  static fromText(text: string): Filter {
    if (typeof text !== "string" || !/^\\x(?:[0-9a-fA-F]{2})*$/.test(text)) {
      throw new TypeError("invalid bloom text: expected \\x followed by an even number of hex digits");
    }
    return new Filter(new Uint8Array(Buffer.from(text.slice(2), "hex")));
  }

  /** An empty filter for `capacity` distinct keys at false-positive rate `errorRate`: the bytes of
   * SQL's bloom_empty(capacity, error_rate) (version 2; version 1 for the older placement). */
  static empty(capacity: number | bigint, errorRate = 0.01, version: number = FORMAT_VERSION_2): Filter {
    if (typeof capacity === "number" && !Number.isSafeInteger(capacity)) {
      throw new TypeError(`capacity must be an integer, got ${capacity}`);
    }
    if (typeof capacity !== "number" && typeof capacity !== "bigint") throw new TypeError("capacity must be an integer");
    if (typeof errorRate !== "number") throw new TypeError("errorRate must be a number");
    if (version !== FORMAT_VERSION_1 && version !== FORMAT_VERSION_2) {
      throw new RangeError(`version must be 1 or 2, got ${version}`);
    }
    const n = BigInt(capacity);
    if (n > INT64_MAX) throw new RangeError(`capacity out of range for bigint: ${n}`);
    const [hashes, blockLog2, blocks] = size(n, errorRate);
    const data = new Uint8Array(HEADER_BYTES + blocks * 2 ** (blockLog2 - 3));
    const view = new DataView(data.buffer);
    data.set([0x42, 0x4c, 0x4f, 0x4d, version, blockLog2]);
    view.setUint16(6, hashes, true);
    view.setUint32(8, blocks, true);
    view.setBigUint64(12, n, true);
    view.setFloat64(20, errorRate, true);
    return new Filter(data);
  }

  /** The byte format (what SQL's bloom::bytea gives), a copy. */
  toBytes(): Buffer {
    return Buffer.from(this.data);
  }

  /** The text form, as bloom prints: "\x" and the byte format in lower-case hex. */
  toText(): string {
    return "\\x" + Buffer.from(this.data.buffer, this.data.byteOffset, this.data.byteLength).toString("hex");
  }

  /** Keys added, duplicates included (saturates at 2^64 - 1). */
  get inserted(): bigint {
    return new DataView(this.data.buffer, this.data.byteOffset).getBigUint64(28, true);
  }

  private setInserted(value: bigint): void {
    new DataView(this.data.buffer, this.data.byteOffset).setBigUint64(28, value > MASK64 ? MASK64 : value, true);
  }

  /** The size of the byte format in bytes. */
  get byteLength(): number {
    return this.data.byteLength;
  }

  /** false: `key` was certainly never added; true: it probably was. `type` reads a string key as
   * that SQL type ("uuid": a uuid's text; "bigint": decimal digits; default "text"). */
  contains(key: Key, type?: KeyType): boolean {
    const input = typeof key === "string" && (type === undefined || type === "text") ? key : hashInput(key, type);
    const d = this.data;
    if (this.version === FORMAT_VERSION_LAYERED) return this.layersContain(input);
    if (this.version === FORMAT_VERSION_2) {
      hash64[0] = xxh3.xxh64(input);
      return this.containsHashed();
    }
    const [block, bits] = this.placeV1(input);
    const base = HEADER_BYTES + block * this.blockBytes;
    for (const p of bits) if ((d[base + (p >>> 3)] & (1 << (p & 7))) === 0) return false;
    return true;
  }

  /** The check of a key by its version 2 hash (keyHash, or compositeHash for a multicolumn
   * index's key), an unsigned 64-bit bigint: false, no key of that hash was added; true, one
   * probably was. A version 2 filter or a layered value. */
  containsHash(h: bigint): boolean {
    if (typeof h !== "bigint" || h < 0n || h > MASK64) throw new RangeError("a key hash is an unsigned 64-bit bigint");
    if (this.version !== FORMAT_VERSION_2 && this.version !== FORMAT_VERSION_LAYERED) {
      throw new TypeError(`containsHash takes a format version 2 filter, not version ${this.version}`);
    }
    hash64[0] = h;
    return this.version === FORMAT_VERSION_LAYERED ? this.layersContainHashed() : this.containsHashed();
  }

  /** The version 2 check of the hash in hash64[0]. */
  private containsHashed(): boolean {
    const d = this.data;
    const hl = hash32[LOW], hh = hash32[HIGH];
    const blocks = this.blocks;
    const block = Math.floor((hh * blocks + Math.floor((hl * blocks) / TWO32)) / TWO32);
    const base = HEADER_BYTES + block * this.blockBytes;
    const shift = this.shift, ml = this.multLow, mh = this.multHigh;
    for (let i = 0; i < ml.length; i++) {
      const m = ml[i];
      // The high 32 bits of the low 64 bits of h * M_i; its top blockLog2 bits are the position.
      const p = (mulhi32(hl, m) + Math.imul(hl, mh[i]) + Math.imul(hh, m)) >>> shift;
      if ((d[base + (p >>> 3)] & (1 << (p & 7))) === 0) return false;
    }
    return true;
  }

  /** Any layer of a layered value, the newest first: the check of contains() in each. */
  private layersContain(input: string | Buffer): boolean {
    hash64[0] = xxh3.xxh64(input);
    return this.layersContainHashed();
  }

  /** layersContain of the hash in hash64[0]. */
  private layersContainHashed(): boolean {
    const hl = hash32[LOW], hh = hash32[HIGH], d = this.data, ml = this.multLow, mh = this.multHigh;
    for (let n = this.layers.length - 1; n >= 0; n--) {
      const layer = this.layers[n], blocks = layer.blocks, shift = 32 - layer.blockLog2;
      const block = Math.floor((hh * blocks + Math.floor((hl * blocks) / TWO32)) / TWO32);
      const base = layer.offset + HEADER_BYTES + block * 2 ** (layer.blockLog2 - 3);
      let present = true;
      for (let i = 0; i < layer.hashes; i++) {
        const m = ml[i];
        const p = (mulhi32(hl, m) + Math.imul(hl, mh[i]) + Math.imul(hh, m)) >>> shift;
        if ((d[base + (p >>> 3)] & (1 << (p & 7))) === 0) {
          present = false;
          break;
        }
      }
      if (present) return true;
    }
    return false;
  }

  private refuseLayered(what: string): void {
    if (this.version === FORMAT_VERSION_LAYERED) {
      throw new TypeError(`${what} does not take a layered bloom value (format version 3): it holds the layers of an `
        + "index that grows, which are read, not added to");
    }
  }

  /** contains() of every key, in order: the same answers, several times faster per key (the keys
   * are hashed in batches, src/batch.ts). `type` applies to every key; a key contains() would
   * refuse throws its error. */
  containsMany(keys: Iterable<Key>, type?: KeyType): boolean[] {
    const list: readonly Key[] = Array.isArray(keys) ? keys : Array.from(keys);
    if (type !== undefined && !KEY_TYPES.includes(type)) throw unknownKeyType(type);
    if (this.version === FORMAT_VERSION_LAYERED) return this.layersContainMany(list, type);
    const answers = new Array<boolean>(list.length);
    const batch = theKeyBatch();
    const d = this.data, hashes = this.hashes, stride = 1 + hashes, blockBytes = this.blockBytes;
    for (let start = 0; start < list.length;) {
      batch.begin(hashes);
      const end = batch.add(list, start, type);
      batch.place(this.version, this.blocks, this.blockLog2, hashes);
      const out = batch.u32;
      for (let i = start, q = batch.outAt >>> 2; i < end; i++, q += stride) {
        const base = HEADER_BYTES + out[q] * blockBytes;
        let present = true;
        for (let j = 1; j <= hashes; j++) {
          const p = out[q + j];
          if ((d[base + (p >>> 3)] & (1 << (p & 7))) === 0) {
            present = false;
            break;
          }
        }
        answers[i] = present;
      }
      start = end;
    }
    return answers;
  }

  /** containsMany of a layered value: each key hashed once and placed in every layer by the
   * module (src/batch.ts), then tested in each layer, the newest first, until one holds it, as
   * layersContain() does. */
  private layersContainMany(list: readonly Key[], type: KeyType | undefined): boolean[] {
    const count = this.layers.length, d = this.data;
    // The module numbers a key's bits in the value in 32 bits.
    if (d.byteLength >= 2 ** 29) return list.map((key) => this.contains(key, type));
    const answers = new Array<boolean>(list.length);
    const batch = theKeyBatch();
    // Per layer, the newest first: its (blocks, blockLog2, hashes, first byte of its blocks).
    const layers = new Uint32Array(4 * count), hashes = new Uint32Array(count);
    let stride = 0;
    for (let n = 0; n < count; n++) {
      const layer = this.layers[count - 1 - n];
      layers.set([layer.blocks, layer.blockLog2, layer.hashes, layer.offset + HEADER_BYTES], 4 * n);
      hashes[n] = layer.hashes;
      stride += layer.hashes;
    }
    for (let start = 0; start < list.length;) {
      batch.begin(stride);
      const end = batch.add(list, start, type);
      batch.placeLayers(layers);
      const out = batch.u32;
      for (let i = start, q = batch.outAt >>> 2; i < end; i++, q += stride) {
        let present = false;
        for (let n = 0, first = q; n < count; n++) {
          const last = first + hashes[n];
          let j = first;
          while (j < last) {
            const bit = out[j];
            if ((d[bit >>> 3] & (1 << (bit & 7))) === 0) break;
            j++;
          }
          if (j === last) {
            present = true;
            break;
          }
          first = last;
        }
        answers[i] = present;
      }
      start = end;
    }
    return answers;
  }

  private placeV1(input: string | Buffer): [number, number[]] {
    const h = xxh3.xxh128(input);
    const low = h & MASK64, high = h >> 64n;
    const step = (((high << 32n) | (high >> 32n)) & MASK64) | 1n;
    const shift = BigInt(64 - this.blockLog2);
    const bits: number[] = [];
    let g = low;
    for (let i = 0; i < this.hashes; i++) {
      bits.push(Number(fin(g) >> shift));
      g = (g + step) & MASK64;
    }
    return [Number((high * BigInt(this.blocks)) >> 64n), bits];
  }

  private place(input: string | Buffer): [number, number[]] {
    if (this.version === FORMAT_VERSION_1) return this.placeV1(input);
    const h = xxh3.xxh64(input);
    const shift = BigInt(64 - this.blockLog2), mask = (1n << BigInt(this.blockLog2)) - 1n;
    return [Number((h * BigInt(this.blocks)) >> 64n), this.multipliers.map((m) => Number(((h * m) >> shift) & mask))];
  }

  /** [block, bit positions inside the block] of a key in this filter. */
  positions(key: Key, type?: KeyType): [number, number[]] {
    this.refuseLayered("positions");
    return this.place(hashInput(key, type));
  }

  /** Adds a key in place (as SQL's bloom_add does to its copy): its bits are set and `inserted`
   * counts it. Returns this. Strings with unpaired surrogates are refused (no text has them). */
  add(key: Key, type?: KeyType): this {
    this.refuseLayered("add");
    if (typeof key === "string" && (type === undefined || type === "text") && LONE_SURROGATE.test(key)) {
      throw new TypeError("a text key cannot hold an unpaired surrogate");
    }
    const [block, bits] = this.place(hashInput(key, type));
    const base = HEADER_BYTES + block * this.blockBytes;
    for (const p of bits) this.data[base + (p >>> 3)] |= 1 << (p & 7);
    this.setInserted(this.inserted + 1n);
    return this;
  }

  /** Adds every key of an iterable. Returns this. */
  addAll(keys: Iterable<Key>, type?: KeyType): this {
    this.refuseLayered("addAll");
    for (const key of keys) this.add(key, type);
    return this;
  }

  /** A new filter holding the keys of both (SQL's bloom_union): same version, capacity and
   * error_rate, or a RangeError naming what differs. `inserted` is the sum. */
  union(other: Filter): Filter {
    if (!(other instanceof Filter)) throw new TypeError("union takes a Filter");
    this.refuseLayered("union");
    other.refuseLayered("union");
    if (this.version !== other.version) throw new RangeError("the filters have different format versions");
    if (this.capacity !== other.capacity) throw new RangeError("the filters have different capacity");
    if (!Object.is(this.errorRate, other.errorRate)) throw new RangeError("the filters have different error_rate");
    const data = new Uint8Array(this.data);
    const words = (data.byteLength - HEADER_BYTES) / 4;
    const a = new Uint32Array(data.buffer, HEADER_BYTES, words);
    const b = other.data;
    const bw = new Uint32Array(b.buffer.slice(b.byteOffset + HEADER_BYTES, b.byteOffset + b.byteLength));
    for (let i = 0; i < words; i++) a[i] |= bw[i];
    const result = new Filter(data);
    result.setInserted(this.inserted + other.inserted);
    return result;
  }

  /** SQL's bloom_info(filter), computed in the server's order of operations. */
  info(): Info {
    if (this.version === FORMAT_VERSION_LAYERED) return this.layeredInfo();
    const blockBits = 2 ** this.blockLog2;
    const k = this.hashes;
    const wordsPerBlock = this.blockBytes / 4;
    const words = new Uint32Array(this.data.buffer, this.data.byteOffset + HEADER_BYTES, this.blocks * wordsPerBlock);
    let bitsSet = 0, errorSum = 0.0, countSum = 0.0;
    for (let b = 0; b < this.blocks; b++) {
      let set = 0;
      for (let w = b * wordsPerBlock, end = w + wordsPerBlock; w < end; w++) set += popcount32(words[w]);
      bitsSet += set;
      const fill = set / blockBits;
      errorSum += Math.pow(fill, k);
      countSum += set === blockBits ? Infinity : -(blockBits / k) * Math.log1p(-fill);
    }
    const bits = this.blocks * blockBits;
    return {
      capacity: this.capacity, errorRate: this.errorRate, bits, hashes: this.hashes,
      bytes: this.data.byteLength + 4, inserted: Number(this.inserted), bitsSet, fill: bitsSet / bits,
      estimatedCount: countSum, estimatedErrorRate: errorSum / this.blocks,
    };
  }

  /** bloom_info of a layered value: capacity and bits summed over the layers, hashes null,
   * estimatedCount summed, estimatedErrorRate the rate of a key absent from every layer. */
  private layeredInfo(): Info {
    let capacity = 0, bits = 0, setTotal = 0, countSum = 0.0, absent = 1.0;
    for (const layer of this.layers) {
      const blockBits = 2 ** layer.blockLog2, blockBytes = blockBits / 8, k = layer.hashes;
      let errorSum = 0.0, layerCount = 0.0;
      for (let b = 0; b < layer.blocks; b++) {
        const start = layer.offset + HEADER_BYTES + b * blockBytes;
        const set = bitsSet(this.data, start, start + blockBytes);
        setTotal += set;
        const fill = set / blockBits;
        errorSum += Math.pow(fill, k);
        layerCount += set === blockBits ? Infinity : -(blockBits / k) * Math.log1p(-fill);
      }
      capacity += layer.capacity;
      bits += layer.blocks * blockBits;
      countSum += layerCount;
      absent *= 1.0 - errorSum / layer.blocks;
    }
    return {
      capacity, errorRate: this.errorRate, bits, hashes: null, bytes: this.data.byteLength + 4, inserted: Number(this.inserted),
      bitsSet: setTotal, fill: setTotal / bits, estimatedCount: countSum, estimatedErrorRate: 1.0 - absent,
    };
  }

  /** Byte-identical filters, as SQL's `=`. */
  equals(other: Filter): boolean {
    return other instanceof Filter && Buffer.compare(this.data, other.data) === 0;
  }

  copy(): Filter {
    return new Filter(new Uint8Array(this.data));
  }

  /** For the pg driver: a Filter parameter is sent as the byte format (binary), as bloom. */
  toPostgres(): Buffer {
    return this.toBytes();
  }

  /** Writes `bytes` at `offset` of the byte format (bloom_index_changes' rows), after checking
   * that the header stays that of this filter. For IndexFollower. @internal */
  patch(offset: number, bytes: Uint8Array): void {
    if (offset < 0 || offset + bytes.byteLength > this.data.byteLength) throw new RangeError("patch out of range");
    if (offset < 28 && Buffer.compare(bytes.subarray(0, 28 - offset), this.data.subarray(offset, 28)) !== 0) {
      throw new RangeError("patch changes the filter's parameters");
    }
    this.data.set(bytes, offset);
  }

  /** The bits set in bytes [start, end) of the byte format. For IndexFollower. @internal */
  bitsSetIn(start: number, end: number): number {
    return bitsSet(this.data, start, end);
  }

  /** A layered header (bloom_index_changes' first row) of this layered value's index after it
   * added layers: the same expansion, layer 0's capacity, error rate and build's keys, and more
   * layers. @internal */
  grewInto(header: Uint8Array): boolean {
    if (this.version !== FORMAT_VERSION_LAYERED || header.byteLength < HEADER_BYTES) return false;
    const count = (bytes: Uint8Array) => bytes[6] | (bytes[7] << 8);
    return Buffer.compare(header.subarray(0, 6), this.data.subarray(0, 6)) === 0
      && Buffer.compare(header.subarray(8, HEADER_BYTES), this.data.subarray(8, HEADER_BYTES)) === 0
      && count(header) > count(this.data);
  }

  /** The first 28 bytes of the header: the parameters, without `inserted`. @internal */
  parametersEqual(header: Uint8Array): boolean {
    return header.byteLength >= 28 && Buffer.compare(header.subarray(0, 28), this.data.subarray(0, 28)) === 0;
  }

  toString(): string {
    if (this.version === FORMAT_VERSION_LAYERED) {
      return `Filter(version=3, capacity=${this.capacity}, errorRate=${this.errorRate}, expansion=${this.expansion}, `
        + `layers=${this.layers.length})`;
    }
    return `Filter(version=${this.version}, capacity=${this.capacity}, errorRate=${this.errorRate}, hashes=${this.hashes}, blocks=${this.blocks})`;
  }
}
