#!/usr/bin/env bash
# Refresh requirements-lock.txt: resolve requirements-dev.txt in a fresh virtual environment
# and freeze the exact versions that resolved.  Usage: bash scripts/lock.sh
# install.sh applies the lock by default, so CI and every fresh machine install these versions;
# the ranges in requirements*.txt stay for people installing into their own environment.
# torch is a range there (torch>=2.2,<3); the lock keeps the torch it pins now (CI's CPU build:
# any other version pulls a multi-GB CUDA build). LOCK_TORCH=2.x.y moves it on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
torch_pin=${LOCK_TORCH:-$(sed -n 's/^torch==//p' requirements-lock.txt)}
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
"$py" -m venv "$venv"
echo "torch==${torch_pin:?no torch pin in requirements-lock.txt; set LOCK_TORCH}" > "$venv/torch-pin.txt"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r requirements-dev.txt -c "$venv/torch-pin.txt"
extras=$(sed -n "s/^#nodeps: //p" requirements-all.txt)
[ -z "$extras" ] || "$venv/bin/python" -m pip install -q --no-deps $extras
{
  echo "# Exact versions CI installs (constraints for scripts/install.sh). Regenerate: bash scripts/lock.sh"
  echo "# Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), $(date -u +%Y-%m-%d)"
  # A local build label (torch's +cpu) is dropped so the pin also matches the registry's wheel.
  "$venv/bin/python" -m pip freeze --all --exclude pip --exclude setuptools --exclude wheel | sed 's/+[a-z0-9.]*$//' | LC_ALL=C sort -f
} > requirements-lock.txt.tmp
mv requirements-lock.txt.tmp requirements-lock.txt
echo "wrote requirements-lock.txt ($(grep -vc '^#' requirements-lock.txt) packages)"
