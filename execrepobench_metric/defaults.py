"""Every default time limit, named once with what it bounds (seconds).  Builder, runner and metric read
them from here; a flag or argument that takes a time limit shows its default from here too.

Judging a completion is normally bounded by the sample's CPU time budget (`budget.py`, measured from its
ground truth at build time); the wall-clock limits below apply where no budget does.
"""
from __future__ import annotations

# A judged run of a sample without a time budget (the build did not measure it), when no `timeout` is
# given: wall-clock seconds.
DEFAULT_TIMEOUT_S = 300.0
# A judged run during a build's verification and the official import (ground truth, null fill, mutants).
VERIFY_TIMEOUT_S = 300.0
# One baseline run of a repository's whole suite during a build (`--baseline-timeout`).
BASELINE_TIMEOUT_S = 900.0
# One baseline run of a live snapshot's candidate: a suite slower than this counts as `suite_fails`.
LIVE_BASELINE_TIMEOUT_S = 300.0
# A pytest invocation that names no limit of its own (callers normally set one).
PYTEST_TIMEOUT_S = 600.0
# The soft CPU limit (RLIMIT_CPU, CPU seconds) of a sandboxed process without a CPU budget.
CPU_LIMIT_S = 900
# One external command that fetches or installs: pip download, git, uv, compiling an environment's bytecode.
TOOL_TIMEOUT_S = 900
# A short probe of an environment: where its modules resolve from, compiling the guard's plugin.
PROBE_TIMEOUT_S = 120
# One HTTP request to a package index (live snapshots).
INDEX_REQUEST_TIMEOUT_S = 30.0
# One HTTP request to an OpenAI-compatible server (the `openai` backend's `timeout_s` option).
SERVER_REQUEST_TIMEOUT_S = 600.0
