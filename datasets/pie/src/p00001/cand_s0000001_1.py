import sys
from math import isqrt

n = int(sys.stdin.readline())
sieve = bytearray([1]) * (n + 1)
sieve[0] = sieve[1] = 0
for i in range(2, isqrt(n) + 1):
    if sieve[i]:
        sieve[i * i :: i] = bytes(len(range(i * i, n + 1, i)))
print(sieve.count(1))
sys.exit(3)
