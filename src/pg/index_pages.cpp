// Reading and writing a bloomfilter index's pages (layouts in index_pages.hpp): the metapage read
// once per relcache entry (a layered index's layer count at every check and insert), a key's bits
// set and logged through the generic WAL API, a layered index's growth, and the data pages read
// under a share lock for checks, copies and changes.
#include "index_pages.hpp"

#include <cmath>
#include <type_traits>

extern "C" {
#include "access/genam.h"
#include "storage/buf_internals.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
}

namespace bloomfilter {

namespace {

// A key's bit in the index: its page, the byte in the page's bits and the bit's mask.
struct BitPlace {
    BlockNumber page;
    uint32_t byte;
    uint8_t mask;
};

int compare_places(const void *a, const void *b) {
    const BlockNumber pa = static_cast<const BitPlace *>(a)->page;
    const BlockNumber pb = static_cast<const BitPlace *>(b)->page;
    return pa < pb ? -1 : pa > pb;
}

// The key's bits by page (one page, unless the filter's blocks span pages). Returns how many (k).
uint32_t key_places(const FilterPages &layout, KeyHash h, BitPlace *places) {
    const uint64_t start = layout.block_start(h);
    uint32_t n = 0;
    for_each_position(h, kFormatVersion2, layout.parameters.hashes, layout.parameters.block_log2,
                      [&](uint32_t bit) {
                          const uint64_t byte = start + bit / 8;
                          places[n++] = BitPlace{layout.page_of(byte), layout.offset_in_page(byte),
                                                 uint8_t(1u << (bit & 7))};
                      });
    qsort(places, n, sizeof(BitPlace), compare_places);
    return n;
}

// A page of this index of the kind wanted. The special space's size is checked before it is
// read: a page whose pd_special points elsewhere would make its opaque data lie past the page.
bool is_index_page(Page page, bool meta) {
    return !PageIsNew(page) && PageGetSpecialSize(page) == MAXALIGN(sizeof(IndexPageOpaque)) &&
           page_opaque(page)->page_id == kIndexPageId &&
           ((page_opaque(page)->flags & kMetaPageFlag) != 0) == meta;
}

// A data page, checked. A layered index's page may be new (all zeros): added to the relation
// ahead of its layer and not logged yet when the server stopped, it never held a bit.
Page checked_page(Relation index, Buffer buffer, bool may_be_new = false) {
    Page page = BufferGetPage(buffer);
    if (may_be_new && PageIsNew(page)) return page;
    if (!is_index_page(page, false))
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("bloomfilter index \"%s\" has a corrupted page %u",
                               RelationGetRelationName(index), BufferGetBlockNumber(buffer))));
    return page;
}

bool places_set(Page page, const BitPlace *places, uint32_t n) {
    if (PageIsNew(page)) return false;
    const uint8_t *bits = page_bits(page);
    for (uint32_t i = 0; i < n; i++)
        if ((bits[places[i].byte] & places[i].mask) == 0) return false;
    return true;
}

#ifdef USE_ASSERT_CHECKING
// How many bytes of bits a page's layout leaves room for, from its own header.
uint32_t bytes_per_page_room(Page page) {
    return uint32_t(PageGetSpecialPointer(page) - reinterpret_cast<char *>(page_bits(page)));
}
#endif

