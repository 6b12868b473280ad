// The Node.js client's benchmark, run by bench/node_client.sh on its cluster (PGHOST, PGPORT,
// PGDATABASE): Filter.contains against bloom_index_contains through pg, containsMany against a
// loop of contains, the follower's lag from COMMIT to a true answer (one index, and 4 indexes on
// one connection), the longest event-loop stall while a 1M-key filter loads, and a check in SQL
// through PgBouncer against a direct connection.
import { appendFileSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("../clients/node/package.json", import.meta.url));
const pg = require("pg");
const { IndexFollower } = require("pg-bloomfilter");
const { pgbouncerBinary, startPgBouncer } = await import("../clients/node/test/pgbouncer.mjs");

const LOOKUP_SECONDS = Number(process.env.BENCH_LOOKUP_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_LOOKUP_ROUNDS ?? 5);
const INSERTS = Number(process.env.BENCH_FOLLOWER_INSERTS ?? 10000);
const RELOADS = Number(process.env.BENCH_RELOADS ?? 5);
const PGBOUNCER_SECONDS = Number(process.env.BENCH_PGBOUNCER_SECONDS ?? 1);
const MULTI_TABLES = ["multi0", "multi1", "multi2", "multi3"];
const INTERVAL = 100;
const BATCH = 1000;
const rows = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(q * (s.length - 1))]; };

function row(what, measured, op, target) {
  const pass = op === undefined ? "-" : (op === ">=" ? measured >= target : measured <= target) ? "PASS" : "MISS";
  rows.push(`node) ${what}|${measured}|${op === undefined ? "-" : `${op} ${target}`}|${pass}`);
}

// Keys: random n in [0, 2,000,000), half present, as text.
let seed = 42;
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
const KEYS = Array.from({ length: 1 << 16 }, () => String(random() % 2000000));

async function lookups(client, seconds) {
  const end = performance.now() + seconds * 1000;
  let n = 0, present = 0;
  const started = performance.now();
  while (performance.now() < end) {
    for (let j = 0; j < 100; j++, n++) {
      const { rows: [r] } = await client.query({ name: "lookup", text: "SELECT bloom_index_contains('users_email_bloom', $1) AS c",
        values: [KEYS[n & (KEYS.length - 1)]] });
      present += r.c ? 1 : 0;
    }
  }
  return [((performance.now() - started) * 1e6) / n, present / n];
}

// containsMany over batches of BATCH keys (the same keys, in order), per key.
function checksMany(follower, seconds) {
  const batches = [];
  for (let i = 0; i < KEYS.length; i += BATCH) batches.push(KEYS.slice(i, i + BATCH));
  const end = performance.now() + seconds * 1000;
  let n = 0, present = 0, b = 0;
  const started = performance.now();
  while (performance.now() < end) {
    for (let j = 0; j < 100; j++, b++) {
      const answers = follower.containsMany(batches[b % batches.length]);
      n += answers.length;
      for (const answer of answers) present += answer ? 1 : 0;
    }
  }
  return [((performance.now() - started) * 1e6) / n, present / n];
}

function checks(follower, seconds) {
  const end = performance.now() + seconds * 1000;
  let n = 0, present = 0;
  const started = performance.now();
  while (performance.now() < end) {
    for (let j = 0; j < 10000; j++, n++) present += follower.contains(KEYS[n & (KEYS.length - 1)]) ? 1 : 0;
  }
  return [((performance.now() - started) * 1e6) / n, present / n];
}

// The followers of layeredBatches: [label, index], in bench/node_client.sh's database.
const LAYERED_INDEXES = [["fixed-size (expansion = 0)", "fixed_email_bloom"], ["1-layer", "users_email_bloom"],
  ["6-layer", "grown_email_bloom"]];

// The process's CPU time in ms (user and system): other work on the machine left out.
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };

// CPU ns a key of check(keys), in whole calls, for at least `seconds` of CPU time.
function cpuNsPerKey(check, keys, seconds) {
  const started = cpuMs();
  let checks = 0;
  for (;;) {
    check(keys);
    checks += keys.length;
    const elapsed = cpuMs() - started;
    if (elapsed >= seconds * 1000) return (elapsed * 1e6) / checks;
  }
}

