// bloomfilter._native: the Python client's compiled check, on the extension's C++ core
// (src/core/bloom.hpp; bloom.cpp is compiled in by core.cpp). It hashes a key's bytes with the
// core's hash_bytes and checks them with the core's block checks, so it answers as the server
// does, bit for bit; the key's bytes are those bloomfilter._core.key_bytes gives (docs/format.md,
// "Keys: what is hashed"), with str, bytes, bytearray, int and uuid.UUID converted here and any
// other key handed to key_bytes itself, so every key and every refusal is the pure-Python path's.
//
// A Checker reads the bytes of an object exporting the buffer protocol (the bytearray of a
// Filter; later a shared mapping), with no copy: it validates them once as the core does, keeps
// the parameters it found, and on each call takes the buffer again and checks that its length
// and the header's first 28 bytes are still those, so a buffer changed under it raises
// ValueError instead of reading out of bounds.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <atomic>
#include <cstring>
#include <ctime>
#include <utility>

#include "bloom.hpp"
#include "hash_lanes.hpp"
#include "register_blocks.hpp"

namespace bf = bloomfilter;

namespace {

// The header bytes a check relies on: everything but `inserted`, which adds change.
constexpr size_t kCheckedHeader = bf::kOffsetInserted;

PyObject *uuid_type;   // uuid.UUID
PyObject *bytes_name;  // "bytes"

const char *status_name(bf::Status status) {
    switch (status) {
        case bf::Status::ok: return "ok";
        case bf::Status::capacity_out_of_range: return "capacity_out_of_range";
        case bf::Status::error_rate_out_of_range: return "error_rate_out_of_range";
        case bf::Status::too_large: return "too_large";
        case bf::Status::truncated: return "truncated";
        case bf::Status::bad_magic: return "bad_magic";
        case bf::Status::unsupported_version: return "unsupported_version";
        case bf::Status::bad_block_size: return "bad_block_size";
        case bf::Status::bad_parameters: return "bad_parameters";
        case bf::Status::inconsistent_sizing: return "inconsistent_sizing";
        case bf::Status::bad_length: return "bad_length";
        case bf::Status::bad_layer_count: return "bad_layer_count";
        case bf::Status::bad_layer: return "bad_layer";
        case bf::Status::capacity_mismatch: return "capacity_mismatch";
        case bf::Status::error_rate_mismatch: return "error_rate_mismatch";
        case bf::Status::version_mismatch: return "version_mismatch";
    }
    return "unknown";
}

// ValueError("invalid bloom value: <the core's reason>") with .status, as _core.read_header
// raises it.
void raise_status(bf::Status status) {
    PyObject *error = PyObject_CallFunction(
        PyExc_ValueError, "N",
        PyUnicode_FromFormat("invalid bloom value: %s", bf::status_message(status)));
    if (error == nullptr) return;
    PyObject *name = PyUnicode_FromString(status_name(status));
    if (name != nullptr) {
        PyObject_SetAttrString(error, "status", name);
        Py_DECREF(name);
    }
    PyErr_SetObject(PyExc_ValueError, error);
    Py_DECREF(error);
}

struct Checker {
    PyObject ob_base;     // PyObject_HEAD
    PyObject *owner;      // the object whose buffer holds the value
    PyObject *key_bytes;  // bloomfilter._core.key_bytes, for the keys not converted here
    uint64_t length;
    uint8_t header[kCheckedHeader];
    uint32_t hash_version;  // 1 or 2: which hash the layers use
    uint32_t count;         // filters: 1, or a layered value's layers
    uint64_t offset[bf::kMaxLayers];
    bf::FilterRef layer[bf::kMaxLayers];  // data: null; the buffer's address + offset per call
};

// A key's bytes: in `data`, or in `held` (a bytes object to release), or in `word` (an int).
struct KeyBytes {
    const char *data;
    Py_ssize_t length;
    PyObject *held;
    uint8_t word[8];
};

// An exact int's value: true when it fits a long long (no error set either way). An int of
// one digit is read in place, a call saved on the common key; any other through
// PyLong_AsLongLongAndOverflow.
inline bool int_value(PyObject *value, long long *out) {
#if PY_VERSION_HEX >= 0x030C0000
    PyLongObject *number = reinterpret_cast<PyLongObject *>(value);
    if (_PyLong_IsCompact(number)) {
        *out = (long long)_PyLong_CompactValue(number);
        return true;
    }
#else
    const Py_ssize_t size = Py_SIZE(value);
    if (size >= -1 && size <= 1) {
        *out = size * (long long)reinterpret_cast<PyLongObject *>(value)->ob_digit[0];
        return true;
    }
#endif
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
    }
    *out = v;
    return true;
}

// The bytes _core.key_bytes(key) gives, without a call for the common kinds; 0, or -1 with the
// exception key_bytes raises.
inline int key_bytes_of(const Checker *self, PyObject *key, KeyBytes *out) {
    out->held = nullptr;
    PyTypeObject *type = Py_TYPE(key);
    if (type == &PyUnicode_Type) {
        // An ASCII str is its UTF-8 bytes, held in the object itself: no call.
        if (PyUnicode_IS_COMPACT_ASCII(key)) {
            out->data = static_cast<const char *>(PyUnicode_DATA(key));
            out->length = PyUnicode_GET_LENGTH(key);
            return 0;
        }
        out->data = PyUnicode_AsUTF8AndSize(key, &out->length);
        return out->data == nullptr ? -1 : 0;
    }
    if (type == &PyBytes_Type) {
        out->data = PyBytes_AS_STRING(key);
        out->length = PyBytes_GET_SIZE(key);
        return 0;
    }
    if (type == &PyByteArray_Type) {
        out->data = PyByteArray_AS_STRING(key);
        out->length = PyByteArray_GET_SIZE(key);
        return 0;
    }
    if (type == &PyLong_Type) {
        long long value;
        if (int_value(key, &value)) {
            bf::store_u64(out->word, uint64_t(value));
            out->data = reinterpret_cast<const char *>(out->word);
            out->length = 8;
            return 0;
        }
        // Out of the bigint range: key_bytes raises its error.
    }
    PyObject *held = reinterpret_cast<PyObject *>(type) == uuid_type
                         ? PyObject_GetAttr(key, bytes_name)
                         : PyObject_CallOneArg(self->key_bytes, key);
    if (held == nullptr) return -1;
    if (!PyBytes_Check(held)) {
        PyErr_Format(PyExc_TypeError, "key_bytes returned %.200s, not bytes",
                     Py_TYPE(held)->tp_name);
        Py_DECREF(held);
        return -1;
    }
    out->held = held;
    out->data = PyBytes_AS_STRING(held);
    out->length = PyBytes_GET_SIZE(held);
    return 0;
}

// The key's hash as the checker's layers use it; 0, or -1 with an exception.
inline int hash_key(const Checker *self, PyObject *key, bf::KeyHash *out) {
    if (Py_TYPE(key) == &PyUnicode_Type && PyUnicode_IS_COMPACT_ASCII(key)) {
        // The common key, its bytes in the object: no call, no Python code, no reference taken.
        *out = bf::hash_bytes(self->hash_version, PyUnicode_DATA(key),
                              size_t(PyUnicode_GET_LENGTH(key)));
        return 0;
    }
    // Held until hashed: a conversion may run Python code, which may drop it from a list.
    Py_INCREF(key);
    KeyBytes bytes;
    const int converted = key_bytes_of(self, key, &bytes);
    if (converted == 0) {
        *out = bf::hash_bytes(self->hash_version, bytes.data, size_t(bytes.length));
        Py_XDECREF(bytes.held);
    }
    Py_DECREF(key);
    return converted;
}

// The checked value's bytes, taken for one call (released with PyBuffer_Release); 0, or -1 with
// ValueError when they are no longer the value validated.
int take_buffer(Checker *self, Py_buffer *view) {
    if (PyObject_GetBuffer(self->owner, view, PyBUF_SIMPLE) != 0) return -1;
    if (uint64_t(view->len) != self->length ||
        std::memcmp(view->buf, self->header, kCheckedHeader) != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError,
                        "the filter's buffer changed under its check: its length or header is no "
                        "longer the value's it was made for");
        return -1;
    }
    return 0;
}

// The checked value's bytes for one check during which no Python code runs (the key already
// hashed): a bytearray's (a Filter's) read in place, since nothing can resize it before the check
// ends; any other owner's through take_buffer. 0, or -1 with take_buffer's ValueError.
struct View {
    const uint8_t *data;
    bool held;
    Py_buffer buffer;
};

