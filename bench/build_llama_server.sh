#!/bin/sh
# Builds llama.cpp's own `llama-server` once, from the llama.cpp that llama-cpp-python's
# sdist vendors (the same llama.cpp our engine runs), and keeps it under the home:
#   $HOME/.cache/b3os-infer/llama-server-<version>/llama-server
# `make bench` measures against it; the live upstream tests serve through it. A second
# run finds the binary and does nothing. The sdist is the one the Makefile built the wheel
# from (bench/fetch_llama_sdist.sh). CMake and Ninja come from PyPI (dev extras), so no
# system package is needed. Like the Makefile's llama-cpp-python build, AMX is left
# out: virtual machines may list AMX tiles their hypervisor does not enable, and a binary
# that uses them dies on its first decode.
#
# usage: bench/build_llama_server.sh [VENV]      (VENV defaults to .venv)
set -eu

VERSION=${LLAMA_CPP:-0.3.36}
VENV=${1:-.venv}
DEST=${LLAMA_SERVER_DIR:-$HOME/.cache/b3os-infer/llama-server-$VERSION}
DEST=${DEST%/}
FLAGS=${LLAMA_FLAGS-"-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"}

if [ -x "$DEST/llama-server" ]; then
    exit 0
fi

# the venv's cmake and ninja (pip packages) when there, else the system's
PATH="$(cd "$VENV/bin" && pwd):$PATH"
export PATH
command -v cmake >/dev/null || { echo "cmake not found: run make install" >&2; exit 1; }
GENERATOR=""
if command -v ninja >/dev/null; then GENERATOR="-G Ninja"; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llama-server-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

echo "building llama-server $VERSION (llama.cpp vendored in llama-cpp-python; minutes)" >&2
SDIST=$(LLAMA_CPP="$VERSION" "$(dirname "$0")/fetch_llama_sdist.sh" "$VENV")
tar -xzf "$SDIST" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"

# one static binary: no shared libraries to find at run time; no web UI download, no
# HTTPS, no tests or examples
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$WORK/build" $GENERATOR \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$WORK/configure.log" \
    || { cat "$WORK/configure.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "$(nproc 2>/dev/null || echo 2)" \
    >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; exit 1; }

mkdir -p "$DEST"
# copy, then rename: whoever waits for the path never sees half a file
cp "$WORK/build/bin/llama-server" "$DEST/llama-server.partial"
mv "$DEST/llama-server.partial" "$DEST/llama-server"
echo "built $DEST/llama-server" >&2
