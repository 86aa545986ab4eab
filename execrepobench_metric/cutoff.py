"""Score only the samples released after a model's training cutoff.

Live snapshots (`execrepobench live`) record each sample's `release_date`: the upload time of the release its
masked code first appeared in.  With a cutoff day, a sample is kept when its release date (UTC day) is after
that day; samples without a release date (other builds) are dropped, since nothing says when their code became
public.  The result says how many were kept.
"""
from __future__ import annotations

from datetime import date
from typing import Sequence

from execrepobench_dataset.record import Sample

from .errors import InputError
from .inputs import Problem


def check_cutoff(cutoff: object) -> str:
    """The cutoff as YYYY-MM-DD, or an InputError naming the field."""
    try:
        if isinstance(cutoff, date):
            return cutoff.isoformat()
        if isinstance(cutoff, str) and len(cutoff) == 10:
            return date.fromisoformat(cutoff).isoformat()
    except ValueError:
        pass
    raise InputError.of([Problem("input", None, None, "cutoff", f"expected a date YYYY-MM-DD, got {cutoff!r}")])


def released_after(sample: Sample, cutoff: str) -> bool:
    return bool(sample.release_date) and sample.release_date[:10] > cutoff


def cutoff_report(samples: Sequence[Sample], cutoff: str) -> dict:
    kept = sum(released_after(s, cutoff) for s in samples)
    return {"date": cutoff, "kept": kept, "of": len(samples), "dropped": len(samples) - kept,
            "without_release_date": sum(not s.release_date for s in samples)}


def apply_cutoff(completions: list, samples: list[Sample], cutoff: object) -> tuple[list, list[Sample], dict]:
    """(completions, samples) of the samples released after `cutoff`, and the report; an InputError when no
    sample is (nothing would be scored)."""
    day = check_cutoff(cutoff)
    report = cutoff_report(samples, day)
    if not report["kept"]:
        raise InputError.of([Problem("input", None, None, "cutoff", (
            f"no sample was released after {day} ({report['of']} samples, {report['without_release_date']} without a "
            "release date: only live snapshots record one); nothing was judged"))])
    keep = [released_after(s, day) for s in samples]
    return ([c for c, k in zip(completions, keep) if k], [s for s, k in zip(samples, keep) if k], report)


def describe(report: dict) -> str:
    return (f"cutoff {report['date']}: {report['kept']} of {report['of']} samples released after it are scored"
            + (f" ({report['without_release_date']} without a release date dropped)"
               if report.get("without_release_date") else ""))
