#include <cstdio>

int main() {
    long long n;
    if (std::scanf("%lld", &n) != 1) return 1;
    // group the d with the same quotient q = n / d: they form a block [lo, hi]
    long long total = 0;
    for (long long lo = 1, hi; lo <= n; lo = hi + 1) {
        long long q = n / lo;
        hi = n / q;
        total += q * (lo + hi) * (hi - lo + 1) / 2;
    }
    std::printf("%lld\n", total);
    return 0;
}