inline int take_view(Checker *self, View *view) {
    PyObject *owner = self->owner;
    if (Py_TYPE(owner) == &PyByteArray_Type) {
        const uint8_t *data = reinterpret_cast<const uint8_t *>(PyByteArray_AS_STRING(owner));
        if (uint64_t(PyByteArray_GET_SIZE(owner)) != self->length ||
            std::memcmp(data, self->header, kCheckedHeader) != 0) {
            PyErr_SetString(PyExc_ValueError,
                            "the filter's buffer changed under its check: its length or header is "
                            "no longer the value's it was made for");
            return -1;
        }
        view->data = data;
        view->held = false;
        return 0;
    }
    if (take_buffer(self, &view->buffer) != 0) return -1;
    view->data = static_cast<const uint8_t *>(view->buffer.buf);
    view->held = true;
    return 0;
}

inline void release_view(View *view) {
    if (view->held) PyBuffer_Release(&view->buffer);
}

// Every layer is checked, with no branch on an answer: the answers of a batch are a coin toss
// to the branch predictor, and a mispredicted branch costs more than a layer's check.
inline bool check(const Checker *self, const uint8_t *data, bf::KeyHash h) {
    bool found = false;
    for (uint32_t n = self->count; n-- > 0;) {
        bf::FilterRef ref = self->layer[n];
        ref.data = const_cast<uint8_t *>(data) + self->offset[n];
        found |= ref.contains(h);
    }
    return found;
}

// Asks for the cache lines a key's check will read, in every layer: version 2, the line of each
// bit position (one multiply each); version 1, the block's lines (its positions cost a
// finalizer each), at most 8.
inline void prefetch(const Checker *self, const uint8_t *data, bf::KeyHash h) {
    for (uint32_t n = 0; n < self->count; n++) {
        const bf::FilterRef &ref = self->layer[n];
        const uint8_t *block = data + self->offset[n] +
                               bf::key_block_offset(h, ref.version, ref.blocks, ref.block_log2);
        if (ref.version == bf::kFormatVersion2) {
            const uint32_t shift = 64 - ref.block_log2;
            for (uint32_t i = 0; i < ref.hashes; i++)
                __builtin_prefetch(block +
                                   64 * ((h.low * bf::position_multiplier(i)) >> shift >> 9));
        } else {
            const uint64_t lines = (uint64_t(1) << (ref.block_log2 - 3)) / 64;
            for (uint64_t line = 0; line < lines && line < 8; line++)
                __builtin_prefetch(block + 64 * line);
        }
    }
}

// A batch's keys as a layer's check reads them: key i's hash, and the answer it goes to. A chunk's
// are in the batch's order (hashes[i], found[i]); a batch sorted by block holds version 2 hashes,
// key i's answering found[slots[i]].
struct InOrder {
    const bf::KeyHash *hashes;
    bf::KeyHash hash(size_t i) const { return hashes[i]; }
    size_t slot(size_t i) const { return i; }
};
struct ByBlock {
    const uint64_t *lows;
    const uint32_t *slots;
    bf::KeyHash hash(size_t i) const { return bf::KeyHash{lows[i], 0}; }
    size_t slot(size_t i) const { return slots[i]; }
};

// Whether a version 2 block holds positions [From, To) of hash h (their bits all set): the
// core's scalar_block_contains() unrolled with the multipliers as constants (the same positions,
// for_each_position's, and the same branchless test). A position's word is its top bits less 6
// and its bit the next 6, each one shift of the product.
template <uint32_t From, uint32_t To>
__attribute__((always_inline)) inline uint64_t positions_set(const uint8_t *block, uint64_t h,
                                                             uint32_t bit_shift) {
    const uint32_t word_shift = bit_shift + 6;
    uint64_t all_set = 1;
#pragma GCC unroll 16
    for (uint32_t n = From; n < To; n++) {
        const uint64_t product = h * bf::kMultipliers.m[n];
        all_set &=
            bf::load_u64(block + 8 * (product >> word_shift)) >> ((product >> bit_shift) & 63);
    }
    return all_set & 1;
}

// A layer's check of a batch's keys, found[slot] |= whether it holds the key: for a version 2
// layer of K <= 16 hashes, unrolled (positions_set) in loops the compiler sees whole, one call a
// run of keys and layer; else the core's scalar test. Past kFirstPositions hashes, in two
// passes: every key's first kFirstPositions positions, then the rest for the keys whose first
// were all set, listed in `listed` (room for count) without a branch (a batch's answers are a
// coin toss to the branch predictor). In a filter about half full, an absent key's first two
// bits are both set about one time in four: most absent keys cost 2 positions, not K. On the
// bench's 1M-key filter, 100,000 absent keys sorted by block (below): 7.8 to 7.9 ns a key of
// Filter.contains_many against 9.2 to 9.4 in one pass; half present, 8.3 to 8.9 against 8.8 to
// 8.9.
constexpr uint32_t kFirstPositions = 2;

template <uint32_t K, typename Keys>
__attribute__((always_inline)) inline void unrolled_body(const bf::FilterRef &layer,
                                                         const uint8_t *data, Keys keys,
                                                         size_t count, bool *found,
                                                         uint32_t *listed) {
    const uint32_t blocks = layer.blocks, block_log2 = layer.block_log2;
    const uint32_t bit_shift = 64 - block_log2;
    auto block_of = [data, blocks, block_log2](uint64_t h) {
        return data + bf::block_offset(bf::block_index(h, blocks), block_log2);
    };
    if (K <= kFirstPositions) {
        for (size_t i = 0; i < count; i++) {
            const uint64_t h = keys.hash(i).low;
            found[keys.slot(i)] |= positions_set<0, K>(block_of(h), h, bit_shift) != 0;
        }
        return;
    }
    constexpr uint32_t first = K <= kFirstPositions ? K : kFirstPositions;
    size_t passed = 0;
    for (size_t i = 0; i < count; i++) {
        const uint64_t h = keys.hash(i).low;
        listed[passed] = uint32_t(i);
        passed += positions_set<0, first>(block_of(h), h, bit_shift);
    }
    for (size_t j = 0; j < passed; j++) {
        const size_t i = listed[j];
        const uint64_t h = keys.hash(i).low;
        found[keys.slot(i)] |= positions_set<first, K>(block_of(h), h, bit_shift) != 0;
    }
}

template <uint32_t K, typename Keys>
void unrolled_check(const bf::FilterRef &layer, const uint8_t *data, Keys keys, size_t count,
                    bool *found, uint32_t *listed) {
    unrolled_body<K, Keys>(layer, data, keys, count, found, listed);
}

// The same compiled for BMI2, where the CPU has it: a shift by a count in a register is then
// one instruction on any register (shrx), not a move to CL and a shift. The bit shift is the
// layer's (64 - block_log2), known only when the check runs. A few percent: a bounded
// follower's batch of 100,000 str keys on a 3 MB value of 8192-bit blocks (AMD EPYC, Zen 5;
// batches in turn in one process, medians of 300 calls, three runs) took 11.6 to 12.3 ns a key
// with these and the regions' prefetch (sort_and_check), 12.0 to 12.5 with the prefetch alone,
// 12.0 to 13.0 with neither.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BLOOMFILTER_BMI2_CHECKS 1
template <uint32_t K, typename Keys>
__attribute__((target("bmi2"))) void unrolled_check_bmi2(const bf::FilterRef &layer,
                                                         const uint8_t *data, Keys keys,
                                                         size_t count, bool *found,
                                                         uint32_t *listed) {
    unrolled_body<K, Keys>(layer, data, keys, count, found, listed);
}

bool has_bmi2() {
    static const bool cpu = __builtin_cpu_supports("bmi2");
    return cpu;
}
#endif

template <typename Keys>
void scalar_check(const bf::FilterRef &layer, const uint8_t *data, Keys keys, size_t count,
                  bool *found, uint32_t *) {
    for (size_t i = 0; i < count; i++) {
        const bf::KeyHash h = keys.hash(i);
        const uint8_t *block =
            data + bf::key_block_offset(h, layer.version, layer.blocks, layer.block_log2);
        found[keys.slot(i)] |=
            bf::scalar_block_contains(block, h, layer.version, layer.hashes, layer.block_log2);
    }
}

// Off (set_batch_bmi2(False)): the checks compiled without BMI2, for tests and measures.
bool batch_bmi2_on = true;

template <typename Keys>
using LayerCheck = void (*)(const bf::FilterRef &layer, const uint8_t *data, Keys keys,
                            size_t count, bool *found, uint32_t *listed);
constexpr uint32_t kUnrolledMaxHashes = 16;

