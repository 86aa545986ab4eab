"""Stage 4, verification: the tests that judge each candidate (`selection.py`), then only candidates whose null
fill fails and whose ground truth passes are kept (`verify.py`), at the paper's level mix (`mix.py`), per repository
(`repo_verification.py`)."""
