#pragma once
// The order in which reports list cases: by level in natural order
// ("level2" before "level10"), then by problem number ("2_Add" before
// "10_Mul"), then by the rest of the name. Ids without a '/' sort as a level
// of their own name.
#include <string_view>

namespace kgym::report {

// Natural string order: runs of digits compare as numbers, the rest byte by
// byte. Ties between equal numbers ("01" vs "1") fall back to plain order so
// the relation stays strict.
bool natural_less(std::string_view a, std::string_view b);

// Strict weak order of case ids "<level>/<N>_<Name>".
bool case_id_less(std::string_view a, std::string_view b);

// "level1" of "level1/19_ReLU"; the whole id when it has no '/'.
std::string_view level_of(std::string_view case_id);

}  // namespace kgym::report
