"""Labelled image inputs of the probe: folders, zips (read in place, never extracted), labels tables."""

import io

import numpy as np
import pytest
from PIL import Image
from probe_kit import N_IMAGES, SIZE, png, write_pngs, zip_bytes

from core.imaging.images import open_images, open_zip_images, png_data_uri


def test_a_png_that_is_not_an_image_is_named(tmp_path, data):
    write_pngs(tmp_path / "imgs", data[0][:4], data[1][:4])
    (tmp_path / "imgs" / "img_02.png").write_bytes(b"GIF89a not really")
    with pytest.raises(ValueError, match=r"img_02\.png: is not a readable PNG or JPEG image"):
        open_images(tmp_path / "imgs", tmp_path / "imgs_labels.csv")


def test_zip_with_labels_inside_reads_like_the_folder(folder, data):
    names = [f"img_{i:02d}.png" for i in range(N_IMAGES)]
    members = {f"set/{n}": png(img) for n, img in zip(names, data[0])}
    members["set/labels.csv"] = (folder / "images_labels.csv").read_bytes()
    members["__MACOSX/._img_00.png"] = b"resource fork"
    zipped = open_zip_images(zip_bytes(members), where="upload.zip")
    plain = open_images(folder / "images", folder / "images_labels.csv")
    assert zipped.record_ids == plain.record_ids
    idx = np.arange(N_IMAGES)
    np.testing.assert_array_equal(
        zipped.read(idx, size=(SIZE, SIZE), channels=3), plain.read(idx, size=(SIZE, SIZE), channels=3)
    )


def test_zip_slip_and_non_images_in_zips_are_refused(data):
    good = {"labels.csv": b"file,label\na.png,0\n", "a.png": png(data[0][0])}
    with pytest.raises(ValueError, match=r"upload\.zip: member '\.\./evil\.png' points outside the archive's root"):
        open_zip_images(zip_bytes({**good, "../evil.png": png(data[0][1])}), where="upload.zip")
    with pytest.raises(ValueError, match=r"member '/etc/evil\.png' points outside"):
        open_zip_images(zip_bytes({**good, "/etc/evil.png": png(data[0][1])}), where="upload.zip")
    with pytest.raises(ValueError, match=r"upload\.zip/readme\.md: is not an image file"):
        open_zip_images(zip_bytes({**good, "readme.md": b"# hi"}), where="upload.zip")
    with pytest.raises(ValueError, match=r"holds 0 \.csv file"):
        open_zip_images(zip_bytes({"a.png": png(data[0][0])}), where="upload.zip")
    bomb = zip_bytes({"labels.csv": b"file,label\na.png,0\n", "a.png": b"\0" * 5_000_000})
    with pytest.raises(ValueError, match=r"zip bomb"):
        open_zip_images(bomb, where="upload.zip")


def test_labels_table_errors_name_row_and_column(tmp_path, data):
    write_pngs(tmp_path / "imgs", data[0][:2], data[1][:2])
    for text, message in [
        ("name,label\na,0\n", r"missing column\(s\) \['file'\]"),
        ("file,label\nimg_00.png,cat\nimg_01.png,1\n", r"row 1, column 'label': 'cat'"),
        ("file,label\nimg_00.png,0\nimg_00.png,1\n", r"row 2, column 'file': 'img_00.png' is listed twice"),
        ("file,label\n../img_00.png,0\n", r"row 1, column 'file': '\.\./img_00\.png' is not a relative"),
    ]:
        (tmp_path / "l.csv").write_text(text)
        with pytest.raises(ValueError, match=message):
            open_images(tmp_path / "imgs", tmp_path / "l.csv")


def test_png_data_uri_enlarges_to_a_readable_size(data):
    import base64

    uri = png_data_uri(data[0][0], min_side=96)
    decoded = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert decoded.size == (96, 96) and decoded.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(decoded)[::6, ::6], data[0][0])


def test_image_sets_travel_pickled_and_read_the_same_images(folder, data, tmp_path):
    """Dask workers get the ImageSet inside their task and read their own images."""
    import pickle

    names = [f"img_{i:02d}.png" for i in range(N_IMAGES)]
    members = {f"set/{n}": png(img) for n, img in zip(names, data[0])}
    members["set/labels.csv"] = (folder / "images_labels.csv").read_bytes()
    (tmp_path / "set.zip").write_bytes(zip_bytes(members))
    np.savez(tmp_path / "set.npz", images=data[0], labels=data[1])
    sources = {
        "folder": open_images(folder / "images", folder / "images_labels.csv"),
        "zip file": open_images(tmp_path / "set.zip"),
        "uploaded zip": open_zip_images((tmp_path / "set.zip").read_bytes(), where="upload.zip"),
        "npz": open_images(tmp_path / "set.npz"),
    }
    idx = np.arange(N_IMAGES)
    for kind, images in sources.items():
        payload = pickle.dumps(images)
        copy = pickle.loads(payload)
        np.testing.assert_array_equal(copy.read(idx, size=(SIZE, SIZE), channels=3), data[0], err_msg=kind)
        assert copy.record_ids == images.record_ids and copy.where == images.where
        if kind == "zip file":  # the path travels, not the archive
            assert len(payload) < len(members["set/img_00.png"]) * N_IMAGES / 2
