// CitusIndexFollower: a bloomfilter index of a Citus distributed table, followed on the nodes that
// hold its shards, answering contains(key) with no round trip.
//
// The coordinator's index is the empty shell table's, which the index functions refuse: the rows
// are in the shards, each with its own index on the node that holds it. bloom_index_shards(index),
// asked of the coordinator, lists them (shard, index name, node). One IndexFollower per node
// follows that node's shard indexes on one connection, and a key is present when one of them says
// so. The listing is read again every `shardsInterval` ms: when a shard moves (its new placement
// listed, the old one no longer), the new placement's index is loaded before the old one is
// forgotten, so that no shard is ever without a copy.

import { EventEmitter } from "node:events";
import type { Key } from "./core.js";
import {
  FollowerClient, FollowerConnection, FollowerEvents, FollowerOptions, FollowerStats, IndexChecker, IndexFollower,
  TEXT_TYPES, connectionLost, connector, isClient, notify, now,
} from "./follow.js";

const SHARDS = `SELECT s.shard_id, s.shard_index, s.node_name, s.node_port
  FROM bloom_index_shards($1::pg_catalog.regclass) s`;
// Citus hides the shards and their indexes from queries of pg_class on a node, which the follower
// makes about each shard's index (the key's type and expression).
const SHOW_SHARDS = "SET citus.override_table_visibility = off";

/** One placement of a shard, as bloom_index_shards lists it: the shard's index on a node. */
export interface ShardPlacement {
  shardId: number;
  /** The index's name on the node (Citus's shard_name(): users_email_bloom_102008). */
  index: string;
  /** The node, as the coordinator's metadata names it (pg_dist_node). */
  host: string;
  port: number;
}

export interface CitusFollowerOptions extends FollowerOptions {
  /** How to reach a node that holds shards, by the host and port of the coordinator's metadata: a
   * connection string, a pg config, a new connected client, or a function returning one, called
   * for each new connection to the node. Default: the coordinator connection's parameters
   * (database, user, password, TLS) with that host and port. */
  nodeConnection?: (host: string, port: number) => FollowerConnection;
  /** Milliseconds between readings of the shard listing (default 1000). The listing's age is part
   * of the lag: a shard moved since is not followed on its new node yet. */
  shardsInterval?: number;
}

interface NodeAddress {
  host: string;
  port: number;
}

/** The events of a CitusIndexFollower. "stale" and "fresh" are the whole follower's (every answer
 * "maybe" while stale); "reload" and "capacity" a node's, with its host and port. */
export interface CitusFollowerEvents {
  stale: FollowerEvents["stale"];
  fresh: FollowerEvents["fresh"];
  reload: [FollowerEvents["reload"][0] & NodeAddress];
  capacity: [FollowerEvents["capacity"][0] & NodeAddress];
  /** The listing changed (a shard moved, added or removed), once the placements newly listed are
   * loaded and those no longer listed forgotten; the first listing, in open(), is not reported. */
  shards: [{ added: ShardPlacement[]; removed: ShardPlacement[] }];
}

/** stats() of a CitusIndexFollower: the nodes' counters added up, forgotten nodes' included. */
export interface CitusFollowerStats extends FollowerStats {
  /** Successful readings of the shard listing. */
  listings: number;
  /** Failed ones (the coordinator unreachable, a new placement that could not be loaded). */
  listingErrors: number;
  /** Shard placements followed. */
  shards: number;
  /** Each node's own. */
  nodes: (FollowerStats & NodeAddress)[];
}

/** A node followed: its address and its follower. */
export interface CitusNode extends NodeAddress {
  follower: IndexFollower;
}

type Counter = "refreshes" | "errors" | "reloads" | "reconnects" | "listenerErrors";

const nodeKey = (host: string, port: number) => `${port} ${host}`;
const samePlacement = (a: ShardPlacement, b: ShardPlacement) =>
  a.shardId === b.shardId && a.index === b.index && a.host === b.host && a.port === b.port;

// The event methods, typed.
export interface CitusIndexFollower {
  on<E extends keyof CitusFollowerEvents>(event: E, listener: (...args: CitusFollowerEvents[E]) => void): this;
  once<E extends keyof CitusFollowerEvents>(event: E, listener: (...args: CitusFollowerEvents[E]) => void): this;
  off<E extends keyof CitusFollowerEvents>(event: E, listener: (...args: CitusFollowerEvents[E]) => void): this;
}

