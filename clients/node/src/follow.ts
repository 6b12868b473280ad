// IndexFollower: a local copy of one or more bloomfilter indexes' filters, kept current from the
// server by a timer, answering contains(key) with no round trip.
//
// It loads bloom_index_filter(index) once, then asks bloom_index_changes(index, lsn) every
// `interval` milliseconds: one query per index, whose first row is the filter's header and the
// others the pages of bits changed since the last refresh. After REINDEX (another index under the
// name, or new parameters) or a new connection it loads the whole filter again. Every row
// committed before the start of the last successful refresh is found; `lag` says how long ago
// that was. Nothing runs on the event loop for long: the filter arrives in 16 KB rows, each
// decoded (and its bits counted) as it comes, and changes are pages of 8 KB. The follower is an
// EventEmitter ("stale", "fresh", "reload", "capacity") with counters for metrics (stats()).

import { EventEmitter } from "node:events";
import { FORMAT_VERSION_LAYERED, Filter, HEADER_BYTES, Key, KeyType, Uuid, bitsSet, compositeHash } from "./core.js";

/** What the follower needs of a pg Client. */
export interface FollowerClient {
  query(config: { text: string; values?: unknown[]; types?: unknown }): Promise<{ rows: any[] }>;
  end(): Promise<void>;
  on(event: "error" | "end", listener: (...args: any[]) => void): unknown;
  removeAllListeners?(event?: string): unknown;
}

/** How the follower connects: a pg Client (connected; the follower uses it alone and opens the
 * next ones with its parameters), a connection string or pg config object, or a function
 * returning a connected client. */
export type FollowerConnection = FollowerClient | string | Record<string, unknown> | (() => FollowerClient | Promise<FollowerClient>);

export interface FollowerOptions {
  /** Milliseconds between refreshes (default 100). */
  interval?: number;
  /** Once the last successful refresh began more than this many milliseconds ago, contains()
   * answers true ("maybe") for every key (default: never). */
  maxLag?: number;
  /** Start the timer (default true); false to call refresh() yourself. */
  start?: boolean;
  /** Keep the process alive while the timer runs (default false). */
  keepAlive?: boolean;
}

/** The index's key is an expression the follower cannot apply in JavaScript. */
/** The follower's queries on one connection reached another server process: a pooler in
 * transaction (or statement) mode, where the next query may reach another server, whose WAL
 * positions are not the first one's. The copy stays as of the last refresh; the connection is
 * dropped, and the next refresh reads every filter whole again. */
export class SessionChangedError extends Error {
  constructor(before: number, after: number) {
    super(`the follower's connection moved from server process ${before} to ${after}: it needs one session, `
      + "which a pooler in pool_mode = transaction (PgBouncer) does not keep; connect directly or through a "
      + "session-mode pool");
    this.name = "SessionChangedError";
  }
}

export class UnsupportedIndexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedIndexError";
  }
}

// The ctype a key column lowers with: its collation's (co, none for the database's default) or the
// database's (d).
const CTYPE = `CASE WHEN co.oid IS NOT NULL
            THEN CASE co.collprovider WHEN 'i'
                 THEN COALESCE(pg_catalog.to_jsonb(co) ->> 'colllocale', pg_catalog.to_jsonb(co) ->> 'colliculocale')
                 ELSE co.collctype::text END
            ELSE CASE d.datlocprovider WHEN 'i'
                 THEN COALESCE(pg_catalog.to_jsonb(d) ->> 'datlocale', pg_catalog.to_jsonb(d) ->> 'daticulocale')
                 ELSE d.datctype::text END END`;
// What the follower must know of an index: its OID, its key's type and, for an expression index,
// the expression, the column it reads and the ctype it lowers with (ICU's locale column is named
// colliculocale in PostgreSQL 15 and 16, colllocale from 17: read through to_jsonb).
const DESCRIBE = `
SELECT i.indexrelid::oid AS oid, i.indkey[0] = 0 AS is_expression, pg_catalog.pg_backend_pid() AS pid,
       i.indnkeyatts::int AS key_columns,
       pg_catalog.pg_get_indexdef(i.indexrelid, 1, true) AS definition,
       -- A domain's keys are its base type's.
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = ia.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0) AS key_type,
       am.amname::text AS access_method,
       c.relkind::text AS relkind,
       ${CTYPE} AS ctype
  FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_am am ON am.oid = c.relam
  JOIN pg_catalog.pg_attribute ia ON ia.attrelid = i.indexrelid AND ia.attnum = 1
  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
  LEFT JOIN pg_catalog.pg_collation co
         ON co.oid = i.indcollation[0] AND co.oid <> 100
 WHERE i.indexrelid = $1::pg_catalog.regclass`;
const COLUMNS = `
SELECT pg_catalog.quote_ident(a.attname) AS name,
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0) AS type
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_index i ON a.attrelid = i.indrelid
 WHERE i.indexrelid = $1::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped`;
// The key columns of a multicolumn index, in order: whether each is an expression, its base type
// (a domain's keys are its base type's), its definition and the ctype it lowers with, as DESCRIBE.
const KEY_PARTS = `
SELECT a.attnum::int AS position, i.indkey[a.attnum - 1] = 0 AS is_expression,
       (WITH RECURSIVE b AS (SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid
                UNION ALL SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t JOIN b ON t.oid = b.typbasetype)
        SELECT pg_catalog.format_type(b.oid, NULL) FROM b WHERE b.typbasetype = 0) AS type,
       pg_catalog.pg_get_indexdef(i.indexrelid, a.attnum::int, true) AS definition,
       ${CTYPE} AS ctype
  FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indexrelid
  JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
  LEFT JOIN pg_catalog.pg_collation co
         ON co.oid = i.indcollation[a.attnum - 1] AND co.oid <> 100
 WHERE i.indexrelid = $1::pg_catalog.oid AND a.attnum OPERATOR(pg_catalog.>=) 1
   AND a.attnum OPERATOR(pg_catalog.<=) i.indnkeyatts
 ORDER BY a.attnum`;
// Asked once per connection: the server process, and the extension's version.
const CONNECTION = `SELECT pg_catalog.pg_backend_pid() AS pid,
  (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'bloomfilter') AS extversion`;
const CURRENT_LSN = `SELECT CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn()
  ELSE pg_catalog.pg_current_wal_insert_lsn() END::text AS lsn, pg_catalog.pg_backend_pid() AS pid`;
