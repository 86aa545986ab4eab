"""Stage 2, preparation: a source tree's lock and environment, where its tests are and the settings of its own
that conflict with our runs, its baseline (and per-test coverage), and its repository record (`prepare.py`)."""