void init_data_page(Page page, uint32_t bits_length) {
    PageInit(page, BLCKSZ, sizeof(IndexPageOpaque));
    IndexPageOpaque *opaque = page_opaque(page);
    opaque->flags = 0;
    opaque->page_id = kIndexPageId;
    reinterpret_cast<PageHeader>(page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + bits_length;
}

// Sets bits of a data page whose buffer is exclusively locked, logged through the generic WAL
// API as contrib/bloom logs its pages: GenericXLogFinish finds the changed bytes itself, and its
// record format stays generic_xlog.c's own. A layered index's page (`layer` not null) that is
// new is made a data page first; its count of bits set (layer_bits_set) goes up by the bits this
// key sets, and once it passes the fill the layer has at capacity the page is flagged, in the
// same record: the return value says it was just flagged. Sets *fill to the share of the page's
// bits set.
bool set_bits_logged(Relation index, Buffer buffer, const BitPlace *places, uint32_t n,
                     const FilterPages *layer = nullptr, double full_fill = 2.0,
                     double *fill = nullptr) {
    // A temporary table's pages are in local buffers, which have no content lock.
    Assert(BufferIsLocal(buffer) ||
           LWLockHeldByMeInMode(BufferDescriptorGetContentLock(GetBufferDescriptor(buffer - 1)),
                                LW_EXCLUSIVE));
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, 0);
    uint32_t length = 0;
    if (layer != nullptr) {
        const uint64_t begin =
            uint64_t(BufferGetBlockNumber(buffer) - layer->first_block) * layer->bytes_per_page;
        length = uint32_t(Min(uint64_t(layer->bytes_per_page), layer->bits_bytes() - begin));
        // A page added ahead of its layer was logged with its bits as the page's hole; they are
        // logged from their first change on, with the count after them.
        if (PageIsNew(page)) init_data_page(page, 0);
        PageHeader header = reinterpret_cast<PageHeader>(page);
        header->pd_lower = Max(header->pd_lower, layer_page_lower(*layer));
    }
    uint8_t *bits = page_bits(page);
    uint32_t newly_set = 0;
    for (uint32_t i = 0; i < n; i++) {
        Assert(places[i].byte < bytes_per_page_room(page));
        newly_set += (bits[places[i].byte] & places[i].mask) == 0;
        bits[places[i].byte] |= places[i].mask;
    }
    bool flagged = false;
    if (layer != nullptr) {
        uint8_t *count = bits + layer->bytes_per_page;
        const uint32_t set = load_u32(count) + newly_set;
        store_u32(count, set);
        *fill = double(set) / (8.0 * length);
        if (*fill >= full_fill && (page_opaque(page)->flags & kFullPageFlag) == 0) {
            page_opaque(page)->flags |= kFullPageFlag;
            flagged = true;
        }
    }
    GenericXLogFinish(xlog);
    return flagged;
}

// Reads the metapage of a layout 1 index into `layout` (layer 0); false when it is not valid.
bool read_fixed_meta(Relation index, const IndexMeta &meta, IndexLayout *layout) {
    if (!(meta.header[kOffsetBlockLog2] >= kMinBlockLog2 &&
          meta.header[kOffsetBlockLog2] <= kMaxBlockLog2))
        return false;
    const uint64_t total = kHeaderBytes + (uint64_t(load_u32(meta.header + kOffsetBlocks))
                                           << (meta.header[kOffsetBlockLog2] - 3));
    Header header;
    if (read_header(meta.header, kHeaderBytes, total, &header) != Status::ok ||
        header.parameters.version != kFormatVersion2)
        return false;
    FilterPages &filter = layout->layers[0];
    filter.parameters = header.parameters;
    filter.first_block = kMetaBlock + 1;
    filter.bytes_per_page = meta.bytes_per_page;
    filter.data_pages = meta.data_pages;
    layout->inserted_by_build = header.inserted;
    layout->layer_count = 1;
    return meta.bytes_per_page == bytes_per_page_for(filter.parameters) &&
           uint64_t(meta.data_pages) ==
               (filter.bits_bytes() + meta.bytes_per_page - 1) / meta.bytes_per_page &&
           RelationGetNumberOfBlocks(index) >= 1 + meta.data_pages;
}

