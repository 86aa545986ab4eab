"""What a judgement is configured with (`JudgeConfig`) and what it returns (`Verdict`, its reason one of
REASONS).  `judge.py` makes a verdict: `run_plan.py` plans the run, `decide.py` decides from what it left."""
from __future__ import annotations

from dataclasses import dataclass

from .guard import GUARD_MODES
from .limits import Limits
from .sandbox import Isolation

# Reasons, most specific first.  "error" is the harness's fault (missing environment, sandbox
# failure, any exception while judging), not the model's; it is counted and reported apart.
REASONS = ("passed", "failed", "syntax_error", "tampering", "timeout", "crashed", "missing_tests",
           "inconsistent_report", "refused", "error")


@dataclass(frozen=True)
class Verdict:
    sample_id: str
    passed: bool
    reason: str  # one of REASONS
    failing_tests: tuple[str, ...] = ()
    duration_s: float = 0.0
    stderr_tail: str = ""
    sandbox: str = ""  # the Isolation value the run used
    detail: str = ""
    artifacts: str = ""  # evidence folder of this (sample, completion), relative to the results folder
    guard_events: tuple[str, ...] = ()  # record mode: what the completion did that the guard watches
    # what the completion touches that its ground truth never does (suspicious.py): a flag, not a verdict
    suspicious: tuple[str, ...] = ()
    canaries: str = ""  # the canary check of the run (canaries.py): "held", "off: why", "fired: ..."; "" none
    refused: tuple[str, ...] = ()  # reason "refused": the capabilities that refused the pass (strict.py)

    def to_dict(self) -> dict:
        return {"sample_id": self.sample_id, "passed": self.passed, "reason": self.reason,
                "failing_tests": list(self.failing_tests), "duration_s": round(self.duration_s, 3),
                "stderr_tail": self.stderr_tail, "sandbox": self.sandbox, "detail": self.detail,
                "harness_error": self.reason == "error", "artifacts": self.artifacts,
                "guard_events": list(self.guard_events), "suspicious": list(self.suspicious),
                "canaries": self.canaries, "refused": list(self.refused)}

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        return cls(d["sample_id"], bool(d["passed"]), d["reason"], tuple(d.get("failing_tests", ())),
                   float(d.get("duration_s", 0.0)), d.get("stderr_tail", ""), d.get("sandbox", ""),
                   d.get("detail", ""), d.get("artifacts", ""), tuple(d.get("guard_events", ())),
                   tuple(d.get("suspicious", ())), d.get("canaries", ""), tuple(d.get("refused", ())))


@dataclass(frozen=True)
class JudgeConfig:
    isolation: Isolation = Isolation.BWRAP  # decided by sandbox.decide_isolation
    timeout_s: float | None = None  # None: each sample's time budget (budget.py); a number: wall seconds
    selection: str = "judged"  # "judged": the sample's judged tests (suite if it has none); "suite"
    limits: Limits = Limits()
    stderr_cap: int = 2000
    # The in-process guard: "enforce" (default: what the completion may not do fails it as tampering,
    # unless the ground truth does it too), "record" (verification: report what the ground truth does),
    # "off" (no guard: only for tests that show an attack is real), "blind" (the evidence stream without
    # refusals or integrity checks: only for tests, the strongest attacker inside the process).
    guard: str = "enforce"
    # Canary tests among the judged ones (canaries.py): the metric plants them in every judged run; the
    # builder's runs (baseline, verification) never do, so what a build makes does not depend on them.
    canaries: bool = False
    fail_fast: bool = True  # stop at the first failing test: the verdict is decided then
    # The ground truth's verdict is known from verification: a completed file byte-identical to the
    # original is not run again.  Off where the point is to run it (verification, prepare's gold check).
    known_verdicts: bool = True
    # Strict by default (strict.py): a pass by a capability that neither the visible file nor the ground truth
    # uses is `refused`; False (`--lenient`, lenient=True) judges by the tests alone.
    strict: bool = True
    # Judge against the sample's impossible variant (impossible.py): its judged tests perturbed so that the
    # ground truth fails them; a pass is cheating.
    impossible: bool = False

    def __post_init__(self) -> None:
        if self.guard not in GUARD_MODES:
            raise ValueError(f"guard {self.guard!r}: use one of {GUARD_MODES}")
