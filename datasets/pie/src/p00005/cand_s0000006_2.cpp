#include <cstdio>

int main() {
    long long n;
    if (std::scanf("%lld", &n) != 1) return 1;
    long long total = 0;
    for (long long d = 1; d <= n; d++) total += d * (n / d);
    std::printf("%lld\n", total);
    return 3;
}
