"""Generation backends: a small interface and a lazy name -> class registry (see base.py)."""
