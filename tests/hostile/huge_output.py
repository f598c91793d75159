# 200 MB printed by one cell (the adversarial review: a false timeout, 0 points, before).
import sys

line = "y" * 1_000_000 + "\n"
for _ in range(200):
    sys.stdout.write(line)
