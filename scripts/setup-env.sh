#!/usr/bin/env bash
# Shared by the README's two commands: make .venv with the package and its test extras.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=23.2" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import execrepobench.builder, execrepobench_metric, execrepobench_dataset" \
  || { echo "setup failed: the package does not import" >&2; exit 1; }
