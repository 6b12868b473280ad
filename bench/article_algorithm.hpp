// The article's Bloom filter, ported to C++ as the baseline of the core benchmark: one plain
// (unblocked) bit array of m bits, k positions (h1 + i * h2) mod m, with h1 the first 8 bytes of
// the key's SHA-256 digest and h2 the first 8 bytes of its MD5 digest, both read big-endian.
// The sizing formulas are the article's: m = ceil(-(n ln p) / (ln 2)^2),
// k = max(1, round(m/n ln 2)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

typedef struct evp_md_st EVP_MD;
typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace article {

class BloomFilter {
public:
    BloomFilter(uint64_t capacity, double error_rate);
    ~BloomFilter();
    BloomFilter(const BloomFilter &) = delete;
    BloomFilter &operator=(const BloomFilter &) = delete;

    void add(std::string_view key);
    bool contains(std::string_view key);

    uint64_t bits() const { return bits_; }
    uint32_t hashes() const { return hashes_; }
    size_t bytes() const { return array_.size(); }

private:
    // h1 mod m and h2 mod m of a key. Python's (h1 + i * h2) % m on unbounded integers equals
    // (h1 mod m + i * (h2 mod m)) mod m, which is what add() and contains() step through.
    void first_and_step(std::string_view key, uint64_t *first, uint64_t *step);

    uint64_t bits_;
    uint32_t hashes_;
    std::vector<uint8_t> array_;
    // Fetched once and reused: the fastest way to call OpenSSL 3's digests on short keys (the
    // one-shot SHA256() and MD5() fetch the algorithm on every call and run about twice as slow).
    EVP_MD *sha256_;
    EVP_MD *md5_;
    EVP_MD_CTX *context_;
};

}  // namespace article
