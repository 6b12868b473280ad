// The pages of a bloomfilter index. Shared by the access method (index_am.cpp), which adds, its
// build (index_build.cpp), and the SQL functions that check and read an index
// (index_contains.cpp, index_read.cpp). Two layouts:
//
// Layout 1, one filter of fixed size: block 0, the metapage (IndexMeta after the page header);
// blocks 1..data_pages hold bytes [(n - 1) * bytes_per_page, n * bytes_per_page) of the filter's
// bits (the byte format without its header), right after the page header. bytes_per_page is a
// whole number of the filter's blocks when a block fits in a page, so that a key's bits lie in
// one page; larger blocks span pages of 4096 bytes each.
//
// Layout 2, layers that grow (WITH (expansion = N), N >= 2): the metapage holds a directory of
// layers (IndexMetaLayered), each a filter laid out as above from its own first block, layer 0
// right after the metapage. Keys go to the newest layer. When two fifths of its data pages have
// passed the fill the layer has at its capacity (judged from each page's bits as written), the
// next layer is published: `expansion` times the capacity, 3/4 of the error rate (layer 0 has a
// quarter of the index's), so the rates of all the layers add up to at most the index's. Its pages
// are added to the relation ahead of time, a few by each insert that writes a page once the newest
// layer is 80% there, and logged empty. A check reads the metapage (the number of layers) and then
// one page per layer. The byte layout: docs/format.md, "Layout 2".
#pragma once

#include "glue.hpp"

extern "C" {
#include "access/generic_xlog.h"
#include "access/genam.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/rel.h"
}

namespace bloomfilter {
// The relation's file, as ReadRecentBuffer wants it: a RelFileNode before 16, a RelFileLocator
// from 16 on.
#if PG_VERSION_NUM >= 160000
inline RelFileLocator relation_file(Relation relation) { return relation->rd_locator; }
#else
inline RelFileNode relation_file(Relation relation) { return relation->rd_node; }
#endif

constexpr uint32_t kIndexMagic = 0x58494c42;  // "BLIX"
constexpr uint32_t kIndexLayoutVersion = 1;
constexpr uint32_t kIndexLayeredVersion = 2;
constexpr BlockNumber kMetaBlock = 0;
constexpr uint16_t kIndexPageId = 0xFB10;  // in each page's special space, for page tools

struct IndexPageOpaque {
    uint16_t flags;
    uint16_t page_id;
};
constexpr uint16_t kMetaPageFlag = 1;
// A data page of layout 2 whose bits passed the layer's fill at capacity (counted once).
constexpr uint16_t kFullPageFlag = 2;

inline IndexPageOpaque *page_opaque(Page page) {
    return reinterpret_cast<IndexPageOpaque *>(PageGetSpecialPointer(page));
}

// An index of fixed size without a capacity is sized for kDefaultCapacity keys (as in 2.1); a
// layered one's first layer for twice the rows at build time, at least kMinimumCapacity.
constexpr int64 kDefaultCapacity = 1000000;
constexpr int64 kMinimumCapacity = 10000;
constexpr double kDefaultErrorRate = 0.01;
constexpr uint32_t kDefaultExpansion = 2;

// WITH (capacity = ..., error_rate = ..., expansion = ...), as build_reloptions() fills it; an
// option not given is 0 (capacity) or -1 (expansion).
struct IndexOptions {
    int32 vl_len_;
    int capacity;
    double error_rate;
    int expansion;
};

// What a build makes of the index's options. `expansion` 0: a fixed size (layout 1); without the
// option, kDefaultExpansion, unless the database's extension is older than 2.2 (then 0).
// `capacity` 0: none given.
struct BuildOptions {
    uint32_t expansion;
    int64 capacity;
    double error_rate;
};
BuildOptions build_options(Relation index);
// The filter's parameters: of the one filter of layout 1, or of layer 0 of layout 2 (before the
// rows are counted).
Parameters index_parameters(const BuildOptions &options);

// The keys a layered index's layer 0 is built for, given the keys the build finds: twice them, at
// least the capacity given (else kMinimumCapacity).
uint64_t first_layer_capacity(const BuildOptions &options, uint64_t keys);

// ambuild (index_build.cpp).
IndexBuildResult *bloom_am_build(Relation heap, Relation index, IndexInfo *index_info);

// Stored on the metapage (native byte order, like every PostgreSQL page). Layout 1:
struct IndexMeta {
    uint32_t magic;
    uint32_t layout_version;
    uint32_t bytes_per_page;
    uint32_t data_pages;
    // The byte format's header: parameters, and `inserted` counts the keys added by the build.
    uint8_t header[kHeaderBytes];
};

// Layout 2: the layers published so far.
struct LayerMeta {
    uint8_t header[kHeaderBytes];  // the layer's parameters (`inserted`: the build's keys)
    uint32_t first_block;
    uint32_t data_pages;
    uint32_t full_pages;  // its data pages flagged kFullPageFlag
    uint32_t unused;
};
struct IndexMetaLayered {
    uint32_t magic;
    uint32_t layout_version;
    uint32_t layer_count;
    uint32_t expansion;
    uint64_t capacity;  // the first layer's
    double error_rate;  // the whole index's
    LayerMeta layers[kMaxLayers];
};
static_assert(sizeof(LayerMeta) == 52 && offsetof(IndexMetaLayered, layers) == 32,
              "the layout docs/format.md gives");
static_assert(sizeof(IndexMetaLayered) < BLCKSZ / 2, "the layer directory fits the metapage");

// Where the filter's bytes go on a page, and how many fit.
inline uint8_t *page_bits(Page page) {
    return reinterpret_cast<uint8_t *>(page) + MAXALIGN(SizeOfPageHeaderData);
}
constexpr size_t kPageBitsRoom =
    BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(IndexPageOpaque));
