// libFuzzer target: arbitrary text into decode_hex(), checked against a plain reference
// decoder, then the decoded bytes into validate() and, when valid, used as a filter.
#include <cctype>
#include <memory>

#include "fuzz_common.hpp"

using namespace bloomfilter;

static int digit(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bool well_formed = size >= 2 && data[0] == '\\' && data[1] == 'x' && size % 2 == 0;
    for (size_t i = 2; well_formed && i < size; i++) well_formed = digit(data[i]) >= 0;

    // Exactly the documented output size, on the heap, so a write past it is reported.
    const size_t length = size >= 2 ? (size - 2) / 2 : 0;
    std::unique_ptr<uint8_t[]> decoded(new uint8_t[length]);
    const bool ok = decode_hex(reinterpret_cast<const char *>(data), size, decoded.get());
    FUZZ_CHECK(ok == well_formed);
    if (!ok) return 0;
    for (size_t i = 0; i < length; i++)
        FUZZ_CHECK(decoded[i] == (digit(data[2 + 2 * i]) << 4 | digit(data[3 + 2 * i])));

    // Encoding again gives the input in lower case.
    std::string text(text_length(length), '\0');
    encode_hex(decoded.get(), length, &text[0]);
    for (size_t i = 0; i < size; i++) FUZZ_CHECK(text[i] == char(std::tolower(data[i])));

    Header header;
    if (validate(decoded.get(), length, &header) == Status::ok)
        fuzz::exercise_any(decoded.get(), length, header);
    return 0;
}
