// The operator classes' support function: bloom_hash, the 64-bit key hash of format version 2.
#include "glue.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_hash_bytes);
PG_FUNCTION_INFO_V1(bloom_hash_int2);
PG_FUNCTION_INFO_V1(bloom_hash_int4);
PG_FUNCTION_INFO_V1(bloom_hash_int8);
PG_FUNCTION_INFO_V1(bloom_hash_uuid);
}

namespace {

Datum hash_datum(Datum value, KeyKind kind) {
    return Int64GetDatum(int64(hash_key(value, kind, kFormatVersion2).low));
}

}  // namespace

// The 64-bit hash (format version 2's) of a key, as bigint: what a bloomfilter index's operator
// class hashes. smallint and integer are hashed as the bigint of the same value.
extern "C" Datum bloom_hash_bytes(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::bytes));
}
extern "C" Datum bloom_hash_int2(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(Int64GetDatum(PG_GETARG_INT16(0)), KeyKind::int8));
}
extern "C" Datum bloom_hash_int4(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(Int64GetDatum(PG_GETARG_INT32(0)), KeyKind::int8));
}
extern "C" Datum bloom_hash_int8(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::int8));
}
extern "C" Datum bloom_hash_uuid(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::uuid));
}