// The whole filter in rows of 16 KB (32 KB of hex: small enough for V8's young generation), from one call of bloom_index_filter (the CTE is materialized),
// fetched FETCH_ROWS rows at a time.
const CHUNK = 16384;
const FETCH_ROWS = 8;
const LOAD = `
WITH f AS MATERIALIZED (SELECT bloom_index_filter($1::pg_catalog.oid::pg_catalog.regclass)::pg_catalog.bytea AS f)
SELECT pg_catalog.substring(f.f, s.i::pg_catalog.int4, ${CHUNK}) AS bytes
  FROM f, LATERAL pg_catalog.generate_series(1, pg_catalog.length(f.f), ${CHUNK}) AS s(i)
 ORDER BY s.i`;
const CHANGES = `
SELECT c.next_lsn::text AS next_lsn, c.byte_offset, c.bytes, $1::pg_catalog.regclass::pg_catalog.oid AS oid,
       pg_catalog.pg_backend_pid() AS pid
  FROM bloom_index_changes($1::pg_catalog.regclass, $2::pg_lsn) c`;

const KEY_TYPES: Record<string, KeyType> = {
  text: "text", "character varying": "text", bytea: "bytea", smallint: "bigint", integer: "bigint",
  bigint: "bigint", uuid: "uuid",
};

// Text results parsed here, whatever type parsers the application set on its connections.
export const TEXT_TYPES = {
  getTypeParser(oid: number): (value: string) => unknown {
    switch (oid) {
      case 17: // bytea, hex output
        return (value) => Buffer.from(value.slice(2), "hex");
      case 16:
        return (value) => value === "t";
      case 20: case 21: case 23: case 26:
        return (value) => Number(value);
      default:
        return (value) => value;
    }
  },
};

const MAYBE = Symbol("maybe");

