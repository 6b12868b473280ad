// The article's Bloom filter in C++: see article_algorithm.hpp.
#include "article_algorithm.hpp"

#include <openssl/evp.h>

#include <cmath>
#include <stdexcept>

namespace article {

BloomFilter::BloomFilter(uint64_t capacity, double error_rate) {
    const double ln2 = std::log(2.0);
    bits_ = uint64_t(std::ceil(-(double(capacity) * std::log(error_rate)) / (ln2 * ln2)));
    double k = std::round(double(bits_) / double(capacity) * ln2);
    hashes_ = k < 1 ? 1 : uint32_t(k);
    array_.assign((bits_ + 7) / 8, 0);
    sha256_ = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    md5_ = EVP_MD_fetch(nullptr, "MD5", nullptr);
    context_ = EVP_MD_CTX_new();
    if (sha256_ == nullptr || md5_ == nullptr || context_ == nullptr)
        throw std::runtime_error("OpenSSL has no SHA256 or MD5");
}

BloomFilter::~BloomFilter() {
    EVP_MD_CTX_free(context_);
    EVP_MD_free(md5_);
    EVP_MD_free(sha256_);
}

static uint64_t load_big_endian_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

void BloomFilter::first_and_step(std::string_view key, uint64_t *first, uint64_t *step) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length;
    EVP_DigestInit_ex2(context_, sha256_, nullptr);
    EVP_DigestUpdate(context_, key.data(), key.size());
    EVP_DigestFinal_ex(context_, digest, &length);
    *first = load_big_endian_u64(digest) % bits_;
    EVP_DigestInit_ex2(context_, md5_, nullptr);
    EVP_DigestUpdate(context_, key.data(), key.size());
    EVP_DigestFinal_ex(context_, digest, &length);
    *step = load_big_endian_u64(digest) % bits_;
}

void BloomFilter::add(std::string_view key) {
    uint64_t position, step;
    first_and_step(key, &position, &step);
    for (uint32_t i = 0; i < hashes_; i++) {
        array_[position >> 3] |= uint8_t(1u << (position & 7));
        position += step;
        if (position >= bits_) position -= bits_;
    }
}

bool BloomFilter::contains(std::string_view key) {
    uint64_t position, step;
    first_and_step(key, &position, &step);
    for (uint32_t i = 0; i < hashes_; i++) {
        if (!(array_[position >> 3] & (1u << (position & 7)))) return false;
        position += step;
        if (position >= bits_) position -= bits_;
    }
    return true;
}

}  // namespace article
