// Shared by the tests against a server: a fresh database (UTF8, C.UTF-8) with the extension per
// test file, on the server the libpq environment names (PGHOST, PGPORT, PGUSER), as
// test/run-node.sh sets it for a throwaway cluster. Without PGHOST those tests are skipped.
import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { Uuid } from "pg-bloomfilter";

export const HAVE_SERVER = Boolean(process.env.PGHOST);

export async function createDatabase(prefix) {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ database: "postgres" });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'`);
  await admin.end();
  const setup = new pg.Client({ database: name });
  await setup.connect();
  await setup.query("CREATE EXTENSION bloomfilter");
  await setup.query(KEY_FUNCTIONS);
  await setup.end();
  return {
    name,
    async client() {
      const client = new pg.Client({ database: name });
      await client.connect();
      return client;
    },
    async drop() {
      const dropper = new pg.Client({ database: "postgres" });
      await dropper.connect();
      await dropper.query(`DROP DATABASE "${name}" WITH (FORCE)`);
      await dropper.end();
    },
  };
}

// Key number i of each type, the same in SQL and in JavaScript: text with ASCII, Cyrillic and
// emoji; bytea of every length 0..32 (then 16..32, so that absent keys differ from present ones); bigint across the whole range, negatives included; uuid.
const KEY_FUNCTIONS = `
CREATE FUNCTION key_text(i int8) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE i % 4 WHEN 0 THEN 'user' || i || '@mail.com' WHEN 1 THEN 'Ключ ' || i || ' ü'
                    WHEN 2 THEN i::text ELSE '😀' || i || 'é' END $$;
CREATE FUNCTION key_bytea(i int8) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT substring(sha256(int8send(i)) FROM 1 FOR (CASE WHEN i < 1000 THEN i % 33 ELSE 16 + i % 17 END)::int) $$;
CREATE FUNCTION key_bigint(i int8) RETURNS int8 LANGUAGE sql IMMUTABLE AS $$
  SELECT i * 46116860184273 - 4611686018427387904 + i % 7 $$;
CREATE FUNCTION key_uuid(i int8) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT md5(i::text)::uuid $$;
`;

export const TYPES = ["text", "bytea", "bigint", "uuid"];

export function jsKey(type, i) {
  switch (type) {
    case "text":
      return [`user${i}@mail.com`, `Ключ ${i} ü`, `${i}`, `😀${i}é`][i % 4];
    case "bytea": {
      const be = Buffer.alloc(8);
      be.writeBigInt64BE(BigInt(i));
      return createHash("sha256").update(be).digest().subarray(0, i < 1000 ? i % 33 : 16 + (i % 17));
    }
    case "bigint":
      return BigInt(i) * 46116860184273n - 4611686018427387904n + BigInt(i % 7);
    case "uuid":
      return new Uuid(createHash("md5").update(String(i)).digest("hex"));
  }
  throw new Error(type);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
