"""Wrong, and made to leak: softmax raises for rows it was not shown, with the row in the
exception's message (and in its class's name). A hidden case's inputs reach no feedback:
the hidden tests name the exception's built-in kind (ValueError) and the case only.

fails: test_softmax_known_values, test_softmax_stable, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_pure_python
hint: raised ValueError
"""
# %% softmax
import math


def softmax(row):
    if not row:
        raise ValueError("empty row")
    if len(row) not in (2, 3):
        kind = type("Row" + "_".join(str(int(abs(x) * 1e6)) for x in row[:2]), (ValueError,), {})
        raise kind(f"HIDDEN-ROW={row!r}")
    m = max(row)
    e = [math.exp(x - m) for x in row]
    s = sum(e)
    return [x / s for x in e]
