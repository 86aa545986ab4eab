"""Stage 5, release: the build report (`report.py`), the release lock two labs compare (`release_lock.py`) and
`execrepobench release`: build -> instruct -> publish (`release.py`)."""
