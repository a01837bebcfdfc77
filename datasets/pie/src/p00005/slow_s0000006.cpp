#include <cstdio>

int main() {
    int n;
    if (std::scanf("%d", &n) != 1) return 1;
    long long total = 0;
    for (int k = 1; k <= n; k++) {
        for (int d = 1; d * d <= k; d++) {
            if (k % d == 0) {
                total += d;
                if (d != k / d) total += k / d;
            }
        }
    }
    std::printf("%lld\n", total);
    return 0;
}