template <typename Keys, size_t... K>
constexpr std::array<LayerCheck<Keys>, sizeof...(K) + 1> unrolled_table(std::index_sequence<K...>) {
    return {scalar_check<Keys>, unrolled_check<K + 1, Keys>...};
}

#ifdef BLOOMFILTER_BMI2_CHECKS
template <typename Keys, size_t... K>
constexpr std::array<LayerCheck<Keys>, sizeof...(K) + 1> bmi2_table(std::index_sequence<K...>) {
    return {scalar_check<Keys>, unrolled_check_bmi2<K + 1, Keys>...};
}
#endif

template <typename Keys>
LayerCheck<Keys> layer_check_for(const bf::FilterRef &layer) {
    static constexpr auto table =
        unrolled_table<Keys>(std::make_index_sequence<kUnrolledMaxHashes>());
    if (layer.version != bf::kFormatVersion2 || layer.hashes > kUnrolledMaxHashes)
        return scalar_check<Keys>;
#ifdef BLOOMFILTER_BMI2_CHECKS
    static constexpr auto bmi2 = bmi2_table<Keys>(std::make_index_sequence<kUnrolledMaxHashes>());
    if (batch_bmi2_on && has_bmi2()) return bmi2[layer.hashes];
#endif
    return table[layer.hashes];
}

// Every layer's check of the keys, or'ed into found (zeroed by the caller); listed: room for
// count.
template <typename Keys>
void check_layers(const Checker *self, const uint8_t *data, Keys keys, size_t count, bool *found,
                  uint32_t *listed) {
    for (uint32_t n = self->count; n-- > 0;) {
        const bf::FilterRef &layer = self->layer[n];
        layer_check_for<Keys>(layer)(layer, data + self->offset[n], keys, count, found, listed);
    }
}

// A large batch on a large filter is checked in the order of its keys' blocks: a key's block is
// the top bits of its hash in every layer (block_index), so keys sorted by those bits read each
// layer from its start to its end, a region at a time, and the k lines of a key are mostly in
// the cache already (the keys of a block read it once). A counting sort by the top bits, into
// regions of about 8 KB of the value, costs two passes over the hashes. On the 1.2 MB filter of
// bench/python_client.sh (AMD EPYC, 1 MB L2) the checks' share of a key fell from 5.8 to 4.8 ns,
// sort included, in a C++ loop over 100,000 hashes. Only version 2 hashes (a version 1 key's
// block is its high half): the sort keeps 8 bytes a key.
constexpr size_t kByBlockMinKeys = 4096;
// Fewer keys are one chunk (kChunk) of the unsorted path: no sort to pay for.
constexpr size_t kRegistersMinKeys = 1024;
constexpr uint64_t kByBlockMinBytes = 256 * 1024;
constexpr uint32_t kRegionLog2 = 13, kMaxRegionBits = 12;

// Slots are 32-bit, and the buffers' sizes must not wrap (a 32-bit size_t): about 20.5 bytes a
// key (sort_and_check), 32 counted.
inline bool sortable(Py_ssize_t count) {
    return uint64_t(count) < (uint64_t(1) << 32) && size_t(count) <= size_t(PY_SSIZE_T_MAX) / 32;
}

// A batch's sort buffers, kept from one batch to the next. Freed after each batch, they came
// back from the system as fresh pages whenever the allocator had returned the top of its heap:
// 456 page faults a batch of 100,000 keys on a 60 KB filter, 13.6 against 7.1 ns a key. Up to
// kKeptScratchBytes are kept (a batch of about 200,000 keys): a process that checked a batch
// holds them until it ends. A larger batch, or one checked while another is (a key's
// conversion ran Python code that checks a batch), has its own.
constexpr size_t kKeptScratchBytes = size_t(4) << 20;

struct Scratch {
    void *data = nullptr;
    size_t size = 0;
    bool busy = false;
};
Scratch kept_scratch;  // every use under the GIL

class ScratchLease {
public:
    explicit ScratchLease(size_t size) {
        if (!kept_scratch.busy && size <= kKeptScratchBytes) {
            if (kept_scratch.size < size) {
                PyMem_Free(kept_scratch.data);
                kept_scratch.data = PyMem_Malloc(size);
                kept_scratch.size = kept_scratch.data == nullptr ? 0 : size;
            }
            if (kept_scratch.data != nullptr) {
                kept_scratch.busy = true;
                data_ = kept_scratch.data;
                kept_ = true;
                return;
            }
        }
        data_ = PyMem_Malloc(size);
    }
    ~ScratchLease() {
        if (kept_)
            kept_scratch.busy = false;
        else
            PyMem_Free(data_);
    }
    ScratchLease(const ScratchLease &) = delete;
    ScratchLease &operator=(const ScratchLease &) = delete;
    void *data() const { return data_; }

private:
    void *data_ = nullptr;
    bool kept_ = false;
};

// Off (set_batch_registers(False)) for a side-by-side measure of the other paths.
bool batch_registers_on = true;

// Whether a batch is sorted by block and checked by register_blocks: one filter of its
// 4096-bit blocks (a version 2 value of error rate about 0.01), with enough keys a block, on a
// CPU that has it. A filter of any size: the checks' work, not its memory reads, is what the
// registers save.
inline bool by_registers(const Checker *self, Py_ssize_t count) {
    const bf::FilterRef &layer = self->layer[0];
    return batch_registers_on && self->count == 1 && layer.version == bf::kFormatVersion2 &&
           layer.block_log2 == register_blocks::kBlockLog2 &&
           layer.hashes <= bf::kTabledMultipliers && size_t(count) >= kRegistersMinKeys &&
           sortable(count) && size_t(count) / register_blocks::kMinKeysPerBlock >= layer.blocks &&
           register_blocks::available();
}

// Whether a batch is sorted by block: by_registers, or a large one on a large filter.
inline bool by_block(const Checker *self, Py_ssize_t count) {
    return by_registers(self, count) ||
           (self->hash_version == bf::kFormatVersion2 && size_t(count) >= kByBlockMinKeys &&
            sortable(count) && self->length >= kByBlockMinBytes);
}

// Asks for the cache lines of region r (the hashes whose top bits, h >> shift, are r) in every
// layer: the blocks from the region's first hash's to its last's (block_index is monotonic).
inline void prefetch_region(const Checker *self, const uint8_t *data, uint32_t r, uint32_t shift) {
    const uint64_t first = uint64_t(r) << shift, last = first | ((uint64_t(1) << shift) - 1);
    for (uint32_t n = 0; n < self->count; n++) {
        const bf::FilterRef &layer = self->layer[n];
        const uint8_t *base = data + self->offset[n];
        const uint64_t end =
            bf::block_offset(bf::block_index(last, layer.blocks) + 1, layer.block_log2);
        for (uint64_t at = bf::block_offset(bf::block_index(first, layer.blocks), layer.block_log2);
             at < end; at += 64)
            __builtin_prefetch(base + at);
    }
}

// Keys [begin, begin + n) of a batch, n <= kRun, hashed into lows (their version 2 hashes), key
// by key: hash(i, &h). 0, or hash's -1. A hasher that hashes a run of keys at once (PairLanes)
// has an overload of its own.
constexpr size_t kRun = bf::hash_lanes::kLanes;

template <typename Hash>
inline int hash_run(Hash &hash, size_t begin, size_t n, uint64_t *lows) {
    for (size_t j = 0; j < n; j++) {
        bf::KeyHash h;
        if (hash(Py_ssize_t(begin + j), &h) != 0) return -1;
        lows[j] = h.low;
    }
    return 0;
}

// The sort's scatter writes each bucket's keys in a run of its own, in sorted and slots: each
// key asks for the line its bucket's run reaches kScatterAheadBytes on, so that the write does
// not wait for it. A batch's key objects have pushed those lines out of the cache since the last
// batch. On the 1.2 MB filter of bench/python_client.sh (AMD EPYC, Zen 3, no AVX-512: the
// regions path; 100,000 keys; builds with and without side by side in one process, batches in
// turn), a key of Filter.contains_many took 0.77 to 0.89 of its time without (five runs), an
// IndexFollower's 0.86 to 0.89 (two), a composite key's 0.90 to 0.95 (three); 64 or 256 bytes
// ahead did no better. The registers path shares the scatter; it was not measured with it.
constexpr size_t kScatterAheadBytes = 128;

