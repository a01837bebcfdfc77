#include <cstdio>
#include <vector>

int main() {
    int n;
    long long m, x;
    if (std::scanf("%d %lld %lld", &n, &m, &x) != 3) return 1;
    std::vector<long long> a(n);
    for (int i = 0; i < n; i++) {
        x = x * 48271 % 2147483647;
        a[i] = x % m;
    }
    long long inversions = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (a[i] > a[j]) inversions++;
    std::printf("%lld\n", inversions);
    return 0;
}
