// Prints the golden vectors (golden.hpp) as JSON: `make golden-vectors` writes them to
// test/vectors/golden.json.
#include <cstdio>

#include "golden.hpp"

int main() {
    const std::string json = bloomfilter::golden::golden_json();
    std::fwrite(json.data(), 1, json.size(), stdout);
    return 0;
}