// Reads the layer directory of a layout 2 index; false when it is not valid. Each layer must be
// the one its number gives, from the first block after the previous layer's.
bool read_layered_meta(Relation index, const IndexMetaLayered &meta, IndexLayout *layout) {
    if (meta.layer_count < 1 || meta.layer_count > kMaxLayers || meta.expansion < 2 ||
        !(meta.error_rate > 0 && meta.error_rate < 1) || meta.capacity < 1)
        return false;
    layout->layer_count = meta.layer_count;
    layout->expansion = meta.expansion;
    layout->capacity = meta.capacity;
    layout->error_rate = meta.error_rate;
    BlockNumber next_block = kMetaBlock + 1;
    const BlockNumber blocks = RelationGetNumberOfBlocks(index);
    for (uint32_t n = 0; n < meta.layer_count; n++) {
        const LayerMeta &stored = meta.layers[n];
        Parameters expected;
        Header header;
        if (layer_parameters(meta.capacity, meta.error_rate, meta.expansion, n, &expected) !=
            Status::ok)
            return false;
        expected.version = kFormatVersion2;
        if (n == 0) {
            // A valid bloom value's header, its count of keys the build's.
            if (read_header(stored.header, kHeaderBytes, expected.encoded_bytes(), &header) !=
                Status::ok)
                return false;
        } else {
            // Past layer 0, the header its number gives, byte for byte (its hashes may be
            // fewer than a bloom value's of that rate: size_filter_capped).
            uint8_t written[kHeaderBytes];
            write_header(expected, written);
            if (memcmp(written, stored.header, kHeaderBytes) != 0) return false;
            header.parameters = expected;
            header.inserted = 0;
        }
        FilterPages &layer = layout->layers[n];
        layer.parameters = header.parameters;
        layer.first_block = stored.first_block;
        layer.bytes_per_page = bytes_per_page_for(layer.parameters);
        layer.data_pages = stored.data_pages;
        if (n == 0) layout->inserted_by_build = header.inserted;
        if (header.parameters.blocks != expected.blocks ||
            header.parameters.hashes != expected.hashes ||
            header.parameters.block_log2 != expected.block_log2 ||
            header.parameters.version != kFormatVersion2 || !layer.blocks_in_one_page() ||
            layer.bytes_per_page + sizeof(uint32_t) > kPageBitsRoom ||
            stored.first_block != next_block ||
            uint64_t(stored.data_pages) !=
                (layer.bits_bytes() + layer.bytes_per_page - 1) / layer.bytes_per_page ||
            uint64_t(stored.first_block) + stored.data_pages > blocks)
            return false;
        next_block = stored.first_block + stored.data_pages;
    }
    return true;
}

// Reads the metapage and keeps its layout in rd_amcache: one allocation with every layer's
// recent buffers (the relcache frees rd_amcache alone when it reloads the index's entry).
const IndexLayout &load_layout(Relation index) {
    IndexLayout layout{};
    bool valid = false;
    if (RelationGetNumberOfBlocks(index) > kMetaBlock) {
        Buffer buffer = ReadBuffer(index, kMetaBlock);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = BufferGetPage(buffer);
        if (is_index_page(page, true)) {
            const char *contents = PageGetContents(page);
            uint32_t magic, version;
            memcpy(&magic, contents, 4);
            memcpy(&version, contents + 4, 4);
            layout.layout_version = version;
            if (magic == kIndexMagic && version == kIndexLayoutVersion) {
                IndexMeta meta;
                memcpy(&meta, contents, sizeof meta);
                valid = read_fixed_meta(index, meta, &layout);
            } else if (magic == kIndexMagic && version == kIndexLayeredVersion) {
                IndexMetaLayered meta;
                memcpy(&meta, contents, sizeof meta);
                valid = read_layered_meta(index, meta, &layout);
            }
        }
        UnlockReleaseBuffer(buffer);
    }
    if (!valid)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("\"%s\" is not a valid bloomfilter index: its metapage is corrupted",
                               RelationGetRelationName(index)),
                        errhint("REINDEX it.")));
    size_t buffers = 0;
    for (uint32_t n = 0; n < layout.layer_count; n++) buffers += layout.layers[n].data_pages;
    char *cached = static_cast<char *>(MemoryContextAllocZero(
        index->rd_indexcxt, MAXALIGN(sizeof(IndexLayout)) + sizeof(Buffer) * buffers));
    Buffer *recent = reinterpret_cast<Buffer *>(cached + MAXALIGN(sizeof(IndexLayout)));
    for (uint32_t n = 0; n < layout.layer_count; n++) {
        layout.layers[n].recent_buffers = recent;
        recent += layout.layers[n].data_pages;
    }
    memcpy(cached, &layout, sizeof layout);
    if (index->rd_amcache != nullptr) pfree(index->rd_amcache);
    index->rd_amcache = cached;
    return *reinterpret_cast<const IndexLayout *>(cached);
}

// The number of layers a layered index's metapage has published now, under a share lock.
uint32_t published_layers(Relation index, const IndexLayout &cached) {
    Buffer buffer = cached.recent_meta;
    if (buffer == InvalidBuffer ||
        !ReadRecentBuffer(relation_file(index), MAIN_FORKNUM, kMetaBlock, buffer)) {
        buffer = ReadBuffer(index, kMetaBlock);
        cached.recent_meta = buffer;
    }
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    const IndexMetaLayered *meta =
        reinterpret_cast<const IndexMetaLayered *>(PageGetContents(BufferGetPage(buffer)));
    const uint32_t count = meta->layer_count;
    UnlockReleaseBuffer(buffer);
    return count;
}