function asciiLower(text: string): string {
  return text.replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

/** What a key becomes before the filter's check: itself, the index's expression applied to it,
 * or MAYBE when the follower cannot apply it as the server would. */
type Transform = (key: Key) => Key | typeof MAYBE;

/** The transform of an index expression `definition` (pg_get_indexdef's), which the follower
 * applies only when it is lower() of a text column of `columns`, lowered in `ctype`. `what`
 * names the key for errors ("index i", "index i: key column 2"). */
function lowerTransform(what: string, definition: string, columns: Map<string, string>, ctype: string | null): Transform {
  const match = /^lower\((.+?)(?:::text)?\)$/s.exec(definition);
  const column = match ? match[1] : null;
  const columnType = column === null ? undefined : columns.get(column);
  if (columnType !== "text" && columnType !== "character varying") {
    throw new UnsupportedIndexError(`${what} has the key expression ${definition}: the follower applies `
      + "lower() of a text column only; check this index in SQL with bloom_index_contains");
  }
  const locale = ctype ?? "";
  // Exactly "C" or "POSIX" (as PostgreSQL's lc_ctype_is_c): C.UTF-8 is a full locale.
  const cCtype = locale === "C" || locale === "POSIX";
  // Turkish and Azeri lower "I" to a dotless i: not even ASCII keys are certain there.
  const turkic = /^(tr|az)([_.@-]|$)/i.test(locale);
  return (key: Key): Key | typeof MAYBE => {
    if (typeof key !== "string") {
      throw new TypeError(`${what} has keys lower(${column}), which takes a string, not ${typeof key}`);
    }
    // eslint-disable-next-line no-control-regex
    if (cCtype || (!turkic && /^[\x00-\x7f]*$/.test(key))) return asciiLower(key);
    // Outside the C ctype the server lowers with the operating system's or ICU's tables, which
    // JavaScript's toLowerCase() does not always match: such keys answer "maybe".
    return MAYBE;
  };
}

/** A key of a followed index: a value of its key's type, or for a multicolumn index an array of
 * one value per key column, in column order. */
export type IndexKey = Key | readonly Key[];

interface Described {
  oid: number;
  keyType: KeyType | null;
  transform: Transform | null;
  /** A multicolumn index's key columns, in order (a key is an array of their values), or null. */
  composite: Composite | null;
}

// The range of an integer key column's values.
const INTEGER_LIMITS: Record<string, bigint> = { smallint: 1n << 15n, integer: 1n << 31n, bigint: 1n << 63n };

/** The key rules of a multicolumn index: a key is an array of one value per key column, in
 * column order, each read as its column's type and hashed as the server hashes a composite key
 * (compositeHash). */
class Composite {
  private readonly keyTypes: KeyType[];

  /** `transforms`: an expression column's (lower() of a text column), null for a column. */
  constructor(private readonly index: string, private readonly types: readonly string[],
    private readonly transforms: readonly (Transform | null)[]) {
    this.keyTypes = types.map((type) => KEY_TYPES[type]);
  }

  /** The composite key's hash, or MAYBE when an expression column's value is one the follower
   * cannot lower as the server would. */
  hash(key: unknown): bigint | typeof MAYBE {
    const types = this.types, n = types.length;
    if (!Array.isArray(key)) {
      throw new TypeError(`index ${this.index} has ${n} key columns (${types.join(", ")}): a key is an array of ${n} `
        + `values, not ${(key as any)?.constructor?.name ?? typeof key}`);
    }
    if (key.length !== n) {
      throw new RangeError(`index ${this.index} has ${n} key columns (${types.join(", ")}): a key of ${key.length} values`);
    }
    let values = key as Key[];
    for (let i = 0; i < n; i++) {
      const value = key[i], keyType = this.keyTypes[i], transform = this.transforms[i];
      if (transform !== null) {
        const lowered = transform(value);
        if (lowered === MAYBE) return MAYBE;
        if (values === key) values = key.slice();
        values[i] = lowered;
        continue;
      }
      check(value, keyType, this.index, `key column ${i + 1} is ${types[i]}, which takes`);
      const limit = INTEGER_LIMITS[types[i]];
      if (limit !== undefined) {
        if (typeof value === "number" && !Number.isSafeInteger(value)) {
          throw new RangeError(`index ${this.index}: key column ${i + 1} is ${types[i]}: ${value} is not a safe integer`);
        }
        if (typeof value === "string" && !/^[+-]?[0-9]+$/.test(value)) {
          throw new TypeError(`index ${this.index}: key column ${i + 1} is ${types[i]}, not the digits ${JSON.stringify(value)}`);
        }
        const big = BigInt(value as number | bigint | string);
        if (big < -limit || big >= limit) {
          throw new RangeError(`index ${this.index}: key column ${i + 1} is ${types[i]}, out of range: ${big}`);
        }
      }
    }
    return compositeHash(values, this.keyTypes);
  }
}

interface IndexState extends Described {
  filter: Filter;
  usage: Usage | null;
  /** The "capacity" event was emitted for this copy (or the one it replaced, of the same index
   * and parameters). */
  overCapacity: boolean;
}

/** Why a filter was read whole again: a new connection, a layer added to an index that grows
 * ("grown": the same index, nothing to alert on), another index under the name or new
 * parameters ("rebuilt": REINDEX, drop and create), or reload(). */
export type ReloadReason = "reconnect" | "grown" | "rebuilt" | "requested";

/** The follower's events and what their listeners receive. A listener that throws (or returns a
 * promise that rejects) is reported with process.emitWarning and counted in stats().listenerErrors;
 * the follower goes on. */
export interface FollowerEvents {
  /** The copy passed maxLag (never without maxLag): contains() answers true, "maybe", from now on
   * until a refresh succeeds. `error`: the last refresh's, if it failed. */
  stale: [{ lag: number; maxLag: number; error: unknown }];
  /** A refresh succeeded after "stale": answers come from the copy again. `staleFor`: ms. */
  fresh: [{ lag: number; staleFor: number }];
  /** A filter was read whole again (the first loads, inside open(), are not reported). */
  reload: [{ index: string; reason: ReloadReason; bytes: number; rows: number; milliseconds: number }];
  /** The index holds more keys than it was built for, or answers "maybe" more often than its
   * error_rate: bloom_index_info's needs_rebuild, from the copy, checked at each refresh (the
   * first after open() included). Once per index (again after a rebuild with other parameters,
   * if the new one is over too). */
  capacity: [{ index: string } & IndexUsage];
}

/** How full a followed index is, as bloom_index_info computes it from the same bytes. */
export interface IndexUsage {
  capacity: number;
  errorRate: number;
  estimatedCount: number;
  estimatedErrorRate: number;
  needsRebuild: boolean;
}

/** Counters for an application's metrics: stats() of a follower. */
export interface FollowerStats {
  /** Milliseconds since the start of the last successful refresh (follower.lag). */
  lag: number;
  /** When that refresh started, in milliseconds since the epoch (Date.now()). */
  lastRefresh: number | null;
  /** Whether the copy is past maxLag (every answer "maybe"). */
  stale: boolean;
  /** Keys checked: contains() counts one, containsMany() one per key. */
  checks: number;
  /** Successful refreshes. */
  refreshes: number;
  /** Failed refreshes. */
  errors: number;
  /** Filters read whole (the first loads included). */
  reloads: number;
  /** Connections opened. */
  reconnects: number;
  /** Listeners of the follower's events that threw. */
  listenerErrors: number;
  /** Per index, in the order followed: how full it is. */
  indexes: ({ index: string } & IndexUsage)[];
}

/** What answers: the follower, or follower.index(names), a part of its indexes. */
export interface IndexChecker {
  contains(key: IndexKey): boolean;
  containsMany(keys: Iterable<IndexKey>): boolean[];
}

/**
 * How full a copy is, kept current as pages change: the bits set in each block and the sums over
 * blocks of bloom_info's estimates (count -(B/k) ln(1 - s/B), error rate (s/B)^k for a block of
 * B bits with s set), from which needs_rebuild follows as bloom_index_info computes it.
 */
class Usage {
  private countSum = 0;
  private fullBlocks = 0;
  private errorSum = 0;

  constructor(private readonly filter: Filter, private readonly counts: Uint32Array) {
    for (let b = 0; b < counts.length; b++) this.add(counts[b], 1);
  }

  private add(set: number, sign: number): void {
    const blockBits = 2 ** this.filter.blockLog2, k = this.filter.hashes, fill = set / blockBits;
    if (set === blockBits) this.fullBlocks += sign;
    else this.countSum += sign * (-(blockBits / k) * Math.log1p(-fill));
    this.errorSum += sign * Math.pow(fill, k);
  }

  /** Writes `bytes` at `offset` of the byte format with `write` (Filter.patch, which may throw:
   * then nothing is counted), and counts the bits each block gained or lost. */
  replace(offset: number, bytes: Uint8Array, write: () => void): void {
    const blockBytes = 2 ** (this.filter.blockLog2 - 3), end = offset + bytes.byteLength, changes: number[] = [];
    for (let at = Math.max(offset, HEADER_BYTES); at < end;) {
      const block = Math.floor((at - HEADER_BYTES) / blockBytes);
      if (block >= this.counts.length) break;
      const next = Math.min(end, HEADER_BYTES + (block + 1) * blockBytes);
      const change = bitsSet(bytes, at - offset, next - offset) - this.filter.bitsSetIn(at, next);
      if (change !== 0) changes.push(block, change);
      at = next;
    }
    write();
    for (let c = 0; c < changes.length; c += 2) {
      const block = changes[c], set = this.counts[block] + changes[c + 1];
      this.add(this.counts[block], -1);
      this.counts[block] = set;
      this.add(set, 1);
    }
  }

  get(): IndexUsage {
    const f = this.filter, bits = f.blocks * 2 ** f.blockLog2, k = f.hashes;
    const estimatedCount = this.fullBlocks > 0 ? Infinity : this.countSum;
    const estimatedErrorRate = this.errorSum / f.blocks;
    // bloom_index_info's needs_rebuild: the count past capacity by more than the estimate's own
    // error (its bias, 0.1%, and four standard deviations at capacity keys), or the rate past
    // 1.05 x error_rate.
    const x = (k * f.capacity) / bits;
    const needsRebuild = estimatedErrorRate > 1.05 * f.errorRate
      || estimatedCount > 1.001 * f.capacity + 4 * Math.sqrt((bits / (k * k)) * (Math.exp(x) - 1 - x));
    return { capacity: f.capacity, errorRate: f.errorRate, estimatedCount, estimatedErrorRate, needsRebuild };
  }
}

/** Counts the bits set per block of a filter's byte format from its rows as they arrive, so that
 * no single turn of the event loop counts the whole filter. */
class BlockCounter {
  counts: Uint32Array | null = null;
  private offset = 0;
  private shift = 0;

  add(chunk: Uint8Array): void {
    if (this.offset === 0 && chunk.byteLength >= HEADER_BYTES) {
      const blockLog2 = chunk[5], blocks = new DataView(chunk.buffer, chunk.byteOffset).getUint32(8, true);
      // A header Filter.fromBytes will refuse: nothing to count.
      if (blockLog2 >= 12 && blockLog2 <= 24 && blocks * 2 ** (blockLog2 - 3) <= 0x40000000) {
        this.counts = new Uint32Array(blocks);
        this.shift = blockLog2 - 3;
      }
    }
    const counts = this.counts;
    if (counts !== null) {
      const start = Math.max(0, HEADER_BYTES - this.offset), base = this.offset - HEADER_BYTES, shift = this.shift;
      // Block by block: the part of the chunk in each.
      for (let p = start; p < chunk.byteLength;) {
        const block = (base + p) >>> shift;
        if (block >= counts.length) break;
        const next = Math.min(chunk.byteLength, (block + 1) * 2 ** shift - base);
        counts[block] += bitsSet(chunk, p, next);
        p = next;
      }
    }
    this.offset += chunk.byteLength;
  }
}

export function isClient(value: unknown): value is FollowerClient {
  return typeof value === "object" && value !== null && typeof (value as FollowerClient).query === "function";
}

async function loadPg(): Promise<any> {
  const name = "pg"; // a peer dependency, loaded only when the follower opens its own connections
  const module: any = await import(name);
  return module.default ?? module;
}

/** How to open a new connection like `connection`: a function's own call; for a pg Client, a new
 * Client of its class with its parameters (null for a client that has none, of another driver);
 * for a connection string or config, a new pg Client. */
export function connector(connection: FollowerConnection): (() => Promise<FollowerClient>) | null {
  if (typeof connection === "function") return async () => await connection();
  if (isClient(connection)) {
    const parameters = (connection as any).connectionParameters;
    const ClientClass = (connection as any).constructor;
    return parameters && typeof ClientClass === "function"
      ? async () => { const next = new ClientClass(parameters); await next.connect(); return next; }
      : null;
  }
  return async () => {
    const pg = await loadPg();
    const next = new pg.Client(typeof connection === "string" ? { connectionString: connection } : connection);
    await next.connect();
    return next;
  };
}

export function connectionLost(error: any): boolean {
  const code: unknown = error?.code;
  // No SQLSTATE: the socket failed. 08xxx: connection exceptions; 57P01..57P03: the server went.
  return typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith("08") || /^57P0[123]$/.test(code);
}

export const now = (): number => performance.now();

/** Calls the listeners of `event` with `payload`; one that throws, or whose promise rejects, is
 * reported and counted, and the others still run. */
export function notify(emitter: EventEmitter & { listenerErrors: number }, event: string, payload: unknown): void {
  for (const listener of emitter.rawListeners(event)) {
    try {
      const result: any = (listener as (payload: unknown) => unknown).call(emitter, payload);
      if (result !== null && typeof result === "object" && typeof result.then === "function") {
        result.then(undefined, (error: unknown) => listenerFailed(emitter, event, error));
      }
    } catch (error) {
      listenerFailed(emitter, event, error);
    }
  }
}

function listenerFailed(emitter: { listenerErrors: number }, event: string, error: unknown): void {
  emitter.listenerErrors += 1;
  const reason = error instanceof Error ? error.stack : String(error);
  process.emitWarning(`a listener of the bloomfilter follower's "${event}" event failed: ${reason}`, { code: "BLOOMFILTER_LISTENER" });
}

// The event methods, typed (EventEmitter's own take any name and any listener).
export interface IndexFollower {
  on<E extends keyof FollowerEvents>(event: E, listener: (...args: FollowerEvents[E]) => void): this;
  once<E extends keyof FollowerEvents>(event: E, listener: (...args: FollowerEvents[E]) => void): this;
  off<E extends keyof FollowerEvents>(event: E, listener: (...args: FollowerEvents[E]) => void): this;
}

/**
 * Follows bloomfilter indexes and answers contains(key) locally; several indexes (the shards of
 * one key) are answered as their union, and follower.index(name) answers for one of them.
 *
 *     const follower = await IndexFollower.open(process.env.DATABASE_URL, "users_email_bloom");
 *     if (!follower.contains(email)) ... // certainly not taken as of follower.lag ms ago
 *
 * An EventEmitter: "stale", "fresh", "reload" and "capacity" (FollowerEvents).
 */
export class IndexFollower extends EventEmitter implements IndexChecker {
  readonly interval: number;
  readonly maxLag: number;
  /** The last refresh's error, until a refresh succeeds. */
  lastError: unknown = null;
  refreshes = 0;
  reloads = 0;
  reconnects = 0;
  /** Failed refreshes. */
  errors = 0;
  /** Keys checked. */
  checks = 0;
  /** Listeners of the follower's events that threw. */
  listenerErrors = 0;
  /** Queries sent, all refreshes together. */
  queries = 0;
  /** Rows of the last refresh's queries. */
  lastRows = 0;
  /** Filter bytes the last refresh moved (headers included). */
  lastBytes = 0;
  /** The server process of the follower's connection. */
  backendPid: number | null = null;
  /** The version of the bloomfilter extension in the followed database (pg_extension.extversion),
   * read on each new connection. */
  extensionVersion: string | null = null;

  /** The indexes followed, in order; follow() changes them. */
  private names: readonly string[];
  private states: (IndexState | null)[];
  private lsns: (string | null)[];
  /** Why each index's next load happens; null: its first. */
  private reasons: (ReloadReason | null)[];
  private everyIndex: readonly number[];
  /** Counts the changes of `names`: index()'s answerers find their positions again after one. */
  private generation = 0;
  private client: FollowerClient | null = null;
  private lost = false;
  private readonly connect: (() => Promise<FollowerClient>) | null;
  private refreshedAt: number | null = null;
  private refreshedAtWall: number | null = null;
  /** When the copy was found past maxLag; null while it is not. */
  private staleSince: number | null = null;
  private staleEmitted = false;
  private staleTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextStart = 0;
  private closed = false;
  private readonly keepAlive: boolean;

  private constructor(connection: FollowerConnection, indexNames: string | string[], options: FollowerOptions) {
    super();
    this.names = Object.freeze(Array.isArray(indexNames) ? [...indexNames] : [indexNames]);
    if (this.names.length === 0) throw new RangeError("no index to follow");
    this.interval = options.interval ?? 100;
    this.maxLag = options.maxLag ?? Infinity;
    this.keepAlive = options.keepAlive ?? false;
    if (!(this.interval > 0)) throw new RangeError("interval must be a positive number of milliseconds");
    this.states = this.names.map(() => null);
    this.lsns = this.names.map(() => null);
    this.reasons = this.names.map(() => null);
    this.everyIndex = Object.freeze(this.names.map((_, i) => i));
    if (isClient(connection)) this.attach(connection);
    this.connect = connector(connection);
  }

  /** The indexes followed, in order (follow() changes them). */
  get indexNames(): readonly string[] {
    return this.names;
  }

  /** A follower of `indexNames` (one name, or the names of several indexes answered as their
   * union), loaded once before it resolves; then refreshed every `interval` ms. */
  static async open(connection: FollowerConnection, indexNames: string | string[], options: FollowerOptions = {}): Promise<IndexFollower> {
    const follower = new IndexFollower(connection, indexNames, options);
    try {
      await follower.refresh();
    } catch (error) {
      await follower.close();
      throw error;
    }
    if (options.start ?? true) follower.start();
    return follower;
  }

  // -- answers ------------------------------------------------------------------------------

  /**
   * false: no row committed before the last successful refresh has this key (after the index's
   * expression, if any), in any of the indexes; true: one probably has, or the follower cannot
   * tell (a key it cannot lower as the server would, or a lag past maxLag). The key is read as
   * the index's key type: text takes a string, bytea a Buffer or Uint8Array, smallint, integer and
   * bigint a number, bigint or string of digits, uuid a string or Uuid.
   */
  contains(key: IndexKey): boolean {
    return this.answer(key, this.everyIndex);
  }

  /** contains() of every key, in order, with one check of the copy's age for them all: the same
   * answers, several times faster per key (Filter.containsMany). */
  containsMany(keys: Iterable<IndexKey>): boolean[] {
    return this.answerMany(keys, this.everyIndex);
  }

  /** Answers for one of the followed indexes (or several names, as their union), with the
   * follower's copies, freshness and counters: one connection following unrelated indexes. */
  index(names: string | readonly string[]): IndexChecker {
    const wanted = typeof names === "string" ? [names] : [...names];
    if (wanted.length === 0) throw new RangeError("no index named");
    // Found again after follow() changed the indexes followed.
    let generation = -1, positions: readonly number[] = [];
    const find = (): readonly number[] => {
      if (generation === this.generation) return positions;
      positions = wanted.map((name) => {
        const i = this.names.indexOf(name);
        if (i < 0) throw new RangeError(`${name} is not one of the indexes followed (${this.names.join(", ")})`);
        return i;
      });
      generation = this.generation;
      return positions;
    };
    find();
    return {
      contains: (key: IndexKey) => this.answer(key, find()),
      containsMany: (keys: Iterable<IndexKey>) => this.answerMany(keys, find()),
    };
  }

  /** Whether answers are "maybe" for their age (and, the first time, says so). */
  private tooOld(): boolean {
    if (this.refreshedAt === null) throw new Error("the follower has not loaded its filters");
    if (now() - this.refreshedAt <= this.maxLag) return false;
    if (this.staleSince === null) this.becameStale();
    return true;
  }

  private answer(key: IndexKey, positions: readonly number[]): boolean {
    this.checks += 1;
    if (this.tooOld()) return true;
    for (let p = 0; p < positions.length; p++) {
      const i = positions[p];
      const state = this.states[i]!;
      if (state.composite !== null) {
        const h = state.composite.hash(key);
        if (h === MAYBE || state.filter.containsHash(h)) return true;
        continue;
      }
      // One value (an array is refused as a key of any type by check, the transform or the filter).
      const value = key as Key;
      let probe: Key | typeof MAYBE = value;
      if (state.transform !== null) probe = state.transform(value);
      else if (state.keyType !== null) check(value, state.keyType, this.names[i]);
      if (probe === MAYBE) return true;
      if (state.filter.contains(probe, state.keyType ?? undefined)) return true;
    }
    return false;
  }

  // Each index is asked only for the keys the indexes before it answered false for, as
  // contains() does key by key.
  private answerMany(keys: Iterable<IndexKey>, positions: readonly number[]): boolean[] {
    const list: readonly IndexKey[] = Array.isArray(keys) ? keys : Array.from(keys);
    this.checks += list.length;
    if (this.tooOld()) return new Array<boolean>(list.length).fill(true);
    let answers: boolean[] | null = null;
    let open: number[] | null = null; // the keys answered false so far, after the first index
    for (let p = 0; p < positions.length; p++) {
      const i = positions[p];
      const state = this.states[i]!;
      const asked: readonly IndexKey[] = open === null ? list : open.map((j) => list[j]);
      const found =
        state.composite !== null
          ? this.compositeFound(state.composite, state.filter, asked)
          : this.keysFound(state, i, asked as readonly Key[]);
      if (answers === null) {
        answers = found;
      } else {
        for (let j = 0; j < found.length; j++) if (found[j]) answers[open![j]] = true;
      }
      if (p + 1 < positions.length) {
        open = [];
        for (let j = 0; j < answers.length; j++) if (!answers[j]) open.push(j);
        if (open.length === 0) break;
      }
    }
    return answers!;
  }

  // A loop of compositeHash and the filter's check of a hash for now, not a batch.
  private compositeFound(composite: Composite, filter: Filter, asked: readonly IndexKey[]): boolean[] {
    return asked.map((key) => {
      const h = composite.hash(key);
      return h === MAYBE || filter.containsHash(h);
    });
  }

  private keysFound(state: IndexState, i: number, values: readonly Key[]): boolean[] {
    let probes: Key[] | readonly Key[] = values;
    let maybe: number[] | null = null;
    if (state.transform !== null) {
      const transformed: Key[] = new Array(values.length);
      for (let j = 0; j < values.length; j++) {
        const probe = state.transform(values[j]);
        if (probe === MAYBE) {
          (maybe ??= []).push(j);
          transformed[j] = "";
        } else {
          transformed[j] = probe;
        }
      }
      probes = transformed;
    } else if (state.keyType !== null) {
      for (let j = 0; j < values.length; j++) check(values[j], state.keyType, this.names[i]);
    }
    const found = state.filter.containsMany(probes, state.keyType ?? undefined);
    if (maybe !== null) for (const j of maybe) found[j] = true;
    return found;
  }

  /** The current copies (format version 2), one per index. */
  get filters(): Filter[] {
    return this.everyIndex.map((i) => this.states[i]!.filter);
  }

  /** True when the copy is at most `maxLag` ms old (the follower's maxLag if not given; with
   * neither, true): contains() then answers from the copy. */
  isFresh(maxLag: number = this.maxLag): boolean {
    return this.lag <= maxLag;
  }

  /** Milliseconds since the start of the last successful refresh: an answer "absent" is as of
   * then. */
  get lag(): number {
    return this.refreshedAt === null ? Infinity : now() - this.refreshedAt;
  }

  /** Counters and gauges for an application's metrics (FollowerStats). */
  stats(): FollowerStats {
    return {
      lag: this.lag, lastRefresh: this.refreshedAtWall, stale: this.lag > this.maxLag, checks: this.checks,
      refreshes: this.refreshes, errors: this.errors, reloads: this.reloads, reconnects: this.reconnects,
      listenerErrors: this.listenerErrors,
      indexes: this.states.flatMap((state, i) => {
        if (state === null) return [];
        if (state.usage !== null) return [{ index: this.names[i], ...state.usage.get() }];
        if (state.filter.version !== FORMAT_VERSION_LAYERED) return [];
        // A grown index's copy: counted at each call (no per-block counts are kept for its
        // layers), and never past its capacity, since it adds a layer instead.
        const info = state.filter.info();
        return [{
          index: this.names[i], capacity: info.capacity, errorRate: info.errorRate,
          estimatedCount: info.estimatedCount, estimatedErrorRate: info.estimatedErrorRate, needsRebuild: false,
        }];
      }),
    };
  }

  // -- staleness ------------------------------------------------------------------------------

  /** The copy passed maxLag: "stale" is emitted after the code that noticed it returns (a
   * listener never runs inside contains()), unless a refresh succeeded in between. */
  private becameStale(): void {
    if (this.staleSince !== null || this.closed) return;
    const since = now();
    this.staleSince = since;
    const payload = { lag: this.lag, maxLag: this.maxLag, error: this.lastError };
    queueMicrotask(() => {
      if (this.staleSince !== since || this.closed) return;
      this.staleEmitted = true;
      notify(this, "stale", payload);
    });
  }

  /** With maxLag, a timer for the moment the copy passes it, so that "stale" comes then, checks
   * or none (a refresh that hangs included). */
  private watchAge(): void {
    if (this.staleTimer !== null) clearTimeout(this.staleTimer);
    this.staleTimer = null;
    if (!Number.isFinite(this.maxLag) || this.closed || this.staleSince !== null) return;
    this.staleTimer = setTimeout(() => {
      this.staleTimer = null;
      if (this.lag > this.maxLag) this.becameStale();
      else this.watchAge();
    }, Math.max(0, this.maxLag - this.lag) + 1);
    this.staleTimer.unref();
  }

  // -- keeping current --------------------------------------------------------------------

  /** Brings the copies up to date now (one query per index when nothing was rebuilt). Rejects
   * with the driver's error if the server cannot be reached; the next refresh reconnects. A call
   * while a refresh runs waits for that one and then runs its own. */
  async refresh(): Promise<void> {
    while (this.running !== null) await this.running.catch(() => undefined);
    const run = this.refreshOnce();
    this.running = run;
    try {
      await run;
    } finally {
      this.running = null;
    }
  }

  private async refreshOnce(): Promise<void> {
    if (this.closed) throw new Error("the follower is closed");
    const started = now(), startedWall = Date.now();
    let rows = 0, bytes = 0;
    const over: number[] = [];
    try {
      await this.connected();
      for (let i = 0; i < this.names.length; i++) {
        const [r, b] = this.states[i] === null || this.lsns[i] === null
          ? await this.load(i, this.reasons[i]) : await this.applyChanges(i);
        rows += r;
        bytes += b;
        const state = this.states[i]!;
        // Not during open(): no listener yet, and the next refresh tells them.
        if (this.refreshes > 0 && !state.overCapacity && state.usage?.get().needsRebuild) {
          state.overCapacity = true;
          over.push(i);
        }
      }
    } catch (error) {
      this.lastError = error;
      this.errors += 1;
      if (this.lost || connectionLost(error)) await this.dropConnection();
      throw error;
    }
    this.lastRows = rows;
    this.lastBytes = bytes;
    this.refreshedAt = started;
    this.refreshedAtWall = startedWall;
    this.refreshes += 1;
    this.lastError = null;
    if (this.staleSince !== null) {
      const staleFor = now() - this.staleSince;
      this.staleSince = null;
      if (this.staleEmitted) notify(this, "fresh", { lag: this.lag, staleFor });
      this.staleEmitted = false;
    }
    this.watchAge();
    for (const i of over) notify(this, "capacity", { index: this.names[i], ...this.states[i]!.usage!.get() });
  }

  /**
   * Follows `indexNames` from now on, the indexes kept with their copies: the new ones are loaded
   * first (between two refreshes, on the follower's connection), then the indexes no longer named
   * are forgotten, at once, so that a key moving from one index to another is never without a
   * copy that has it. Rejects, still following what it followed, if a new index cannot be loaded.
   */
  async follow(indexNames: string | readonly string[]): Promise<void> {
    const names = typeof indexNames === "string" ? [indexNames] : [...new Set(indexNames)];
    if (names.length === 0) throw new RangeError("no index to follow");
    while (this.running !== null) await this.running.catch(() => undefined);
    const run = this.followOnce(names);
    this.running = run;
    try {
      await run;
    } finally {
      this.running = null;
    }
  }

  private async followOnce(names: readonly string[]): Promise<void> {
    if (this.closed) throw new Error("the follower is closed");
    const before = this.names.length;
    const added = names.filter((name) => !this.names.includes(name));
    if (added.length > 0) {
      // Loaded at positions after the current ones, which contains() alone reads meanwhile.
      this.names = Object.freeze([...this.names, ...added]);
      this.states.push(...added.map(() => null));
      this.lsns.push(...added.map(() => null));
      this.reasons.push(...added.map(() => null));
      try {
        await this.connected();
        for (let i = before; i < this.names.length; i++) await this.load(i, null);
      } catch (error) {
        if (this.lost || connectionLost(error)) await this.dropConnection();
        this.names = Object.freeze(this.names.slice(0, before));
        this.states.length = this.lsns.length = this.reasons.length = before;
        throw error;
      }
    }
    const positions = names.map((name) => this.names.indexOf(name));
    this.names = Object.freeze([...names]);
    this.states = positions.map((i) => this.states[i]);
    this.lsns = positions.map((i) => this.lsns[i]);
    this.reasons = positions.map((i) => this.reasons[i]);
    this.everyIndex = Object.freeze(names.map((_, i) => i));
    this.generation += 1;
  }

  /** Reads every filter whole again (as after a reconnection), then refreshes as usual. */
  async reload(): Promise<void> {
    while (this.running !== null) await this.running.catch(() => undefined);
    this.lsns = this.lsns.map(() => null);
    this.reasons = this.reasons.map(() => "requested");
    await this.refresh();
  }

  /** Starts the timer: a refresh starts every `interval` ms however long the last took. */
  start(): void {
    if (this.timer !== null || this.closed) return;
    this.nextStart = now() + this.interval;
    this.schedule();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.nextStart = Math.max(this.nextStart + this.interval, now());
      this.refresh().catch(() => undefined).finally(() => {
        if (this.timer !== null) this.schedule();
      });
    }, Math.max(0, this.nextStart - now()));
    if (!this.keepAlive) this.timer.unref();
  }

  /** Stops the timer and closes the connection. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.staleTimer !== null) clearTimeout(this.staleTimer);
    this.staleTimer = null;
    if (this.running !== null) await this.running.catch(() => undefined);
    this.closed = true;
    await this.dropConnection();
  }

  // -- queries ------------------------------------------------------------------------------

  private attach(client: FollowerClient): void {
    this.client = client;
    this.lost = false;
    this.backendPid = null;
    // An error event with no listener would end the process: a dropped connection is expected.
    client.on("error", () => { if (this.client === client) this.lost = true; });
    client.on("end", () => { if (this.client === client) this.lost = true; });
  }

  /** A connection, with its server process and extension version read: a new one if there was
   * none or if it reported an error or its end (now, not one failed query later). */
  private async connected(): Promise<void> {
    if (this.client !== null && this.lost) await this.dropConnection();
    if (this.client === null) await this.open();
    if (this.backendPid === null) {
      const [row] = await this.query(CONNECTION, []);
      this.backendPid = row.pid;
      this.extensionVersion = row.extversion;
    }
  }

  private async open(): Promise<void> {
    if (this.connect === null) throw new Error("the follower's connection is closed and it cannot open another");
    const client = await this.connect();
    this.attach(client);
    this.reconnects += 1;
    // The new connection may reach another server (a standby promoted after a failover), whose
    // WAL positions are not the old one's: every filter is read whole again.
    this.lsns = this.lsns.map(() => null);
    this.reasons = this.states.map((state) => (state === null ? null : "reconnect"));
  }

  private async dropConnection(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client !== null) {
      try {
        await client.end();
      } catch {
        // already gone
      }
    }
  }

  private async query(text: string, values: unknown[]): Promise<any[]> {
    this.queries += 1;
    const result = await this.client!.query({ text, values, types: TEXT_TYPES });
    return result.rows;
  }

  /** The rows of a query that returns pg_backend_pid() as `pid`, refused (and the connection
   * dropped) when it ran in another server process than the connection's first query. */
  private async sessionQuery(text: string, values: unknown[]): Promise<any[]> {
    const rows = await this.query(text, values);
    const pid = rows.length > 0 ? rows[0].pid : undefined;
    if (pid !== undefined && this.backendPid !== null && String(pid) !== String(this.backendPid)) {
      const before = Number(this.backendPid);
      await this.dropConnection();
      throw new SessionChangedError(before, Number(pid));
    }
    return rows;
  }

  private async describe(i: number): Promise<Described> {
    const name = this.names[i];
    const rows = await this.sessionQuery(DESCRIBE, [name]);
    if (rows.length === 0) throw new Error(`index ${name} not found`);
    const row = rows[0];
    if (row.relkind === "I") {
      throw new UnsupportedIndexError(`${name} is a partitioned index, which has no filter of its own: follow its partitions' indexes`);
    }
    if (row.access_method !== "bloomfilter") {
      throw new UnsupportedIndexError(`${name} is not a bloomfilter index (it uses ${row.access_method})`);
    }
    // A multicolumn index holds composite keys: a key is an array of the columns' values.
    if (row.key_columns !== 1) {
      const types: string[] = [];
      const transforms: (Transform | null)[] = [];
      let columns: Map<string, string> | null = null;
      for (const part of await this.query(KEY_PARTS, [row.oid])) {
        if (KEY_TYPES[part.type] === undefined) {
          throw new UnsupportedIndexError(`index ${name}: key column ${part.position} has the type ${part.type}, which `
            + "the follower does not hash");
        }
        if (part.is_expression) columns ??= await this.columns(row.oid);
        transforms.push(part.is_expression
          ? lowerTransform(`index ${name}: key column ${part.position}`, part.definition, columns!, part.ctype)
          : null);
        types.push(part.type);
      }
      return { oid: row.oid, keyType: null, transform: null, composite: new Composite(name, types, transforms) };
    }
    const keyType = KEY_TYPES[row.key_type] ?? null;
    if (!row.is_expression) return { oid: row.oid, keyType, transform: null, composite: null };
    const transform = lowerTransform(`index ${name}`, row.definition, await this.columns(row.oid), row.ctype);
    return { oid: row.oid, keyType: "text", transform, composite: null };
  }

  /** The index's table's columns: their names (quoted as pg_get_indexdef quotes them) and base types. */
  private async columns(oid: number): Promise<Map<string, string>> {
    return new Map<string, string>((await this.query(COLUMNS, [oid])).map((c) => [c.name, c.type]));
  }

  private async load(i: number, reason: ReloadReason | null): Promise<[number, number]> {
    const started = now();
    const described = await this.describe(i);
    const lsn: string = (await this.sessionQuery(CURRENT_LSN, []))[0].lsn;
    // Through a cursor, a few rows per round trip: the event loop runs between them, where one
    // result of 2.4 MB of hex would be decoded in one go. The bits set per block are counted as
    // the rows come, for the "capacity" event.
    const chunks: Buffer[] = [];
    const counter = new BlockCounter();
    await this.query("BEGIN", []);
    try {
      await this.query(`DECLARE bloom_follower_load NO SCROLL CURSOR FOR ${LOAD}`, [described.oid]);
      for (;;) {
        const rows = await this.query(`FETCH ${FETCH_ROWS} FROM bloom_follower_load`, []);
        for (const row of rows) {
          chunks.push(row.bytes);
          counter.add(row.bytes);
        }
        if (rows.length < FETCH_ROWS) break;
      }
      await this.query("COMMIT", []);
    } catch (error) {
      await this.client?.query({ text: "ROLLBACK" }).catch(() => undefined);
      throw error;
    }
    const filter = Filter.fromBytes(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    const usage = counter.counts !== null && counter.counts.length === filter.blocks ? new Usage(filter, counter.counts) : null;
    // The same index with the same parameters was over its capacity already: said once.
    const before = this.states[i];
    const overCapacity = before !== null && before.overCapacity && before.oid === described.oid
      && before.filter.capacity === filter.capacity && before.filter.errorRate === filter.errorRate;
    this.states[i] = { ...described, filter, usage, overCapacity };
    this.lsns[i] = lsn;
    this.reloads += 1;
    if (reason !== null) {
      notify(this, "reload", {
        index: this.names[i], reason, bytes: filter.byteLength, rows: chunks.length, milliseconds: now() - started,
      });
    }
    return [chunks.length, filter.byteLength];
  }

  private async applyChanges(i: number): Promise<[number, number]> {
    const state = this.states[i]!;
    const rows = await this.sessionQuery(CHANGES, [this.names[i], this.lsns[i]]);
    if (rows.length === 0) return [0, 0];
    const bytes = rows.reduce((sum, row) => sum + row.bytes.length, 0);
    const first = rows[0];
    if (first.oid !== state.oid || Number(first.byte_offset) !== 0 || !state.filter.parametersEqual(first.bytes)) {
      // Another index under the name (REINDEX CONCURRENTLY, or dropped and created), new
      // parameters, or a layer added: read it whole. Until the new copy is complete (and if
      // reading it fails) contains() answers from the current one, as of the last refresh.
      const grown = first.oid === state.oid && Number(first.byte_offset) === 0 && state.filter.grewInto(first.bytes);
      const [loadRows, loadBytes] = await this.load(i, grown ? "grown" : "rebuilt");
      return [rows.length + loadRows, bytes + loadBytes];
    }
    const filter = state.filter;
    filter.patch(0, first.bytes.subarray(0, HEADER_BYTES));
    for (let r = 1; r < rows.length; r++) {
      const offset = Number(rows[r].byte_offset), bytes: Buffer = rows[r].bytes;
      if (state.usage !== null) state.usage.replace(offset, bytes, () => filter.patch(offset, bytes));
      else filter.patch(offset, bytes);
    }
    this.lsns[i] = first.next_lsn;
    return [rows.length, bytes];
  }
}

