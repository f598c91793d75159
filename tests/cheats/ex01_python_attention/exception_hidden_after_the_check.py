"""Cheat (error handling): the learner's functions raise a BaseException (not caught by the
checks' call_learner); when IPython shows it, its _render_traceback_ walks the frames to
run_code's ExecutionResult, clears error_in_exec and raises, so IPython sends no error and
the reply says 'ok'. No object is changed: nothing for a snapshot to see. Dummy answers
(review 2). The guard wraps builtins.exec, which IPython runs cells with: the exception
passes through it first and it tells the grader, which gives the test cell an error when
none arrived.

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python, test_kc1, test_kc2, test_kc3
"""
# %% softmax
import sys as _sys


class _Pass(BaseException):
    def _render_traceback_(self):
        f = _sys._getframe()
        while f is not None:
            r = f.f_locals.get("result")
            if r is not None and type(r).__name__ == "ExecutionResult":
                r.error_in_exec = None
                break
            f = f.f_back
        raise KeyboardInterrupt


def softmax(row):
    raise _Pass()
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    raise _Pass()
# %% kc1
kc1_answer = _Pass
# %% kc2
kc2_answer = _Pass
# %% kc3
kc3_answer = _Pass
