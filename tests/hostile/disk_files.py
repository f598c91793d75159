# Files in the working folder (the submission's copy) and the connection folder, which
# were on the host's disk (the red team: 6 GiB by fallocate, past any memory cap; with
# --jobs > 1 a full disk could fail the grader's writes for a learner graded beside). Now
# they are memory, charged to the kernel: 64 MiB each past the class run's cap in all.
import os

chunk = b"x" * (64 << 20)
for i in range(12):
    folder = os.environ["JUPYTER_RUNTIME_DIR"] if i % 2 else "."
    try:
        with open(os.path.join(folder, f"fill{i}"), "wb") as f:
            f.write(chunk)
    except OSError as exc:
        print("stopped:", exc)
