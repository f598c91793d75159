"""Correct: knowledge check 3 computed with NumPy (np.sqrt(64) is an np.float64, a float subclass).

fails: none
"""
# %% kc3
kc3_answer = np.sqrt(64)