// The batch's keys hashed by hash_run() into lows, counted by bucket (their region, or with
// Registers their block, for register_blocks), sorted by bucket into sorted and slots, then
// checked. 0, or hash's -1 (or -1 with MemoryError).
template <bool Registers, typename Hash>
int sort_and_check(const Checker *self, const uint8_t *data, size_t count, bool *found,
                   Hash &&hash) {
    uint32_t bits = 1;
    while (bits < kMaxRegionBits && (self->length >> (bits + kRegionLog2)) > 0) bits++;
    const uint32_t shift = 64 - bits, blocks = self->layer[0].blocks;
    // With Registers, at most count / kMinKeysPerBlock blocks.
    const uint32_t buckets = Registers ? blocks : uint32_t(1) << bits;
    auto bucket_of = [shift, blocks](uint64_t h) {
        return Registers ? bf::block_index(h, blocks) : uint32_t(h >> shift);
    };
    // lows, sorted, slots and next, in one lease, and room for the scatter's prefetches past
    // next's end.
    ScratchLease scratch((2 * sizeof(uint64_t) + sizeof(uint32_t)) * count +
                         (size_t(buckets) + 1) * sizeof(uint32_t) + kScatterAheadBytes);
    if (scratch.data() == nullptr) {
        PyErr_NoMemory();
        return -1;
    }
    uint64_t *lows = static_cast<uint64_t *>(scratch.data());
    uint64_t *sorted = lows + count;
    uint32_t *slots = reinterpret_cast<uint32_t *>(sorted + count);
    uint32_t *next = slots + count;
    std::memset(next, 0, (size_t(buckets) + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < count; i += kRun) {
        const size_t n = count - i < kRun ? count - i : kRun;
        if (hash_run(hash, i, n, lows + i) != 0) return -1;
        for (size_t j = i; j < i + n; j++) next[bucket_of(lows[j]) + 1]++;
    }
    for (uint32_t r = 0; r < buckets; r++) next[r + 1] += next[r];
    // After the sort, next[b] is where bucket b's keys end.
    for (size_t i = 0; i < count; i++) {
        const uint32_t at = next[bucket_of(lows[i])]++;
        __builtin_prefetch(reinterpret_cast<char *>(sorted + at) + kScatterAheadBytes, 1);
        __builtin_prefetch(reinterpret_cast<char *>(slots + at) + kScatterAheadBytes, 1);
        sorted[at] = lows[i];
        slots[at] = uint32_t(i);
    }
    std::memset(found, 0, count);
    if (Registers) {
        register_blocks::check(data + self->offset[0], blocks, self->layer[0].hashes, sorted, slots,
                               next, found);
    } else {
        // The hashes are in sorted now: lows is the checks' list. A region at a time, the next
        // one's lines asked for first, so that they come while this one's keys are checked.
        uint32_t begin = 0;
        for (uint32_t r = 0; r < buckets; begin = next[r], r++) {
            if (r + 1 < buckets) prefetch_region(self, data, r + 1, shift);
            if (next[r] > begin)
                check_layers(self, data, ByBlock{sorted + begin, slots + begin}, next[r] - begin,
                             found, reinterpret_cast<uint32_t *>(lows));
        }
    }
    return 0;
}

// The keys of a batch hashed (and their lines asked for) before the first of them is checked.
// Checking a long run of hashed keys lets the processor overlap their memory reads: on a 1.2 MB
// filter (AMD EPYC), 11 to 12 ns a key from 512 keys up against 13 to 16 from 45 to 90.
constexpr size_t kChunk = 1024;

// A batch's checks: by_block() sorted, else chunk by chunk (kChunk keys): each key of a chunk
// hashed by hash(i, &h) and the cache lines its check reads asked for, then each checked, so
// that the chunk's memory reads overlap instead of each key waiting for its own (the batch's
// point: a loop of contains waits for each in turn). found[i] is key i's answer. 0, or hash's -1
// (the keys after it not checked), or -1 with MemoryError.
template <typename Hash>
int check_batch(const Checker *self, const uint8_t *data, Py_ssize_t count, bool *found,
                Hash &&hash) {
    if (by_registers(self, count))
        return sort_and_check<true>(self, data, size_t(count), found, hash);
    if (by_block(self, count)) return sort_and_check<false>(self, data, size_t(count), found, hash);
    bf::KeyHash *hashes = static_cast<bf::KeyHash *>(PyMem_Malloc(sizeof(bf::KeyHash) * kChunk));
    uint32_t *listed = static_cast<uint32_t *>(PyMem_Malloc(sizeof(uint32_t) * kChunk));
    if (hashes == nullptr || listed == nullptr) {
        PyMem_Free(hashes);
        PyMem_Free(listed);
        PyErr_NoMemory();
        return -1;
    }
    int result = 0;
    for (size_t start = 0; start < size_t(count) && result == 0; start += kChunk) {
        const size_t chunk = size_t(count) - start < kChunk ? size_t(count) - start : kChunk;
        for (size_t i = 0; i < chunk; i++) {
            if (hash(Py_ssize_t(start + i), &hashes[i]) != 0) {
                result = -1;
                break;
            }
            prefetch(self, data, hashes[i]);
        }
        if (result == 0) {
            std::memset(found + start, 0, chunk);
            check_layers(self, data, InOrder{hashes}, chunk, found + start, listed);
        }
    }
    PyMem_Free(hashes);
    PyMem_Free(listed);
    return result;
}

// A batch's answers as a list of bools. The answers are picked from a table, not by a branch (a
// batch's answers are a coin toss to the branch predictor), and the references the list holds
// are taken at once: an increment a key on the same two objects is a chain of dependent writes
// to memory.
PyObject *answer_list(const bool *found, Py_ssize_t count) {
    PyObject *answers = PyList_New(count);
    if (answers == nullptr) return nullptr;
    PyObject *const answer_of[2] = {Py_False, Py_True};
    Py_ssize_t found_count = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        found_count += found[i];
        PyList_SET_ITEM(answers, i, answer_of[found[i]]);
    }
    Py_SET_REFCNT(Py_True, Py_REFCNT(Py_True) + found_count);
    Py_SET_REFCNT(Py_False, Py_REFCNT(Py_False) + (count - found_count));
    return answers;
}

int Checker_init(Checker *self, PyObject *args, PyObject *kwargs) {
    static const char *keywords[] = {"data", "key_bytes", nullptr};
    PyObject *owner, *key_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:Checker", const_cast<char **>(keywords),
                                     &owner, &key_bytes))
        return -1;
    if (!PyCallable_Check(key_bytes)) {
        PyErr_SetString(PyExc_TypeError, "key_bytes must be callable");
        return -1;
    }
    // A check in progress (a batch calling key_bytes) reads the layout it began with: it never
    // changes under it.
    if (self->owner != nullptr) {
        PyErr_SetString(PyExc_TypeError, "a Checker is initialised once");
        return -1;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(owner, &view, PyBUF_SIMPLE) != 0) return -1;
    const uint8_t *data = static_cast<const uint8_t *>(view.buf);
    const size_t length = size_t(view.len);
    bf::Header header;
    bf::Status status = bf::validate(data, length, &header);
    bf::Layers layers;
    if (status == bf::Status::ok && header.parameters.version == bf::kFormatLayered)
        status = bf::read_layers(data, length, &layers);
    if (status != bf::Status::ok) {
        PyBuffer_Release(&view);
        raise_status(status);
        return -1;
    }
    if (header.parameters.version == bf::kFormatLayered) {
        self->hash_version = bf::kFormatVersion2;
        self->count = layers.count;
        for (uint32_t n = 0; n < layers.count; n++) {
            self->offset[n] = layers.offset[n];
            self->layer[n] = bf::FilterRef::of(nullptr, layers.layer[n]);
        }
    } else {
        self->hash_version = header.parameters.version;
        self->count = 1;
        self->offset[0] = 0;
        self->layer[0] = bf::FilterRef::of(nullptr, header.parameters);
    }
    self->length = length;
    std::memcpy(self->header, data, kCheckedHeader);
    PyBuffer_Release(&view);
    Py_INCREF(owner);
    Py_INCREF(key_bytes);
    Py_XSETREF(self->owner, owner);
    Py_XSETREF(self->key_bytes, key_bytes);
    return 0;
}

int Checker_traverse(Checker *self, visitproc visit, void *arg) {
    Py_VISIT(self->owner);
    Py_VISIT(self->key_bytes);
    return 0;
}

int Checker_clear(Checker *self) {
    Py_CLEAR(self->owner);
    Py_CLEAR(self->key_bytes);
    return 0;
}

void Checker_dealloc(Checker *self) {
    PyObject_GC_UnTrack(self);
    Checker_clear(self);
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject *>(self));
}

bool ready(Checker *self) {
    if (self->owner != nullptr) return true;
    PyErr_SetString(PyExc_ValueError, "Checker.__init__ was not called");
    return false;
}