// containsMany of 100,000 keys (half present) in one call against a loop of contains on the same
// keys, on followers of a fixed-size index and of indexes of 1 and 6 layers (1M keys each): CPU
// time a key, the loop and the batch in turn, round by round; each round's ratio and their median.
async function layeredBatches(rounds = 7, seconds = 0.4) {
  const keys = Array.from({ length: 100000 }, () => String(random() % 2000000));
  console.log(`\n== IndexFollower.containsMany on layered indexes: ${keys.length} keys in one call against a loop of contains,`
    + ` CPU time a key, ${rounds} rounds of ${seconds} s each side in turn`);
  for (const [label, index] of LAYERED_INDEXES) {
    const follower = await IndexFollower.open(() => { const c = new pg.Client(); return c.connect().then(() => c); },
      index, { start: false });
    const f = follower.filters[0];
    const answers = keys.map((key) => follower.contains(key));
    const many = follower.containsMany(keys);
    if (many.some((answer, i) => answer !== answers[i])) throw new Error(`${index}: containsMany differs from contains`);
    const loop = (list) => { for (const key of list) follower.contains(key); };
    const batch = (list) => follower.containsMany(list);
    cpuNsPerKey(loop, keys, seconds);
    cpuNsPerKey(batch, keys, seconds);
    const loopNs = [], batchNs = [], ratios = [];
    for (let r = 0; r < rounds; r++) {
      loopNs.push(cpuNsPerKey(loop, keys, seconds));
      batchNs.push(cpuNsPerKey(batch, keys, seconds));
      ratios.push(loopNs[r] / batchNs[r]);
    }
    await follower.close();
    const present = answers.filter(Boolean).length / answers.length;
    console.log(`  ${label.padEnd(28)} ${index} (format version ${f.version}, ${f.layers.length} layers, ${(present * 100).toFixed(1)}% true):`
      + ` containsMany ${median(batchNs).toFixed(0)} ns a key, loop ${median(loopNs).toFixed(0)} ns (medians);`
      + ` ratio median ${median(ratios).toFixed(2)}x, rounds ${ratios.map((x) => x.toFixed(2)).join(" ")}`);
    const what = `IndexFollower.containsMany per key vs a loop of contains, ${label} index (${index}), 100,000 keys`;
    rows.push(`node) ${what}: batch ns a key|${median(batchNs).toFixed(0)}|-|-`);
    rows.push(`node) ${what}: loop ns a key|${median(loopNs).toFixed(0)}|-|-`);
    row(`${what}: loop time / batch time, median of rounds`, Number(median(ratios).toFixed(2)), ">=", f.layers.length ? 4 : 3);
  }
}

function printRows() {
  console.log("\n== node client rows");
  for (const r of rows) console.log(r);
  if (process.env.NODE_CLIENT_SUMMARY_FILE) appendFileSync(process.env.NODE_CLIENT_SUMMARY_FILE, rows.join("\n") + "\n");
}

