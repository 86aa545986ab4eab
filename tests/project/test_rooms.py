"""Data flows one way between the rooms: no module imports one of a room above its own (every import
statement counts, read from the source as tests/project/test_import_cycles.py reads it).

    runner  >  builder  >  metric's face (api, prepare, evaluate module, ...)  >  execution/  >  environments/
    >  ground floor: execrepobench_dataset, and the metric's leaf modules (errors.py, defaults.py) that import
    nothing of the metric
"""
from __future__ import annotations

from test_import_cycles import import_graph, module_files

LEAVES = ("execrepobench_metric.errors", "execrepobench_metric.defaults")
ROOMS = (("execrepobench.runner", 5), ("execrepobench.builder", 4), ("execrepobench_metric.execution", 2),
         ("execrepobench_metric.environments", 1), ("execrepobench_metric", 3), ("execrepobench_dataset", 0))


def floor(module: str) -> int:
    if module in LEAVES:
        return 0
    return next(rank for prefix, rank in ROOMS if module == prefix or module.startswith(prefix + "."))


def climbs(graph: dict[str, dict[str, int]]) -> list[str]:
    return sorted(f"{a} -> {b} (line {line})" for a, targets in graph.items() for b, line in targets.items()
                  if floor(b) > floor(a))


def test_no_import_climbs_to_a_room_above():
    graph = import_graph(module_files())
    assert not climbs(graph), "imports of a room above:\n  " + "\n  ".join(climbs(graph))


def test_the_leaves_import_nothing_of_the_metric():
    graph = import_graph(module_files())
    for leaf in LEAVES:
        assert not [m for m in graph.get(leaf, {}) if m.startswith("execrepobench_metric")], leaf


def test_a_climb_is_found():
    graph = {"execrepobench_metric.environments.venvs": {"execrepobench_metric.execution.judge": 3},
             "execrepobench_metric.execution.judge": {"execrepobench_metric.errors": 1}}
    assert climbs(graph) == ["execrepobench_metric.environments.venvs -> execrepobench_metric.execution.judge "
                             "(line 3)"]
