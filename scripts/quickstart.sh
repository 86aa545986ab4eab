#!/usr/bin/env bash
# The README's main job on the embedded default, offline after the first download, CPU only:
# build verified samples from the packaged quickstart manifest (real PyPI repositories), then judge
# the ground truth (expect pass@1 = 100) and the null fill (expect 0) in the sandbox.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-env.sh
out=out/quickstart
.venv/bin/execrepobench build --quickstart --out "$out" "$@"
for fill in ground_truth null; do
  echo "== judging the $fill of every sample =="
  EXECREPOBENCH_ALLOW_EXEC=1 .venv/bin/execrepobench evaluate --samples "$out/samples.jsonl" \
    --reference-fill "$fill" --out "$out/eval-$fill" --model-name "$fill"
done
