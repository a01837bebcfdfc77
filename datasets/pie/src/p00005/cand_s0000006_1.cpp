#include <cstdio>

int main() {
    int n;
    if (std::scanf("%d", &n) != 1) return 1;
    int total = 0;
    for (int d = 1; d <= n; d++) total += d * (n / d);
    std::printf("%d\n", total);
    return 0;
}
