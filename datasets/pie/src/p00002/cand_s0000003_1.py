import sys
from collections import Counter

n, k, x = map(int, sys.stdin.readline().split())
residues = Counter()
for _ in range(n):
    x = x * 48271 % 2147483647
    residues[x % k] += 1
total = residues[0] * (residues[0] - 1) // 2
lo, hi = 1, k - 1
while lo != hi:  # pair residue lo with k - lo until the two ends meet
    total += residues[lo] * residues[hi]
    lo += 1
    hi -= 1
total += residues[lo] * (residues[lo] - 1) // 2
print(total)
