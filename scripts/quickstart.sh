#!/usr/bin/env bash
# The README's main job on the embedded default, offline after the first download, CPU only:
# build verified samples from the packaged quickstart manifest (real PyPI repositories), complete
# them with the offline `baseline` backend, judge the completions in the sandbox, print the table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-env.sh
exec .venv/bin/execrepobench run --quickstart --backend baseline --allow-exec --out out/quickstart "$@"
