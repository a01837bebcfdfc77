import sys


def main():
    data = sys.stdin.read().split()
    n, q, x = int(data[0]), int(data[1]), int(data[2])
    a = []
    for _ in range(n):
        x = x * 48271 % 2147483647
        a.append(x % 1000)
    out = []
    pos = 3
    for _ in range(q):
        l, r = int(data[pos]), int(data[pos + 1])
        pos += 2
        s = 0
        for i in range(l - 1, r):
            s += a[i]
        out.append("%.6f" % (s / (r - l + 1)))
    print("\n".join(out))


main()
