"""Shared by the probe tests: a small torch CNN exported to ONNX, labelled PNG folders and zips.

The reference outputs are torch's own forward passes on images decoded independently with
Pillow; ONNX Runtime and torch run different kernels, so they are compared within ``TOL``.
"""

import io
import warnings
import zipfile

import numpy as np
import pandas as pd
import torch
from PIL import Image

SIZE, N_CLASSES, N_IMAGES = 16, 4, 14
MEAN, STD = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
TOL = 1e-5  # torch vs onnxruntime float32 kernels


class Net(torch.nn.Module):
    def __init__(self, *, nhwc=False, softmax=False, channels=3):
        super().__init__()
        self.nhwc, self.softmax = nhwc, softmax
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(channels, 6, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 8, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(32, N_CLASSES),
        )

    def forward(self, x):
        if self.nhwc:
            x = x.permute(0, 3, 1, 2)
        out = self.body(x) * 4.0  # spread the logits so that the classes differ
        return torch.softmax(out, dim=1) if self.softmax else out


def probe_argv(model, images, labels, out, *extra, flag="--model-file"):
    """Arguments of ``python -m core probe``: the model file (under ``flag``), the image folder, its
    labels file and the output folder, then ``extra``."""
    return ["probe", flag, str(model), "--images", str(images), "--labels", str(labels), "--out", str(out), *extra]


def export(net, path, *, shape, dynamic=None):
    torch.manual_seed(0)
    net.eval()
    with warnings.catch_warnings():
        # torch 2.13's default exporter needs onnxscript; the TorchScript exporter does not.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            net,
            (torch.zeros(shape),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["out"],
            dynamic_axes=dynamic or {"x": {0: "n"}, "out": {0: "n"}},
        )
    return path


def make_net(**kwargs):
    torch.manual_seed(0)
    return Net(**kwargs).eval()


def torch_probs(net, images_u8, *, nhwc=False):
    """torch's probabilities on uint8 images (n, H, W, C), normalised as the probe command does."""
    x = (images_u8.astype(np.float64) / 255.0 - np.array(MEAN)) / np.array(STD)
    x = torch.from_numpy(x.astype(np.float32))
    with torch.no_grad():
        out = net(x if nhwc else x.permute(0, 3, 1, 2))
        return (out if net.softmax else torch.softmax(out.double(), dim=1)).numpy()


def write_pngs(folder, images, labels, *, csv=True):
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"img_{i:02d}.png" for i in range(len(images))]
    for name, img in zip(names, images):
        Image.fromarray(img).save(folder / name)
    if csv:
        pd.DataFrame({"file": names, "label": labels}).to_csv(folder.parent / f"{folder.name}_labels.csv", index=False)
    return names


def zip_bytes(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buffer.getvalue()


def png(img):
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, format="PNG")
    return buffer.getvalue()