async function main() {
  if (process.env.BENCH_CLIENT_ONLY === "layered") {
    await layeredBatches();
    printRows();
    return;
  }
  const client = new pg.Client();
  await client.connect();
  const follower = await IndexFollower.open(() => { const c = new pg.Client(); return c.connect().then(() => c); },
    "users_email_bloom", { start: false });

  console.log(`== Filter.contains against SELECT bloom_index_contains('users_email_bloom', $1) through pg`
    + ` (1 client, prepared, Unix socket), ${ROUNDS} rounds of ${LOOKUP_SECONDS} s each side`);
  checks(follower, 0.5);
  await lookups(client, 0.5);
  const ratios = [], local = [], remote = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [sqlNs, sqlPresent] = await lookups(client, LOOKUP_SECONDS);
    const [jsNs, jsPresent] = checks(follower, LOOKUP_SECONDS);
    ratios.push(sqlNs / jsNs);
    local.push(jsNs);
    remote.push(sqlNs);
    console.log(`round ${r + 1}: bloom_index_contains ${(sqlNs / 1000).toFixed(1)} µs (${(sqlPresent * 100).toFixed(1)}% true),`
      + ` Filter.contains ${jsNs.toFixed(0)} ns (${(jsPresent * 100).toFixed(1)}% true): ${(sqlNs / jsNs).toFixed(1)}x`);
  }
  row("Filter.contains, ns per check (1M keys, 7 hashes)", Math.round(median(local)));
  row("bloom_index_contains through pg, µs per check", Number((median(remote) / 1000).toFixed(1)));
  row("Filter.contains faster than bloom_index_contains through pg (x, median of rounds)", Number(median(ratios).toFixed(1)), ">=", 30);

  console.log(`\n== containsMany against contains on the same follower, batches of ${BATCH} keys, ${LOOKUP_SECONDS} s each (one run)`);
  checksMany(follower, 0.5);
  const [oneNs, onePresent] = checks(follower, LOOKUP_SECONDS);
  const [manyNs, manyPresent] = checksMany(follower, LOOKUP_SECONDS);
  console.log(`contains ${oneNs.toFixed(0)} ns per key (${(onePresent * 100).toFixed(1)}% true), containsMany ${manyNs.toFixed(0)} ns`
    + ` per key (${(manyPresent * 100).toFixed(1)}% true): ${(oneNs / manyNs).toFixed(1)}x`);
  row(`containsMany, ns per key (batches of ${BATCH}, 1M keys, 7 hashes)`, Math.round(manyNs));
  row("containsMany faster per key than a loop of contains (x, one run)", Number((oneNs / manyNs).toFixed(1)), ">=", 3);
  await follower.close();

  console.log(`\n== event loop: the longest stall while IndexFollower.reload() reads users_email_bloom (1M keys, 1.2 MB) whole, ${RELOADS} times`);
  // The main thread's time spent waiting for a CPU (runnable, not running), from the kernel's
  // schedstat: on a shared machine a timer can be late because another process had the CPU, which
  // is no stall of the event loop. Each gap is reported whole and less that wait.
  const schedstat = `/proc/${process.pid}/task/${process.pid}/schedstat`;
  const waited = () => { try { return Number(readFileSync(schedstat, "utf8").split(" ")[1]) / 1e6; } catch { return 0; } };
  const stalls = [], gaps = [];
  const reloading = await IndexFollower.open(() => { const c = new pg.Client(); return c.connect().then(() => c); },
    "users_email_bloom", { start: false });
  for (let r = 0; r < RELOADS; r++) {
    let last = performance.now(), lastWait = waited(), longest = 0, longestOwn = 0;
    const ticker = setInterval(() => {
      const t = performance.now(), w = waited();
      longest = Math.max(longest, t - last);
      longestOwn = Math.max(longestOwn, t - last - (w - lastWait));
      last = t;
      lastWait = w;
    }, 1);
    await sleep(20);
    longest = 0;
    longestOwn = 0;
    const started = performance.now();
    await reloading.reload();
    const f = reloading;
    const took = performance.now() - started;
    await sleep(5);
    clearInterval(ticker);
    // A 1 ms timer fires about every millisecond when nothing blocks: the stall is what is past that.
    gaps.push(Math.max(0, longest - 1));
    stalls.push(Math.max(0, longestOwn - 1));
    console.log(`load ${r + 1}: ${took.toFixed(0)} ms, ${f.lastRows} rows, ${f.lastBytes} bytes; longest gap between 1 ms ticks`
      + ` ${longest.toFixed(2)} ms, ${longestOwn.toFixed(2)} ms less the time the thread waited for a CPU`);
  }
  await reloading.close();
  row("event-loop stall during a reload of a 1M-key filter, longest gap past 1 ms, wall clock (ms)", Number(Math.max(...gaps).toFixed(2)));
  row("event-loop stall during a reload of a 1M-key filter, longest, less CPU wait (ms)", Number(Math.max(...stalls).toFixed(2)), "<=", 5);

  console.log(`\n== follower lag: ${INSERTS} inserts by 2 clients, IndexFollower(interval=${INTERVAL} ms) on signups_email_bloom`);
  const lagFollower = await IndexFollower.open(() => { const c = new pg.Client(); return c.connect().then(() => c); },
    "signups_email_bloom", { interval: INTERVAL });
  const pending = new Map();
  const lags = [];
  let done = false;
  const checker = (async () => {
    while (!done || pending.size > 0) {
      await sleep(1);
      const now = performance.now();
      for (const [key, at] of pending) {
        if (lagFollower.contains(key)) {
          lags.push(Math.max(0, now - at) / 1000);
          pending.delete(key);
        }
      }
    }
  })();
  const started = performance.now();
  await Promise.all([0, 1].map(async (w) => {
    const c = new pg.Client();
    await c.connect();
    for (let i = w; i < INSERTS; i += 2) {
      const key = `lag${i}@mail.com`;
      await c.query({ name: "signup", text: "INSERT INTO signups (email) VALUES ($1)", values: [key] });
      pending.set(key, performance.now());
    }
    await c.end();
  }));
  const elapsed = (performance.now() - started) / 1000;
  done = true;
  await checker;
  await lagFollower.close();
  console.log(`${lags.length} inserts in ${elapsed.toFixed(1)} s; lag from COMMIT to a true answer: median ${median(lags).toFixed(3)} s,`
    + ` p99 ${quantile(lags, 0.99).toFixed(3)} s, max ${Math.max(...lags).toFixed(3)} s`);
  row(`follower lag COMMIT to true answer, p99 (s), interval 0.1, ${INSERTS} inserts`, Number(quantile(lags, 0.99).toFixed(3)), "<=", 0.25);
  await client.end();

  await layeredBatches();
  await multiLag();
  await pgbouncerChecks();
  printRows();
}

