"""Stage 5, release: `execrepobench release` - build -> instruct -> publish (`release.py`) - and the release lock
two labs compare (`release_lock.py`)."""