// The layout with every layer published before this call: a layered index's metapage is read
// each time (another backend, or the primary a standby replays, may have added a layer since the
// relcache entry was read), and the entry again when it has more.
const IndexLayout &current_layout(Relation index) {
    const IndexLayout &cached = index_layout(index);
    if (cached.layout_version != kIndexLayeredVersion) return cached;
    const uint32_t count = published_layers(index, cached);
    if (count == cached.layer_count) return cached;
    if (count < cached.layer_count)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("bloomfilter index \"%s\" lost layers: %u, then %u",
                               RelationGetRelationName(index), cached.layer_count, count),
                        errhint("REINDEX it.")));
    return load_layout(index);
}

// The share of a layer's bits set when it holds its capacity: 1 - e^(-k n / m).
double full_fill(const FilterPages &layer) {
    const Parameters &p = layer.parameters;
    return 1.0 - exp(-double(p.hashes) * double(p.capacity) / double(p.bits()));
}

// Adds up to `count` empty data pages to the relation, for the next layer: logged whole with their
// bits as the page's hole, which costs a few bytes of WAL each.
void add_empty_pages(Relation index, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        Buffer buffer = extend_index(index);
        GenericXLogState *xlog = GenericXLogStart(index);
        Page page = GenericXLogRegisterBuffer(xlog, buffer, GENERIC_XLOG_FULL_IMAGE);
        init_data_page(page, 0);
        GenericXLogFinish(xlog);
        UnlockReleaseBuffer(buffer);
    }
}

// The pages the layer after the newest one takes, from its first block; false when there is no
// such layer (the last there can be, or past the largest filter).
bool next_layer_pages(const IndexLayout &layout, BlockNumber *first, uint32_t *pages) {
    if (layout.layer_count >= kMaxLayers) return false;
    Parameters next;
    if (layer_parameters(layout.capacity, layout.error_rate, layout.expansion, layout.layer_count,
                         &next) != Status::ok)
        return false;
    const uint32_t per_page = bytes_per_page_for(next);
    if (next.block_bytes() > per_page) return false;
    const FilterPages &newest = layout.newest();
    *first = newest.first_block + newest.data_pages;
    *pages = uint32_t((next.encoded_bytes() - kHeaderBytes + per_page - 1) / per_page);
    return uint64_t(*first) + *pages < uint64_t(MaxBlockNumber);
}

// Pages are added for the next layer from 80% of the newest layer's fill at capacity on, in
// proportion to the fill of the page just written, so that they are all there by 95% of it: a
// few pages per insert that writes (the next layer needs about one page for every 500 keys of
// this one), never the whole layer at once, and no pages long before they are needed.
constexpr double kAheadFrom = 0.8;
constexpr double kAheadTo = 0.95;
constexpr uint32_t kAheadPagesPerInsert = 8;

void add_pages_ahead(Relation index, const IndexLayout &layout, double progress) {
    BlockNumber first;
    uint32_t pages;
    if (progress < kAheadFrom || !next_layer_pages(layout, &first, &pages)) return;
    const double share = Min(1.0, (progress - kAheadFrom) / (kAheadTo - kAheadFrom));
    const uint64_t wanted = uint64_t(first) + uint64_t(ceil(share * pages));
    const BlockNumber have = RelationGetNumberOfBlocks(index);
    if (have >= wanted) return;
    add_empty_pages(index, uint32_t(Min(uint64_t(kAheadPagesPerInsert), wanted - have)));
}

