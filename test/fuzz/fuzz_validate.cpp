// libFuzzer target: arbitrary bytes into validate(). Whatever it accepts must work as a filter
// (contains, add, statistics, union with itself, hex round trip), or as a layered value (each
// layer's keys found in the whole), without a sanitizer report.
#include "fuzz_common.hpp"

using namespace bloomfilter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Header header;
    const Status status = validate(data, size, &header);
    FUZZ_CHECK(status_message(status) != nullptr);
    const bool layered = size >= kHeaderBytes && std::memcmp(data, kMagic, sizeof kMagic) == 0 &&
                         data[kOffsetVersion] == kFormatLayered;
    if (layered) {
        // The slice path reads a layered value whole: its header alone is refused.
        Header sliced;
        FUZZ_CHECK(read_header(data, kHeaderBytes, size, &sliced) == Status::unsupported_version);
    } else if (size >= kHeaderBytes) {
        // The slice path, which reads the header alone, decides exactly as full validation.
        Header sliced;
        FUZZ_CHECK(read_header(data, kHeaderBytes, size, &sliced) == status);
        if (status == Status::ok)
            FUZZ_CHECK(sliced.parameters.blocks == header.parameters.blocks &&
                       sliced.inserted == header.inserted);
    } else {
        FUZZ_CHECK(status == Status::truncated);
    }
    if (status == Status::ok) fuzz::exercise_any(data, size, header);
    return 0;
}
