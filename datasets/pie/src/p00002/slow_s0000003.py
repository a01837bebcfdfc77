import sys


def main():
    n, k, x = map(int, sys.stdin.readline().split())
    a = []
    for _ in range(n):
        x = x * 48271 % 2147483647
        a.append(x)
    count = 0
    for i in range(n):
        ai = a[i]
        for j in range(i + 1, n):
            if (ai + a[j]) % k == 0:
                count += 1
    print(count)


main()