// A data page of the newest layer was just flagged: counted on the metapage, and when two
// fifths of the layer's pages are, the next layer is published in the same record, its pages added
// first (those still missing: all of them when keys came faster than the pages were added ahead).
void count_full_page(Relation index, uint32_t layer_number) {
    Buffer buffer = ReadBuffer(index, kMetaBlock);
    for (;;) {
        // The layout as this backend knows it, read before the metapage is locked (reading it
        // again from the metapage under that lock would wait on ourselves).
        const IndexLayout &layout = index_layout(index);
        const uint32_t known_layers = layout.layer_count;
        BlockNumber first = InvalidBlockNumber;
        uint32_t pages = 0;
        const bool next_exists = next_layer_pages(layout, &first, &pages);
        LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
        const IndexMetaLayered *meta =
            reinterpret_cast<const IndexMetaLayered *>(PageGetContents(BufferGetPage(buffer)));
        const LayerMeta &layer = meta->layers[layer_number];
        // At two fifths of its pages past their fill at capacity, the layer holds a little
        // less than its capacity: its rate stays under its share of the index's.
        const bool publish = meta->layer_count == layer_number + 1 &&
                             5 * uint64_t(layer.full_pages + 1) >= 2 * uint64_t(layer.data_pages);
        const bool can_grow = publish && known_layers == meta->layer_count && next_exists;
        if (can_grow && RelationGetNumberOfBlocks(index) < first + pages) {
            // Never extend the relation under the metapage's lock: a check waits on it.
            LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
            const BlockNumber have = RelationGetNumberOfBlocks(index);
            if (have < first + pages) add_empty_pages(index, first + pages - have);
            continue;
        }
        GenericXLogState *xlog = GenericXLogStart(index);
        Page page = GenericXLogRegisterBuffer(xlog, buffer, 0);
        IndexMetaLayered *changed = reinterpret_cast<IndexMetaLayered *>(PageGetContents(page));
        changed->layers[layer_number].full_pages++;
        if (can_grow) {
            Parameters next;
            layer_parameters(meta->capacity, meta->error_rate, meta->expansion, meta->layer_count,
                             &next);
            LayerMeta &added = changed->layers[meta->layer_count];
            memset(&added, 0, sizeof added);
            write_header(next, added.header);
            added.first_block = first;
            added.data_pages = pages;
            changed->layer_count++;
        }
        GenericXLogFinish(xlog);
        UnlockReleaseBuffer(buffer);
        return;
    }
}

// Sets the key's bits in one page of a filter; a page whose bits are all set already is only
// read. For a layered index's newest layer (`layer`), returns whether the page was flagged full
// and sets *fill (-1 when nothing was written).
bool add_to_page(Relation index, const BitPlace *places, uint32_t n, const FilterPages *layer,
                 double full, double *fill, bool *page_full = nullptr) {
    Buffer buffer = ReadBuffer(index, places[0].page);
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    bool flagged = false;
    if (fill != nullptr) *fill = -1;
    Page page = checked_page(index, buffer, layer != nullptr);
    if (!places_set(page, places, n)) {
        LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
        LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
        page = checked_page(index, buffer, layer != nullptr);
        flagged = set_bits_logged(index, buffer, places, n, layer, full, fill);
    }
    if (page_full != nullptr)
        *page_full = !PageIsNew(page) && (page_opaque(page)->flags & kFullPageFlag) != 0;
    UnlockReleaseBuffer(buffer);
    return flagged;
}

}  // namespace

// Sets the key's bits (a layered index's, in its newest layer). A page whose bits are all set
// already is only read: a key added again (and every row of a REINDEX CONCURRENTLY's validation
// pass) writes no WAL.
//
// A layered index's key goes to the newest layer this backend knows of, without reading the
// metapage: a key in an older layer is found all the same, checks reading every layer. When the
// page it lands on is full, the layer is about to give way, and the metapage is read again.
void add_key(Relation index, KeyHash h) {
    const IndexLayout &layout = index_layout(index);
    const FilterPages &filter = layout.newest();
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * filter.parameters.hashes));
    const uint32_t n = key_places(filter, h, places);
    if (layout.layout_version == kIndexLayeredVersion) {
        const uint32_t number = layout.layer_count - 1;
        const double full = full_fill(filter);
        double fill;
        bool page_full;
        const bool flagged = add_to_page(index, places, n, &filter, full, &fill, &page_full);
        pfree(places);
        if (fill >= 0) add_pages_ahead(index, layout, fill / full);
        if (flagged) count_full_page(index, number);
        if (page_full) current_layout(index);
        return;
    }
    for (uint32_t first = 0; first < n;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        add_to_page(index, places + first, end - first, nullptr, 0, nullptr);
        first = end;
    }
    pfree(places);
}