PyObject *Checker_contains(Checker *self, PyObject *key) {
    if (!ready(self)) return nullptr;
    bf::KeyHash h;
    if (hash_key(self, key, &h) != 0) return nullptr;
    View view;
    if (take_view(self, &view) != 0) return nullptr;
    const bool found = check(self, view.data, h);
    release_view(&view);
    return PyBool_FromLong(found);
}

// contains_hash(h): the check of a key by its version 2 hash (composite keys), as
// Filter.contains_hash and LayeredFilter.contains_hash answer.
PyObject *Checker_contains_hash(Checker *self, PyObject *value) {
    if (!ready(self)) return nullptr;
    if (self->hash_version != bf::kFormatVersion2) {
        PyErr_Format(PyExc_ValueError,
                     "contains_hash takes a format version 2 filter, not version %u",
                     unsigned(self->hash_version));
        return nullptr;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a key hash is an int, not %.200s", Py_TYPE(value)->tp_name);
        return nullptr;
    }
    const unsigned long long low = PyLong_AsUnsignedLongLong(value);
    if (low == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "a key hash is an unsigned 64-bit number");
        return nullptr;
    }
    View view;
    if (take_view(self, &view) != 0) return nullptr;
    const bool found = check(self, view.data, bf::KeyHash{low, 0});
    release_view(&view);
    return PyBool_FromLong(found);
}

// check_batch() of the keys, with Filter.contains_many's errors.
PyObject *Checker_contains_many(Checker *self, PyObject *keys) {
    if (!ready(self)) return nullptr;
    PyObject *sequence = PySequence_Fast(keys, "contains_many takes an iterable of keys");
    if (sequence == nullptr) return nullptr;
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    Py_buffer view;
    if (take_buffer(self, &view) != 0) {
        Py_DECREF(sequence);
        return nullptr;
    }
    // Every answer, kept here until the last key is converted: the list is made after the last
    // Python code (key_bytes) runs, so no such code sees it half filled.
    bool *found = static_cast<bool *>(PyMem_Malloc(count + 1));
    PyObject *answers = nullptr;
    if (found == nullptr) {
        PyErr_NoMemory();
    } else if (check_batch(self, static_cast<const uint8_t *>(view.buf), count, found,
                           [self, sequence](Py_ssize_t i, bf::KeyHash *h) {
                               // key_bytes runs Python code, which may change a list of keys.
                               if (i >= PySequence_Fast_GET_SIZE(sequence)) {
                                   PyErr_SetString(PyExc_RuntimeError,
                                                   "the keys changed during contains_many");
                                   return -1;
                               }
                               return hash_key(self, PySequence_Fast_GET_ITEM(sequence, i), h);
                           }) == 0) {
        answers = answer_list(found, count);
    }
    PyMem_Free(found);
    PyBuffer_Release(&view);
    Py_DECREF(sequence);
    return answers;
}

// batch_path(count): how a batch of `count` keys is checked: "registers" (sorted by block,
// register_blocks), "regions" (sorted by region) or "chunks".
PyObject *Checker_batch_path(Checker *self, PyObject *value) {
    if (!ready(self)) return nullptr;
    const Py_ssize_t count = PyLong_AsSsize_t(value);
    if (count == -1 && PyErr_Occurred()) return nullptr;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "a batch has 0 keys or more");
        return nullptr;
    }
    if (!by_block(self, count)) return PyUnicode_FromString("chunks");
    return PyUnicode_FromString(by_registers(self, count) ? "registers" : "regions");
}

PyObject *Checker_get_layers(Checker *self, void *) {
    return ready(self) ? PyLong_FromUnsignedLong(self->count) : nullptr;
}

PyMethodDef checker_methods[] = {
    {"contains", reinterpret_cast<PyCFunction>(Checker_contains), METH_O,
     "contains(key): False, the key was certainly never added; True, it probably was."},
    {"contains_hash", reinterpret_cast<PyCFunction>(Checker_contains_hash), METH_O,
     "contains_hash(h): contains() of a key by its version 2 hash (an unsigned 64-bit int)."},
    {"contains_many", reinterpret_cast<PyCFunction>(Checker_contains_many), METH_O,
     "contains_many(keys): [contains(key) for key in keys]."},
    {"batch_path", reinterpret_cast<PyCFunction>(Checker_batch_path), METH_O,
     "batch_path(count): how contains_many checks a batch of count keys: \"registers\", "
     "\"regions\" or \"chunks\"."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef checker_getset[] = {
    {"layers", reinterpret_cast<getter>(Checker_get_layers), nullptr,
     "The filters checked: 1, or a layered value's layers.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject CheckerType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// -- FollowerCheck: an index follower's contains(key) ----------------------------------------
//
// bloomfilter.follow's _Index.contains in C for the keys and states it can answer exactly as
// that method does: the follower's copy (a Checker), its key rules (the kinds below) and its
// bound (max_lag seconds after the last successful refresh, read from the clock time.monotonic
// reads, as it computes it). Anything else (a key of another type, a copy past its bound, an
// error, a state it was not given) goes to the follower's own method (`fallback`), which answers,
// warns, calls on_event and raises as before: this type never answers where that method would
// not, and never says "absent" where it would say "maybe".

enum KeyKind : int {
    kind_off = 0,        // every key to the fallback
    kind_any = 1,        // key_type None: the key as Filter.contains takes it
    kind_str = 2,        // exact str
    kind_bytes = 3,      // exact bytes or bytearray
    kind_int = 4,        // exact int (not bool)
    kind_uuid = 5,       // exact uuid.UUID
    kind_composite = 6,  // an exact tuple or list of one value per column, by `columns`
};

struct Column {
    int kind;             // kind_str, kind_bytes, kind_int or kind_uuid
    long long low, high;  // kind_int: the column type's range, [low, high]
};

struct FollowerCheck {
    PyObject ob_base;
    PyObject *fallback;  // the follower's contains, in Python
    Checker *checker;    // the copy's check, or null (every key to the fallback)
    int kind;
    uint32_t column_count;
    Column columns[bf::kMaxKeyParts];
    bool bounded;  // max_lag given
    double refreshed_at, max_lag;
    unsigned long long checks;  // keys answered here (the fallback counts its own)
};

PyTypeObject FollowerCheckType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// time.monotonic(), computed as CPython computes it (clock_gettime(CLOCK_MONOTONIC) in integer
// nanoseconds, then _PyTime_AsSecondsDouble): the same double for the same clock reading.
double monotonic_seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const long long t = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (t % 1000000000LL == 0) return double(t / 1000000000LL);
    volatile double d = double(t);
    d /= 1e9;
    return d;
}

PyObject *monotonic(PyObject *, PyObject *) { return PyFloat_FromDouble(monotonic_seconds()); }

int FollowerCheck_init(FollowerCheck *self, PyObject *args, PyObject *kwargs) {
    static const char *keywords[] = {"fallback", nullptr};
    PyObject *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:FollowerCheck", const_cast<char **>(keywords),
                                     &fallback))
        return -1;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return -1;
    }
    Py_INCREF(fallback);
    Py_XSETREF(self->fallback, fallback);
    Py_CLEAR(self->checker);
    self->kind = kind_off;
    self->bounded = false;
    return 0;
}

int FollowerCheck_traverse(FollowerCheck *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback);
    Py_VISIT(reinterpret_cast<PyObject *>(self->checker));
    return 0;
}

int FollowerCheck_clear(FollowerCheck *self) {
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->checker);
    return 0;
}

void FollowerCheck_dealloc(FollowerCheck *self) {
    PyObject_GC_UnTrack(self);
    FollowerCheck_clear(self);
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject *>(self));
}

