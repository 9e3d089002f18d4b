"""Benchmark of ``python -m core probe`` against the same model passes alone, side by side in one run.

    python tests/bench/bench_probe.py                       # 40 images, ResNet-18 at 224 px, 1 round
    python tests/bench/bench_probe.py --rounds 2 --images 40 --size 224
    python tests/bench/bench_probe.py --profile probe.prof  # the probe side under cProfile, top lines printed
    python tests/bench/bench_probe.py --no-scaling          # only the default-threads comparison

The model is a ResNet-18 (11.7 M parameters, 1,000 classes) built in torch with seeded random
weights and exported to ONNX (nothing downloaded). The images are random-ish natural-looking
RGB pictures (smooth colour fields, shapes with edges, fine texture) of 200..320 px per side,
written as PNG files with a labels CSV, so the probe decodes and resizes them as it would a
user's photos.

Every measurement runs in a fresh child process (its peak RSS from ``ru_maxrss``):

* **probe**: the CLI path, ``core.cli.main(["probe", ...])``, timed around the call (model read,
  image validation, every variant, the model passes, the Parquet writes);
* **bare**: the same model passes alone: a plain ``onnxruntime.InferenceSession`` with
  onnxruntime's default options (its default threads: the machine's cores), fed the same inputs
  in the same batches (the clean images and every corruption / natural-transform variant,
  decoded, resized, 8-bit and normalised beforehand, outside the timed part). Only
  ``session.run`` is timed. Its peak RSS includes that preparation (a whole variant of every
  image at once), so it says little.

The wall-clock ratio probe / bare, both on their default threads, is the goal's measure (issue
39: at most 1.3x). Then, unless ``--no-scaling``, both sides run again at 1 .. N-1 threads
(``--threads T`` for the probe, ``intra_op_num_threads = T`` for the bare session) and the
scaling table prints each side's time and speed-up over its own one-thread time, the default
(N cores) as its last row. The machine may be shared while the benchmark runs (the load
average is printed with every row). The CPU ratio (the probe process's CPU seconds, every
thread and its setup included, against the bare process's CPU seconds in its passes) bounds
what the probe costs beyond its model.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as a ResNet user gives them


# ------------------------------------------------------------------------------------------
# the model and the images
# ------------------------------------------------------------------------------------------
def _resnet18(n_classes: int = 1000):
    """ResNet-18 (He et al. 2016, torchvision's layout) with seeded random weights."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    torch.manual_seed(0)
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, n_classes)]
    return nn.Sequential(*layers).eval()


def _export(path: Path, size: int) -> None:
    import warnings

    import torch

    net = _resnet18()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            net,
            (torch.zeros(1, 3, size, size),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["logits"],
            dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}},
        )


def _images(folder: Path, n: int, seed: int = 0) -> None:
    """``n`` PNG pictures of 200..320 px per side and ``labels.csv`` (file,label)."""
    import numpy as np
    import pandas as pd
    from PIL import Image, ImageDraw
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    names = []
    for i in range(n):
        h, w = (int(v) for v in rng.integers(200, 321, size=2))
        # A smooth colour field (sky, walls), shapes with hard edges, then fine texture.
        field = np.stack(
            [ndimage.gaussian_filter(rng.normal(size=(h, w)), sigma=rng.uniform(8, 30)) for _ in range(3)], -1
        )
        field = (field - field.min()) / (np.ptp(field) + 1e-12)
        img = Image.fromarray((field * 255).astype(np.uint8))
        draw = ImageDraw.Draw(img)
        for _ in range(int(rng.integers(3, 9))):
            x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
            x1, y1 = x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2))
            colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
            (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=colour)
        arr = np.asarray(img, dtype=np.float64) + rng.normal(scale=6.0, size=(h, w, 3))
        names.append(f"photo_{i:03d}.png")
        Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(folder / names[-1])
    pd.DataFrame({"file": names, "label": rng.integers(0, 1000, size=n)}).to_csv(folder / "labels.csv", index=False)


# ------------------------------------------------------------------------------------------
# the two sides, each in its own process
# ------------------------------------------------------------------------------------------
def _model_flag() -> str:
    """``--model-file`` where the probe command has it, else the older ``--model``."""
    from core.cli import build_parser

    probe = build_parser()._subparsers._group_actions[0].choices["probe"]
    return "--model-file" if any("--model-file" in a.option_strings for a in probe._actions) else "--model"


def _child_probe(args) -> dict:
    from core.cli import main

    argv = ["probe", _model_flag(), args.model, "--images", args.images, "--labels", args.labels]
    argv += ["--out", args.out, "--batch-size", str(args.batch_size), "--no-progress", "--force"]
    argv += ["--mean", ",".join(map(str, MEAN)), "--std", ",".join(map(str, STD))]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        t0 = time.perf_counter()
        code = profiler.runcall(main, argv)
        seconds = time.perf_counter() - t0
        profiler.dump_stats(args.profile)
        pstats.Stats(args.profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    else:
        t0 = time.perf_counter()
        code = main(argv)
        seconds = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"probe exited with {code}")
    return {"seconds": seconds}