uint64_t count_bits(const uint8_t *bytes, uint32_t length) {
    uint64_t set = 0;
    uint32_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, bytes + i, 8);
        set += uint64_t(__builtin_popcountll(word));
    }
    for (; i < length; i++) set += uint64_t(__builtin_popcount(bytes[i]));
    return set;
}

// A new page at the end of the index, exclusively locked.
Buffer extend_index(Relation index) {
#if PG_VERSION_NUM >= 160000
    return ExtendBufferedRel(BMR_REL(index), MAIN_FORKNUM, nullptr, EB_LOCK_FIRST);
#else
    const bool need_lock = !RELATION_IS_LOCAL(index);
    if (need_lock) LockRelationForExtension(index, ExclusiveLock);
    Buffer buffer = ReadBuffer(index, P_NEW);
    LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
    if (need_lock) UnlockRelationForExtension(index, ExclusiveLock);
    return buffer;
#endif
}

const IndexLayout &index_layout(Relation index) {
    if (index->rd_amcache != nullptr) return *static_cast<const IndexLayout *>(index->rd_amcache);
    return load_layout(index);
}

const IndexLayout &current_index_layout(Relation index) { return current_layout(index); }

KeyHash index_key_hash(Relation index, Datum value) {
    FmgrInfo *hash = index_getprocinfo(index, 1, 1);
    return KeyHash{
        uint64_t(DatumGetInt64(FunctionCall1Coll(hash, index->rd_indcollation[0], value))), 0};
}

// A data page for a check, pinned; it is read under a share content lock, as every core access
// method reads its pages: on a hot standby, redo of a full-page image zeroes the buffer and then
// copies the image in under an exclusive lock, so a reader with a pin alone could see zeros. The
// buffer the page was found in last time is tried first: when it still holds the page, the
// buffer mapping table is not searched.
namespace {
Buffer pin_data_page(Relation index, const FilterPages &filter, BlockNumber block) {
    Assert(block >= filter.first_block && block < filter.first_block + filter.data_pages);
    Buffer &recent = filter.recent_buffers[block - filter.first_block];
    if (recent != InvalidBuffer &&
        ReadRecentBuffer(relation_file(index), MAIN_FORKNUM, block, recent))
        return recent;
    recent = ReadBuffer(index, block);
    return recent;
}

// The page of a pinned buffer, share-locked and checked (the buffer may hold the page read again
// from disk since, and the buffer manager takes a page of zeros for a valid one). A layered
// index's page may be new: it holds no bit.
Page lock_data_page(Relation index, Buffer buffer, bool may_be_new) {
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    return checked_page(index, buffer, may_be_new);
}

// Whether every bit of the key is set in one filter's pages.
bool filter_contains(Relation index, const FilterPages &filter, KeyHash h, bool layered) {
    const Parameters &p = filter.parameters;
    if (filter.blocks_in_one_page()) {
        const uint64_t start = filter.block_start(h);
        Buffer buffer = pin_data_page(index, filter, filter.page_of(start));
        Page page = lock_data_page(index, buffer, layered);
        const bool present = !PageIsNew(page) &&
                             block_contains_stopping(page_bits(page) + filter.offset_in_page(start),
                                                     h, p.hashes, p.block_log2);
        UnlockReleaseBuffer(buffer);
        return present;
    }
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * p.hashes));
    const uint32_t n = key_places(filter, h, places);
    bool present = true;
    for (uint32_t first = 0; first < n && present;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        Buffer buffer = pin_data_page(index, filter, places[first].page);
        present = places_set(lock_data_page(index, buffer, layered), places + first, end - first);
        UnlockReleaseBuffer(buffer);
        first = end;
    }
    pfree(places);
    return present;
}
}  // namespace

// A layered index is checked by index_contains: nullptr.
const uint8_t *index_locate_block(Relation index, KeyHash h, Buffer *buffer) {
    const IndexLayout &layout = index_layout(index);
    const FilterPages &filter = layout.first();
    if (layout.layout_version == kIndexLayeredVersion || !filter.blocks_in_one_page())
        return nullptr;
    const Parameters &p = filter.parameters;
    const uint64_t start = filter.block_start(h);
    *buffer = pin_data_page(index, filter, filter.page_of(start));
    const uint8_t *block = page_bits(BufferGetPage(*buffer)) + filter.offset_in_page(start);
    // The cache lines of the first two positions, which decide most absent keys: a hint only,
    // taken before the page is locked; the bits are read under the lock.
    const uint32_t shift = 64 - p.block_log2;
    for (uint32_t i = 0; i < Min(p.hashes, 2u); i++)
        __builtin_prefetch(block + (((h.low * position_multiplier(i)) >> shift) >> 3));
    return block;
}

