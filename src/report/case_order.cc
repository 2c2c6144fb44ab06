#include "report/case_order.h"

#include <cctype>

namespace kgym::report {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::string_view digit_run(std::string_view s, std::size_t from) {
  std::size_t end = from;
  while (end < s.size() && is_digit(s[end])) ++end;
  return s.substr(from, end - from);
}

std::string_view strip_leading_zeros(std::string_view digits) {
  std::size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  return digits.substr(i);
}

// <0, 0, >0 like strcmp, comparing digit runs by value.
int natural_compare(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::string_view da = digit_run(a, i);
      std::string_view db = digit_run(b, j);
      std::string_view va = strip_leading_zeros(da);
      std::string_view vb = strip_leading_zeros(db);
      if (va.size() != vb.size()) return va.size() < vb.size() ? -1 : 1;
      if (int c = va.compare(vb); c != 0) return c;
      i += da.size();
      j += db.size();
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

}  // namespace

bool natural_less(std::string_view a, std::string_view b) {
  int c = natural_compare(a, b);
  return c != 0 ? c < 0 : a < b;
}

std::string_view level_of(std::string_view case_id) {
  std::size_t slash = case_id.find('/');
  return slash == std::string_view::npos ? case_id : case_id.substr(0, slash);
}

bool case_id_less(std::string_view a, std::string_view b) {
  std::string_view la = level_of(a);
  std::string_view lb = level_of(b);
  if (la != lb) return natural_less(la, lb);
  return natural_less(a.substr(la.size()), b.substr(lb.size()));
}

}  // namespace kgym::report
