#include <cstdio>
#include <vector>

int main() {
    int n;
    long long m, x;
    if (std::scanf("%d %lld %lld", &n, &m, &x) != 3) return 1;
    std::vector<long long> a(n), tmp(n);
    for (int i = 0; i < n; i++) {
        x = x * 48271 % 2147483647;
        a[i] = x % m;
    }
    std::printf("%lld\n", sort_count(a, tmp, 0, n));
    return 0;
}

static long long sort_count(std::vector<long long>& a, std::vector<long long>& tmp, int lo, int hi) {
    if (hi - lo < 2) return 0;
    int mid = (lo + hi) / 2;
    long long count = sort_count(a, tmp, lo, mid) + sort_count(a, tmp, mid, hi);
    int i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        if (a[j] < a[i]) {
            count += mid - i;
            tmp[k++] = a[j++];
        } else {
            tmp[k++] = a[i++];
        }
    }
    while (i < mid) tmp[k++] = a[i++];
    while (j < hi) tmp[k++] = a[j++];
    for (int t = lo; t < hi; t++) a[t] = tmp[t];
    return count;
}