constexpr uint32_t kSpanningSliceBytes = 4096;

inline uint32_t bytes_per_page_for(const Parameters &p) {
    const uint64_t block = p.block_bytes();
    if (block <= kPageBitsRoom) return uint32_t((kPageBitsRoom / block) * block);
    return kSpanningSliceBytes;
}

// A layered index's data page keeps the number of its bits set (u32) right after the layer's
// bytes_per_page, which always leaves room for it; pd_lower covers it.
inline LocationIndex layer_page_lower(uint32_t bytes_per_page) {
    return LocationIndex(MAXALIGN(SizeOfPageHeaderData) + bytes_per_page + sizeof(uint32_t));
}

// One filter's pages: the index's filter (layout 1) or one layer (layout 2).
struct FilterPages {
    Parameters parameters;
    BlockNumber first_block;
    uint32_t bytes_per_page;
    uint32_t data_pages;
    // The shared buffer each data page was last found in by this backend (InvalidBuffer: not
    // yet), so that a check can pin it again without a lookup in the buffer mapping table.
    Buffer *recent_buffers;
    uint64_t bits_bytes() const { return parameters.encoded_bytes() - kHeaderBytes; }
    // Whether a block lies in one page.
    bool blocks_in_one_page() const { return parameters.block_bytes() <= bytes_per_page; }
    BlockNumber page_of(uint64_t byte) const {
        return BlockNumber(first_block + byte / bytes_per_page);
    }
    uint32_t offset_in_page(uint64_t byte) const { return uint32_t(byte % bytes_per_page); }
    uint64_t block_start(KeyHash h) const { return key_block_offset(h, parameters) - kHeaderBytes; }
};
inline LocationIndex layer_page_lower(const FilterPages &layer) {
    return layer_page_lower(layer.bytes_per_page);
}

// The metapage's contents, checked, as kept in the index's relcache entry. A layered index's
// entry holds the layers published when it was read; a check reads their number again from the
// metapage, and reads the entry again when there are more.
struct IndexLayout {
    uint32_t layout_version;
    uint64_t inserted_by_build;
    uint32_t layer_count;
    uint32_t expansion;
    uint64_t capacity;
    double error_rate;
    FilterPages layers[kMaxLayers];
    // The buffer the metapage was last found in, as recent_buffers (a layered index reads it at
    // every check).
    mutable Buffer recent_meta;
    // The filter of layout 1, or layer 0.
    const FilterPages &first() const { return layers[0]; }
    const FilterPages &newest() const { return layers[layer_count - 1]; }
};

// The index's layout, read from its metapage once and kept in rd_amcache (for a layered index,
// read again when its metapage has more layers). Raises XX001 if the metapage is not a
// bloomfilter index's. The reference is good until the next call for the same index.
const IndexLayout &index_layout(Relation index);
// The same with every layer published before the call (a layered index's metapage is read).
const IndexLayout &current_index_layout(Relation index);

// Whether `index` is a bloomfilter index (or a partitioned one).
bool is_bloomfilter_index(Relation index);

// The key's 64-bit hash (format version 2), by the operator class's support function 1.
KeyHash index_key_hash(Relation index, Datum value);
// The key of an index row (index_am.cpp): its one column's hash (index_key_hash), or the
// composite hash of every key column's (CompositeKey, docs/format.md). False when a key column
// is NULL: the row is not indexed, as a unique constraint ignores it.
bool index_row_hash(Relation index, const Datum *values, const bool *isnull, KeyHash *h);
// Raises 54011 for an index of more key columns than a composite key has parts.
void check_key_columns(Relation index);

// Sets the key's bits in the index's pages, logged.
void add_key(Relation index, KeyHash h);

// Whether every bit of the key is set in the index's pages.
bool index_contains(Relation index, KeyHash h);
// The same in two steps, for checks of many indexes: the key's block, its page pinned (released
// by the caller) and its first cache lines prefetched, or null when the blocks span pages (then
// index_contains); then the check of the block, under a share lock of its page. No content lock
// is held between the steps, so the caller may open and lock other relations in between.
const uint8_t *index_locate_block(Relation index, KeyHash h, Buffer *buffer);
bool index_block_contains(Relation index, Buffer buffer, const uint8_t *block, KeyHash h);

// A new page at the end of the index, exclusively locked.
Buffer extend_index(Relation index);

// The bits set in `length` bytes.
uint64_t count_bits(const uint8_t *bytes, uint32_t length);

// Copies a filter's bits (bits_bytes() of them) out of its data pages: the filter of a layout 1
// index, or a layer of a layered one (`layered`: its pages may be new, holding no bit).
void copy_index_bits(Relation index, const FilterPages &filter, bool layered, uint8_t *bits);

// statistics() of a filter's bits (those copy_index_bits copies), counted a page at a time in
// its buffer: no copy of the filter, whatever its size.
Statistics filter_statistics(Relation index, const FilterPages &filter, bool layered);

// Calls use(arg, begin, bytes, length) for each data page of `filter` (as copy_index_bits)
// changed by a WAL record past `since`, with the page's bits, which begin `begin` bytes into the
// filter's bits.
using ChangedPageUse = void (*)(void *arg, uint64_t begin, const uint8_t *bytes, uint32_t length);
void changed_pages(Relation index, const FilterPages &filter, bool layered, XLogRecPtr since,
                   ChangedPageUse use, void *arg);

}  // namespace bloomfilter
