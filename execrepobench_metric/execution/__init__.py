"""Execution: how completed files are run against a repository's tests and judged.

The path through it: `engine.judge_all` (opt-in, the isolation decided once, the result cache, the
resume journal, the evidence folders) hands the work in batches to an executor (`executors/`: local
threads or Ray nodes), which calls `judge.judge_safely` for each completed file.  `judge` compiles
the file, finds its environment, runs pytest on the judged tests (`pytest_run`: the command;
`sandbox`: the isolated run, with `process` and `limits`) under the guard (`guard`; the plugin
folder `pytest_plugin/` runs inside the judged process; `guard_verdict` reads its evidence back),
reads the outcomes (`junit`) and decides the verdict.  Beside it: `budget` (time budgets derived
from the build's measurements, scaled by `calibration`), `evidence` (one folder per run), `fills`
(null fills) and `suspicious` (flags, never verdicts).

Nothing is re-exported here: inside the metric, import from the module that defines a name.  The rooms
above it (builder, runner) import from `surface`, the engine's declared surface, alone.
"""
