#!/usr/bin/env bash
# The README's test command: install what the tests need, then run the whole suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k masking`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-env.sh
set +e
.venv/bin/python -m pytest -ra "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests (exit 5) - treated as a failure" >&2
  exit 1
fi
exit "$rc"
