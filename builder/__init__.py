"""The builder: from a manifest entry to a published sample, one folder per stage.

`build.py` builds every repository of a manifest (its report: `report.py`); `pipeline.py` runs one repository
through the stages: `sources/` (the pinned tree) -> `preparation/` (lock, environment, tests, baseline) ->
`sampling/` (masks and context) -> `verification/` (the tests that judge each candidate; only discriminating
samples are kept).  `official.py` runs the paper's released samples through the same pipeline; `release/` turns a
build into a published dataset; `instruct/` makes Repo-Instruct; `live/` makes dated snapshots.
"""
