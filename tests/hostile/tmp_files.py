# Files in /tmp are memory (tmpfs): 64 MiB each, past the class run's cap in all,
# each one under RLIMIT_FSIZE. ENOSPC (a full tmpfs) is caught: the learner goes on.
chunk = b"x" * (64 << 20)
for i in range(12):
    try:
        with open(f"/tmp/fill{i}", "wb") as f:
            f.write(chunk)
    except OSError as exc:
        print("stopped:", exc)
