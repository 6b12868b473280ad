// Checking a key in a stored filter, reading no more than the check needs.
//
// A filter stored out of line and uncompressed (the type's default STORAGE external) is read in
// slices: a point lookup fetches the 36-byte header and the one block holding the key's bits,
// never the whole value, in one read of the TOAST slice reader: the block's place is worked out
// from the value's length for the usual 4096-bit blocks, and checked against the header it
// arrives with (other block sizes cost a second fetch). A filter checked again within a statement
// is read whole once and kept in the statement cache.
#include "statement_cache.hpp"

extern "C" {
#include "access/detoast.h"
}

namespace bloomfilter {

namespace {

// The format version each backend last saw in a stored value, so that the block it fetches
// along with the header is the right one for filters written before version 2 too. Only a
// guess: the header fetched with the block decides, and a wrong guess costs a second fetch.
struct SeenVersion {
    Oid toast_relation;
    Oid value_id;
    uint32_t version;
};
constexpr uint32_t kSeenVersions = 256;
SeenVersion seen_versions[kSeenVersions];

SeenVersion &seen_version_of(const varatt_external &pointer) {
    return seen_versions[(pointer.va_valueid ^ pointer.va_toastrelid * 0x9e3779b9u) %
                         kSeenVersions];
}

uint32_t guess_version(const varatt_external &pointer) {
    const SeenVersion &seen = seen_version_of(pointer);
    return seen.value_id == pointer.va_valueid && seen.toast_relation == pointer.va_toastrelid
               ? seen.version
               : kFormatVersion;
}

// Whether the key is in a stored value read by slices; false with *whole set when the value is
// layered (version 3), whose layers' places only the whole value gives.
bool slice_contains(struct varlena *stored, const varatt_external &pointer, KeyBytes key,
                    bool *whole) {
    *whole = false;
    const uint64_t total_length = VARATT_EXTERNAL_GET_EXTSIZE(pointer);
    uint8_t head[kHeaderBytes];
    uint8_t guessed_block[1u << (kMinBlockLog2 - 3)];
    // Where the key's block is if blocks are 4096 bits, as they are for up to 7 hashes.
    const uint32_t guessed_version = guess_version(pointer);
    KeyHash h = hash_bytes(guessed_version, key.data, key.length);
    const uint64_t guessed_blocks =
        total_length > kHeaderBytes ? (total_length - kHeaderBytes) >> (kMinBlockLog2 - 3) : 0;
    Slice slices[2] = {{0, uint32_t(kHeaderBytes), head}, {0, 0, guessed_block}};
    int count = 1;
    if (guessed_blocks > 0 && guessed_blocks <= UINT32_MAX) {
        slices[1].offset =
            key_block_offset(h, guessed_version, uint32_t(guessed_blocks), kMinBlockLog2);
        slices[1].length = sizeof guessed_block;
        count = 2;
    }
    fetch_slices(pointer, slices, count);
    if (std::memcmp(head + kOffsetMagic, kMagic, sizeof kMagic) == 0 &&
        head[kOffsetVersion] == kFormatLayered) {
        *whole = true;
        return false;
    }
    Header header;
    report_status(read_header(head, kHeaderBytes, total_length, &header), Origin::stored_value);
    const Parameters &p = header.parameters;
    if (p.version == guessed_version) {
        if (count == 2 && p.block_log2 == kMinBlockLog2 && p.blocks == guessed_blocks)
            return block_contains(guessed_block, h, p.version, p.hashes, p.block_log2);
    } else {
        seen_version_of(pointer) =
            SeenVersion{pointer.va_toastrelid, pointer.va_valueid, p.version};
        h = hash_bytes(p.version, key.data, key.length);
    }

    // Larger blocks (up to 2 MB), or another version than guessed: PostgreSQL's own slice
    // fetch, now that the header says where.
    const uint64_t offset = key_block_offset(h, p);
    struct varlena *block = detoast_attr_slice(stored, int32(offset), int32(p.block_bytes()));
    if (bloom_length(block) != p.block_bytes())
        report_status(Status::bad_length, Origin::stored_value);
    bool found = block_contains(bloom_bytes(block), h, p.version, p.hashes, p.block_log2);
    pfree(block);
    return found;
}

bool contains_key(struct varlena *value, const Header &header, KeyBytes key) {
    return value_contains(bloom_bytes(value), bloom_length(value), header, key);
}

}  // namespace

bool filter_contains(FunctionCallInfo fcinfo, Datum filter, KeyBytes key) {
    struct varlena *stored = reinterpret_cast<struct varlena *>(DatumGetPointer(filter));
    Header header;
    if (VARATT_IS_EXTERNAL_ONDISK(stored)) {
        varatt_external pointer;
        VARATT_EXTERNAL_GET_POINTER(pointer, stored);
        const ToastKey toast_key = ToastKey::of(pointer);
        StatementCache *cache = statement_cache(fcinfo);
        if (cache->has_copy && cache->cached == toast_key) {
            if (cache->layers != nullptr)
                return layers_contain(bloom_bytes(cache->copy), *cache->layers,
                                      hash_bytes(kFormatVersion2, key.data, key.length));
            return contains_key(cache->copy, cache->header, key);
        }
        bool seen_before = cache->has_seen && cache->seen == toast_key;
        if (!is_compressed(pointer) && !seen_before) {
            cache->has_seen = true;
            cache->seen = toast_key;
            bool whole;
            const bool found = slice_contains(stored, pointer, key, &whole);
            if (!whole) return found;
        }
        // Checked twice in one statement, or compressed (no slice reads): read it whole once.
        struct varlena *whole = read_filter_cached(fcinfo, filter, &header);
        return contains_key(whole, header, key);
    }
    struct varlena *value = read_filter(filter, &header);
    bool found = contains_key(value, header, key);
    if (value != stored) pfree(value);
    return found;
}

}  // namespace bloomfilter
