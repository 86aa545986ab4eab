"""The ExecRepoBench metric.

This folder is the face `evaluate` sees: the module script (`execrepobench_metric.py`), the metric
class (`evaluate_module.py`), `compute()` (`api.py`), input checks (`inputs.py`, `cutoff.py`), the
scores (`scoring.py`) and the Hub module writer (`hub_module.py`).  Below it, `execution/` runs and
judges completed files (engine, executors, judge, sandbox, guard) and `environments/` makes and finds
what the runs need (pinned sources, environments from records, prepare, the cache).

Nothing is imported here: `import execrepobench_metric` stays instant.
"""
