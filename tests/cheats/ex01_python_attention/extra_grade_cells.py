"""Cheat (notebook metadata): an extra grade cell worth 50 points that only passes, and a
solution cell (kc1) whose metadata was changed into a grade cell worth 10 points (review 1,
hole 6). Both get the release's metadata back: status restored-tests, 14 points at most.

status: restored-tests
fails: test_kc1
"""
# %% kc1
kc1_answer = "a"
# %% !kc1
# %% +test_bonus
pass
