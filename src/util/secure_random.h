#pragma once
// 64 bits from the kernel's cryptographic random source (getrandom(2)):
// what a candidate cannot predict from anything it can read, the run's
// records and seeds included.
#include <cstdint>

namespace kgym::util {

std::uint64_t secure_random_u64();

}  // namespace kgym::util
