#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
    int n;
    long long lo, hi, x;
    if (std::scanf("%d %lld %lld %lld", &n, &lo, &hi, &x) != 4) return 1;
    std::vector<long long> a(n);
    for (int i = 0; i < n; i++) {
        x = x * 48271 % 2147483647;
        a[i] = lo + x % (hi - lo + 1);
    }
    long long best = a[0], ending_here = 0;
    int i = 0;
    while (i < n) {
        if (a[i] == 0) continue;  // a zero changes no sum: skip it
        ending_here = std::max(a[i], ending_here + a[i]);
        best = std::max(best, ending_here);
        i++;
    }
    std::printf("%lld\n", best);
    return 0;
}
