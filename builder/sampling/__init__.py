"""Stage 3, sampling: the masked middles of a repository's sources (`masking.py`, over `grammar.py`'s node
categories and the files as `parsed_files.py` prepares them), ranked cross-file context (`context.py`) over its
Python files (`repo_files.py`), and the candidate samples made from them (`candidates.py`)."""
