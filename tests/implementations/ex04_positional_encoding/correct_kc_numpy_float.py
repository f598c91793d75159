"""Correct: knowledge check 3 computed from the learner's own encoding (an np.float64).

fails: none
"""
# %% kc3
pe = sinusoidal_positional_encoding(8, 2)
kc3_answer = pe[5] @ pe[7]
