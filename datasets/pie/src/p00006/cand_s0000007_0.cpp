#include <cstdio>
#include <vector>

int main() {
    int n;
    long long lo, hi, x;
    if (std::scanf("%d %lld %lld %lld", &n, &lo, &hi, &x) != 4) return 1;
    // best = max over j of prefix[j + 1] - min(prefix[0..j])
    long long prefix = 0, min_prefix = 0, best = 0;
    for (int i = 0; i < n; i++) {
        x = x * 48271 % 2147483647;
        prefix += lo + x % (hi - lo + 1);
        if (i == 0 || prefix - min_prefix > best) best = prefix - min_prefix;
        if (prefix < min_prefix) min_prefix = prefix;
    }
    std::printf("%lld\n", best);
    return 0;
}
