// The adapter for postgres.js (the `postgres` package): bloom values load as Filter, and a Filter
// parameter is sent as bloom. postgres.js reads results as text and describes a statement's
// parameters before binding them, so a parameter the server types as bloom goes through the
// serializer registered here.

import { Filter } from "./core.js";

/** What registerPostgres needs of a postgres.js `sql` instance. */
export interface PostgresSqlLike {
  unsafe(query: string, parameters?: unknown[]): PromiseLike<any[]>;
  options: { parsers: Record<number, (value: string) => unknown>; serializers: Record<number, (value: any) => unknown> };
}

function serialize(value: unknown): string {
  if (value instanceof Filter) return value.toText();
  if (value instanceof Uint8Array) return Filter.fromBytes(value).toText();
  if (typeof value === "string") return value;
  throw new TypeError(`a bloom parameter takes a Filter, its bytes or its text form, not ${typeof value}`);
}

/**
 * Registers bloom on a postgres.js instance: bloom columns load as Filter and a Filter parameter
 * in a bloom position is sent as bloom (elsewhere, wrap it: `sql.typed(filter, oid)`). Looks the
 * type's OID up in the instance's database (`schema` when given, else through the search_path)
 * and returns it. Statements prepared before the call keep the parsers they had.
 */
export async function registerPostgres(sql: PostgresSqlLike, options: { schema?: string } = {}): Promise<number> {
  const name = options.schema === undefined ? "bloom" : `"${options.schema.replace(/"/g, '""')}".bloom`;
  const rows = await sql.unsafe("SELECT pg_catalog.to_regtype($1)::oid AS oid", [name]);
  const oid = rows[0]?.oid == null ? null : Number(rows[0].oid);
  if (oid === null) {
    throw new Error("type bloom not found: is the bloomfilter extension installed (CREATE EXTENSION bloomfilter) "
      + "and in the search_path?");
  }
  sql.options.parsers[oid] = (text: string) => Filter.fromText(text);
  sql.options.serializers[oid] = serialize;
  return oid;
}
