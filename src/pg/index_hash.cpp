// The operator classes' support function: bloom_hash, the 64-bit key hash of format version 2;
// and bloom_hash of several values, a composite key's.
#include "glue.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_hash_bytes);
PG_FUNCTION_INFO_V1(bloom_hash_int2);
PG_FUNCTION_INFO_V1(bloom_hash_int4);
PG_FUNCTION_INFO_V1(bloom_hash_int8);
PG_FUNCTION_INFO_V1(bloom_hash_uuid);
PG_FUNCTION_INFO_V1(bloom_hash_composite);
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

// bloom_hash(a, b, ...): the hash of a composite key of 2 to 8 values ("any"), each hashed as
// bloom_hash of its type (an untyped literal as text), as a multicolumn index hashes a row.
extern "C" Datum bloom_hash_composite(PG_FUNCTION_ARGS) {
    CompositeKey key;
    for (int i = 0; i < PG_NARGS(); i++) {
        const Oid type = get_fn_expr_argtype(fcinfo->flinfo, i);
        if (!OidIsValid(type))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("bloom_hash could not determine the type of value %d", i + 1)));
        if (!key.add(value_hash(PG_GETARG_DATUM(i), type)))
            ereport(ERROR, (errcode(ERRCODE_TOO_MANY_ARGUMENTS),
                            errmsg("a composite key has at most %u values", kMaxKeyParts)));
    }
    PG_RETURN_INT64(int64(key.hash().low));
}

namespace bloomfilter {

bool is_key_hash_support(PGFunction function) {
    return function == bloom_hash_bytes || function == bloom_hash_int2 ||
           function == bloom_hash_int4 || function == bloom_hash_int8 ||
           function == bloom_hash_uuid;
}

}  // namespace bloomfilter
