"""How many PyPI projects the project has never seen build from a bare entry (issue 32's measure).

The projects are chosen by a rule fixed before any was looked at: the first `--count` names of `WELL_KNOWN`
(a fixed, alphabetical list of well-known pure-Python libraries) that appear nowhere in the project's
manifests (builder/manifests/*.toml), the live candidates (builder/live/candidates.toml), the tests (tests/)
or an optional `--seen` list (one project per line or TSV); each at its newest final release uploaded before
`--date`.  Every entry is bare - `source = "pypi:NAME==VERSION"`, nothing else - so whatever builds, builds by
the builder's own inference and repairs.  Writes OUT/unseen.toml, the build under OUT/build, and OUT/unseen.json
(per project: status, kept samples, what was inferred, the failure's reason); prints a table.

    python benchmarks/bench_unseen.py --out /tmp/unseen [--count 12] [--seen FILE] [--repos-at-once 3]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
# Fixed before looking (alphabetical); the rule above takes the first --count that the project has not seen.
WELL_KNOWN = ("addict", "appdirs", "bidict", "blinker", "cachelib", "colorama", "dictdiffer", "docstring-parser",
              "environs", "first", "furl", "hyperlink", "jmespath", "more-itertools", "munch", "ordered-set",
              "python-box", "python-dotenv", "retrying", "schedule", "shortuuid", "sortedcontainers",
              "tenacity", "text-unidecode", "toposort", "whatthepatch")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def seen_names(extra: Path | None) -> set[str]:
    """Every project-like word of the manifests, the live candidates, the tests and `extra`, normalised."""
    files = [*(CHECKOUT / "builder" / "manifests").glob("*.toml"), CHECKOUT / "builder" / "live" / "candidates.toml",
             *(CHECKOUT / "tests").rglob("*.py"), *(CHECKOUT / "tests").rglob("*.toml")]
    if extra is not None:
        files.append(extra)
    words: set[str] = set()
    for path in files:
        if path.is_file():
            words |= {canon(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", path.read_text(errors="replace"))}
    return words


def choose(count: int, extra: Path | None) -> list[str]:
    seen = seen_names(extra)
    return [n for n in WELL_KNOWN if canon(n) not in seen][:count]


def pinned(names: list[str], date: str) -> dict[str, str]:
    from execrepobench.builder.live.index import IndexClient

    client, end = IndexClient(), datetime.fromisoformat(date).replace(tzinfo=timezone.utc)
    out = {}
    for name in names:
        release = client.project(name).newest(None, end)
        if release is not None:
            out[name] = release.version
    return out


def summarise(report: dict, versions: dict[str, str]) -> list[dict]:
    by_repo = {r.get("repo"): r for r in report.get("repos", [])}
    rows = []
    for name, version in versions.items():
        r = by_repo.get(name, {})
        reason = next((str(r[k]) for k in ("error", "reason", "failure") if r.get(k)), "")
        rows.append({"project": name, "version": version, "status": r.get("status", "not built"),
                     "kept": r.get("kept", 0), "requirements": r.get("requirements"),
                     "test_config": r.get("test_config"), "reason": reason[-600:]})
    return rows


def from_folders(out: Path, versions: dict[str, str]) -> list[dict]:
    """The rows from every build folder under `out` (OUT/*/repos/NAME/report.json): a project's ok build wins,
    else its latest report (builds run in several calls, or again after a fix)."""
    found: dict[str, dict] = {}
    for path in sorted(out.glob("*/repos/*/report.json"), key=lambda p: p.stat().st_mtime):
        report = json.loads(path.read_text(encoding="utf-8"))
        name = report.get("repo") or path.parent.name
        if found.get(name, {}).get("status") != "ok":
            found[name] = {**report, "repo": name}
    return summarise({"repos": list(found.values())}, versions)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--seen", type=Path, default=None, help="more projects to leave out (seen elsewhere)")
    parser.add_argument("--date", default="2026-12-01", help="newest release uploaded before the end of this day")
    parser.add_argument("--samples-per-repo", type=int, default=8)
    parser.add_argument("--repos-at-once", type=int, default=3, help="build this many projects per build call")
    parser.add_argument("--report-only", action="store_true",
                        help="build nothing: summarise the builds already under --out (OUT/unseen.toml's projects)")
    args = parser.parse_args(argv)
    if args.report_only:
        text = (args.out / "unseen.toml").read_text(encoding="utf-8")
        versions = dict(re.findall(r'source = "pypi:([^=]+)==([^"]+)"', text))
        rows = from_folders(args.out, versions)
        for row in rows:
            print(f"| {row['project']} | {row['version']} | {row['status']} | {row['kept']} | "
                  f"{', '.join((row['requirements'] or {}).get('added', [])) or '-'} | "
                  f"{json.dumps((row['test_config'] or {}).get('repairs', []))[:160] or '-'} | {row['reason'][:200]} |")
        print(f"{sum(1 for r in rows if r['kept'])}/{len(rows)} projects gave verified samples")
        (args.out / "unseen.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    names = choose(args.count, args.seen)
    versions = pinned(names, f"{args.date}T23:59:59")
    manifest = args.out / "unseen.toml"
    manifest.write_text(f'[defaults]\nseed = 0\nsamples_per_repo = {args.samples_per_repo}\n'
                        f'exclude_newer = "{args.date}"\n\n' +
                        "".join(f'[[repo]]\nsource = "pypi:{n}=={v}"\n\n' for n, v in versions.items()), encoding="utf-8")
    print(f"chosen: {', '.join(f'{n}=={v}' for n, v in versions.items())}", flush=True)
    rows = []
    batch = list(versions)
    for i in range(0, len(batch), args.repos_at_once):
        part = batch[i:i + args.repos_at_once]
        out = args.out / f"build-{i // args.repos_at_once + 1}"
        cmd = [sys.executable, "-m", "execrepobench.runner.cli", "build", "--manifest", str(manifest),
               "--out", str(out), "--no-progress", *[a for n in part for a in ("--repo", n)]]
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sys.stderr.write(proc.stderr)  # the build's stage lines (--no-progress)
        try:
            report = json.loads((out / "build_report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = {"repos": [{"repo": n, "status": "build_failed", "error": proc.stderr[-600:]} for n in part]}
        part_rows = summarise(report, {n: versions[n] for n in part})
        rows += part_rows
        for row in part_rows:
            print(f"{row['project']}=={row['version']}: {row['status']}, {row['kept']} samples "
                  f"{row['reason'][:300]}", flush=True)
        (args.out / "unseen.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    ok = sum(1 for r in rows if r["kept"])
    print(f"{ok}/{len(rows)} projects gave verified samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
