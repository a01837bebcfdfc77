import sys
from collections import Counter


def main():
    n, k, x = map(int, sys.stdin.readline().split())
    residues = Counter()
    for _ in range(n):
        x = x * 48271 % 2147483647
        residues[x % k] += 1
    total = 0
    for r, c in residues.items():
        s = (k - r) % k
        if r < s:
            total += c * residues[s]
        elif r == s:
            total += c * (c - 1) // 2
    print(total)


main()
