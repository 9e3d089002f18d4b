#!/usr/bin/env bash
# Refresh requirements-lock.txt: resolve requirements-dev.txt in a fresh virtual environment
# and freeze the exact versions that resolved.  Usage: bash scripts/lock.sh
# install.sh applies the lock by default, so CI and every fresh machine install these versions;
# the >= ranges in requirements*.txt stay for people installing into their own environment.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r requirements-dev.txt
extras=$(sed -n "s/^#nodeps: //p" requirements.txt)
[ -z "$extras" ] || "$venv/bin/python" -m pip install -q --no-deps $extras
{
  echo "# Exact versions CI installs (constraints for scripts/install.sh). Regenerate: bash scripts/lock.sh"
  echo "# Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), $(date -u +%Y-%m-%d)"
  # A local build label (torch's +cpu) is dropped so the pin also matches the registry's wheel.
  "$venv/bin/python" -m pip freeze --all --exclude pip --exclude setuptools --exclude wheel | sed 's/+[a-z0-9.]*$//' | LC_ALL=C sort -f
} > requirements-lock.txt.tmp
mv requirements-lock.txt.tmp requirements-lock.txt
echo "wrote requirements-lock.txt ($(grep -vc '^#' requirements-lock.txt) packages)"
