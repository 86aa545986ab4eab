"""Stage 3, sampling: the masked middles of a repository's sources (`masking.py`), ranked cross-file context
(`context.py`) over its Python files (`repo_files.py`), and the candidate samples made from them (`candidates.py`)."""
