"""Audit of the fill-type fix (issue 32): how many masks of a manifest's repositories change label between the
old rule (a descendant's level from its type alone: `block` fell through to "expression", try/with/match were
"statement", an expression statement "statement") and the one table (`builder/sampling/levels.py`).

Masking is deterministic and the fix changes no draw, only labels, so the candidates here are the build's first
masking round (seed, samples x oversample, test modules left out) without environments or verification.  With
a builder folder instead (`--samples OUT`), every sample's label is checked against its record.

    python benchmarks/audit_fill_levels.py --manifest builder/manifests/default.toml
    python benchmarks/audit_fill_levels.py --samples OUT
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from execrepobench.builder.build import BuildConfig
from execrepobench.builder.preparation.testlayout import modules_with_tests
from execrepobench.builder.sampling.grammar import CATEGORY_LEVEL, CATEGORY_NODE_TYPES, check_fill_type
from execrepobench.builder.sampling.masking import MaskConfig, candidate_files, sample_masks
from execrepobench.builder.sources.manifest import load_manifest
from execrepobench.builder.sources.sources import fetch
from execrepobench_dataset.load import open_dataset


def old_level(category: str, node_type: str) -> str:
    """The rule before the fix (a whole category node: its category's level; a descendant: its type)."""
    if node_type in CATEGORY_NODE_TYPES[category]:
        return CATEGORY_LEVEL[category]
    blocks = {t for c, lvl in CATEGORY_LEVEL.items() if lvl == "block" for t in CATEGORY_NODE_TYPES[c]}
    if node_type in blocks:
        return "block"
    return "statement" if node_type.endswith("_statement") or node_type == "comment" else "expression"


def audit_manifest(path: Path) -> dict:
    manifest = load_manifest(path)
    oversample = BuildConfig.__dataclass_fields__["oversample"].default
    rows, total = {}, Counter()
    for spec in manifest.repos:
        try:
            fetched = fetch(spec)
        except Exception as exc:  # one repository never ends the audit
            rows[spec.name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        exclude = modules_with_tests(fetched.root, spec.test_paths)
        files = candidate_files(fetched.root, exclude=exclude)
        raw = {f: (fetched.root / f).read_bytes() for f in files}
        config = MaskConfig(samples_per_repo=manifest.samples_for(spec) * oversample)
        masks = [m for m in sample_masks(raw, config, manifest.seed, spec.name).masks if m.level != "random"]
        changes = Counter(f"{old_level(m.category, m.node_type)}->{m.level} ({m.node_type})" for m in masks
                          if old_level(m.category, m.node_type) != m.level)
        rows[spec.name] = {"grammar_masks": len(masks), "changed": sum(changes.values()), "changes": dict(changes)}
        total.update({"grammar_masks": len(masks), "changed": sum(changes.values()),
                      "repos_changed": bool(changes)})
        print(f"{spec.name}: {sum(changes.values())}/{len(masks)} grammar masks change label", file=sys.stderr)
    return {"manifest": path.name, "repos": len(manifest.repos), "total": dict(total), "per_repo": rows}


def audit_samples(folder: Path) -> dict:
    samples = open_dataset(folder).samples
    wrong = {s.sample_id: problem for s in samples if (problem := check_fill_type(s))}
    return {"samples": len(samples), "labels_wrong": len(wrong), "wrong": wrong}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--manifest", type=Path)
    group.add_argument("--samples", type=Path, help="a builder output folder")
    args = parser.parse_args(argv)
    result = audit_manifest(args.manifest) if args.manifest else audit_samples(args.samples)
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
