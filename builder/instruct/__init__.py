"""Repo-Instruct: the paper's instruction corpus, masked like the benchmark and never executed (`instruct.py`,
built per repository by `instruct_build.py`)."""
