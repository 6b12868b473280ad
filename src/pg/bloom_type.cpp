// The bloom type: text and binary I/O, the cast from bytea, bloom_empty and bloom_info.
// Every way in validates the whole encoding before a value exists.
#include "glue.hpp"

using namespace bloomfilter;

extern "C" {
PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(bloom_in);
PG_FUNCTION_INFO_V1(bloom_out);
PG_FUNCTION_INFO_V1(bloom_recv);
PG_FUNCTION_INFO_V1(bloom_send);
PG_FUNCTION_INFO_V1(bloom_from_bytea);
PG_FUNCTION_INFO_V1(bloom_empty);
PG_FUNCTION_INFO_V1(bloom_info);
}

// Builds a bloom value from an untrusted encoding, or raises the origin's error.
static Datum bloom_from_encoding(const uint8_t *data, size_t length, Origin origin) {
    Header header;
    validate_or_report(data, length, origin, &header);
    struct varlena *value = static_cast<struct varlena *>(palloc(VARHDRSZ + length));
    SET_VARSIZE(value, VARHDRSZ + length);
    memcpy(bloom_bytes(value), data, length);
    return PointerGetDatum(value);
}

extern "C" Datum bloom_in(PG_FUNCTION_ARGS) {
    const char *text = PG_GETARG_CSTRING(0);
    size_t length = strlen(text);
    // Reject before allocating: a bloom's text is never longer than twice the 1 GB limit.
    if (length < 2 || length > text_length(kMaxEncodedBytes) || (length - 2) % 2 != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                        errmsg("invalid input syntax for type bloom"),
                        errdetail("A bloom value is written as \\x followed by an even number "
                                  "of hexadecimal digits.")));
    size_t encoded_length = (length - 2) / 2;
    uint8_t *encoded = static_cast<uint8_t *>(palloc(encoded_length + 1));
    if (!decode_hex(text, length, encoded))
        ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                        errmsg("invalid input syntax for type bloom"),
                        errdetail("A bloom value is written as \\x followed by an even number "
                                  "of hexadecimal digits.")));
    Datum result = bloom_from_encoding(encoded, encoded_length, Origin::text_input);
    pfree(encoded);
    PG_RETURN_DATUM(result);
}

extern "C" Datum bloom_out(PG_FUNCTION_ARGS) {
    struct varlena *value = PG_DETOAST_DATUM(PG_GETARG_DATUM(0));
    size_t length = bloom_length(value);
    // Hex doubles the size: past about 512 MB the text form would pass the 1 GB value limit.
    if (text_length(length) + 1 > MaxAllocSize)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("bloom value of %zu bytes is too large for text output", length),
                        errhint("Use binary COPY or the bytea cast with a binary-format client.")));
    char *text = static_cast<char *>(palloc(text_length(length) + 1));
    encode_hex(bloom_bytes(value), length, text);
    text[text_length(length)] = '\0';
    PG_RETURN_CSTRING(text);
}

extern "C" Datum bloom_recv(PG_FUNCTION_ARGS) {
    StringInfo buffer = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    const uint8_t *data = reinterpret_cast<const uint8_t *>(buffer->data + buffer->cursor);
    size_t length = size_t(buffer->len - buffer->cursor);
    Datum result = bloom_from_encoding(data, length, Origin::binary_input);
    buffer->cursor = buffer->len;
    PG_RETURN_DATUM(result);
}

extern "C" Datum bloom_send(PG_FUNCTION_ARGS) {
    // The wire form is the encoding itself, the same bytes as on disk and in the bytea cast.
    struct varlena *value = PG_DETOAST_DATUM(PG_GETARG_DATUM(0));
    StringInfoData buffer;
    pq_begintypsend(&buffer);
    pq_sendbytes(&buffer, VARDATA(value), int(bloom_length(value)));
    PG_RETURN_BYTEA_P(pq_endtypsend(&buffer));
}

extern "C" Datum bloom_from_bytea(PG_FUNCTION_ARGS) {
    struct varlena *bytes = PG_DETOAST_DATUM(PG_GETARG_DATUM(0));
    Header header;
    validate_or_report(bloom_bytes(bytes), bloom_length(bytes), Origin::binary_input, &header);
    PG_RETURN_POINTER(bytes);
}

extern "C" Datum bloom_empty(PG_FUNCTION_ARGS) {
    int64 capacity = PG_GETARG_INT64(0);
    double error_rate = PG_GETARG_FLOAT8(1);
    Parameters parameters;
    Status status = capacity < 1 ? Status::capacity_out_of_range
                                 : size_filter(uint64_t(capacity), error_rate, &parameters);
    report_parameters(status, capacity, error_rate);
    PG_RETURN_POINTER(make_filter(parameters));
}

namespace {

// bloom_info of a layered value: its layers' capacities, bits, bits set and estimated counts
// summed, the estimated rate of a key absent from every layer, and no one number of hashes.
Statistics layered_statistics(struct varlena *value, uint64_t *capacity, uint64_t *bits,
                              uint64_t *bytes) {
    Layers layers;
    report_status(read_layers(bloom_bytes(value), bloom_length(value), &layers),
                  Origin::stored_value);
    Statistics stats;
    double absent = 1;
    *capacity = *bits = 0;
    for (uint32_t n = 0; n < layers.count; n++) {
        const Header layer{layers.layer[n], 0};
        const Statistics s = statistics(bloom_bytes(value) + layers.offset[n], layer);
        *capacity += layers.layer[n].capacity;
        *bits += layers.layer[n].bits();
        stats.bits_set += s.bits_set;
        stats.estimated_count += s.estimated_count;
        absent *= 1 - s.estimated_error_rate;
    }
    stats.fill = double(stats.bits_set) / double(*bits);
    stats.estimated_error_rate = 1 - absent;
    *bytes = layers.encoded_bytes;
    return stats;
}

int64 saturated(uint64_t v) { return v > uint64_t(PG_INT64_MAX) ? PG_INT64_MAX : int64(v); }

}  // namespace

extern "C" Datum bloom_info(PG_FUNCTION_ARGS) {
    Header header;
    struct varlena *value = read_filter(PG_GETARG_DATUM(0), &header);
    const Parameters &p = header.parameters;
    const bool layered = is_layered(header);
    uint64_t capacity = p.capacity, bits = 0, bytes = 0;
    Statistics stats;
    if (layered) {
        stats = layered_statistics(value, &capacity, &bits, &bytes);
    } else {
        stats = statistics(bloom_bytes(value), header);
        bits = p.bits();
        bytes = p.encoded_bytes();
    }

    TupleDesc descriptor;
    if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_info must be called in a context that accepts a record")));
    descriptor = BlessTupleDesc(descriptor);
    Datum values[10] = {
        Int64GetDatum(saturated(capacity)),
        Float8GetDatum(p.error_rate),
        Int64GetDatum(int64(bits)),
        Int32GetDatum(int32(p.hashes)),
        Int64GetDatum(int64(VARHDRSZ + bytes)),
        // Saturated at bigint's maximum; the format's counter is unsigned 64-bit.
        Int64GetDatum(saturated(header.inserted)),
        Int64GetDatum(int64(stats.bits_set)),
        Float8GetDatum(stats.fill),
        Float8GetDatum(stats.estimated_count),
        Float8GetDatum(stats.estimated_error_rate),
    };
    bool nulls[10] = {false};
    nulls[3] = layered;  // each layer has its own number of hashes
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(descriptor, values, nulls)));
}
