"""Synthetic tables: one seeded stream (prefixes, any chunking) that resembles its dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from core.scale.sources import open_source
from core.scale.synthetic import ATOM_SHARE, BLOCK_ROWS, fit_synthetic, write_synthetic
from core.tabular.datasets import load_dataset

N = BLOCK_ROWS + 4_464  # crosses a block boundary


@pytest.fixture(scope="module")
def credit():
    return load_dataset("credit_data")


@pytest.fixture(scope="module")
def sample(generator):
    return generator.sample(N, seed=11)


def test_smaller_tables_are_prefixes_of_larger_ones(generator, sample):
    pd.testing.assert_frame_equal(generator.sample(1000, seed=11), sample.iloc[:1000])
    pd.testing.assert_frame_equal(generator.sample(BLOCK_ROWS + 1, seed=11), sample.iloc[: BLOCK_ROWS + 1])
    blocks = list(generator.iter_blocks(N, seed=11))
    assert [len(b) for b in blocks] == [BLOCK_ROWS, N - BLOCK_ROWS]
    pd.testing.assert_frame_equal(pd.concat(blocks, ignore_index=True), sample)
    assert not generator.sample(100, seed=12).equals(sample.iloc[:100])
    assert len(generator.sample(0, seed=11)) == 0


def test_rows_resemble_the_dataset(credit, sample):
    frame = credit.frame
    assert list(sample.columns) == list(credit.features) + [credit.target]
    share = (sample["Status"] == "bad").mean()
    assert abs(share - (frame["Status"] == "bad").mean()) < 0.01
    for col in credit.features:
        assert abs(sample[col].isna().mean() - frame[col].isna().mean()) < 0.01, col
    for col in credit.numeric:
        values = sample[col].dropna().to_numpy()
        assert values.min() >= frame[col].min() and values.max() <= frame[col].max(), col
        if (frame[col].dropna() % 1 == 0).all():
            assert (values % 1 == 0).all(), col
        # class-conditional means within a tenth of a standard deviation
        for label in credit.classes:
            a = sample.loc[sample["Status"] == label, col].mean()
            b = frame.loc[frame["Status"] == label, col].mean()
            assert abs(a - b) < 0.1 * frame[col].std(), (col, label)
    for col in credit.categorical:
        assert set(sample[col].dropna()) <= set(frame[col].dropna()), col
    # a point mass (no debt) is kept exact rather than smeared by the jitter
    assert (frame["Debt"] == 0).mean() > ATOM_SHARE
    assert abs((sample["Debt"] == 0).mean() - (frame["Debt"] == 0).mean()) < 0.02


def test_rows_are_new_not_copies(credit, sample):
    numeric = list(credit.numeric)
    original = set(map(tuple, credit.frame[numeric].fillna(-1).to_numpy().tolist()))
    copied = np.mean([tuple(r) in original for r in sample[numeric].iloc[:2000].fillna(-1).to_numpy().tolist()])
    assert copied < 0.5


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_written_file_holds_the_same_rows_whatever_the_row_groups(tmp_path, generator, fmt):
    path = write_synthetic(generator, tmp_path / f"x.{fmt}", 3000, seed=4, format=fmt, row_group_rows=700)
    expected = generator.sample(3000, seed=4)
    if fmt == "parquet":
        assert pq.read_metadata(path).num_row_groups == 5
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)
    else:
        ((_, table),) = open_source(path).iter_partitions(10_000)
        # CSV text round-trips every float exactly (shortest repr) and keeps missing values.
        pd.testing.assert_frame_equal(table.to_pandas(), expected, check_exact=True)


def test_bad_arguments(credit, generator, tmp_path):
    with pytest.raises(ValueError, match="`bandwidth` must be a number >= 0; got -1"):
        fit_synthetic(credit, bandwidth=-1)
    with pytest.raises(ValueError, match=r"`swap` must be a probability in \[0, 1\]; got 1.5"):
        fit_synthetic(credit, swap=1.5)
    with pytest.raises(ValueError, match="`n_rows` must be a non-negative int; got -3"):
        generator.sample(-3, seed=0)
    with pytest.raises(ValueError, match="`format` must be 'parquet' or 'csv'; got 'xlsx'"):
        write_synthetic(generator, tmp_path / "x.xlsx", 10, seed=0, format="xlsx")
    with pytest.raises(ValueError, match="`seed` must be"):
        generator.sample(10, seed=None)