// set_state(checker, kind, columns): the copy's Checker (None: every key to the fallback), the
// key kind and, for kind_composite, a tuple of (kind, low, high) per column.
PyObject *FollowerCheck_set_state(FollowerCheck *self, PyObject *args) {
    PyObject *checker, *columns;
    int kind;
    if (!PyArg_ParseTuple(args, "OiO:set_state", &checker, &kind, &columns)) return nullptr;
    if (checker != Py_None && !PyObject_TypeCheck(checker, &CheckerType)) {
        PyErr_SetString(PyExc_TypeError, "set_state takes a Checker or None");
        return nullptr;
    }
    if (kind < kind_off || kind > kind_composite) {
        PyErr_SetString(PyExc_ValueError, "unknown key kind");
        return nullptr;
    }
    Column parsed[bf::kMaxKeyParts];
    uint32_t count = 0;
    if (kind == kind_composite) {
        if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) < 1 ||
            PyTuple_GET_SIZE(columns) > Py_ssize_t(bf::kMaxKeyParts)) {
            PyErr_SetString(PyExc_ValueError, "a composite key has a tuple of 1 to 8 columns");
            return nullptr;
        }
        count = uint32_t(PyTuple_GET_SIZE(columns));
        for (uint32_t n = 0; n < count; n++) {
            Column &column = parsed[n];
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(columns, n), "iLL", &column.kind, &column.low,
                                  &column.high))
                return nullptr;
            if (column.kind < kind_str || column.kind > kind_uuid) {
                PyErr_SetString(PyExc_ValueError, "unknown column kind");
                return nullptr;
            }
        }
    }
    // A checker of version 1 hashes has no composite check (contains_hash refuses it).
    if (kind == kind_composite && checker != Py_None &&
        reinterpret_cast<Checker *>(checker)->hash_version != bf::kFormatVersion2)
        kind = kind_off;
    if (checker == Py_None ||
        (checker != Py_None && reinterpret_cast<Checker *>(checker)->owner == nullptr))
        kind = kind_off;
    Py_XINCREF(checker == Py_None ? nullptr : checker);
    Checker *previous = self->checker;
    self->checker = checker == Py_None ? nullptr : reinterpret_cast<Checker *>(checker);
    self->kind = kind;
    self->column_count = count;
    std::memcpy(self->columns, parsed, sizeof(Column) * count);
    Py_XDECREF(reinterpret_cast<PyObject *>(previous));
    Py_RETURN_NONE;
}

// set_bound(refreshed_at, max_lag): the follower's; True when answered here, False when every
// key goes to the fallback (a bound this type cannot compare as Python does).
PyObject *FollowerCheck_set_bound(FollowerCheck *self, PyObject *args) {
    PyObject *refreshed_at, *max_lag;
    if (!PyArg_ParseTuple(args, "OO:set_bound", &refreshed_at, &max_lag)) return nullptr;
    self->bounded = true;
    self->refreshed_at = 0;
    self->max_lag = -1;  // until known: always past the bound, so every key to the fallback
    if (max_lag == Py_None) {
        self->bounded = false;
        Py_RETURN_TRUE;
    }
    if (!PyFloat_CheckExact(refreshed_at)) Py_RETURN_FALSE;
    double bound;
    if (PyFloat_CheckExact(max_lag)) {
        bound = PyFloat_AS_DOUBLE(max_lag);
    } else if (PyLong_CheckExact(max_lag)) {
        // An int compares with a float exactly in Python; as a double, exactly when it is one.
        int overflow = 0;
        const long long value = PyLong_AsLongLongAndOverflow(max_lag, &overflow);
        if (overflow != 0 || value > (1LL << 53) || value < -(1LL << 53)) Py_RETURN_FALSE;
        bound = double(value);
    } else {
        Py_RETURN_FALSE;  // a Decimal, a Fraction...: Python's comparison, in the fallback
    }
    self->refreshed_at = PyFloat_AS_DOUBLE(refreshed_at);
    self->max_lag = bound;
    Py_RETURN_TRUE;
}

// The state a check reads, copied when it begins: a key's conversion runs Python code, which
// may call set_state, and a key is hashed by one set of rules and checked in the copy they were
// the rules of (same() after the conversions says whether they still are).
struct Rules {
    Checker *checker;
    int kind;
    uint32_t column_count;
    Column columns[bf::kMaxKeyParts];

    explicit Rules(const FollowerCheck *self)
        : checker(self->checker), kind(self->kind), column_count(self->column_count) {
        std::memcpy(columns, self->columns, sizeof(Column) * column_count);
    }
    bool same(const FollowerCheck *self) const {
        return self->checker == checker && self->kind == kind &&
               self->column_count == column_count &&
               std::memcmp(self->columns, columns, sizeof(Column) * column_count) == 0;
    }
};

// A composite key's version 2 hash by `rules`; 0, or -1 when the fallback must answer (an
// exception set or not).
int composite_hash_of(const Rules &rules, PyObject *key, bf::KeyHash *out) {
    PyTypeObject *type = Py_TYPE(key);
    if (type != &PyTuple_Type && type != &PyList_Type) return -1;
    if (PySequence_Fast_GET_SIZE(key) != Py_ssize_t(rules.column_count)) return -1;
    bf::CompositeKey composite;
    for (uint32_t n = 0; n < rules.column_count; n++) {
        // A uuid.UUID's bytes run Python code, which may change a list: read it again each time.
        if (Py_ssize_t(n) >= PySequence_Fast_GET_SIZE(key)) return -1;
        PyObject *value = PySequence_Fast_GET_ITEM(key, n);
        PyTypeObject *value_type = Py_TYPE(value);
        const Column &column = rules.columns[n];
        if (column.kind == kind_int) {
            // In the column type's range, the key_bytes of an int: 8 bytes little-endian.
            long long v;
            if (value_type != &PyLong_Type || !int_value(value, &v) || v < column.low ||
                v > column.high)
                return -1;
            uint8_t word[8];
            bf::store_u64(word, uint64_t(v));
            composite.add(bf::hash_bytes(bf::kFormatVersion2, word, 8).low);
            continue;
        }
        if (column.kind == kind_str && value_type == &PyUnicode_Type &&
            PyUnicode_IS_COMPACT_ASCII(value)) {
            // Its bytes in the object: no call, no Python code.
            composite.add(bf::hash_bytes(bf::kFormatVersion2, PyUnicode_DATA(value),
                                         size_t(PyUnicode_GET_LENGTH(value)))
                              .low);
            continue;
        }
        bool fits;
        switch (column.kind) {
            case kind_str: fits = value_type == &PyUnicode_Type; break;
            case kind_bytes:
                fits = value_type == &PyBytes_Type || value_type == &PyByteArray_Type;
                break;
            default: fits = reinterpret_cast<PyObject *>(value_type) == uuid_type; break;
        }
        if (!fits) return -1;
        KeyBytes bytes;
        Py_INCREF(value);  // held until hashed: its bytes may be its own
        const int converted = key_bytes_of(rules.checker, value, &bytes);
        if (converted == 0) {
            composite.add(
                bf::hash_bytes(bf::kFormatVersion2, bytes.data, size_t(bytes.length)).low);
            Py_XDECREF(bytes.held);
        }
        Py_DECREF(value);
        if (converted != 0) return -1;
    }
    *out = composite.hash();
    return 0;
}

// Whether a key is of the exact type a one-column kind (not kind_composite) takes here; kind_any
// takes any key, as Filter.contains does.
inline bool fits_kind(int kind, PyObject *key) {
    PyTypeObject *type = Py_TYPE(key);
    switch (kind) {
        case kind_str: return type == &PyUnicode_Type;
        case kind_bytes: return type == &PyBytes_Type || type == &PyByteArray_Type;
        case kind_int: return type == &PyLong_Type;
        case kind_uuid: return reinterpret_cast<PyObject *>(type) == uuid_type;
        default: return true;
    }
}

// A key's hash by `rules` (a kind other than kind_off, their checker held by the caller): the
// key as the follower's Python method would take it, of the kind's exact type; 0, or -1 when the
// fallback must answer (an exception set: the key's conversion raised it; or not).
int rules_hash(const Rules &rules, PyObject *key, bf::KeyHash *out) {
    if (rules.kind == kind_composite) {
        // Held until hashed: a value's conversion (a uuid.UUID's bytes) runs Python code, which
        // may drop the key from a batch's list while its values are still to be read.
        Py_INCREF(key);
        const int hashed = composite_hash_of(rules, key, out);
        Py_DECREF(key);
        return hashed;
    }
    if (!fits_kind(rules.kind, key)) return -1;
    return hash_key(rules.checker, key, out);
}

// A follower's batch's keys as check_batch hashes them: key i by rules_hash, `failed` set to it
// first.
struct RulesKeys {
    const Rules &rules;
    PyObject *keys;
    Py_ssize_t *failed;  // the last key hashed, or being hashed

    int operator()(Py_ssize_t i, bf::KeyHash *h) const {
        // A key's conversion may run Python code, which may change a list.
        if (i >= PySequence_Fast_GET_SIZE(keys)) return -1;
        *failed = i;
        return rules_hash(rules, PySequence_Fast_GET_ITEM(keys, i), h);
    }
};

// Off (set_batch_lanes(False)): every key of a batch hashed alone, for tests and measures.
bool batch_lanes_on = true;

