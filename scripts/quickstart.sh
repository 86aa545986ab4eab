#!/usr/bin/env bash
# The README's main job on the embedded default: build samples from the small packaged
# quickstart manifest of real PyPI repositories (offline after the first download, CPU only).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-env.sh
exec .venv/bin/execrepobench build --quickstart --out out/quickstart "$@"
