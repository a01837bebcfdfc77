import sys
from itertools import accumulate

data = sys.stdin.read().split()
n, q, x = int(data[0]), int(data[1]), int(data[2])
a = []
for _ in range(n):
    x = x * 48271 % 2147483647
    a.append(x % 1000)
prefix = [0, *accumulate(a)]
out = []
for t in range(q):
    l, r = int(data[3 + 2 * t]), int(data[4 + 2 * t])
    out.append("%.2f" % ((prefix[r] - prefix[l - 1]) / (r - l + 1)))
print("\n".join(out))