function check(key: Key, keyType: KeyType, index: string, what = "has keys of type"): void {
  const ok = keyType === "text" ? typeof key === "string"
    : keyType === "bytea" ? key instanceof Uint8Array
      : keyType === "bigint" ? typeof key === "number" || typeof key === "bigint" || typeof key === "string"
        : typeof key === "string" || key instanceof Uuid;
  if (!ok) throw new TypeError(`index ${index} ${what} ${keyType}, not ${key?.constructor?.name ?? typeof key}`);
}

// The event methods, typed.
export interface ShardedIndexFollower {
  on<E extends keyof FollowerEvents>(event: E, listener: (...args: [FollowerEvents[E][0] & { shard: number }]) => void): this;
  once<E extends keyof FollowerEvents>(event: E, listener: (...args: [FollowerEvents[E][0] & { shard: number }]) => void): this;
  off<E extends keyof FollowerEvents>(event: E, listener: (...args: [FollowerEvents[E][0] & { shard: number }]) => void): this;
}

/**
 * Follows the same index on several servers (the shards of a table) and answers for their
 * union: contains(key) is false only if no shard's copy has the key. Each shard has its own
 * IndexFollower (connection, timer, reconnection); with maxLag, one stale shard is enough for
 * contains() to answer true. Its events are its shards', with `shard`, the shard's position in
 * `followers`.
 */
