// bloom_add, bloom_contains, bloom_union and bloom_shard for text, bytea, bigint and uuid keys
// and arrays of them. Inputs are never modified: bloom_add and bloom_union return a new value.
// bloom_check_path names the way this backend checks a block.
#include "glue.hpp"

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_add_text);
PG_FUNCTION_INFO_V1(bloom_add_bytea);
PG_FUNCTION_INFO_V1(bloom_add_int8);
PG_FUNCTION_INFO_V1(bloom_add_uuid);
PG_FUNCTION_INFO_V1(bloom_add_array);
PG_FUNCTION_INFO_V1(bloom_contains_text);
PG_FUNCTION_INFO_V1(bloom_contains_bytea);
PG_FUNCTION_INFO_V1(bloom_contains_int8);
PG_FUNCTION_INFO_V1(bloom_contains_uuid);
PG_FUNCTION_INFO_V1(bloom_contains_array);
PG_FUNCTION_INFO_V1(bloom_union);
PG_FUNCTION_INFO_V1(bloom_shard_text);
PG_FUNCTION_INFO_V1(bloom_shard_bytea);
PG_FUNCTION_INFO_V1(bloom_shard_int8);
PG_FUNCTION_INFO_V1(bloom_shard_uuid);
PG_FUNCTION_INFO_V1(bloom_check_path);
}

// bloom_add(NULL, x) is NULL; bloom_add(f, NULL) is f, so an UPDATE with a NULL key keeps the
// filter.
static Datum add_key(FunctionCallInfo fcinfo, KeyKind kind) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    if (PG_ARGISNULL(1)) PG_RETURN_DATUM(PG_GETARG_DATUM(0));
    Header header;
    struct varlena *filter = copy_filter(PG_GETARG_DATUM(0), &header);
    refuse_layered(header, "bloom_add");
    FilterRef ref = FilterRef::of(bloom_bytes(filter), header.parameters);
    ref.add(hash_key(PG_GETARG_DATUM(1), kind, ref.version));
    add_inserted(bloom_bytes(filter), 1);
    PG_RETURN_POINTER(filter);
}

extern "C" Datum bloom_add_text(PG_FUNCTION_ARGS) { return add_key(fcinfo, KeyKind::bytes); }
extern "C" Datum bloom_add_bytea(PG_FUNCTION_ARGS) { return add_key(fcinfo, KeyKind::bytes); }
extern "C" Datum bloom_add_int8(PG_FUNCTION_ARGS) { return add_key(fcinfo, KeyKind::int8); }
extern "C" Datum bloom_add_uuid(PG_FUNCTION_ARGS) { return add_key(fcinfo, KeyKind::uuid); }

// NULL elements are skipped, as a NULL key is by bloom_add.
extern "C" Datum bloom_add_array(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    if (PG_ARGISNULL(1)) PG_RETURN_DATUM(PG_GETARG_DATUM(0));
    ArrayType *keys = PG_GETARG_ARRAYTYPE_P(1);
    KeyKind kind = key_kind_of(ARR_ELEMTYPE(keys));
    Header header;
    struct varlena *filter = copy_filter(PG_GETARG_DATUM(0), &header);
    refuse_layered(header, "bloom_add");
    FilterRef ref = FilterRef::of(bloom_bytes(filter), header.parameters);

    ArrayIterator iterator = array_create_iterator(keys, 0, nullptr);
    Datum key;
    bool is_null;
    uint64_t added = 0;
    int until_check = kElementsPerInterruptCheck;
    while (array_iterate(iterator, &key, &is_null)) {
        if (--until_check == 0) {
            CHECK_FOR_INTERRUPTS();
            until_check = kElementsPerInterruptCheck;
        }
        if (is_null) continue;
        ref.add(hash_key(key, kind, ref.version));
        added++;
    }
    array_free_iterator(iterator);
    add_inserted(bloom_bytes(filter), added);
    PG_RETURN_POINTER(filter);
}

static Datum contains_key(FunctionCallInfo fcinfo, KeyKind kind) {
    bool found =
        with_key_bytes(PG_GETARG_DATUM(1), kind, [fcinfo](const void *data, size_t length) {
            return filter_contains(fcinfo, PG_GETARG_DATUM(0), KeyBytes{data, length});
        });
    PG_RETURN_BOOL(found);
}

extern "C" Datum bloom_contains_text(PG_FUNCTION_ARGS) {
    return contains_key(fcinfo, KeyKind::bytes);
}
extern "C" Datum bloom_contains_bytea(PG_FUNCTION_ARGS) {
    return contains_key(fcinfo, KeyKind::bytes);
}
extern "C" Datum bloom_contains_int8(PG_FUNCTION_ARGS) {
    return contains_key(fcinfo, KeyKind::int8);
}
extern "C" Datum bloom_contains_uuid(PG_FUNCTION_ARGS) {
    return contains_key(fcinfo, KeyKind::uuid);
}

