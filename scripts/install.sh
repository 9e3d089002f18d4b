#!/usr/bin/env bash
# One-step set-up on a fresh machine.
#   bash scripts/install.sh        the base and every extra (`reliability-audit[all]`: torch,
#                                  boosting, Dask, SHAP, MLflow, ONNX export, the paper's data)
#   bash scripts/install.sh dev    + test tools, the Chromium of the browser tests and the MLflow
#                                  server of the MLflow tests (a venv of its own)
#   bash scripts/install.sh base   the base only (what `pip install reliability-audit` brings)
# Versions follow requirements-lock.txt (the exact set CI runs, torch==2.13.0 among them;
# refresh: bash scripts/lock.sh). AUDIT_UNLOCKED=1 installs from the ranges of
# requirements*.txt instead (torch>=2.2,<3 then takes the newest torch: from PyPI, a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
lock=()
[ "${AUDIT_UNLOCKED:-0}" = "1" ] || lock=(-c requirements-lock.txt)
case "${1:-}" in
  dev) reqs=requirements-dev.txt ;;
  base) reqs=requirements.txt ;;
  *) reqs=requirements-all.txt ;;
esac
"$py" -m pip install -q -r "$reqs" "${lock[@]}"
# Packages whose own dependency pins are wrong for us (listed as '#nodeps: NAME==VERSION').
if [ "$reqs" != requirements.txt ]; then
  nodeps=$(sed -n 's/^#nodeps: //p' requirements-all.txt)
  [ -z "$nodeps" ] || "$py" -m pip install -q --no-deps $nodeps
fi
if [ "${1:-}" = "dev" ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
  else
    echo "warning: Debian's chromium is not installed; the browser tests will fail." >&2
    echo "         install it with: sudo apt-get install chromium" >&2
  fi
fi
# The MLflow tracking server that tests/tabular/test_mlflow_models.py starts: the full `mlflow` in a venv of its own
# (its pins, pyarrow<26 among them, clash with the lock; the package needs only the client,
# mlflow-skinny, its [mlflow] extra). Kept between runs; made again when the pin changes.
if [ "${1:-}" = "dev" ]; then
  server_pin=mlflow==3.17.2
  server_venv=${AUDIT_MLFLOW_SERVER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/reliability-audit/mlflow-server}
  if [ "$("$server_venv/bin/python" -m pip freeze 2>/dev/null | grep -ix "$server_pin")" = "" ]; then
    rm -rf "$server_venv"
    "$py" -m venv "$server_venv"
    "$server_venv/bin/python" -m pip install -q "$server_pin"
  fi
fi
# PostgreSQL's server binaries (initdb, pg_ctl): the review store's tests start their own
# cluster on 127.0.0.1 (tests/reviews/pg_cluster.py). Debian puts them in /usr/lib/postgresql/*/bin.
if [ "${1:-}" = "dev" ] && ! command -v initdb >/dev/null 2>&1 \
  && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
  else
    echo "warning: PostgreSQL is not installed; the review store's PostgreSQL tests will fail." >&2
    echo "         install it with: sudo apt-get install postgresql" >&2
  fi
fi
# Fashion-MNIST: only to rebuild the paired demo pool and for its re-training tests (they skip
# without it); the dashboard and the CLI run from the shipped assets/paired_demo/.
if [ "${1:-}" = "dev" ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null; }
  else
    echo "warning: Debian's dataset-fashion-mnist is not installed; the demo-pool re-training tests will skip." >&2
    echo "         install it with: sudo apt-get install dataset-fashion-mnist" >&2
  fi
fi
