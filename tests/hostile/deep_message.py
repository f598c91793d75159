# A display whose JSON is nested 1,500 lists deep, sent after raising the kernel's recursion
# limit (the red team: the grader's json.loads raised RecursionError, and the row was
# 'error', the grader's own failure, retried on every run).
import sys

sys.setrecursionlimit(20_000)
deep = []
for _ in range(1500):
    deep = [deep]
get_ipython().display_pub.publish({"application/json": deep})  # noqa: F821 - a kernel cell
