#!/usr/bin/env bash
# Shared by the README's two commands: make .venv with the package and its test extras
# (EXECREPOBENCH_EXTRAS, default "test"; scripts/test.sh adds "ray").
# pip's output goes to .venv/setup.log and is shown only when something fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The sandbox (bubblewrap) for judging completions; installed when we may (root with apt).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >/dev/null 2>&1 \
      || echo "warning: could not install bubblewrap; sandboxed tests will be skipped" >&2
  else
    echo "warning: bubblewrap (bwrap) not found; install it to judge completions in the sandbox" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
log=.venv/setup.log
if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade "pip>=23.2" "setuptools>=70.1" \
       && .venv/bin/python -m pip install --disable-pip-version-check -e ".[${EXECREPOBENCH_EXTRAS:-test}]"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "setup failed (full log: $log)" >&2
  exit 1
fi
.venv/bin/python -c "import execrepobench.builder, execrepobench_metric, execrepobench_dataset" \
  || { echo "setup failed: the package does not import" >&2; exit 1; }