// One IndexFollower of the 4 indexes multi<n>_email_bloom on one connection (index(name) answers
// for one of them), one writer a table: the lag from COMMIT to a true answer of the key's index.
async function multiLag() {
  const names = MULTI_TABLES.map((t) => `${t}_email_bloom`);
  const perTable = Math.floor(INSERTS / MULTI_TABLES.length);
  console.log(`\n== follower of ${names.length} indexes on one connection: lag from COMMIT to a true answer, ${perTable * names.length}`
    + ` inserts by ${names.length} clients, one a table (interval ${INTERVAL} ms)`);
  const follower = await IndexFollower.open(() => { const c = new pg.Client(); return c.connect().then(() => c); },
    names, { interval: INTERVAL });
  const indexes = new Map(MULTI_TABLES.map((t, i) => [t, follower.index(names[i])]));
  const pending = new Map();
  const lags = [];
  let done = false, committed = 0;
  const checker = (async () => {
    while (!done || pending.size > 0) {
      await sleep(1);
      const now = performance.now();
      for (const [key, [table, at]] of pending) {
        if (indexes.get(table).contains(key)) {
          lags.push(Math.max(0, now - at) / 1000);
          pending.delete(key);
        }
      }
    }
  })();
  const started = performance.now();
  await Promise.all(MULTI_TABLES.map(async (table) => {
    const c = new pg.Client();
    await c.connect();
    for (let i = 0; i < perTable; i++) {
      const key = `${table}-lag${i}@mail.com`;
      await c.query({ name: `signup_${table}`, text: `INSERT INTO ${table} (email) VALUES ($1)`, values: [key] });
      pending.set(key, [table, performance.now()]);
      committed += 1;
    }
    await c.end();
  }));
  const elapsed = (performance.now() - started) / 1000;
  done = true;
  await checker;
  const { queries, refreshes, reconnects } = follower;
  await follower.close();
  if (lags.length !== committed) throw new Error(`the multi-index follower answered true for ${lags.length} of ${committed} keys`);
  const p99 = quantile(lags, 0.99);
  console.log(`${lags.length} inserts in ${elapsed.toFixed(1)} s; lag: median ${median(lags).toFixed(3)} s, p99 ${p99.toFixed(3)} s,`
    + ` max ${Math.max(...lags).toFixed(3)} s; the one connection: ${refreshes} refreshes, ${queries} queries, ${reconnects} reconnects`);
  row(`multi-index follower (${names.length} indexes, one connection) lag COMMIT to true answer, p99 (s), interval 0.1`,
    Number(p99.toFixed(3)), "<=", 0.25);
}

// A check in SQL, bloom_index_contains, through PgBouncer (session and transaction mode, processes
// of their own on a Unix socket, as the tests start them) against a direct connection: pg, one
// Client each, unnamed statements on all three (pg prepares no named statement unless asked,
// which transaction mode needs), rounds of BENCH_PGBOUNCER_SECONDS in an order that rotates.
async function pgbouncerChecks() {
  console.log(`\n== a check in SQL through PgBouncer against a direct connection: pg, 1 client, Unix socket, unnamed`
    + ` statements, ${ROUNDS} rounds of ${PGBOUNCER_SECONDS} s`);
  if (pgbouncerBinary() === null) {
    console.log("skipped: pgbouncer is not installed (apt-get install pgbouncer)");
    return;
  }
  const database = process.env.PGDATABASE;
  const bouncers = {};
  const clients = {};
  try {
    bouncers.session = await startPgBouncer("session");
    bouncers.transaction = await startPgBouncer("transaction");
    clients.direct = new pg.Client();
    for (const [mode, bouncer] of Object.entries(bouncers)) clients[mode] = new pg.Client(bouncer.config(database));
    for (const c of Object.values(clients)) await c.connect();
    const names = Object.keys(clients);
    const times = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const name of [...names.slice(r % 3), ...names.slice(0, r % 3)]) {
        const c = clients[name];
        let checks = 0;
        const started = performance.now();
        while (performance.now() - started < PGBOUNCER_SECONDS * 1000) {
          await c.query("SELECT bloom_index_contains('users_email_bloom', $1) AS c", [KEYS[checks & (KEYS.length - 1)]]);
          checks += 1;
        }
        times[name].push(((performance.now() - started) * 1000) / checks);
      }
    }
    const medians = Object.fromEntries(names.map((n) => [n, median(times[n])]));
    console.log(`µs a check, median of the rounds: ${names.map((n) => `${n} ${medians[n].toFixed(1)}`).join(", ")}`);
    for (const mode of Object.keys(bouncers)) {
      const ratio = medians[mode] / medians.direct;
      console.log(`through PgBouncer in ${mode} mode / direct: ${ratio.toFixed(2)}x (rounds: ${times[mode].map((t, i) => (t / times.direct[i]).toFixed(2)).join(", ")})`);
      row(`a check in SQL through PgBouncer (${mode} mode) / direct, per-check time`, Number(ratio.toFixed(2)));
    }
  } finally {
    for (const c of Object.values(clients)) await c.end().catch(() => {});
    for (const b of Object.values(bouncers)) await b.stop();
  }
}

main().catch((error) => { console.error(error); process.exit(1); });
