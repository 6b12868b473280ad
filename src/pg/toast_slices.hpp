// Reading byte ranges of a stored value without reading all of it: the TOAST slice reader.
//
// A value stored out of line and uncompressed can be read in slices. The reader fetches only the
// TOAST chunks that hold the slices asked for, in one ordered scan of the TOAST index; each
// backend also remembers where the chunks it read lie (their TIDs), so the next read of the same
// value fetches its chunks straight from the heap, without the index scan, which costs more than
// the rest of a lookup. A remembered place is only a hint: the tuple found there must be visible
// and carry the expected value id and chunk number, or the read goes through the index. A value's
// chunks never move while it exists.
#pragma once

#include "glue.hpp"

namespace bloomfilter {

// Identifies an on-disk TOAST value; its contents never change while it exists.
struct ToastKey {
    Oid toast_relation;
    Oid value_id;
    int32 raw_size;

    static ToastKey of(const varatt_external &pointer) {
        return ToastKey{pointer.va_toastrelid, pointer.va_valueid, pointer.va_rawsize};
    }
    bool operator==(const ToastKey &o) const {
        return toast_relation == o.toast_relation && value_id == o.value_id &&
               raw_size == o.raw_size;
    }
};

// A byte range of a stored value and where to copy it.
struct Slice {
    uint64_t offset;
    uint32_t length;
    uint8_t *out;
};

// VARATT_EXTERNAL_IS_COMPRESSED, without its signed/unsigned comparison.
inline bool is_compressed(const varatt_external &pointer) {
    return VARATT_EXTERNAL_GET_EXTSIZE(pointer) < uint32(pointer.va_rawsize) - VARHDRSZ;
}

// Copies each slice of an uncompressed out-of-line value (at most 8 TOAST chunks in all).
void fetch_slices(const varatt_external &pointer, Slice *slices, int count);

}  // namespace bloomfilter
