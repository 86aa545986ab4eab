"""Where cached sources, environments and results live on disk (shared by builder and metric)."""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV_VAR = "EXECREPOBENCH_CACHE"


def cache_root() -> Path:
    """`$EXECREPOBENCH_CACHE`, else `~/.cache/execrepobench`."""
    root = os.environ.get(CACHE_ENV_VAR)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "execrepobench"


def downloads_dir() -> Path:
    return cache_root() / "downloads"


def sources_dir() -> Path:
    return cache_root() / "sources"


def envs_dir() -> Path:
    return cache_root() / "envs"


def env_dir(env_key: str) -> Path:
    return envs_dir() / env_key
