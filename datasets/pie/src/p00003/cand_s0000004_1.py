import sys


def main():
    data = sys.stdin.read().split()
    n, q, x = int(data[0]), int(data[1]), int(data[2])
    a = []
    for _ in range(n):
        x = x * 48271 % 2147483647
        a.append(x % 1000)
    out = []
    for t in range(q):
        l, r = int(data[3 + 2 * t]), int(data[4 + 2 * t])
        total = 0
        for i in range(n):
            if l - 1 <= i < r:
                total += a[i]
        out.append("%.6f" % (total / (r - l + 1)))
    print("\n".join(out))


main()
