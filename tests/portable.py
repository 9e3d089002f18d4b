"""A second machine, emulated: re-run the ``portable`` tests under other CPU kernels.

``python3 tests/portable.py [pytest options]`` (``.ci/run`` calls it after README's test
command). Another x86-64 CPU changes results through the kernels its libraries pick at run
time: torch's vectorised ATen paths, oneDNN and MKL, OpenBLAS's per-core GEMM kernels and
numpy's SIMD loops. Each of those can be told to use an older instruction set, which gives
different last bits on this very machine. The tests marked ``portable`` (cross-machine
promises: the shipped demo pool re-evaluated from its shipped models, certificate
verification across kernels, fixtures recorded elsewhere) must pass under both.

``OPENBLAS_CORETYPE`` is left alone where the machine already sets it: there it guards
against OpenBLAS kernels that are wrong or crash on that processor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EMULATED_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",  # torch: no AVX2 / AVX-512 ATen kernels
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # torch's oneDNN primitives
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",  # torch's MKL GEMM
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",  # numpy's dispatched SIMD loops
    "OPENBLAS_CORETYPE": "Nehalem",  # numpy / scipy / scikit-learn BLAS: SSE kernels only
}

_PROBE = """
import json, numpy, torch
from numpy._core._multiarray_umath import __cpu_features__
print(json.dumps({"torch": torch.backends.cpu.get_cpu_capability(),
                  "numpy": sorted(f for f in ("X86_V3", "X86_V4") if __cpu_features__.get(f))}))
"""


def emulated_env(base=None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with every emulated-kernel variable set."""
    env = dict(os.environ if base is None else base)
    for key, value in EMULATED_KERNELS.items():
        if key == "OPENBLAS_CORETYPE" and key in env:
            continue
        env[key] = value
    return env


def is_emulated(base=None) -> bool:
    env = os.environ if base is None else base
    return env.get("ATEN_CPU_CAPABILITY") == EMULATED_KERNELS["ATEN_CPU_CAPABILITY"]


def other_kernels_env(base=None) -> dict[str, str]:
    """An environment whose kernels differ from ``base``'s: emulated if it is not, native if it is."""
    env = dict(os.environ if base is None else base)
    if not is_emulated(env):
        return emulated_env(env)
    for key, value in EMULATED_KERNELS.items():
        if env.get(key) == value:
            env.pop(key)
    return env


def kernels(env) -> dict:
    """What a fresh interpreter under ``env`` actually runs (torch capability, numpy levels)."""
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv: list[str]) -> int:
    env = emulated_env()
    native, emulated = kernels(dict(os.environ)), kernels(env)
    print(f"portable re-run: native kernels {native}, emulated {emulated}", flush=True)
    if emulated["torch"] != "DEFAULT" or emulated["numpy"]:
        print("error: the emulated-kernel variables did not take effect; refusing to report a pass.", file=sys.stderr)
        return 1
    cmd = [sys.executable, "-m", "pytest", "-m", "portable", "-p", "no:cacheprovider", *argv]
    return subprocess.run(cmd, env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
