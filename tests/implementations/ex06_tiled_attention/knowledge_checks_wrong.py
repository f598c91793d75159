"""Wrong answers to all four knowledge checks.

fails: test_kc1, test_kc2, test_kc3, test_kc4
hint: multiply by the 4 bytes of a float32
"""
# %% kc1
kc1_answer = 32  # float64 instead of float32
# %% kc2
kc2_answer = math.exp(-2) + 1 + 1  # the old sum not rescaled by exp(m - m′)
# %% kc3
kc3_answer = "a"
# %% kc4
kc4_answer = 3
