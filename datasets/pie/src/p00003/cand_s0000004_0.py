import sys


def main():
    data = sys.stdin.read().split()
    n, q, x = int(data[0]), int(data[1]), int(data[2])
    prefix = [0] * (n + 1)
    for i in range(n):
        x = x * 48271 % 2147483647
        prefix[i + 1] = prefix[i] + x % 1000
    out = []
    for t in range(q):
        l, r = int(data[3 + 2 * t]), int(data[4 + 2 * t])
        out.append(f"{(prefix[r] - prefix[l - 1]) / (r - l + 1):.4f}")
    sys.stdout.write("\n".join(out) + "\n")


main()