/**
 * Follows the bloomfilter index of a Citus distributed table on the nodes holding its shards:
 *
 *     const follower = await CitusIndexFollower.open(process.env.COORDINATOR_URL, "users_email_bloom");
 *     if (!follower.contains(email)) ... // in no shard as of follower.lag ms ago
 *
 * One connection to the coordinator (the listing) and one per node. An EventEmitter: "stale",
 * "fresh", "reload", "capacity" and "shards" (CitusFollowerEvents).
 */
export class CitusIndexFollower extends EventEmitter implements IndexChecker {
  readonly interval: number;
  readonly shardsInterval: number;
  readonly maxLag: number;
  /** The last reading of the listing's error, until one succeeds. */
  lastError: unknown = null;
  /** Keys checked. */
  checks = 0;
  /** Listeners of the events that threw. */
  listenerErrors = 0;
  listings = 0;
  listingErrors = 0;

  private readonly nodeFollowers = new Map<string, CitusNode>();
  /** The followers of nodeFollowers, for contains(). */
  private active: IndexFollower[] = [];
  private placements: ShardPlacement[] = [];
  private readonly nodeConnection: ((host: string, port: number) => FollowerConnection) | null;
  private readonly keepAlive: boolean;
  private coordinator: FollowerClient | null = null;
  private coordinatorLost = false;
  private coordinatorReconnects = 0;
  private readonly connectCoordinator: (() => Promise<FollowerClient>) | null;
  /** How the coordinator's client connected, for the nodes' default connections. */
  private template: { parameters: any; ClientClass: new (config: unknown) => any } | null = null;
  /** The counters of the followers of nodes no longer followed. */
  private readonly retired: Record<Counter, number> = { refreshes: 0, errors: 0, reloads: 0, reconnects: 0, listenerErrors: 0 };
  /** When the last listing applied was asked for. */
  private listedAt: number | null = null;
  private listedAtWall: number | null = null;
  private listing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextListing = 0;
  private started = false;
  private staleSince: number | null = null;
  private staleEmitted = false;
  private listingAgeTimer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(coordinator: FollowerConnection, readonly indexName: string, options: CitusFollowerOptions) {
    super();
    this.interval = options.interval ?? 100;
    this.shardsInterval = options.shardsInterval ?? 1000;
    this.maxLag = options.maxLag ?? Infinity;
    this.keepAlive = options.keepAlive ?? false;
    this.nodeConnection = options.nodeConnection ?? null;
    if (!(this.interval > 0)) throw new RangeError("interval must be a positive number of milliseconds");
    if (!(this.shardsInterval > 0)) throw new RangeError("shardsInterval must be a positive number of milliseconds");
    if (this.maxLag <= this.shardsInterval) {
      throw new RangeError(`maxLag (${this.maxLag} ms) must be longer than shardsInterval (${this.shardsInterval} ms): `
        + "the listing's age is part of the lag");
    }
    if (isClient(coordinator)) this.attachCoordinator(coordinator);
    this.connectCoordinator = connector(coordinator);
  }

  /**
   * A follower of `indexName`, the bloomfilter index of a Citus distributed table, given a
   * connection to the coordinator (a connection string, pg config, connected pg Client or a
   * function returning one, as for IndexFollower): its shards' indexes listed and loaded before
   * it resolves; then each node refreshed every `interval` ms and the listing read every
   * `shardsInterval` ms. Rejects with the server's error (0A000) for an index that is not a Citus
   * table's.
   */
  static async open(coordinator: FollowerConnection, indexName: string, options: CitusFollowerOptions = {}): Promise<CitusIndexFollower> {
    const follower = new CitusIndexFollower(coordinator, indexName, options);
    try {
      await follower.refreshShards();
    } catch (error) {
      await follower.close();
      throw error;
    }
    if (options.start ?? true) follower.start();
    return follower;
  }

  // -- answers ------------------------------------------------------------------------------

