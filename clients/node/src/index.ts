// pg-bloomfilter: read, check, build and follow the Bloom filters of the PostgreSQL extension
// bloomfilter in the application's own memory.
export {
  Filter, Uuid, BloomFormatError, NewerFormatVersionError, MESSAGES, FORMAT_VERSIONS, FORMAT_VERSION_1, FORMAT_VERSION_2,
  FORMAT_VERSION_LAYERED, HEADER_BYTES, keyBytes, keyHash, compositeHash, MAX_KEY_PARTS, shardOf, readHeader, readLayers,
  positionMultiplier,
} from "./core.js";
export type { Key, KeyType, Info, Header, Layer, LayeredHeader, Status } from "./core.js";
export { CLIENT_NAME, CLIENT_VERSION } from "./version.js";
export { registerPg, BinaryResultsUnsupportedError } from "./pg.js";
export type { PgClientLike, PgPoolLike, PgRegistration } from "./pg.js";
export { registerPostgres } from "./postgres.js";
export type { PostgresSqlLike } from "./postgres.js";
export { IndexFollower, ShardedIndexFollower, UnsupportedIndexError, SessionChangedError } from "./follow.js";
export type {
  FollowerClient, FollowerConnection, FollowerOptions, FollowerEvents, FollowerStats, IndexChecker, IndexKey, IndexUsage, ReloadReason,
} from "./follow.js";
export { CitusIndexFollower } from "./citus.js";
export type { CitusFollowerOptions, CitusFollowerEvents, CitusFollowerStats, CitusNode, ShardPlacement } from "./citus.js";