// The keys of a batch of composite keys of two columns, each an int or a str (the unique
// constraints of signup tables: (tenant_id, email), (provider, subject)), hashed a run of eight
// at a time where the CPU has hash_lanes: each key's str value hashed as it is read, then the
// run's int values and the keys' hashes (XXH3 of their two part hashes) in the lanes. A key of
// another shape (a value of another type, a str not ASCII, an int out of its column's range) is
// hashed alone by rules_hash, as every key is where the batch is not sorted (check_batch's
// chunks: RulesKeys). No Python code runs: the columns convert in C. On the bench's (id, email)
// keys (100,000 on a 3 MB value; batches in turn in one process, medians of 300 calls, four runs
// on a busy machine) 18.3 to 23.5 ns a key against 21.1 to 26.1 key by key
// (set_batch_lanes(False)).
struct PairLanes : RulesKeys {
    static bool fits(const Rules &rules) {
        if (!batch_lanes_on || rules.kind != kind_composite || rules.column_count != 2 ||
            !bf::hash_lanes::available())
            return false;
        for (uint32_t n = 0; n < 2; n++)
            if (rules.columns[n].kind != kind_int && rules.columns[n].kind != kind_str)
                return false;
        return true;
    }

    // A key's two parts, as the lanes take them: an int column's value, a str column's part
    // hash. False when the key is not of the shape (rules_hash then hashes it, or refuses it).
    bool parts_of(PyObject *key, uint64_t *part[2]) const {
        PyTypeObject *type = Py_TYPE(key);
        if ((type != &PyTuple_Type && type != &PyList_Type) || PySequence_Fast_GET_SIZE(key) != 2)
            return false;
        for (uint32_t n = 0; n < 2; n++) {
            PyObject *value = PySequence_Fast_GET_ITEM(key, n);
            const Column &column = rules.columns[n];
            if (column.kind == kind_int) {
                long long v;
                if (Py_TYPE(value) != &PyLong_Type || !int_value(value, &v) || v < column.low ||
                    v > column.high)
                    return false;
                *part[n] = uint64_t(v);
            } else {
                if (Py_TYPE(value) != &PyUnicode_Type || !PyUnicode_IS_COMPACT_ASCII(value))
                    return false;
                *part[n] = bf::hash_bytes(bf::kFormatVersion2, PyUnicode_DATA(value),
                                          size_t(PyUnicode_GET_LENGTH(value)))
                               .low;
            }
        }
        return true;
    }

    int run(size_t begin, size_t n, uint64_t *lows) const {
        constexpr size_t kLanes = bf::hash_lanes::kLanes;
        uint64_t first[kLanes] = {}, second[kLanes] = {}, alone[kLanes], hashed[kLanes];
        uint32_t apart = 0;  // lanes whose key rules_hash hashed
        for (size_t j = 0; j < n; j++) {
            const Py_ssize_t i = Py_ssize_t(begin + j);
            if (i >= PySequence_Fast_GET_SIZE(keys)) return -1;
            *failed = i;
            PyObject *key = PySequence_Fast_GET_ITEM(keys, i);
            uint64_t *part[2] = {&first[j], &second[j]};
            if (!parts_of(key, part)) {
                bf::KeyHash h;
                if (rules_hash(rules, key, &h) != 0) return -1;
                alone[j] = h.low;
                apart |= 1u << j;
            }
        }
        if (rules.columns[0].kind == kind_int) bf::hash_lanes::hash_words(first, first);
        if (rules.columns[1].kind == kind_int) bf::hash_lanes::hash_words(second, second);
        bf::hash_lanes::hash_pairs(first, second, hashed);
        for (size_t j = 0; j < n; j++) lows[j] = (apart >> j) & 1 ? alone[j] : hashed[j];
        return 0;
    }
};

inline int hash_run(PairLanes &hash, size_t begin, size_t n, uint64_t *lows) {
    return hash.run(begin, n, lows);
}

bool follower_ready(const FollowerCheck *self) {
    if (self->fallback != nullptr) return true;
    PyErr_SetString(PyExc_ValueError, "FollowerCheck.__init__ was not called");
    return false;
}

PyObject *FollowerCheck_contains(FollowerCheck *self, PyObject *key) {
    if (!follower_ready(self)) return nullptr;
    const Rules rules(self);
    Checker *checker = rules.checker;
    if (checker == nullptr || rules.kind == kind_off) goto fallback;
    // Past the bound (as _Index.contains computes it: now - refreshed_at > max_lag), the
    // fallback answers True, warns and calls on_event.
    if (self->bounded && monotonic_seconds() - self->refreshed_at > self->max_lag) goto fallback;
    {
        bf::KeyHash h;
        Py_INCREF(checker);  // Python code (a key's conversion) may replace the state
        int hashed = rules_hash(rules, key, &h);
        // Rules changed by the conversions: the key is hashed again, by the fallback.
        if (hashed == 0 && !rules.same(self)) hashed = -1;
        View view;
        if (hashed != 0 || take_view(checker, &view) != 0) {
            Py_DECREF(checker);
            PyErr_Clear();  // the fallback raises the error, if it is one
            goto fallback;
        }
        const bool found = check(checker, view.data, h);
        release_view(&view);
        Py_DECREF(checker);
        self->checks++;
        return PyBool_FromLong(found);
    }
fallback:
    // Held for the call: a conversion above may have re-initialised this object.
    PyObject *fallback = self->fallback;
    Py_INCREF(fallback);
    PyObject *answer = PyObject_CallOneArg(fallback, key);
    Py_DECREF(fallback);
    return answer;
}

// contains_many(keys): _Index.contains_many's answers for a list or tuple of keys, computed as it
// computes them (every key hashed, then one comparison with the bound, then the checks), or None
// where that method must answer itself: no key rules here (an expression's), a key that does not
// fit them (it converts it or raises the error), a copy past its bound (it answers True and
// warns). A one-column key of the exact type whose conversion raises raises here, as that
// method would raise it (it checks the keys' types, then the bound, then converts them in
// order), so that no key is converted twice. Counts no checks: that method has.
PyObject *FollowerCheck_contains_many(FollowerCheck *self, PyObject *keys) {
    if (!follower_ready(self)) return nullptr;
    const Rules rules(self);
    Checker *checker = rules.checker;
    if (checker == nullptr || rules.kind == kind_off ||
        (!PyList_CheckExact(keys) && !PyTuple_CheckExact(keys)))
        Py_RETURN_NONE;
    Py_INCREF(checker);  // Python code (a key's conversion) may replace the state
    Py_INCREF(keys);
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(keys);
    bool *found = static_cast<bool *>(PyMem_Malloc(count + 1));
    PyObject *answers = nullptr;
    Py_buffer view;
    bool viewed = false;
    Py_ssize_t failed = -1;  // the last key hashed, or being hashed
    if (found == nullptr) {
        PyErr_NoMemory();
        goto done;
    }
    // The types first where a conversion runs Python code (a uuid.UUID's bytes), as the method
    // checks them before it converts any key: none is converted twice. The other kinds convert
    // here with no Python code, their types checked as they are hashed.
    if (rules.kind == kind_uuid)
        for (Py_ssize_t i = 0; i < count; i++)
            if (!fits_kind(rules.kind, PySequence_Fast_GET_ITEM(keys, i))) goto fallback;
    if (take_buffer(checker, &view) != 0) goto fallback;
    viewed = true;
    // Every key hashed by the rules the batch began with and checked in their copy; a key of
    // another type (rules_hash: -1, no error) or a change of rules seen after the last key hands
    // the batch to the method.
    if ((PairLanes::fits(rules)
             ? check_batch(checker, static_cast<const uint8_t *>(view.buf), count, found,
                           PairLanes{{rules, keys, &failed}})
             : check_batch(checker, static_cast<const uint8_t *>(view.buf), count, found,
                           RulesKeys{rules, keys, &failed})) != 0) {
        // A conversion's error is the method's when the rules and bound it would use are these
        // and no later key is of another type: the method checks every key's type before it
        // converts any, and raises that key's error instead.
        if (rules.kind != kind_composite && PyErr_Occurred() != nullptr && rules.same(self) &&
            !(self->bounded && monotonic_seconds() - self->refreshed_at > self->max_lag)) {
            for (Py_ssize_t i = failed + 1; i < PySequence_Fast_GET_SIZE(keys); i++)
                if (!fits_kind(rules.kind, PySequence_Fast_GET_ITEM(keys, i))) goto fallback;
            goto done;
        }
        goto fallback;
    }
    if (!rules.same(self)) goto fallback;
    // The bound compared once the keys are hashed, as the method compares it.
    if (self->bounded && monotonic_seconds() - self->refreshed_at > self->max_lag) goto fallback;
    answers = answer_list(found, count);
    goto done;
fallback:
    PyErr_Clear();  // the method raises the error, if it is one
    answers = Py_None;
    Py_INCREF(answers);
done:
    if (viewed) PyBuffer_Release(&view);
    PyMem_Free(found);
    Py_DECREF(keys);
    Py_DECREF(checker);
    return answers;
}

