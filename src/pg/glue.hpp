// Shared helpers of the PostgreSQL glue: header includes, reading a bloom argument, hashing a
// key datum and turning core statuses into ereport with a real SQLSTATE.
//
// Rule for every file in src/pg: the core never throws, and the objects these files keep on the
// stack (KeyHash, KeyBytes, Header, Parameters) are trivially destructible, so an ereport (a
// longjmp) here never skips a destructor.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"
}

#include "compat.hpp"

#include "../core/bloom.hpp"

namespace bloomfilter {

// The SQL `bloom` value: PostgreSQL's 4-byte length word followed by the core's encoding.
inline uint8_t *bloom_bytes(struct varlena *value) {
    return reinterpret_cast<uint8_t *>(VARDATA(value));
}
inline size_t bloom_length(struct varlena *value) { return VARSIZE(value) - VARHDRSZ; }

// Which SQLSTATE a malformed encoding gets: it depends on the way it came in.
enum class Origin { text_input, binary_input, stored_value };

// Raises the error for a core status (never returns for a status other than ok).
void report_status(Status status, Origin origin);
// Raises 22023 for bad creation parameters, naming the parameter and its range.
void report_parameters(Status status, int64 capacity, double error_rate);

// Validates an encoding; raises the origin's error if it is malformed.
void validate_or_report(const uint8_t *data, size_t length, Origin origin, Header *header);

// Fully detoasted, validated filter argument. The result may point into the argument: read it,
// never write it.
struct varlena *read_filter(Datum datum, Header *header);
// A private, writable, validated copy of a filter argument.
struct varlena *copy_filter(Datum datum, Header *header);
// A layered value (format version 3: the layers of an index that grows, bloom_index_filter).
inline bool is_layered(const Header &header) { return header.parameters.version == kFormatLayered; }
// Raises 0A000 for a layered value given to `function`, which reads or writes one filter: adding
// to a layer, or a union of layers, would answer for a filter no index holds.
void refuse_layered(const Header &header, const char *function);
// A new empty filter in the current memory context.
struct varlena *make_filter(const Parameters &parameters);

// How a key of each supported SQL type is turned into bytes for hashing. See README "Hashing".
enum class KeyKind : uint8_t { bytes = 1, int8 = 2, uuid = 3 };
KeyKind key_kind_of(Oid type);

// Calls use(data, length) with the bytes that stand for a key: text and bytea as their exact
// bytes, bigint as 8 bytes little-endian two's complement, uuid as its 16 bytes in RFC 4122 order.
template <typename Use>
inline auto with_key_bytes(Datum value, KeyKind kind, Use &&use) {
    switch (kind) {
        case KeyKind::int8: {
            uint8_t little_endian[8];
            store_u64(little_endian, uint64_t(DatumGetInt64(value)));
            return use(little_endian, size_t(8));
        }
        case KeyKind::uuid: return use(DatumGetUUIDP(value)->data, size_t(UUID_LEN));
        case KeyKind::bytes:
        default: {
            // Short keys are stored inline with a 1-byte header: no copy, no allocation.
            struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
            auto result = use(VARDATA_ANY(v), size_t(VARSIZE_ANY_EXHDR(v)));
            if (v != reinterpret_cast<struct varlena *>(DatumGetPointer(value))) pfree(v);
            return result;
        }
    }
}

// A key's hash for filters of the given format version.
inline KeyHash hash_key(Datum value, KeyKind kind, uint32_t version) {
    return with_key_bytes(value, kind, [version](const void *data, size_t length) {
        return hash_bytes(version, data, length);
    });
}

// A type's base type: the type itself for the key types (no catalog lookup, which would cost as
// much as a check), a domain's base type otherwise.
inline Oid key_base_type(Oid type) {
    switch (type) {
        case TEXTOID:
        case VARCHAROID:
        case BYTEAOID:
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case UUIDOID:
        case UNKNOWNOID: return type;
        default: return getBaseType(type);
    }
}

// A value's version 2 hash as one part of a composite key (docs/format.md): a value of any key
// type or a domain over one, smallint and integer as the bigint of the value, varchar as text,
// an untyped literal (unknown, a C string) as text. 42804 for another type.
uint64_t value_hash(Datum value, Oid type);

// Whether `function` is one of the support functions of the extension's operator classes
// (bloom_hash of text, bytea, smallint, integer, bigint, uuid): value_hash of its key type.
bool is_key_hash_support(PGFunction function);

// The bytes of a key, for a check that hashes them once it knows the filter's version.
struct KeyBytes {
    const void *data;
    size_t length;
};

// Whether a validated value (any version) holds a key.
bool value_contains(const uint8_t *data, size_t length, const Header &header, KeyBytes key);

// How many array elements or bytes are processed between checks for query cancel.
constexpr int kElementsPerInterruptCheck = 4096;
constexpr uint64_t kBytesPerInterruptCheck = 1 << 20;

// Writes a OR b into target (all validated; target may be a, or new memory of the same size),
// raising 22023 naming the parameter that differs. Checks for query cancel between chunks.
void union_into(struct varlena *target, struct varlena *a, const Header &a_header,
                struct varlena *b, const Header &b_header);

// Membership of one key in a filter argument, reading only the key's block when the
// filter is stored out of line uncompressed, and the whole filter once per statement when the
// same stored filter is checked again (see stored_lookup.cpp).
bool filter_contains(FunctionCallInfo fcinfo, Datum filter, KeyBytes key);
// The whole filter, fetched once per statement and kept in fn_extra for stored values.
struct varlena *read_filter_cached(FunctionCallInfo fcinfo, Datum filter, Header *header);

// Registers the bloomfilter index's reloptions, capacity and error_rate (index_am.cpp); called
// once, from _PG_init.
void register_index_options();

}  // namespace bloomfilter