def _child_bare(args) -> dict:
    import numpy as np
    import onnxruntime as ort
    import pandas as pd
    from PIL import Image

    from core.imaging.corruptions import CORRUPTIONS, NATURAL_TRANSFORMS

    options = ort.SessionOptions()  # onnxruntime's defaults: threads = the machine's cores
    if args.threads:
        options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(Path(args.model).read_bytes(), options, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    size = int(inp.shape[2])
    files = pd.read_csv(args.labels)["file"]
    folder = Path(args.images)
    clean = np.stack(
        [
            np.asarray(Image.open(folder / f).convert("RGB").resize((size, size), Image.BILINEAR), dtype=np.uint8)
            for f in files
        ]
    )
    x01 = clean.astype(np.float64) / 255.0
    rng = np.random.default_rng(0)
    variants = [lambda: x01]
    variants += [lambda f=f, s=s: f(x01, s, rng) for f in CORRUPTIONS.values() for s in (2, 4)]
    variants += [lambda t=t: t(x01) for t in NATURAL_TRANSFORMS.values()]
    seconds, cpu, passes = 0.0, 0.0, 0
    for make in variants:
        u8 = np.rint(np.clip(make(), 0.0, 1.0) * 255.0) / 255.0
        x = np.ascontiguousarray(((u8 - np.array(MEAN)) / np.array(STD)).astype(np.float32).transpose(0, 3, 1, 2))
        for start in range(0, len(x), args.batch_size):
            chunk = x[start : start + args.batch_size]
            t0, c0 = time.perf_counter(), time.process_time()
            session.run(None, {inp.name: chunk})
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - c0  # every onnxruntime thread
            passes += len(chunk)
    return {"seconds": seconds, "cpu_s": cpu, "passes": passes}


def _child(args) -> None:
    out = _child_probe(args) if args.side == "probe" else _child_bare(args)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["peak_rss_mb"] = usage.ru_maxrss / 1024
    out["process_cpu_s"] = usage.ru_utime + usage.ru_stime  # every thread, setup included
    print(json.dumps(out))


def _run_side(side: str, work: Path, args, profile: str | None = None, threads: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", side, "--batch-size", str(args.batch_size)]
    if threads:
        cmd += ["--threads", str(threads)]
    cmd += ["--model", str(work / "resnet18.onnx"), "--images", str(work / "images")]
    cmd += ["--labels", str(work / "images" / "labels.csv"), "--out", str(work / "out")]
    if profile:
        cmd += ["--profile", profile]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-4000:]}")
    if profile:
        print(done.stderr, file=sys.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--profile", help="write the probe side's cProfile stats here (one extra probe run)")
    parser.add_argument("--no-scaling", action="store_true", help="skip the 1 .. N-1 thread runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_probe_") as tmp:
        work = Path(tmp)
        _export(work / "resnet18.onnx", args.size)
        _images(work / "images", args.images)
        n_variants = 1 + 18 + 18
        print(
            f"ResNet-18 at {args.size} px, {args.images} PNG images x {n_variants} variants = "
            f"{args.images * n_variants} model passes, --batch-size {args.batch_size}, {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.1f}"
        )
        ratios = []
        for r in range(args.rounds):
            # Alternate which side runs first, so a drift in the machine's load hits both.
            order = ("probe", "bare") if r % 2 == 0 else ("bare", "probe")
            got = {side: _run_side(side, work, args) for side in order}
            ratio = got["probe"]["seconds"] / got["bare"]["seconds"]
            ratios.append(ratio)
            # CPU seconds do not depend on how busy the machine is: the probe process's (every
            # thread, its setup included) against the bare model passes' own.
            cpu_ratio = got["probe"]["process_cpu_s"] / got["bare"]["cpu_s"]
            print(
                f"round {r + 1}: probe {got['probe']['seconds']:.1f} s (peak RSS {got['probe']['peak_rss_mb']:.0f} MB, "
                f"process CPU {got['probe']['process_cpu_s']:.1f} s), bare model passes {got['bare']['seconds']:.1f} s "
                f"for {got['bare']['passes']} passes (peak RSS {got['bare']['peak_rss_mb']:.0f} MB, process CPU "
                f"{got['bare']['process_cpu_s']:.1f} s incl. its untimed preparation, {got['bare']['cpu_s']:.1f} s "
                f"in the passes): ratio {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU, load {os.getloadavg()[0]:.1f}"
            )
        print(f"probe / bare model passes: median {sorted(ratios)[len(ratios) // 2]:.2f}x over {args.rounds} round(s)")
        if not args.no_scaling:
            _scaling(work, args, got)
        if args.profile:
            _run_side("probe", work, args, profile=args.profile)


def _scaling(work: Path, args, default: dict) -> None:
    """Both sides at 1 .. N-1 threads, then the default round's (N), each beside its 1-thread time."""
    from core.onnx_session import default_threads

    cores = default_threads()
    rows = []
    for t in range(1, cores):
        rows.append((str(t), {side: _run_side(side, work, args, threads=t) for side in ("probe", "bare")}))
    rows.append((f"{cores} (default)", default))
    base = rows[0][1]
    print(f"scaling, {cores} cores: threads | probe s (speed-up) | bare s (speed-up) | probe / bare")
    for label, got in rows:
        p, b = got["probe"]["seconds"], got["bare"]["seconds"]
        print(
            f"  {label:>12} | {p:6.1f} ({base['probe']['seconds'] / p:4.2f}x) | {b:6.1f} "
            f"({base['bare']['seconds'] / b:4.2f}x) | {p / b:4.2f}x   load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child = argparse.ArgumentParser()
        child.add_argument("--child", dest="side")
        for flag in ("--model", "--images", "--labels", "--out", "--profile"):
            child.add_argument(flag)
        child.add_argument("--batch-size", type=int)
        child.add_argument("--threads", type=int)
        _child(child.parse_args())
    else:
        main()
