"""What a machine measured while building a repository's samples - kept apart from what a sample *is*.

A sample (`record.Sample`) is content: the same manifest gives the same samples, byte for byte, on any
machine, any day, under any load, and only content enters a fingerprint.  How long its ground truth
took is data about the machine that ran it, so it lives here, one record per repository:

- `samples`: per kept sample, the CPU seconds of its ground truth's judged run outside its tests
  (`fixed_s`: interpreter, pytest, plugins, collection, report) and up to the end of collection
  (`collect_s`);
- `tests`: per judged test, the CPU seconds of its setup, call and teardown (the most any ground-truth
  run of it took);
- `machine` and `calibration_s`: where it was measured, and how long that machine took for the
  calibration workload (`execrepobench_metric.execution.calibration`), so a judge on a slower machine scales the
  budgets it derives from these times (`execrepobench_metric.execution.budget`).

Published beside the samples (`measurements.jsonl`), never part of a fingerprint.  This module imports
nothing from the other rooms.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from .errors import RecordError
from .record import read_records
from .schemes import KNOWN_MEASUREMENTS_SCHEMES

MEASUREMENTS_FILE = "measurements.jsonl"


@dataclass(frozen=True)
class SampleTiming:
    collect_s: float  # CPU seconds from the interpreter's start to the end of collection
    fixed_s: float  # CPU seconds of the run outside its tests (start-up, collection, report)


@dataclass(frozen=True)
class Measurements:
    repo_name: str
    env_key: str
    scheme: str
    machine: str  # a description of the machine that measured (processor, cores, Python)
    calibration_s: float  # that machine's CPU seconds for the calibration workload
    samples: Mapping[str, SampleTiming] = field(default_factory=dict)  # sample id -> its run's timing
    tests: Mapping[str, float] = field(default_factory=dict)  # judged test id -> CPU seconds

    def __post_init__(self) -> None:
        where = f"measurements of {self.repo_name!r}"
        if self.scheme not in KNOWN_MEASUREMENTS_SCHEMES:
            raise RecordError(f"{where}: unknown scheme {self.scheme!r} (this version reads {', '.join(KNOWN_MEASUREMENTS_SCHEMES)}); "
                              "judge with an explicit timeout (timeout=... / --timeout) or rebuild")
        if not (isinstance(self.calibration_s, float) and self.calibration_s > 0):
            raise RecordError(f"{where}: calibration_s must be a positive number, got {self.calibration_s!r}")
        for name, t in self.samples.items():
            if not all(isinstance(v, float) and v >= 0 for v in (t.collect_s, t.fixed_s)):
                raise RecordError(f"{where}: sample {name}: collect_s and fixed_s must be non-negative numbers")
        if not all(isinstance(v, float) and v >= 0 for v in self.tests.values()):
            raise RecordError(f"{where}: every test's time must be a non-negative number")

    def to_dict(self) -> dict[str, Any]:
        return {"repo_name": self.repo_name, "env_key": self.env_key, "scheme": self.scheme, "machine": self.machine,
                "calibration_s": self.calibration_s,
                "samples": {k: dataclasses.asdict(v) for k, v in sorted(self.samples.items())},
                "tests": dict(sorted(self.tests.items()))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Measurements":
        if not isinstance(data, Mapping):
            raise RecordError(f"measurements: expected a mapping, got {type(data).__name__}")
        where = f"measurements of {data.get('repo_name', '<no repo_name>')!r}"
        missing = [k for k in ("repo_name", "env_key", "scheme", "machine", "calibration_s") if k not in data]
        if missing:
            raise RecordError(f"{where}: missing field(s) {', '.join(missing)}")
        try:
            samples = {str(k): SampleTiming(float(v["collect_s"]), float(v["fixed_s"]))
                       for k, v in (data.get("samples") or {}).items()}
            tests = {str(k): float(v) for k, v in (data.get("tests") or {}).items()}
            calibration = float(data["calibration_s"])
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise RecordError(f"{where}: {type(exc).__name__}: {exc}") from None
        return cls(str(data["repo_name"]), str(data["env_key"]), str(data["scheme"]), str(data["machine"]),
                   calibration, samples, tests)


def write_measurements(records: Iterable[Measurements], path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")
            n += 1
    return n


def read_measurements(path) -> Iterator[Measurements]:
    return read_records(path, Measurements.from_dict)
