from math import isqrt

n = int(input())
print(sum(1 for k in range(2, n + 1) if all(k % d for d in range(2, isqrt(k) + 1))))
