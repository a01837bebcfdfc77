#include <algorithm>
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
    std::vector<long long> sorted(a);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    const int k = static_cast<int>(sorted.size());
    std::vector<int> tree(k + 1, 0);
    long long inversions = 0;
    for (int i = 0; i < n; i++) {
        // rank of a[i] among distinct values, 1-based
        int r = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), a[i]) - sorted.begin()) + 1;
        int not_greater = 0;  // earlier values <= a[i]
        for (int p = r; p > 0; p -= p & -p) not_greater += tree[p];
        inversions += i - not_greater;
        for (int p = r; p <= k; p += p & -p) tree[p]++;
    }
    std::printf("%lld\n", inversions);
    return 0;
}
