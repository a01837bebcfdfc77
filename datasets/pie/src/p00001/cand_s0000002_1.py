n = int(input())
composite = [False] * (n + 1)
count = 0
for k in range(2, n + 1):
    if not composite[k]:
        count += 1
        for m in range(k * k, n + 1, k):
            composite[m] = True
print(count)
