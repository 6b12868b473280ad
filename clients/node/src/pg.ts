// The adapter for node-postgres (pg): bloom values load as Filter, and a Filter parameter is sent
// as the byte format. The bloom type's OID differs from one database to the next, so it is
// looked up on the connection registered.

import { Filter } from "./core.js";

type Parser = (value: any) => unknown;

/** What registerPg needs of a pg Client (or PoolClient). */
export interface PgClientLike {
  query(config: { text: string; values?: unknown[]; binary?: boolean; types?: unknown }): Promise<{ rows: any[] }>;
  setTypeParser(oid: number, format: "text" | "binary", parser: Parser): void;
}

/** What registerPg needs of a pg Pool. */
export interface PgPoolLike {
  connect(): Promise<PgClientLike & { release(error?: unknown): void }>;
  on(event: "connect", listener: (client: PgClientLike) => void): unknown;
}

/** What registerPg found: the OID of bloom in that database, and whether the driver hands binary
 * results over as they are. */
export interface PgRegistration {
  oid: number;
  binaryResults: boolean;
}

/** Thrown for a bloom value in a binary result when the driver decodes binary results as UTF-8
 * text, which changes the bytes (node-postgres 8 does, its issue 3495): query bloom columns in
 * text mode (the default) then. */
export class BinaryResultsUnsupportedError extends Error {
  constructor() {
    super("this version of pg decodes binary results as UTF-8 text, which changes their bytes "
      + "(node-postgres issue 3495): a bloom value cannot be read from them; query bloom columns "
      + "in text mode (the default)");
    this.name = "BinaryResultsUnsupportedError";
  }
}

const OID_QUERY = "SELECT pg_catalog.to_regtype($1)::oid AS oid";
// Bytes that are no valid UTF-8: a driver that decodes binary results as text changes them. (A
// parameter, so that pg uses the extended protocol, where it asks for binary results.)
const PROBE_QUERY = "SELECT $1::pg_catalog.bytea AS probe";
const PROBE_BYTES = Buffer.from([0x80, 0xff, 0x00, 0xc3]);

function isPool(target: PgClientLike | PgPoolLike): target is PgPoolLike {
  return typeof (target as PgClientLike).setTypeParser !== "function" && typeof (target as PgPoolLike).connect === "function";
}

async function lookUp(client: PgClientLike, schema?: string): Promise<PgRegistration> {
  const name = schema === undefined ? "bloom" : `${quoteIdent(schema)}.bloom`;
  const { rows } = await client.query({ text: OID_QUERY, values: [name] });
  const oid = rows[0]?.oid == null ? null : Number(rows[0].oid);
  if (oid === null) {
    throw new Error("type bloom not found: is the bloomfilter extension installed (CREATE EXTENSION bloomfilter) "
      + "and in the search_path?");
  }
  const raw = (value: Buffer) => value;
  const probe = await client.query({
    text: PROBE_QUERY, values: [PROBE_BYTES], binary: true,
    types: { getTypeParser: (_oid: number, format?: string) => (format === "binary" ? raw : (v: unknown) => v) },
  });
  const bytes = probe.rows[0]?.probe;
  const binaryResults = Buffer.isBuffer(bytes) && bytes.equals(PROBE_BYTES);
  return { oid, binaryResults };
}

function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

function install(client: PgClientLike, registration: PgRegistration): void {
  client.setTypeParser(registration.oid, "text", (text: string) => Filter.fromText(text));
  client.setTypeParser(registration.oid, "binary", registration.binaryResults
    ? (bytes: Buffer) => Filter.fromBytes(bytes)
    : () => { throw new BinaryResultsUnsupportedError(); });
}

/**
 * Registers bloom on a pg Client, PoolClient or Pool: bloom columns load as Filter (from text
 * results, and from binary results where the driver keeps their bytes), and a Filter parameter
 * is sent as the byte format in binary, which the server reads as bloom (or as bytea, for a bytea
 * parameter). Looks the type's OID up in the connection's database (`schema` when given, else
 * through the search_path). For a Pool, every client it opens from now on is registered too.
 */
export async function registerPg(target: PgClientLike | PgPoolLike, options: { schema?: string } = {}): Promise<PgRegistration> {
  if (!isPool(target)) {
    const registration = await lookUp(target, options.schema);
    install(target, registration);
    return registration;
  }
  const client = await target.connect();
  let registration: PgRegistration;
  try {
    registration = await lookUp(client, options.schema);
  } catch (error) {
    client.release();
    throw error;
  }
  install(client, registration);
  client.release();
  target.on("connect", (opened) => install(opened, registration));
  // Clients the pool holds already (idle or lent out): pg keeps them in _clients.
  const held = (target as unknown as { _clients?: PgClientLike[] })._clients;
  if (Array.isArray(held)) for (const other of held) install(other, registration);
  return registration;
}
