import sys


def main():
    n = int(sys.stdin.readline())
    count = 0
    for k in range(2, n + 1):
        is_prime = True
        d = 2
        while d * d <= k:
            if k % d == 0:
                is_prime = False
                break
            d += 1
        if is_prime:
            count += 1
    print(count)


main()
