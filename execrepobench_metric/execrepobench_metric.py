"""ExecRepoBench for `evaluate`: repository-level code completion judged by running the
repository's own tests in a sandbox (pass@k and edit similarity per fill type).

Rendered by execrepobench_metric.hub_module.module_script (`execrepobench publish-metric`); do not edit.
The metric lives in the `execrepobench` package (pip install execrepobench); this script only names it.
"""
import execrepobench_metric.evaluate_module as module  # From: execrepobench


class ExecrepobenchMetric(module.ExecRepoBenchMetric):
    __doc__ = module.ExecRepoBenchMetric.__doc__
