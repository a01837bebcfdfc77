import sys

n, k, x = map(int, sys.stdin.readline().split())
cnt = [0] * k
for _ in range(n):
    x = x * 48271 % 2147483647
    cnt[x % k] += 1
total = cnt[0] * (cnt[0] - 1) // 2
for r in range(1, (k + 1) // 2):
    total += cnt[r] * cnt[k - r]
if k % 2 == 0:
    total += cnt[k // 2] * (cnt[k // 2] - 1) // 2
print(total)
