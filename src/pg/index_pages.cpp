// Reading and writing a bloomfilter index's pages (layout in index_pages.hpp): the metapage read
// once per relcache entry, a key's bits set and logged through the generic WAL API, and the data
// pages read under a share lock for checks, copies and changes.
#include "index_pages.hpp"

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
uint32_t key_places(const IndexLayout &layout, KeyHash h, BitPlace *places) {
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

Page checked_page(Relation index, Buffer buffer) {
    Page page = BufferGetPage(buffer);
    if (!is_index_page(page, false))
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("bloomfilter index \"%s\" has a corrupted page %u",
                               RelationGetRelationName(index), BufferGetBlockNumber(buffer))));
    return page;
}

bool places_set(Page page, const BitPlace *places, uint32_t n) {
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

// Sets bits of a data page whose buffer is exclusively locked, logged through the generic WAL
// API as contrib/bloom logs its pages: GenericXLogFinish finds the changed bytes itself, and its
// record format stays generic_xlog.c's own.
void set_bits_logged(Relation index, Buffer buffer, const BitPlace *places, uint32_t n) {
    // A temporary table's pages are in local buffers, which have no content lock.
    Assert(BufferIsLocal(buffer) ||
           LWLockHeldByMeInMode(BufferDescriptorGetContentLock(GetBufferDescriptor(buffer - 1)),
                                LW_EXCLUSIVE));
    GenericXLogState *xlog = GenericXLogStart(index);
    Page page = GenericXLogRegisterBuffer(xlog, buffer, 0);
    uint8_t *bits = page_bits(page);
    for (uint32_t i = 0; i < n; i++) {
        Assert(places[i].byte < bytes_per_page_room(page));
        bits[places[i].byte] |= places[i].mask;
    }
    GenericXLogFinish(xlog);
}

}  // namespace

// Sets the key's bits. A page whose bits are all set already is only read: a key added again
// (and every row of a REINDEX CONCURRENTLY's validation pass) writes no WAL.
void add_key(Relation index, KeyHash h) {
    const IndexLayout &layout = index_layout(index);
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * layout.parameters.hashes));
    const uint32_t n = key_places(layout, h, places);
    for (uint32_t first = 0; first < n;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        Buffer buffer = ReadBuffer(index, places[first].page);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        if (!places_set(checked_page(index, buffer), places + first, end - first)) {
            LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
            LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
            set_bits_logged(index, buffer, places + first, end - first);
        }
        UnlockReleaseBuffer(buffer);
        first = end;
    }
    pfree(places);
}

const IndexLayout &index_layout(Relation index) {
    if (index->rd_amcache != nullptr) return *static_cast<const IndexLayout *>(index->rd_amcache);
    IndexMeta meta;
    bool valid = false;
    if (RelationGetNumberOfBlocks(index) > kMetaBlock) {
        Buffer buffer = ReadBuffer(index, kMetaBlock);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = BufferGetPage(buffer);
        valid = is_index_page(page, true);
        if (valid) memcpy(&meta, PageGetContents(page), sizeof meta);
        UnlockReleaseBuffer(buffer);
    }
    IndexLayout layout{};
    if (valid) {
        valid = meta.magic == kIndexMagic && meta.layout_version == kIndexLayoutVersion &&
                meta.header[kOffsetBlockLog2] >= kMinBlockLog2 &&
                meta.header[kOffsetBlockLog2] <= kMaxBlockLog2;
    }
    if (valid) {
        const uint64_t total = kHeaderBytes + (uint64_t(load_u32(meta.header + kOffsetBlocks))
                                               << (meta.header[kOffsetBlockLog2] - 3));
        Header header;
        valid = read_header(meta.header, kHeaderBytes, total, &header) == Status::ok &&
                header.parameters.version == kFormatVersion2;
        layout.parameters = header.parameters;
        layout.inserted_by_build = header.inserted;
        layout.bytes_per_page = meta.bytes_per_page;
        layout.data_pages = meta.data_pages;
        valid = valid && meta.bytes_per_page == bytes_per_page_for(layout.parameters) &&
                uint64_t(meta.data_pages) ==
                    (layout.bits_bytes() + meta.bytes_per_page - 1) / meta.bytes_per_page &&
                RelationGetNumberOfBlocks(index) >= 1 + meta.data_pages;
    }
    if (!valid)
        ereport(ERROR, (errcode(ERRCODE_INDEX_CORRUPTED),
                        errmsg("\"%s\" is not a valid bloomfilter index: its metapage is corrupted",
                               RelationGetRelationName(index)),
                        errhint("REINDEX it.")));
    // One allocation with its buffers' array: the relcache frees rd_amcache alone when it reloads
    // the index's entry.
    char *cached = static_cast<char *>(MemoryContextAllocZero(
        index->rd_indexcxt, MAXALIGN(sizeof(IndexLayout)) + sizeof(Buffer) * layout.data_pages));
    layout.recent_buffers = reinterpret_cast<Buffer *>(cached + MAXALIGN(sizeof(IndexLayout)));
    memcpy(cached, &layout, sizeof layout);
    index->rd_amcache = cached;
    return *reinterpret_cast<const IndexLayout *>(cached);
}

KeyHash index_key_hash(Relation index, Datum value) {
    FmgrInfo *hash = index_getprocinfo(index, 1, 1);
    return KeyHash{uint64_t(DatumGetInt64(FunctionCall1Coll(hash, index->rd_indcollation[0], value))), 0};
}

