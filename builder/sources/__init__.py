"""Stage 1, sources: a manifest entry (`manifest.py`) fetched into a pinned, unpacked source tree (`sources.py`)."""