// One boolean per element, in the array's shape; NULL for a NULL element.
extern "C" Datum bloom_contains_array(PG_FUNCTION_ARGS) {
    ArrayType *keys = PG_GETARG_ARRAYTYPE_P(1);
    KeyKind kind = key_kind_of(ARR_ELEMTYPE(keys));
    int count = ArrayGetNItems(ARR_NDIM(keys), ARR_DIMS(keys));
    if (count == 0) PG_RETURN_ARRAYTYPE_P(construct_empty_array(BOOLOID));

    Header header;
    struct varlena *filter = read_filter_cached(fcinfo, PG_GETARG_DATUM(0), &header);
    // A layered value: every key's hash checked against the layers, newest first.
    Layers layers;
    if (is_layered(header))
        report_status(read_layers(bloom_bytes(filter), bloom_length(filter), &layers),
                      Origin::stored_value);
    FilterRef ref = FilterRef::of(bloom_bytes(filter), header.parameters);

    Datum *results = static_cast<Datum *>(palloc(sizeof(Datum) * size_t(count)));
    bool *result_nulls = static_cast<bool *>(palloc(sizeof(bool) * size_t(count)));
    ArrayIterator iterator = array_create_iterator(keys, 0, nullptr);
    Datum key;
    bool is_null;
    for (int i = 0; array_iterate(iterator, &key, &is_null); i++) {
        if (i % kElementsPerInterruptCheck == kElementsPerInterruptCheck - 1)
            CHECK_FOR_INTERRUPTS();
        result_nulls[i] = is_null;
        if (is_null)
            results[i] = BoolGetDatum(false);
        else if (is_layered(header))
            results[i] = BoolGetDatum(
                layers_contain(bloom_bytes(filter), layers, hash_key(key, kind, kFormatVersion2)));
        else
            results[i] = BoolGetDatum(ref.contains(hash_key(key, kind, ref.version)));
    }
    array_free_iterator(iterator);
    ArrayType *result = construct_md_array(results, result_nulls, ARR_NDIM(keys), ARR_DIMS(keys),
                                           ARR_LBOUND(keys), BOOLOID, 1, true, TYPALIGN_CHAR);
    PG_RETURN_ARRAYTYPE_P(result);
}

namespace bloomfilter {
void union_into(struct varlena *target, struct varlena *a, const Header &a_header,
                struct varlena *b, const Header &b_header) {
    Status status = check_compatible(a_header, b_header);
    if (status == Status::version_mismatch)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("cannot union bloom filters of different format versions: %u and %u",
                        a_header.parameters.version, b_header.parameters.version),
                 errhint("The versions place a key's bits differently. Rebuild the older filter "
                         "from its keys, with bloom_agg or bloom_add on a new filter.")));
    if (status == Status::capacity_mismatch)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cannot union bloom filters with different capacity: " UINT64_FORMAT
                               " and " UINT64_FORMAT,
                               a_header.parameters.capacity, b_header.parameters.capacity)));
    if (status == Status::error_rate_mismatch)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cannot union bloom filters with different error_rate: %g and %g",
                               a_header.parameters.error_rate, b_header.parameters.error_rate)));
    if (target != a) memcpy(bloom_bytes(target), bloom_bytes(a), kHeaderBytes);
    const uint64_t bytes = a_header.parameters.encoded_bytes() - kHeaderBytes;
    for (uint64_t begin = 0; begin < bytes; begin += kBytesPerInterruptCheck) {
        CHECK_FOR_INTERRUPTS();
        uint64_t end = begin + Min(kBytesPerInterruptCheck, bytes - begin);
        union_bits(bloom_bytes(target), bloom_bytes(a), bloom_bytes(b), begin, end);
    }
    union_inserted(bloom_bytes(target), bloom_bytes(b));
}
}  // namespace bloomfilter

// The result is written straight from both inputs: no copy of either first.
extern "C" Datum bloom_union(PG_FUNCTION_ARGS) {
    Header left_header, right_header;
    struct varlena *left = read_filter(PG_GETARG_DATUM(0), &left_header);
    struct varlena *right = read_filter(PG_GETARG_DATUM(1), &right_header);
    refuse_layered(left_header, "bloom_union");
    refuse_layered(right_header, "bloom_union");
    struct varlena *result = static_cast<struct varlena *>(palloc(VARSIZE(left)));
    SET_VARSIZE(result, VARSIZE(left));
    union_into(result, left, left_header, right, right_header);
    PG_RETURN_POINTER(result);
}

static Datum shard_key(FunctionCallInfo fcinfo, KeyKind kind) {
    int32 shards = PG_GETARG_INT32(1);
    if (shards < 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("shards must be between 1 and %d, got %d", PG_INT32_MAX, shards)));
    uint32_t shard =
        with_key_bytes(PG_GETARG_DATUM(0), kind, [shards](const void *data, size_t length) {
            return shard_of(data, length, uint32_t(shards));
        });
    PG_RETURN_INT32(int32(shard));
}

extern "C" Datum bloom_shard_text(PG_FUNCTION_ARGS) { return shard_key(fcinfo, KeyKind::bytes); }
extern "C" Datum bloom_shard_bytea(PG_FUNCTION_ARGS) { return shard_key(fcinfo, KeyKind::bytes); }
extern "C" Datum bloom_shard_int8(PG_FUNCTION_ARGS) { return shard_key(fcinfo, KeyKind::int8); }
extern "C" Datum bloom_shard_uuid(PG_FUNCTION_ARGS) { return shard_key(fcinfo, KeyKind::uuid); }

// "scalar", "avx2" or "avx512": the check _PG_init chose for format version 2 filters of up to 8
// hashes (the others take the scalar loop).
extern "C" Datum bloom_check_path(PG_FUNCTION_ARGS) {
    PG_RETURN_TEXT_P(cstring_to_text(chosen_check_path_name()));
}