// A data page for a check, pinned; it is read under a share content lock, as every core access
// method reads its pages: on a hot standby, redo of a full-page image zeroes the buffer and then
// copies the image in under an exclusive lock, so a reader with a pin alone could see zeros. The
// buffer the page was found in last time is tried first: when it still holds the page, the
// buffer mapping table is not searched.
namespace {
Buffer pin_data_page(Relation index, const IndexLayout &layout, BlockNumber block) {
    Assert(block >= 1 && block <= layout.data_pages);
    Buffer &recent = layout.recent_buffers[block - 1];
    if (recent != InvalidBuffer && ReadRecentBuffer(relation_file(index), MAIN_FORKNUM, block, recent))
        return recent;
    recent = ReadBuffer(index, block);
    return recent;
}

// The page of a pinned buffer, share-locked and checked (the buffer may hold the page read again
// from disk since, and the buffer manager takes a page of zeros for a valid one).
Page lock_data_page(Relation index, Buffer buffer) {
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    return checked_page(index, buffer);
}
}  // namespace

const uint8_t *index_locate_block(Relation index, KeyHash h, Buffer *buffer) {
    const IndexLayout &layout = index_layout(index);
    if (!layout.blocks_in_one_page()) return nullptr;
    const Parameters &p = layout.parameters;
    const uint64_t start = layout.block_start(h);
    *buffer = pin_data_page(index, layout, layout.page_of(start));
    const uint8_t *block = page_bits(BufferGetPage(*buffer)) + layout.offset_in_page(start);
    // The cache lines of the first two positions, which decide most absent keys: a hint only,
    // taken before the page is locked; the bits are read under the lock.
    const uint32_t shift = 64 - p.block_log2;
    for (uint32_t i = 0; i < Min(p.hashes, 2u); i++)
        __builtin_prefetch(block + (((h.low * position_multiplier(i)) >> shift) >> 3));
    return block;
}

bool index_block_contains(Relation index, Buffer buffer, const uint8_t *block, KeyHash h) {
    const Parameters &p = index_layout(index).parameters;
    lock_data_page(index, buffer);
    const bool present = block_contains_stopping(block, h, p.hashes, p.block_log2);
    LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
    return present;
}

bool index_contains(Relation index, KeyHash h) {
    Assert(CheckRelationLockedByMe(index, AccessShareLock, true));
    const IndexLayout &layout = index_layout(index);
    const Parameters &p = layout.parameters;
    if (layout.blocks_in_one_page()) {
        const uint64_t start = layout.block_start(h);
        Buffer buffer = pin_data_page(index, layout, layout.page_of(start));
        const bool present = block_contains_stopping(page_bits(lock_data_page(index, buffer)) +
                                                         layout.offset_in_page(start),
                                                     h, p.hashes, p.block_log2);
        UnlockReleaseBuffer(buffer);
        return present;
    }
    BitPlace *places = static_cast<BitPlace *>(palloc(sizeof(BitPlace) * p.hashes));
    const uint32_t n = key_places(layout, h, places);
    bool present = true;
    for (uint32_t first = 0; first < n && present;) {
        uint32_t end = first;
        while (end < n && places[end].page == places[first].page) end++;
        Buffer buffer = pin_data_page(index, layout, places[first].page);
        present = places_set(lock_data_page(index, buffer), places + first, end - first);
        UnlockReleaseBuffer(buffer);
        first = end;
    }
    pfree(places);
    return present;
}

void copy_index_bits(Relation index, uint8_t *bits) {
    const IndexLayout &layout = index_layout(index);
    const uint64_t bits_bytes = layout.bits_bytes();
    for (uint32_t n = 0; n < layout.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * layout.bytes_per_page;
        Buffer buffer = ReadBuffer(index, BlockNumber(1 + n));
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        memcpy(bits + begin, page_bits(checked_page(index, buffer)),
               Min(uint64_t(layout.bytes_per_page), bits_bytes - begin));
        UnlockReleaseBuffer(buffer);
    }
}

void changed_pages(Relation index, XLogRecPtr since, ChangedPageUse use, void *arg) {
    const IndexLayout &layout = index_layout(index);
    const uint64_t bits_bytes = layout.bits_bytes();
    uint8_t *copy = static_cast<uint8_t *>(palloc(layout.bytes_per_page));
    // A page with no WAL position (InvalidXLogRecPtr) counts as changed: a temporary table's
    // pages never get one, and under wal_level = minimal an index given a new file in a
    // transaction (TRUNCATE, REINDEX, VACUUM FULL) is written without WAL; when the file is
    // synced at commit rather than logged whole, its pages keep none until their next logged
    // change.
    for (uint32_t n = 0; n < layout.data_pages; n++) {
        CHECK_FOR_INTERRUPTS();
        const uint64_t begin = uint64_t(n) * layout.bytes_per_page;
        const uint32_t length = uint32_t(Min(uint64_t(layout.bytes_per_page), bits_bytes - begin));
        Buffer buffer = ReadBuffer(index, BlockNumber(1 + n));
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        Page page = checked_page(index, buffer);
        const XLogRecPtr lsn = PageGetLSN(page);
        const bool changed = lsn > since || lsn == InvalidXLogRecPtr;
        if (changed) memcpy(copy, page_bits(page), length);
        UnlockReleaseBuffer(buffer);
        if (changed) use(arg, begin, copy, length);
    }
    pfree(copy);
}

}  // namespace bloomfilter