PyObject *FollowerCheck_get_checks(FollowerCheck *self, void *) {
    return PyLong_FromUnsignedLongLong(self->checks);
}

PyObject *FollowerCheck_take_checks(FollowerCheck *self, PyObject *) {
    const unsigned long long checks = self->checks;
    self->checks = 0;
    return PyLong_FromUnsignedLongLong(checks);
}

PyMethodDef follower_check_methods[] = {
    {"contains", reinterpret_cast<PyCFunction>(FollowerCheck_contains), METH_O,
     "contains(key): the follower's answer, from here or from its fallback."},
    {"contains_many", reinterpret_cast<PyCFunction>(FollowerCheck_contains_many), METH_O,
     "contains_many(keys): the follower's contains_many answers, or None where it answers."},
    {"set_state", reinterpret_cast<PyCFunction>(FollowerCheck_set_state), METH_VARARGS,
     "set_state(checker, kind, columns): the copy's Checker (or None) and the key rules."},
    {"set_bound", reinterpret_cast<PyCFunction>(FollowerCheck_set_bound), METH_VARARGS,
     "set_bound(refreshed_at, max_lag): True when the bound is compared here."},
    {"take_checks", reinterpret_cast<PyCFunction>(FollowerCheck_take_checks), METH_NOARGS,
     "The keys answered here since the last call, and the count set back to 0."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef follower_check_getset[] = {
    {"checks", reinterpret_cast<getter>(FollowerCheck_get_checks), nullptr,
     "Keys answered here (not by the fallback).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyObject *check_path(PyObject *, PyObject *) {
    return PyUnicode_FromString(bf::chosen_check_path_name());
}

PyObject *batch_registers(PyObject *, PyObject *) {
    return PyBool_FromLong(register_blocks::available());
}

// Sets *setting to value's truth; the previous setting, or null with its error.
PyObject *set_switch(bool *setting, PyObject *value) {
    const int on = PyObject_IsTrue(value);
    if (on < 0) return nullptr;
    const bool was = *setting;
    *setting = on != 0;
    return PyBool_FromLong(was);
}

PyObject *set_batch_registers(PyObject *, PyObject *value) {
    return set_switch(&batch_registers_on, value);
}

PyObject *batch_bmi2(PyObject *, PyObject *) {
#ifdef BLOOMFILTER_BMI2_CHECKS
    return PyBool_FromLong(has_bmi2());
#else
    Py_RETURN_FALSE;
#endif
}

PyObject *set_batch_bmi2(PyObject *, PyObject *value) { return set_switch(&batch_bmi2_on, value); }

PyObject *batch_lanes(PyObject *, PyObject *) {
    return PyBool_FromLong(bf::hash_lanes::available());
}

PyObject *set_batch_lanes(PyObject *, PyObject *value) {
    return set_switch(&batch_lanes_on, value);
}

// A full memory fence (std::atomic_thread_fence, seq_cst: mfence on x86-64, dmb ish on ARM64),
// for bloomfilter.shared's sequence lock: a writer orders its writes to a shared mapping before
// the sequence number's, and a reader its reads of the sequence number before the fields'.
PyObject *fence(PyObject *, PyObject *) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    Py_RETURN_NONE;
}

PyMethodDef module_methods[] = {
    {"monotonic", monotonic, METH_NOARGS,
     "time.monotonic() as FollowerCheck reads it (the same clock and conversion)."},
    {"fence", fence, METH_NOARGS,
     "A full memory fence (std::atomic_thread_fence(seq_cst)), for the shared copy's sequence "
     "lock."},
    {"check_path", check_path, METH_NOARGS,
     "The core's block check this process uses for version 2 filters: \"scalar\", \"avx2\" or "
     "\"avx512\" (the fastest here, timed at import)."},
    {"batch_registers", batch_registers, METH_NOARGS,
     "Whether a large batch on a filter of 4096-bit blocks is checked with each block in "
     "AVX-512 registers (this build and CPU have it)."},
    {"set_batch_registers", set_batch_registers, METH_O,
     "set_batch_registers(on): whether large batches may use those registers (True at import); "
     "returns the previous setting. For measures side by side."},
    {"batch_bmi2", batch_bmi2, METH_NOARGS,
     "Whether a batch's scalar checks (the unsorted chunks and regions paths) run compiled for "
     "BMI2 (this build and CPU have it)."},
    {"set_batch_bmi2", set_batch_bmi2, METH_O,
     "set_batch_bmi2(on): whether they may (True at import); returns the previous setting. For "
     "tests and measures side by side."},
    {"batch_lanes", batch_lanes, METH_NOARGS,
     "Whether a follower's batch of composite keys of two int or str columns is hashed eight "
     "keys at a time in AVX-512 registers (this build and CPU have it)."},
    {"set_batch_lanes", set_batch_lanes, METH_O,
     "set_batch_lanes(on): whether such batches may be (True at import); returns the previous "
     "setting. For tests and measures side by side."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "bloomfilter._native",
    "The compiled check of bloomfilter filters, on the extension's C++ core.",
    -1,
    module_methods,
};

}  // namespace

PyMODINIT_FUNC PyInit__native() {
    CheckerType.tp_name = "bloomfilter._native.Checker";
    CheckerType.tp_doc =
        "Checker(data, key_bytes): the check of a validated bloom value (format 1, 2 or 3) held "
        "in `data`, any object exporting its bytes (read on each call, never copied); keys "
        "other than str, bytes, bytearray, int and uuid.UUID are hashed as key_bytes(key).";
    CheckerType.tp_basicsize = sizeof(Checker);
    CheckerType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    CheckerType.tp_new = PyType_GenericNew;
    CheckerType.tp_init = reinterpret_cast<initproc>(Checker_init);
    CheckerType.tp_dealloc = reinterpret_cast<destructor>(Checker_dealloc);
    CheckerType.tp_traverse = reinterpret_cast<traverseproc>(Checker_traverse);
    CheckerType.tp_clear = reinterpret_cast<inquiry>(Checker_clear);
    CheckerType.tp_methods = checker_methods;
    CheckerType.tp_getset = checker_getset;
    if (PyType_Ready(&CheckerType) != 0) return nullptr;
    FollowerCheckType.tp_name = "bloomfilter._native.FollowerCheck";
    FollowerCheckType.tp_doc =
        "FollowerCheck(fallback): an index follower's contains(key), answered here where it can "
        "be exactly as fallback(key) would, else by fallback(key).";
    FollowerCheckType.tp_basicsize = sizeof(FollowerCheck);
    FollowerCheckType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    FollowerCheckType.tp_new = PyType_GenericNew;
    FollowerCheckType.tp_init = reinterpret_cast<initproc>(FollowerCheck_init);
    FollowerCheckType.tp_dealloc = reinterpret_cast<destructor>(FollowerCheck_dealloc);
    FollowerCheckType.tp_traverse = reinterpret_cast<traverseproc>(FollowerCheck_traverse);
    FollowerCheckType.tp_clear = reinterpret_cast<inquiry>(FollowerCheck_clear);
    FollowerCheckType.tp_methods = follower_check_methods;
    FollowerCheckType.tp_getset = follower_check_getset;
    if (PyType_Ready(&FollowerCheckType) != 0) return nullptr;

    PyObject *uuid = PyImport_ImportModule("uuid");
    if (uuid == nullptr) return nullptr;
    uuid_type = PyObject_GetAttrString(uuid, "UUID");
    Py_DECREF(uuid);
    bytes_name = PyUnicode_InternFromString("bytes");
    if (uuid_type == nullptr || bytes_name == nullptr) return nullptr;

    // As the server's _PG_init: the fastest block check this CPU has (about 1 ms).
    bf::choose_check_path();

    PyObject *module = PyModule_Create(&native_module);
    if (module == nullptr) return nullptr;
    Py_INCREF(&CheckerType);
    if (PyModule_AddObject(module, "Checker", reinterpret_cast<PyObject *>(&CheckerType)) != 0) {
        Py_DECREF(&CheckerType);
        Py_DECREF(module);
        return nullptr;
    }
    Py_INCREF(&FollowerCheckType);
    if (PyModule_AddObject(module, "FollowerCheck",
                           reinterpret_cast<PyObject *>(&FollowerCheckType)) != 0) {
        Py_DECREF(&FollowerCheckType);
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
