"""Images above the tool's limit (``MAX_PIXELS``) are refused in the tool's words, from the header,
before any pixel is decoded: a real 20,000 x 20,000 PNG and a PNG whose header alone claims
100,000 x 100,000 pixels, through every entry point (a folder, a zip file, a zip uploaded on the
Recapture page, an ``.npz``, the ``probe`` command) and an ONNX model whose input is that large."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

from core.cli import main
from core.imaging.images import MAX_PIXELS, open_image, open_images, open_zip_images
from core.imaging.probe import OnnxImageClassifier, probe_uploaded

REAL = "big.png: is 20,000 x 20,000 pixels (400,000,000 pixels); images are limited to 40,000,000 pixels."
HEADER = "claims.png: is 100,000 x 100,000 pixels (10,000,000,000 pixels); images are limited to 40,000,000 pixels."


def png(img: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, format="PNG")
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buffer.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def header_only_png(width: int, height: int) -> bytes:
    """A valid PNG signature and IHDR claiming ``width x height`` grey pixels, with 10 bytes of data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(b"\x00" * 10))
        + _chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def big_png() -> bytes:
    """A real 20,000 x 20,000 black-and-white PNG (about 50 kB; Pillow writes it in about a second)."""
    buffer = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def images(big_png):
    """name -> bytes: one small image, the real large one and the header-only one."""
    return {
        "small.png": png(np.zeros((8, 8, 3), np.uint8)),
        "big.png": big_png,
        "claims.png": header_only_png(100_000, 100_000),
    }


def _refused(match: str):
    return pytest.raises(ValueError, match=re.escape(match))


def _labels(names) -> bytes:
    return ("file,label\n" + "".join(f"{n},0\n" for n in names)).encode()


def test_the_limit_is_the_tools_own_and_below_pillows():
    assert MAX_PIXELS == 40_000_000 < Image.MAX_IMAGE_PIXELS


@pytest.mark.parametrize("name, message", [("big.png", REAL), ("claims.png", HEADER)], ids=["real", "header-only"])
def test_open_image_refuses_from_the_header(images, name, message):
    for source in (images[name], io.BytesIO(images[name])):
        with pytest.raises(ValueError) as info:
            open_image(source, name)
        assert str(info.value) == message
        assert "bomb" not in str(info.value) and "DOS" not in str(info.value)
    with open_image(images["small.png"], "small.png") as img:
        assert img.size == (8, 8) and img.format == "PNG"


@pytest.mark.parametrize("name, message", [("big.png", REAL), ("claims.png", HEADER)], ids=["real", "header-only"])
def test_a_folder_refuses_a_large_image(tmp_path, images, name, message):
    folder = tmp_path / "imgs"
    folder.mkdir()
    for n in ("small.png", name):
        (folder / n).write_bytes(images[n])
    (tmp_path / "labels.csv").write_bytes(_labels(["small.png", name]))
    with _refused(f"{folder}/{message}"):
        open_images(folder, tmp_path / "labels.csv")


@pytest.mark.parametrize("name, message", [("big.png", REAL), ("claims.png", HEADER)], ids=["real", "header-only"])
def test_a_zip_file_or_upload_refuses_a_large_image(tmp_path, images, name, message):
    data = zip_bytes({"small.png": images["small.png"], name: images[name], "labels.csv": _labels(["small.png", name])})
    (tmp_path / "set.zip").write_bytes(data)
    with _refused(f"{tmp_path / 'set.zip'}/{message}"):
        open_images(tmp_path / "set.zip")
    with _refused(f"upload.zip/{message}"):
        open_zip_images(data, where="upload.zip")


def _onnx(size: int, n_classes: int = 3) -> bytes:
    """A model (N, 3, size, size) -> (N, 3): the mean of each channel, written with onnx.helper."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Flatten", ["p"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", n_classes])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def test_the_recapture_pages_upload_refuses_a_large_image(images):
    data = zip_bytes({"small.png": images["small.png"], "big.png": images["big.png"]})
    with _refused(f"images.zip/{REAL}"):
        probe_uploaded(
            ("model.onnx", _onnx(8)), ("images.zip", data), ("labels.csv", _labels(["small.png", "big.png"]))
        )


def test_the_probe_command_refuses_a_large_image_in_one_line(tmp_path, images, capsys):
    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "claims.png").write_bytes(images["claims.png"])
    (tmp_path / "labels.csv").write_bytes(_labels(["claims.png"]))
    (tmp_path / "m.onnx").write_bytes(_onnx(8))
    argv = ["probe", "--model-file", str(tmp_path / "m.onnx"), "--images", str(folder)]
    assert main([*argv, "--labels", str(tmp_path / "labels.csv"), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {folder}/{HEADER}"]
    assert not (tmp_path / "out").exists()


def test_an_npz_is_refused_from_its_array_header(tmp_path):
    """The ``images`` array of the .npz claims 1 x 20,000 x 20,000 bytes and holds none: refused unread."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": (1, 20_000, 20_000)})
    labels = io.BytesIO()
    np.lib.format.write_array(labels, np.zeros(1, np.int64))
    with zipfile.ZipFile(tmp_path / "set.npz", "w") as zf:
        zf.writestr("images.npy", header.getvalue())  # the header alone (magic string included)
        zf.writestr("labels.npy", labels.getvalue())
    with _refused(f"{tmp_path / 'set.npz'} (`images`): {REAL.removeprefix('big.png: ')}"):
        open_images(tmp_path / "set.npz")


def test_an_onnx_model_with_a_larger_input_is_refused():
    with _refused("big.onnx: input 'x' takes 20,000 x 20,000 images (400,000,000 pixels); images are limited to "):
        OnnxImageClassifier(_onnx(20_000), where="big.onnx")


def test_a_file_swapped_for_a_large_one_after_validation_is_refused_when_read(tmp_path, images):
    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "a.png").write_bytes(images["small.png"])
    (tmp_path / "labels.csv").write_bytes(_labels(["a.png"]))
    opened = open_images(folder, tmp_path / "labels.csv")
    (folder / "a.png").write_bytes(images["claims.png"])
    with _refused(f"{folder}/a.png: is 100,000 x 100,000 pixels"):
        opened.read([0], size=(8, 8), channels=3)
