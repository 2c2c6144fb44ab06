#include "core/pass_at_k.h"

#include <stdexcept>

namespace kgym {

double pass_at_k(int n, int c, int k) {
  if (n < 1 || c < 0 || c > n || k < 1 || k > n)
    throw std::invalid_argument("pass_at_k: needs 0<=c<=n, 1<=k<=n");
  // Fewer failures than draws: every draw of k contains a pass.
  if (n - c < k) return 1.0;
  double all_fail = 1.0;  // C(n-c, k) / C(n, k)
  for (int i = n - c + 1; i <= n; ++i) all_fail *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - all_fail;
}

std::map<int, double> pass_at_ks(int n, int c, const std::vector<int>& ks) {
  std::map<int, double> out;
  for (int k : ks) {
    if (k >= 1 && k <= n) out[k] = pass_at_k(n, c, k);
  }
  return out;
}

std::vector<int> every_k(int n) {
  std::vector<int> ks;
  for (int k = 1; k <= n; ++k) ks.push_back(k);
  return ks;
}

}  // namespace kgym