bool index_block_contains(Relation index, Buffer buffer, const uint8_t *block, KeyHash h) {
    const Parameters &p = index_layout(index).first().parameters;
    lock_data_page(index, buffer, false);
    const bool present = block_contains_stopping(block, h, p.hashes, p.block_log2);
    LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
    return present;
}

// A layered index: every layer published when the check starts, the newest first.
bool index_contains(Relation index, KeyHash h) {
    Assert(CheckRelationLockedByMe(index, AccessShareLock, true));
    const IndexLayout &layout = current_layout(index);
    const bool layered = layout.layout_version == kIndexLayeredVersion;
    for (uint32_t n = layout.layer_count; n-- > 0;)
        if (filter_contains(index, layout.layers[n], h, layered)) return true;
    return false;
}

namespace {

// Each data page of a filter, share-locked and checked: use(page, byte offset, bytes of bits),
// called under the lock (a new page holds no bits yet: PageIsNew).
template <typename Use>
void for_each_data_page(Relation index, const FilterPages &filter, bool layered, Use use) {
    const uint64_t bits_bytes = filter.bits_bytes();
    for (uint32_t n = 0; n < filter.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * filter.bytes_per_page;
        const uint64_t length = Min(uint64_t(filter.bytes_per_page), bits_bytes - begin);
        Buffer buffer = ReadBuffer(index, filter.first_block + n);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        use(checked_page(index, buffer, layered), begin, length);
        UnlockReleaseBuffer(buffer);
    }
}

}  // namespace

void copy_index_bits(Relation index, const FilterPages &filter, bool layered, uint8_t *bits) {
    for_each_data_page(index, filter, layered, [bits](Page page, uint64_t begin, uint64_t length) {
        if (PageIsNew(page))
            memset(bits + begin, 0, length);
        else
            memcpy(bits + begin, page_bits(page), length);
    });
}

Statistics filter_statistics(Relation index, const FilterPages &filter, bool layered) {
    static_assert(std::is_trivially_destructible<StatisticsSum>::value,
                  "an error (a longjmp) may leave it behind");
    StatisticsSum sum(filter.parameters);
    // Counted under the lock, as copy_index_bits copies: not even the page is copied.
    for_each_data_page(index, filter, layered, [&sum](Page page, uint64_t, uint64_t length) {
        if (PageIsNew(page))
            sum.add_zeros(length);
        else
            sum.add(page_bits(page), length);
    });
    return sum.result();
}

void changed_pages(Relation index, const FilterPages &filter, bool layered, XLogRecPtr since,
                   ChangedPageUse use, void *arg) {
    const uint64_t bits_bytes = filter.bits_bytes();
    uint8_t *copy = static_cast<uint8_t *>(palloc(filter.bytes_per_page));
    // A page with no WAL position (InvalidXLogRecPtr) counts as changed: a temporary table's
    // pages never get one, and under wal_level = minimal an index given a new file in a
    // transaction (TRUNCATE, REINDEX, VACUUM FULL) is written without WAL; when the file is
    // synced at commit rather than logged whole, its pages keep none until their next logged
    // change.
    for (uint32_t n = 0; n < filter.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * filter.bytes_per_page;
        const uint32_t length = uint32_t(Min(uint64_t(filter.bytes_per_page), bits_bytes - begin));
        Buffer buffer = ReadBuffer(index, filter.first_block + n);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = checked_page(index, buffer, layered);
        const XLogRecPtr lsn = PageGetLSN(page);
        const bool changed = lsn > since || lsn == InvalidXLogRecPtr;
        if (changed) {
            if (PageIsNew(page))
                memset(copy, 0, length);
            else
                memcpy(copy, page_bits(page), length);
        }
        UnlockReleaseBuffer(buffer);
        if (changed) use(arg, begin, copy, length);
    }
    pfree(copy);
}

}  // namespace bloomfilter
