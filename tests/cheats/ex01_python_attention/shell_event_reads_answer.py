"""Cheat (the shell's events): a pre_run_cell callback reads the hidden expected answer in
the test cell's source (check_answer(kcN_answer, EXPECTED, ...)) and sets kcN_answer (a
method call: no assignment to read; review 2). A learner's event callback is a change the
guard reports.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import ast as _ast
import re as _re


def _peek(info):
    for name, lit in _re.findall(r"check_answer\((kc\d_answer),\s*([^,]+),", info.raw_cell or ""):
        get_ipython().user_ns.update({name: _ast.literal_eval(lit)})


get_ipython().events.register("pre_run_cell", _peek)
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.1
