"""A tiny, local, random-weight causal LM for the model-backend tests (never downloads anything).

`make_tiny_model(dir)` writes a Hugging Face model folder that transformers and vLLM both load:

* tokenizer.json: a byte-level BPE trained with `tokenizers` on this project's own Python sources, with
  the qwen2.5-coder template's FIM/repository tokens (and the chat markers) as single special tokens;
* tokenizer_config.json: model_max_length, eos/pad, a minimal ChatML chat template;
* config.json + model.safetensors: a 2-layer `Qwen2ForCausalLM` (hidden 64, 2 heads -> head_dim 32, which
  vLLM's CPU attention needs; max_position_embeddings 2048), random weights from a fixed seed, float32.

The folder is named so that `detect_template` picks "qwen2.5-coder" for it.  `tiny_model()` makes one per
process in a temporary folder and returns it again on later calls.  Needs torch, transformers and
tokenizers (the model environment, scripts/setup-model-env.sh).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "tiny-qwen2.5-coder"  # detect_template(NAME) == "qwen2.5-coder"
SPECIAL_TOKENS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                  "<|repo_name|>", "<|file_sep|>", "<|im_start|>", "<|im_end|>"]
EOS = "<|endoftext|>"
VOCAB_SIZE = 1024
MAX_POSITIONS = 2048
SEED = 1234
# transformers models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX
QWEN2_SPLIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
               r"""|\s+(?!\S)|\s+""")
CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_DONE = ".tiny-model-complete"
_cached: Path | None = None


def _corpus() -> list[str]:
    """The project's own Python sources (not the tests, so that editing a test does not change the model), in a
    fixed order: deterministic training."""
    dirs = ("runner", "builder", "execrepobench_dataset", "execrepobench_metric", "tests/fixtures/minirepo")
    files = sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))
    return [p.read_text(encoding="utf-8") for p in files]


def make_tokenizer(out: Path):
    """The BPE, laid out as Qwen2's own tokenizer.json (NFC, Qwen2's split regex, then byte level): transformers'
    Qwen2Tokenizer rebuilds exactly this pipeline around the vocabulary, so `tokenizers.Tokenizer.from_file`
    (prompt budgets), transformers and vLLM all count the same tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    config = {"tokenizer_class": "Qwen2Tokenizer", "model_max_length": MAX_POSITIONS,
              "eos_token": EOS, "pad_token": EOS, "bos_token": None, "unk_token": None,
              "add_bos_token": False, "add_prefix_space": False, "clean_up_tokenization_spaces": False,
              "chat_template": CHAT_TEMPLATE}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (out / "special_tokens_map.json").write_text(json.dumps({"eos_token": EOS, "pad_token": EOS}), encoding="utf-8")
    return tok


def make_tiny_model(out, seed: int = SEED) -> Path:
    """Write the tokenizer and a random-weight 2-layer Qwen2 into `out` (kept when already complete)."""
    out = Path(out)
    if (out / _DONE).is_file():
        return out
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(out)
    vocab = tok.get_vocab_size()
    eos = tok.token_to_id(EOS)
    config = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=32,
                         max_position_embeddings=MAX_POSITIONS, rope_theta=10000.0, tie_word_embeddings=False,
                         # larger than the usual 0.02 so that greedy picks are not near-ties (stable across engines)
                         initializer_range=0.5, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
                         use_sliding_window=False)
    config.dtype = "float32"
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    (out / _DONE).write_text("ok\n", encoding="utf-8")
    return out


def tiny_model() -> Path:
    """One tiny model per process, in a temporary folder (EXECREPOBENCH_TINY_MODEL: use/keep that folder)."""
    global _cached
    if _cached is None:
        base = os.environ.get("EXECREPOBENCH_TINY_MODEL")
        root = Path(base) if base else Path(tempfile.mkdtemp(prefix="execrepobench-tiny-"))
        _cached = make_tiny_model(root / NAME if not base else root)
    return _cached
