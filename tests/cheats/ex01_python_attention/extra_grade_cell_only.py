"""Cheat (notebook metadata, variant): only an extra grade cell, named like a test
(``test_kc4``), worth 50 points; the submission is otherwise correct (14/14, not 64).

status: restored-tests
fails: 
"""
# %% +test_kc4
assert True
