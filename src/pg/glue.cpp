// Error reporting and argument access shared by the glue files.
#include "glue.hpp"

namespace bloomfilter {

void report_status(Status status, Origin origin) {
    if (status == Status::ok) return;
    const char *why = status_message(status);
    switch (origin) {
        case Origin::text_input:
            ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                            errmsg("invalid input syntax for type bloom: %s", why)));
            break;
        case Origin::binary_input:
            ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                            errmsg("invalid binary value for type bloom: %s", why)));
            break;
        case Origin::stored_value:
            ereport(ERROR,
                    (errcode(ERRCODE_DATA_CORRUPTED), errmsg("corrupted bloom value: %s", why)));
            break;
    }
}

void report_parameters(Status status, int64 capacity, double error_rate) {
    switch (status) {
        case Status::ok: return;
        case Status::capacity_out_of_range:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("capacity must be at least 1, got " INT64_FORMAT, capacity)));
            break;
        case Status::error_rate_out_of_range:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("error_rate must be greater than 0 and less than 1, got %g",
                                   error_rate)));
            break;
        case Status::too_large:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                     errmsg("a bloom filter for capacity " INT64_FORMAT
                            " at error_rate %g would exceed the 1 GB limit of a PostgreSQL value",
                            capacity, error_rate),
                     errhint("Use a smaller capacity, a larger error_rate, or shards "
                             "(see bloom_shard).")));
            break;
        default: report_status(status, Origin::stored_value);
    }
}

void validate_or_report(const uint8_t *data, size_t length, Origin origin, Header *header) {
    report_status(validate(data, length, header), origin);
}

struct varlena *read_filter(Datum datum, Header *header) {
    struct varlena *value = PG_DETOAST_DATUM(datum);
    validate_or_report(bloom_bytes(value), bloom_length(value), Origin::stored_value, header);
    return value;
}

struct varlena *copy_filter(Datum datum, Header *header) {
    struct varlena *value = PG_DETOAST_DATUM_COPY(datum);
    validate_or_report(bloom_bytes(value), bloom_length(value), Origin::stored_value, header);
    return value;
}

void refuse_layered(const Header &header, const char *function) {
    if (!is_layered(header)) return;
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("%s does not take a layered bloom value (format version 3)", function),
             errdetail("A layered value holds the layers of a bloomfilter index that grows; it "
                       "answers bloom_contains and bloom_info, and is not added to or unioned."),
             errhint("Build a filter of one layer with bloom_agg over the table's keys.")));
}

bool value_contains(const uint8_t *data, size_t length, const Header &header, KeyBytes key) {
    if (is_layered(header)) {
        Layers layers;
        // Validated already: read again for the layers' places.
        report_status(read_layers(data, length, &layers), Origin::stored_value);
        return layers_contain(data, layers, hash_bytes(kFormatVersion2, key.data, key.length));
    }
    FilterRef ref = FilterRef::of(const_cast<uint8_t *>(data), header.parameters);
    return ref.contains(ref.hash(key.data, key.length));
}

// Zeroes in chunks, checking for cancel: a filter can be up to 1 GB.
struct varlena *make_filter(const Parameters &parameters) {
    Size size = VARHDRSZ + parameters.encoded_bytes();
    struct varlena *value = static_cast<struct varlena *>(palloc(size));
    SET_VARSIZE(value, size);
    uint8_t *bytes = bloom_bytes(value);
    write_header(parameters, bytes);
    const uint64_t bits_bytes = parameters.encoded_bytes() - kHeaderBytes;
    for (uint64_t begin = 0; begin < bits_bytes; begin += kBytesPerInterruptCheck) {
        CHECK_FOR_INTERRUPTS();
        memset(bytes + kHeaderBytes + begin, 0, Min(kBytesPerInterruptCheck, bits_bytes - begin));
    }
    return value;
}

KeyKind key_kind_of(Oid type) {
    switch (type) {
        case INT8OID: return KeyKind::int8;
        case UUIDOID: return KeyKind::uuid;
        case TEXTOID:
        case BYTEAOID: return KeyKind::bytes;
        default:
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("bloom keys must be text, bytea, bigint or uuid, not %s",
                                   format_type_be(type))));
    }
    return KeyKind::bytes;
}

uint64_t value_hash(Datum value, Oid type) {
    type = key_base_type(type);
    switch (type) {
        case UNKNOWNOID: {
            const char *text = DatumGetCString(value);
            return hash_bytes(kFormatVersion2, text, strlen(text)).low;
        }
        case INT2OID:
            return hash_key(Int64GetDatum(DatumGetInt16(value)), KeyKind::int8, kFormatVersion2)
                .low;
        case INT4OID:
            return hash_key(Int64GetDatum(DatumGetInt32(value)), KeyKind::int8, kFormatVersion2)
                .low;
        case VARCHAROID: return hash_key(value, KeyKind::bytes, kFormatVersion2).low;
        default: return hash_key(value, key_kind_of(type), kFormatVersion2).low;
    }
}

}  // namespace bloomfilter
