// PgBouncer processes of the tests' own (never the system's service), in front of the server the
// libpq environment names (PGHOST, PGPORT, as test/run-node.sh sets them): a generated ini file in
// a directory of their own, a free port on 127.0.0.1 and a Unix socket in that directory,
// auth_type = trust with a userlist of the test user, every database (`*`) of the server reached
// through its socket. As root, pgbouncer (which refuses to run as root) runs as $BLOOM_TEST_USER
// (postgres), as the clusters do. The same as clients/python/tests/pgbouncer.py.
import { spawn, execFileSync } from "node:child_process";
import { accessSync, chownSync, chmodSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/** The pgbouncer program: $PGBOUNCER, else on the PATH, else Debian's /usr/sbin; null when it is
 * not installed. */
export function pgbouncerBinary() {
  const path = (process.env.PATH ?? "").split(":").filter(Boolean).map((dir) => join(dir, "pgbouncer"));
  for (const candidate of [process.env.PGBOUNCER, ...path, "/usr/sbin/pgbouncer"]) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there
    }
  }
  return null;
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => server.listen(0, "127.0.0.1", resolve).on("error", reject));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" }, () => { socket.end(); resolve(true); });
    socket.on("error", () => resolve(false));
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a pgbouncer in `poolMode` (session or transaction). roundRobin: server connections are
 * reused in turn (server_round_robin = 1), so that with two of them open (warm()) consecutive
 * transactions of one client go to different server processes, as on a busy pool; otherwise the
 * one released last is taken first.
 */
export async function startPgBouncer(poolMode, { roundRobin = false, poolSize = 4 } = {}) {
  const program = pgbouncerBinary();
  if (program === null) throw new Error("pgbouncer is not installed (apt-get install pgbouncer)");
  const dir = mkdtempSync(join(process.env.CLUSTER_ROOT || tmpdir(), `pgbouncer-${poolMode}-`));
  chmodSync(dir, 0o755);
  let uid, gid;
  if (process.getuid() === 0) {
    const user = process.env.BLOOM_TEST_USER || "postgres";
    uid = Number(execFileSync("id", ["-u", user]));
    gid = Number(execFileSync("id", ["-g", user]));
    chownSync(dir, uid, gid);
  }
  const user = process.env.PGUSER || "postgres";
  writeFileSync(join(dir, "userlist.txt"), `"${user}" ""\n`);
  const log = join(dir, "pgbouncer.log");
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    writeFileSync(join(dir, "pgbouncer.ini"), [
      "[databases]",
      `* = host=${process.env.PGHOST || "127.0.0.1"} port=${process.env.PGPORT || 5432} user=${user}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      "max_client_conn = 200",
      `server_round_robin = ${roundRobin ? 1 : 0}`,
      `logfile = ${log}`,
      "",
    ].join("\n"));
    const child = spawn(program, [join(dir, "pgbouncer.ini")], { cwd: dir, stdio: "ignore", uid, gid });
    let exited = false;
    child.on("exit", () => { exited = true; });
    const deadline = Date.now() + 10_000;
    while (!exited && Date.now() < deadline && !(await listening(port))) await sleep(50);
    if (!exited && (await listening(port))) {
      return {
        port,
        dir,
        /** A pg config for `database` through this pgbouncer's Unix socket. */
        config(database) {
          return { host: dir, port, user, database };
        },
        /** The same as a connection string (for the follower). */
        url(database) {
          return `postgresql://${user}@/${database}?host=${encodeURIComponent(dir)}&port=${port}`;
        },
        /** Opens `connections` server connections to `database` (concurrent transactions), left
         * idle in the pool, so that roundRobin takes effect from the next transaction on. */
        async warm(database, connections = 2) {
          const clients = [];
          try {
            for (let i = 0; i < connections; i++) {
              const client = new pg.Client(this.config(database));
              await client.connect();
              clients.push(client);
              await client.query("BEGIN");
              await client.query("SELECT 1");
            }
            // A client leaving in a transaction would take its server connection with it.
            for (const client of clients) await client.query("COMMIT");
          } finally {
            for (const client of clients) await client.end();
          }
        },
        async stop() {
          if (!exited) {
            const gone = new Promise((resolve) => child.once("exit", resolve));
            child.kill("SIGTERM");
            await gone;
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (!exited) child.kill("SIGKILL");
  }
  let tail = "no log";
  try {
    tail = readFileSync(log, "utf8").split("\n").slice(-5).join("\n");
  } catch {
    // none written
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`pgbouncer did not start: ${tail}`);
}