  /** false: no shard has a row with this key committed before lag ms ago; true: one probably
   * has, or the follower cannot tell (past maxLag, or a key it cannot lower as the server). */
  contains(key: Key): boolean {
    this.checks += 1;
    if (this.listingTooOld()) return true;
    const followers = this.active;
    for (let n = 0; n < followers.length; n++) if (followers[n].contains(key)) return true;
    return false;
  }

  /** contains() of every key, in order: one containsMany per node, for the keys the nodes before
   * it answered false for. */
  containsMany(keys: Iterable<Key>): boolean[] {
    const list: readonly Key[] = Array.isArray(keys) ? keys : Array.from(keys);
    this.checks += list.length;
    if (this.listingTooOld()) return new Array<boolean>(list.length).fill(true);
    const followers = this.active;
    const answers = followers[0].containsMany(list);
    for (let n = 1; n < followers.length; n++) {
      const open: number[] = [];
      for (let j = 0; j < answers.length; j++) if (!answers[j]) open.push(j);
      if (open.length === 0) break;
      const found = followers[n].containsMany(open.map((j) => list[j]));
      for (let j = 0; j < found.length; j++) if (found[j]) answers[open[j]] = true;
    }
    return answers;
  }

  /** The shard placements followed, as last listed. */
  get shards(): readonly ShardPlacement[] {
    return this.placements;
  }

  /** The nodes followed, each with its IndexFollower. */
  get nodes(): readonly CitusNode[] {
    return [...this.nodeFollowers.values()];
  }

  /** Milliseconds since the older of the last listing applied and the nodes' last refreshes:
   * every row committed before then is found. */
  get lag(): number {
    let lag = this.listedAt === null ? Infinity : now() - this.listedAt;
    for (const follower of this.active) lag = Math.max(lag, follower.lag);
    return lag;
  }

  isFresh(maxLag: number = this.maxLag): boolean {
    return this.lag <= maxLag;
  }

  /** The nodes' counters added up (of nodes no longer followed too); lag the largest, lastRefresh
   * the oldest (the listing's included), stale if the follower is; `nodes`: each node's own. */
  stats(): CitusFollowerStats {
    const nodes = this.nodes.map(({ host, port, follower }) => ({ host, port, ...follower.stats() }));
    const sum = (field: Counter) => nodes.reduce((total, s) => total + s[field], this.retired[field]);
    const refreshed = [this.listedAtWall, ...nodes.map((s) => s.lastRefresh)];
    const lag = this.lag;
    return {
      lag,
      lastRefresh: refreshed.includes(null) ? null : Math.min(...(refreshed as number[])),
      stale: lag > this.maxLag,
      checks: this.checks, refreshes: sum("refreshes"), errors: sum("errors"), reloads: sum("reloads"),
      reconnects: sum("reconnects") + this.coordinatorReconnects, listenerErrors: sum("listenerErrors") + this.listenerErrors,
      indexes: nodes.flatMap((s) => s.indexes),
      listings: this.listings, listingErrors: this.listingErrors, shards: this.placements.length, nodes,
    };
  }

  // -- staleness ------------------------------------------------------------------------------

  /** Whether the listing is past maxLag (and, the first time, says so). */
  private listingTooOld(): boolean {
    if (this.listedAt === null) throw new Error("the follower has not listed its shards");
    if (this.maxLag === Infinity || now() - this.listedAt <= this.maxLag) return false;
    this.updateFreshness();
    return true;
  }

  /** "stale" when the follower passes maxLag (the listing or a node; emitted after the code that
   * noticed returns), "fresh" when the last of them is back under it. */
  private updateFreshness(): void {
    if (this.maxLag === Infinity || this.closed) return;
    const lag = this.lag;
    if (lag > this.maxLag) {
      if (this.staleSince !== null) return;
      const since = now();
      this.staleSince = since;
      const error = this.lastError ?? this.active.find((f) => f.lastError !== null)?.lastError ?? null;
      const payload = { lag, maxLag: this.maxLag, error };
      queueMicrotask(() => {
        if (this.staleSince !== since || this.closed) return;
        this.staleEmitted = true;
        notify(this, "stale", payload);
      });
    } else if (this.staleSince !== null) {
      const staleFor = now() - this.staleSince;
      this.staleSince = null;
      if (this.staleEmitted) notify(this, "fresh", { lag, staleFor });
      this.staleEmitted = false;
    }
  }

