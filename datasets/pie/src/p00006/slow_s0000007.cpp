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
    long long best = a[0];
    for (int i = 0; i < n; i++) {
        long long sum = 0;
        for (int j = i; j < n; j++) {
            sum += a[j];
            if (sum > best) best = sum;
        }
    }
    std::printf("%lld\n", best);
    return 0;
}
