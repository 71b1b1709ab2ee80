#!/bin/sh
# Fetches llama-cpp-python's source distribution once and prints its path:
#   $SDISTS/llama_cpp_python-<version>.tar.gz   (SDISTS: $HOME/.cache/b3os-infer/sdist)
# Both the llama-cpp-python wheel (Makefile) and llama-server (build_llama_server.sh) are
# built from it. Only llama-cpp-python is fetched as source: with `--no-binary :all:` pip
# also builds the sdist's build dependencies from source, CMake among them (over half an
# hour on 2 cores).
#
# usage: bench/fetch_llama_sdist.sh [VENV]      (VENV defaults to .venv)
set -eu

VERSION=${LLAMA_CPP:-0.3.36}
VENV=${1:-.venv}
DIR=${SDISTS:-$HOME/.cache/b3os-infer/sdist}
DIR=${DIR%/}
FILE="$DIR/llama_cpp_python-$VERSION.tar.gz"

if [ ! -s "$FILE" ]; then
    mkdir -p "$DIR"
    WORK=$(mktemp -d "$DIR/.fetch.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT INT TERM
    "$VENV/bin/pip" download --quiet --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$VERSION" -d "$WORK"
    # rename into place: a second caller never sees half a file
    mv "$WORK/llama_cpp_python-$VERSION.tar.gz" "$FILE"
fi
echo "$FILE"