  /** With maxLag, a timer for the moment the listing passes it (the nodes have their own). */
  private watchListingAge(): void {
    if (this.listingAgeTimer !== null) clearTimeout(this.listingAgeTimer);
    this.listingAgeTimer = null;
    if (this.maxLag === Infinity || this.closed || this.listedAt === null) return;
    const listedAt = this.listedAt;
    this.listingAgeTimer = setTimeout(() => {
      this.listingAgeTimer = null;
      if (now() - listedAt > this.maxLag) this.updateFreshness();
      else this.watchListingAge();
    }, Math.max(0, this.maxLag - (now() - listedAt)) + 1);
    this.listingAgeTimer.unref();
  }

  // -- keeping current --------------------------------------------------------------------

  /** Reads the listing and applies it: the placements newly listed loaded (a node's new
   * connection, or its follower's follow()), then those no longer listed forgotten. Rejects,
   * forgetting nothing, if the coordinator cannot be reached or a new placement not loaded. */
  async refreshShards(): Promise<void> {
    while (this.listing !== null) await this.listing.catch(() => undefined);
    const run = this.listOnce();
    this.listing = run;
    try {
      await run;
    } finally {
      this.listing = null;
    }
  }

  /** Reads the listing, then refreshes every node; rejects with the first error once all were
   * tried. */
  async refresh(): Promise<void> {
    const listed = await this.refreshShards().then(() => null, (error: unknown) => ({ error }));
    const results = await Promise.allSettled(this.active.map((f) => f.refresh()));
    if (listed !== null) throw listed.error;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Starts the timers: each node's (every `interval` ms) and the listing's (`shardsInterval`). */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    for (const follower of this.active) follower.start();
    this.nextListing = now() + this.shardsInterval;
    this.schedule();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.nextListing = Math.max(this.nextListing + this.shardsInterval, now());
      this.refreshShards().catch(() => undefined).finally(() => {
        if (this.timer !== null) this.schedule();
      });
    }, Math.max(0, this.nextListing - now()));
    if (!this.keepAlive) this.timer.unref();
  }

  /** Stops the timers and closes every connection. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.listingAgeTimer !== null) clearTimeout(this.listingAgeTimer);
    this.listingAgeTimer = null;
    if (this.listing !== null) await this.listing.catch(() => undefined);
    this.closed = true;
    // The nodes' copies still answer, as a closed IndexFollower's do (their lag growing).
    await Promise.all(this.nodes.map((node) => node.follower.close()));
    await this.dropCoordinator();
  }

  private async listOnce(): Promise<void> {
    if (this.closed) throw new Error("the follower is closed");
    const started = now(), startedWall = Date.now();
    try {
      const listed = await this.list();
      if (listed.length === 0) throw new Error(`bloom_index_shards('${this.indexName}') lists no shard placement`);
      await this.apply(listed);
    } catch (error) {
      this.lastError = error;
      this.listingErrors += 1;
      throw error;
    }
    this.lastError = null;
    this.listings += 1;
    this.listedAt = started;
    this.listedAtWall = startedWall;
    this.watchListingAge();
    this.updateFreshness();
  }

  private async list(): Promise<ShardPlacement[]> {
    if (this.coordinator !== null && this.coordinatorLost) await this.dropCoordinator();
    if (this.coordinator === null) {
      if (this.connectCoordinator === null) throw new Error("the coordinator's connection is closed and the follower cannot open another");
      this.attachCoordinator(await this.connectCoordinator());
      this.coordinatorReconnects += 1;
    }
    try {
      const { rows } = await this.coordinator!.query({ text: SHARDS, values: [this.indexName], types: TEXT_TYPES });
      return rows.map((row) => ({ shardId: Number(row.shard_id), index: row.shard_index, host: row.node_name, port: Number(row.node_port) }));
    } catch (error) {
      if (this.coordinatorLost || connectionLost(error)) await this.dropCoordinator();
      throw error;
    }
  }

  private async apply(listed: ShardPlacement[]): Promise<void> {
    const wanted = new Map<string, NodeAddress & { indexes: string[] }>();
    for (const { index, host, port } of listed) {
      const key = nodeKey(host, port);
      let node = wanted.get(key);
      if (node === undefined) wanted.set(key, (node = { host, port, indexes: [] }));
      if (!node.indexes.includes(index)) node.indexes.push(index);
    }
    // 1. What is newly listed, loaded: a node not followed yet, or new indexes on one followed.
    // What loads stays, even if another load fails: a copy of a listed placement.
    const results = await Promise.allSettled([...wanted].map(async ([key, { host, port, indexes }]) => {
      const node = this.nodeFollowers.get(key);
      if (node === undefined) {
        const follower = await IndexFollower.open(this.nodeConnector(host, port), indexes,
          { interval: this.interval, maxLag: this.maxLag, keepAlive: this.keepAlive, start: false });
        if (this.closed) {
          await follower.close();
          throw new Error("the follower is closed");
        }
        this.adopt(key, { host, port, follower });
      } else if (indexes.some((index) => !node.follower.indexNames.includes(index))) {
        await node.follower.follow([...node.follower.indexNames, ...indexes]);
      }
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    // 2. Every placement listed has its copy: those no longer listed are forgotten.
    for (const [key, node] of this.nodeFollowers) {
      const indexes = wanted.get(key)?.indexes;
      if (indexes === undefined) {
        this.nodeFollowers.delete(key);
        this.active = [...this.nodeFollowers.values()].map((n) => n.follower);
        const stats = node.follower.stats();
        for (const field of Object.keys(this.retired) as Counter[]) this.retired[field] += stats[field];
        await node.follower.close();
      } else if (indexes.length !== node.follower.indexNames.length || indexes.some((index, i) => node.follower.indexNames[i] !== index)) {
        await node.follower.follow(indexes);
      }
    }
    const added = listed.filter((p) => !this.placements.some((q) => samePlacement(p, q)));
    const removed = this.placements.filter((p) => !listed.some((q) => samePlacement(p, q)));
    const first = this.listings === 0;
    this.placements = listed;
    if (!first && (added.length > 0 || removed.length > 0)) notify(this, "shards", { added, removed });
  }

  private adopt(key: string, node: CitusNode): void {
    const { host, port, follower } = node;
    this.nodeFollowers.set(key, node);
    this.active = [...this.nodeFollowers.values()].map((n) => n.follower);
    for (const event of ["reload", "capacity"] as const) {
      follower.on(event, (payload: object) => notify(this, event, { ...payload, host, port }));
    }
    follower.on("stale", () => this.updateFreshness());
    follower.on("fresh", () => this.updateFreshness());
    if (this.started) follower.start();
  }

  /** Opens a connection to a node: nodeConnection's, or the coordinator's parameters with the
   * node's host and port; with the shards visible. */
  private nodeConnector(host: string, port: number): () => Promise<FollowerClient> {
    const open = async (): Promise<FollowerClient> => {
      if (this.nodeConnection !== null) {
        const connection = this.nodeConnection(host, port);
        return isClient(connection) ? connection : await connector(connection)!();
      }
      const template = this.template;
      if (template === null) {
        throw new Error("the coordinator's client does not say how it connected (no pg connectionParameters): "
          + "give nodeConnection(host, port)");
      }
      const client = new template.ClientClass({ ...template.parameters, password: template.parameters.password, host, port });
      await client.connect();
      return client;
    };
    return async () => {
      const client = await open();
      try {
        await client.query({ text: SHOW_SHARDS });
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      return client;
    };
  }

  private attachCoordinator(client: FollowerClient): void {
    this.coordinator = client;
    this.coordinatorLost = false;
    const parameters = (client as any).connectionParameters;
    const ClientClass = (client as any).constructor;
    if (parameters && typeof ClientClass === "function") this.template = { parameters, ClientClass };
    client.on("error", () => { if (this.coordinator === client) this.coordinatorLost = true; });
    client.on("end", () => { if (this.coordinator === client) this.coordinatorLost = true; });
  }

  private async dropCoordinator(): Promise<void> {
    const client = this.coordinator;
    this.coordinator = null;
    if (client !== null) {
      try {
        await client.end();
      } catch {
        // already gone
      }
    }
  }
}
