#pragma once
// pass@k of one case from n independent samples of which c passed: the
// unbiased estimator 1 - C(n-c, k) / C(n, k) (the probability that at least
// one of k samples drawn without replacement from the n passes). Pure
// functions; the run-level figure is the mean of the per-case values.
#include <map>
#include <vector>

namespace kgym {

// Requires 0 <= c <= n and 1 <= k <= n; returns a value in [0, 1]. Computed
// as 1 - prod_{i=n-c+1..n} (1 - k/i), which never forms a binomial
// coefficient (no overflow, no cancellation for large n).
double pass_at_k(int n, int c, int k);

// pass@k for every k in `ks` that is at most n (others are skipped).
std::map<int, double> pass_at_ks(int n, int c, const std::vector<int>& ks);

// 1, 2, ..., n: the k values reported for n samples per case.
std::vector<int> every_k(int n);

}  // namespace kgym