export class ShardedIndexFollower extends EventEmitter implements IndexChecker {
  /** Keys checked. */
  checks = 0;
  /** Listeners of the events that threw. */
  listenerErrors = 0;

  private constructor(readonly indexNames: string | string[], readonly followers: readonly IndexFollower[]) {
    super();
    followers.forEach((follower, shard) => {
      for (const event of ["stale", "fresh", "reload", "capacity"] as const) {
        follower.on(event, (payload: object) => notify(this, event, { ...payload, shard }));
      }
    });
  }

  /** One IndexFollower per connection (one per shard), each loaded before this resolves. */
  static async open(connections: FollowerConnection[], indexNames: string | string[], options: FollowerOptions = {}): Promise<ShardedIndexFollower> {
    if (connections.length === 0) throw new RangeError("ShardedIndexFollower needs at least one connection");
    const opened = await Promise.allSettled(connections.map((c) => IndexFollower.open(c, indexNames, options)));
    const followers = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const failed = opened.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      await Promise.all(followers.map((f) => f.close()));
      throw failed.reason;
    }
    return new ShardedIndexFollower(indexNames, followers);
  }

  /** false: no shard has a row with this key committed before its last successful refresh;
   * true: one probably has. */
  contains(key: IndexKey): boolean {
    this.checks += 1;
    for (const follower of this.followers) if (follower.contains(key)) return true;
    return false;
  }

  /** contains() of every key, in order: one containsMany per shard, for the keys the shards before
   * it answered false for. */
  containsMany(keys: Iterable<IndexKey>): boolean[] {
    return this.answerMany(keys, this.followers);
  }

  /** Answers for one of the followed indexes (or several names, as their union) on every shard. */
  index(names: string | readonly string[]): IndexChecker {
    const checkers = this.followers.map((follower) => follower.index(names));
    return {
      contains: (key: IndexKey) => {
        this.checks += 1;
        for (const checker of checkers) if (checker.contains(key)) return true;
        return false;
      },
      containsMany: (keys: Iterable<IndexKey>) => this.answerMany(keys, checkers),
    };
  }

  private answerMany(keys: Iterable<IndexKey>, checkers: readonly IndexChecker[]): boolean[] {
    const list: readonly IndexKey[] = Array.isArray(keys) ? keys : Array.from(keys);
    this.checks += list.length;
    const answers = checkers[0].containsMany(list);
    for (let s = 1; s < checkers.length; s++) {
      const open: number[] = [];
      for (let j = 0; j < answers.length; j++) if (!answers[j]) open.push(j);
      if (open.length === 0) break;
      const found = checkers[s].containsMany(open.map((j) => list[j]));
      for (let j = 0; j < found.length; j++) if (found[j]) answers[open[j]] = true;
    }
    return answers;
  }

  /** The largest of the shards' lags: every "absent" is as of at most this long ago. */
  get lag(): number {
    return Math.max(...this.followers.map((f) => f.lag));
  }

  isFresh(maxLag?: number): boolean {
    return this.followers.every((f) => f.isFresh(maxLag));
  }

  /** The shards' counters added up; lag the largest, lastRefresh the oldest, stale if one is;
   * `shards`: each shard's own. checks counts this object's checks. */
  stats(): FollowerStats & { shards: FollowerStats[] } {
    const shards = this.followers.map((f) => f.stats());
    const sum = (field: "refreshes" | "errors" | "reloads" | "reconnects" | "listenerErrors") =>
      shards.reduce((total, s) => total + s[field], 0);
    const refreshed = shards.map((s) => s.lastRefresh);
    return {
      lag: this.lag,
      lastRefresh: refreshed.includes(null) ? null : Math.min(...(refreshed as number[])),
      stale: shards.some((s) => s.stale),
      checks: this.checks, refreshes: sum("refreshes"), errors: sum("errors"), reloads: sum("reloads"),
      reconnects: sum("reconnects"), listenerErrors: sum("listenerErrors") + this.listenerErrors,
      indexes: shards.flatMap((s) => s.indexes),
      shards,
    };
  }

  /** Refreshes every shard; rejects with the first shard's error once all were tried. */
  async refresh(): Promise<void> {
    const results = await Promise.allSettled(this.followers.map((f) => f.refresh()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  async close(): Promise<void> {
    await Promise.all(this.followers.map((f) => f.close()));
  }
}
