"""Cheat (knowledge checks, no change to anything): a thread polls the kernel's current
request (kernel.get_parent()["content"]["code"]); when a test cell with
check_answer(kcN_answer, EXPECTED, ...) arrives, it sets kcN_answer in the namespace before
the cell's code runs. Reading attributes and writing the namespace are not audited; since
review 2 the expected answers live in the hidden checks (checks/knowledge.py), so the
source it reads holds none and the wrong answers stay wrong.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import ast as _ast
import re as _re
import sys as _sys
import threading as _threading
import time as _time

_sys.setswitchinterval(1e-5)


def _steal(ip=get_ipython()):
    seen = None
    while True:
        try:
            msg = ip.kernel.get_parent("shell")
            code = (msg or {}).get("content", {}).get("code", "")
            if code and code is not seen:
                seen = code
                for name, lit in _re.findall(r"check_answer\((kc\d_answer),\s*([^,]+),", code):
                    ip.user_ns[name] = _ast.literal_eval(lit)
        except Exception:  # noqa: BLE001
            pass
        _time.sleep(0)


_threading.Thread(target=_steal, daemon=True).start()
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.1
