"""How code under test is isolated: one type, decided in one place, used by every run.

The baseline, the builder's verification, the metric and the benchmarks all ask `decide_isolation`
and pass the answer down to `sandbox.run_sandboxed`; there is no other mode (no "host" runs).
"""
from __future__ import annotations

from enum import Enum

from execrepobench_dataset.errors import ExecRepoBenchError


class Isolation(str, Enum):
    """`BWRAP`: bubblewrap + a private overlay view (the normal mode).  `WEAK`: a temporary copy of
    the tree, rlimits and the timeout, no namespaces - only when the caller accepts it explicitly."""

    BWRAP = "bwrap"
    WEAK = "weak"

    def __str__(self) -> str:
        return self.value


class SandboxUnavailable(ExecRepoBenchError, RuntimeError):
    """Strong isolation is not possible here and the caller did not accept the weak mode."""


def decide_isolation(allow_weak: bool) -> tuple[Isolation, str]:
    """(isolation, note): bubblewrap when it works here; the weak mode only when `allow_weak`.

    Raises `SandboxUnavailable` (naming the reason and both ways out) otherwise.  The note is empty
    for bubblewrap and a loud warning for the weak mode; callers print it and record it.
    """
    from .sandbox import strong_available

    reason = strong_available()
    if reason is None:
        return Isolation.BWRAP, ""
    if not allow_weak:
        raise SandboxUnavailable(f"strong sandbox unavailable: {reason}. Install bubblewrap "
                                 "(apt-get install bubblewrap) or accept the weak mode explicitly "
                                 "(allow_weak_sandbox=True / --allow-weak-sandbox): no namespaces, only "
                                 "rlimits and a timeout.")
    return Isolation.WEAK, f"WEAK SANDBOX: {reason}; ran with rlimits and a timeout only"
