"""What the leaderboard shows beside the scores: each run's metadata (from its metrics.json `run` and
`run_record`), ranks with ties shown as ties, and the dataset's name as people know it (a Hub id, or the
folder's name - never a path of the machine that ran it)."""
from __future__ import annotations

from pathlib import PurePath

RANK_DECIMALS = 12  # pass@1 values equal to this many decimals are a tie (float sums of equal fractions)


def ranks(scores: list[float]) -> list[tuple[int, bool]]:
    """(rank, tied) per score, higher is better: competition ranking (1, 2, 2, 4), `tied` when another run has
    the same score."""
    rounded = [round(s, RANK_DECIMALS) for s in scores]
    return [(1 + sum(1 for o in rounded if o > r), rounded.count(r) > 1) for r in rounded]


def rank_text(model: dict) -> str:
    """A rank as the tables print it: `=2` for a shared rank."""
    return f"={model['rank']}" if model.get("tied") else str(model["rank"])


def run_metadata(metrics: dict) -> dict:
    """The metadata columns of a run: template, n, temperature, engine dtype, date, package version and commit."""
    run = metrics.get("run") if isinstance(metrics.get("run"), dict) else {}
    record = metrics.get("run_record") if isinstance(metrics.get("run_record"), dict) else {}
    sampling = run.get("sampling") if isinstance(run.get("sampling"), dict) else {}
    engine = record.get("engine") if isinstance(record.get("engine"), dict) else {}
    source = record.get("source") if isinstance(record.get("source"), dict) else {}
    return {"meta": {"template": run.get("template"), "n": run.get("n"), "temperature": sampling.get("temperature"),
                     "dtype": engine.get("dtype"), "date": (record.get("date") or "")[:10] or None,
                     "version": record.get("package_version") or run.get("package_version"),
                     "commit": (source.get("commit") or "")[:10] or None}}


def dataset_display_name(metrics: dict) -> str:
    """The Hub id for a dataset read from the Hub; else the local folder's name (a samples file: its folder's)."""
    run = metrics.get("run") if isinstance(metrics.get("run"), dict) else {}
    dataset = run.get("dataset") if isinstance(run.get("dataset"), dict) else {}
    name = str(dataset.get("name") or "")
    if dataset.get("commit") or not name:  # a Hub snapshot: the id as given
        return name
    path = PurePath(name)
    if path.suffix in (".jsonl", ".json", ".parquet"):
        path = path.parent
    return path.name or name


META_COLUMNS = (("template", "template"), ("n", "n"), ("temperature", "temp."), ("dtype", "dtype"),
                ("date", "date"))


def meta_cells(model: dict) -> list[str]:
    meta = model.get("meta") or {}
    return ["-" if meta.get(key) is None else str(meta[key]) for key, _ in META_COLUMNS]
