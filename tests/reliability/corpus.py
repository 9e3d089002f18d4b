"""The bad-input corpus of issue 13: every case a new user could hit, with its expected verdict.

A case runs one command line (in-process through :func:`core.cli.main`, exactly what
``python -m core ...`` runs) or one public Python call, on small files built in a fresh
folder. The outcome is classified:

``clear``      the expected exit code (2 for bad input, 0 for legal input), every expected
               pattern in the message (file, row, column or value), no traceback, and the
               output folder in the expected state;
``traceback``  an exception escaped to the user (``python -m core`` would print a traceback
               and exit 1), or the Python API raised something other than ``ValueError`` /
               ``FileNotFoundError`` (a ``KeyError``, a raw ``sqlite3`` error);
``silent``     bad input accepted (exit 0 / no exception) or legal input refused;
``vague``      refused, but the message lacks what the case requires;
``state``      right answer, but the output folder / file is not as it must be afterwards
               (a partial file, a leftover manifest, a modified database).

``tests/reliability/test_corpus.py`` asserts ``clear`` for every case;
``python tests/reliability/count_verdicts.py`` prints the count per verdict (run it on an
older checkout to get the "before" numbers).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import sqlite3
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paired"))
from paired_records import records  # noqa: E402  (shared with tests/cli/test_cli_paired.py)

VERDICTS = ("clear", "traceback", "silent", "vague", "state")


# ------------------------------------------------------------------------------------------
# Files


def table(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """A legal tabular-audit table: two numeric features, one categorical, a binary target."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n).round(3)
    x2 = rng.normal(size=n).round(3)
    c = rng.choice(["a", "b", "c"], size=n)
    y = ((x1 + 0.5 * x2 + rng.normal(scale=0.5, size=n)) > 0).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "c": c, "y": y})


def side(n: int = 40, seed: int = 0, shift: int = 0) -> pd.DataFrame:
    """One side of an unpaired cell: record_id,true_label,pred,max_prob,true_prob."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    pred = np.where(rng.random(n) < 0.8, y, 1 - y)
    mp = np.round(rng.uniform(0.5, 1, n), 2)
    return pd.DataFrame(
        {
            "record_id": np.arange(n) + shift,
            "true_label": y,
            "pred": pred,
            "max_prob": mp,
            "true_prob": np.where(pred == y, mp, np.round(1 - mp, 2)),
        }
    )


def sha_tree(path: Path) -> str | None:
    """Digest of a file, or of a folder (names + bytes); None if absent."""
    if not path.exists():
        return None
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class Ctx:
    """The case's folder and the digests taken before running it."""

    t: Path
    before: dict[str, str | None] = field(default_factory=dict)

    def __truediv__(self, name: str) -> Path:
        return self.t / name

    def csv(self, name: str, frame: pd.DataFrame) -> Path:
        frame.to_csv(self.t / name, index=False)
        return self.t / name

    def text(self, name: str, content: str | bytes) -> Path:
        p = self.t / name
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
        return p

    def snap(self, name: str) -> None:
        self.before[name] = sha_tree(self.t / name)


# ------------------------------------------------------------------------------------------
# Expected states after the run


def absent(name: str = "out") -> Callable[[Ctx], str | None]:
    """Nothing under ``name`` and no temporary sibling left behind."""

    def check(ctx: Ctx) -> str | None:
        p = ctx / name
        if p.exists():
            return f"{name} exists"
        left = [q.name for q in p.parent.iterdir() if q.name.startswith(f".{p.name}")]
        return f"temporary leftovers {left}" if left else None

    return check


def unchanged(*names: str) -> Callable[[Ctx], str | None]:
    """Byte-identical to the snapshot taken by ``setup`` (``ctx.snap``), no temporary sibling."""

    def check(ctx: Ctx) -> str | None:
        for name in names:
            if sha_tree(ctx / name) != ctx.before[name]:
                return f"{name} changed"
            p = ctx / name
            left = [q.name for q in p.parent.iterdir() if q.name.startswith(f".{p.name}.")]
            if left:
                return f"temporary leftovers {left}"
        return None

    return check


def has_files(name: str, *files: str) -> Callable[[Ctx], str | None]:
    def check(ctx: Ctx) -> str | None:
        missing = [f for f in files if not (ctx / name / f).exists()]
        return f"{name} lacks {missing}" if missing else None

    return check


def no_manifest(name: str = "out") -> Callable[[Ctx], str | None]:
    def check(ctx: Ctx) -> str | None:
        return "_manifest.json left behind" if (ctx / name / "_manifest.json").exists() else None

    return check


def ok_state(ctx: Ctx) -> str | None:
    return None


# ------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Case:
    """One corpus case.

    ``argv`` items may contain ``{t}`` (the case's folder); ``call(ctx)`` is a Python call
    instead of a command. ``code`` 2 = must be refused, 0 = must be accepted. ``match`` are
    regular expressions (case-insensitive) that must all occur in the message (stderr, or
    the exception text) — or in the warnings for an accepted case.
    """

    id: str
    setup: Callable[[Ctx], None]
    argv: tuple[str, ...] = ()
    call: Callable[[Ctx], Any] | None = None
    code: int = 2
    match: tuple[str, ...] = ()
    state: Callable[[Ctx], str | None] = ok_state


@dataclass(frozen=True)
class Outcome:
    code: int
    message: str
    traceback: str | None


def run(case: Case, t: Path) -> tuple[str, Outcome, str]:
    """Run ``case`` in the empty folder ``t``; return (verdict, outcome, explanation)."""
    ctx = Ctx(t)
    case.setup(ctx)
    out, err = io.StringIO(), io.StringIO()
    tb = None
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        # Every warning shown, as in a fresh process (the registry would hide repeats).
        warnings.simplefilter("always")
        try:
            if case.call is not None:
                case.call(ctx)
                code = 0
            else:
                from core.cli import main

                code = main([a.format(t=t) for a in case.argv])
        except SystemExit as exc:  # argparse errors
            code = exc.code if isinstance(exc.code, int) else 2
        except (ValueError, FileNotFoundError) as exc:
            if case.call is None:
                tb = traceback.format_exc()
                code = 1
            else:
                err.write(f"{type(exc).__name__}: {exc}")
                code = 2
        except Exception:  # noqa: BLE001 - the point is to catch what escapes
            tb = traceback.format_exc()
            code = 1
    messages = err.getvalue() + "".join(f"\nwarning: {w.message}" for w in caught)
    outcome = Outcome(code=code, message=messages, traceback=tb)
    if tb is not None or "Traceback (most recent call last)" in err.getvalue():
        return "traceback", outcome, (tb or err.getvalue()).strip().splitlines()[-1]
    if code != case.code:
        return ("silent" if code == 0 or case.code == 0 else "vague"), outcome, f"exit {code}, expected {case.code}"
    missing = [m for m in case.match if not re.search(m, messages, re.I | re.S)]
    if missing:
        return "vague", outcome, f"message lacks {missing}"
    problem = case.state(ctx)
    if problem:
        return "state", outcome, problem
    return "clear", outcome, ""


# ------------------------------------------------------------------------------------------
# Builders of the corpus


def _noop(ctx: Ctx) -> None:
    pass


def _write(name: str, content: str | bytes) -> Callable[[Ctx], None]:
    return lambda ctx: ctx.text(name, content) and None


def _frame(name: str, make: Callable[[], pd.DataFrame]) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        frame = make()
        if name.endswith(".parquet"):
            frame.to_parquet(ctx / name, index=False)
        else:
            ctx.csv(name, frame)

    return setup


def _both(*setups: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        for s in setups:
            s(ctx)

    return setup


def _mutate(fn: Callable[[pd.DataFrame], pd.DataFrame], base: Callable[[], pd.DataFrame] = table):
    return lambda: fn(base().copy())


def _set(frame: pd.DataFrame, row: int, col: str, value) -> pd.DataFrame:
    frame[col] = frame[col].astype(object)
    frame.loc[row, col] = value
    return frame


def _dup_header_csv(n: int = 120) -> str:
    t = table(n)
    lines = ["x1,x2,x1,y"] + [f"{a},{b},{a * 2},{y}" for a, b, y in zip(t.x1, t.x2, t.y)]
    return "\n".join(lines) + "\n"


def _prior_out(ctx: Ctx) -> None:
    """A previous good result in ``out`` (to prove a failed rerun leaves it byte-identical)."""
    ctx.text("out/intervals.csv", "previous,result\n1,2\n")
    ctx.snap("out")


AUDIT = ("audit", "--data", "{t}/data.csv", "--target", "y", "--model", "logreg", "--out", "{t}/out", "--no-progress")
OWN_AUDIT = (
    "audit",
    "--model-file",
    "{t}/model.skops",
    "--train",
    "{t}/train.csv",
    "--test",
    "{t}/test.csv",
    "--target",
    "y",
    "--out",
    "{t}/out",
)


def _own_model_files(mutate: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Ctx], None]:
    """A logistic regression on x1, x2 saved with skops, and train / test tables after ``mutate``."""

    def setup(ctx: Ctx) -> None:
        import skops.io as sio
        from sklearn.linear_model import LogisticRegression

        frame = mutate(table(160)[["x1", "x2", "y"]].copy())
        model = LogisticRegression().fit(table(160)[["x1", "x2"]], table(160)["y"])
        sio.dump(model, ctx / "model.skops")
        ctx.csv("train.csv", frame.iloc[:100])
        ctx.csv("test.csv", frame.iloc[100:])

    return setup


_constant_model_files = _own_model_files(lambda f: f.assign(x1=0.0, x2=1.0))
_constant_model_files_partly = _own_model_files(lambda f: f.assign(x2=1.0))
CERTIFY = (
    "certify",
    "--data",
    "{t}/data.csv",
    "--target",
    "y",
    "--model",
    "logreg",
    "--fit-rows",
    "100",
    "--out",
    "{t}/out",
    "--no-progress",
)
PAIRED = ("paired", "--records", "{t}/records.csv", "--tau", "0.8", "--out", "{t}/out", "--lambdas", "0,1")
OWN_MODEL = (
    "audit",
    "--model-file",
    "{t}/m.skops",
    "--train",
    "{t}/train.csv",
    "--test",
    "{t}/data.csv",
    "--target",
    "y",
    "--out",
    "{t}/out",
)
GRID = (
    "paired-grid",
    "--records",
    "{t}/records.parquet",
    "--tau",
    "0.8",
    "--out",
    "{t}/out",
    "--no-progress",
    "--lambdas",
    "0,1",
)
UNPAIRED = ("paired", "--clean", "{t}/clean.csv", "--perturbed", "{t}/pert.csv", "--tau", "0.8", "--out", "{t}/out")


def _replace(argv: tuple[str, ...], flag: str, value: str) -> tuple[str, ...]:
    out = list(argv)
    out[out.index(flag) + 1] = value
    return tuple(out)


def _replace_flag(argv: tuple[str, ...], flag: str, new: str) -> tuple[str, ...]:
    return tuple(new if a == flag else a for a in argv)


def _drop(argv: tuple[str, ...], flag: str) -> tuple[str, ...]:
    out = list(argv)
    i = out.index(flag)
    del out[i : i + 2]
    return tuple(out)


good_table = _frame("data.csv", table)
good_records = _frame("records.csv", records)
good_records_pq = _frame("records.parquet", records)
good_unpaired = _both(_frame("clean.csv", side), _frame("pert.csv", lambda: side(seed=1)))


def _table_cases(prefix: str, argv: tuple[str, ...]) -> list[Case]:
    """Bad tables, given the same way to ``audit`` and ``certify``: the same verdict from both."""
    bad: list[tuple[str, Callable[[Ctx], None], tuple[str, ...], tuple[str, ...]]] = [
        ("data-missing", _noop, (), (r"data\.csv", r"does not exist")),
        ("data-is-folder", lambda ctx: (ctx / "data.csv").mkdir(), (), (r"data\.csv", r"folder|directory")),
        ("data-empty-file", _write("data.csv", ""), (), (r"data\.csv", r"empty")),
        (
            "png-renamed-csv",
            _write("data.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)),
            (),
            (r"data\.csv", r"PNG image", r"not a text table"),
        ),
        ("duplicate-header", _write("data.csv", _dup_header_csv()), (), (r"data\.csv", r"'x1'", r"more than once")),
        ("target-missing", good_table, ("--target", "label"), (r"data\.csv", r"'label'", r"not found|not a column")),
        (
            "single-class",
            _frame("data.csv", _mutate(lambda f: f.assign(y=1))),
            (),
            (r"data\.csv", r"'y'", r"single class"),
        ),
        (
            "thousand-classes",
            _frame("data.csv", lambda: table(1200).assign(y=np.arange(1200))),
            (),
            (r"data\.csv", r"'y'", r"\d{3,} distinct values", r"at most 50"),
        ),
        (
            "all-nan-feature",
            _frame("data.csv", _mutate(lambda f: f.assign(x2=np.nan))),
            (),
            (r"data\.csv", r"'x2'", r"entirely missing"),
        ),
        (
            "inf-feature",
            _frame("data.csv", _mutate(lambda f: _set(f, 7, "x1", np.inf))),
            (),
            (r"data\.csv", r"'x1'", r"row 8", r"inf"),
        ),
        (
            "minus-inf-feature",
            _frame("data.csv", _mutate(lambda f: _set(f, 3, "x2", -np.inf))),
            (),
            (r"data\.csv", r"'x2'", r"row 4", r"-inf"),
        ),
        ("zero-weights", good_table, ("--weights", "0,0,0"), (r"weights", r"all be zero|all zero")),
        ("negative-weight", good_table, ("--weights", "-1,1,1"), (r"weights", r"-1", r"non-negative")),
        ("two-weights", good_table, ("--weights", "1,1"), (r"weights", r"three")),
        ("text-weights", good_table, ("--weights", "a,b,c"), (r"weights", r"a,b,c")),
        ("nan-weights", good_table, ("--weights", "nan,1,1"), (r"weights", r"nan")),
        ("severity-above-one", good_table, ("--severities", "0.5,2"), (r"severities", r"2")),
        ("depth-zero", good_table, ("--depth", "0"), (r"depth", r"'0'")),
        ("protocol-missing", good_table, ("--protocol", "{t}/nope.json"), (r"nope\.json", r"does not exist")),
        (
            "protocol-not-json",
            _both(good_table, _write("p.json", "{not json")),
            ("--protocol", "{t}/p.json"),
            (r"protocol|JSON",),
        ),
        ("merge-threshold-two", good_table, ("--merge-threshold", "2"), (r"merge_threshold", r"2")),
        ("out-is-file", _both(good_table, _write("out", "x")), (), (r"out", r"not a folder")),
        (
            "blocks-missing",
            good_table,
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"blocks\.yaml", r"does not exist"),
        ),
        (
            "blocks-binary",
            _both(good_table, _write("blocks.yaml", b"\xff\xfe\x00\x01\x80binary")),
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"blocks\.yaml", r"not UTF-8"),
        ),
        (
            "blocks-bad-yaml",
            _both(good_table, _write("blocks.yaml", "a: [b\n")),
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"blocks\.yaml", r"parse"),
        ),
        (
            "blocks-unknown-column",
            _both(good_table, _write("blocks.yaml", "nope: b1\nx1: b1\n")),
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"'nope'", r"not a feature"),
        ),
        (
            "blocks-a-list",
            _both(good_table, _write("blocks.yaml", "- x1\n- x2\n")),
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"blocks", r"mapping"),
        ),
        (
            "blocks-folder",
            _both(good_table, lambda ctx: (ctx / "blocks.yaml").mkdir()),
            ("--blocks", "{t}/blocks.yaml", "--grouping", "domain_block"),
            (r"blocks\.yaml", r"folder"),
        ),
    ]
    cases = []
    for name, setup, extra, match in bad:
        args = argv
        extra = list(extra)
        while extra:
            flag, value = extra[0], extra[1]
            extra = extra[2:]
            args = _replace(args, flag, value) if flag in args else (*args, flag, value)
        state = absent() if name != "out-is-file" else unchanged("out")
        if name == "out-is-file":

            def setup(ctx, _s=setup):  # noqa: E306
                _s(ctx)
                ctx.snap("out")

        cases.append(Case(f"{prefix}-{name}", setup, args, match=match, state=state))
    return cases


def _audit_only() -> list[Case]:
    return [
        Case("audit-header-only", _write("data.csv", "x1,x2,y\n"), AUDIT, match=(r"data\.csv", r"no data rows")),
        Case("audit-single-column", _write("data.csv", "y\n1\n0\n"), AUDIT, match=(r"data\.csv", r"single column")),
        Case(
            "audit-binary-csv", _write("data.csv", b"PK\x03\x04\x00\x00binary"), AUDIT, match=(r"data\.csv", r"binary")
        ),
        Case(
            "audit-latin1-csv",
            _write("data.csv", "x1,x2,y\n1,caf\xe9,0\n2,b,1\n".encode("latin-1")),
            AUDIT,
            match=(r"data\.csv", r"UTF-8"),
        ),
        Case(
            "audit-parquet-suffix-csv-content",
            _write("data.parquet", "x1,y\n1,0\n"),
            _replace(AUDIT, "--data", "{t}/data.parquet"),
            match=(r"data\.parquet", r"not a Parquet"),
        ),
        Case(
            "audit-unknown-suffix",
            _write("data.xlsx", "x"),
            _replace(AUDIT, "--data", "{t}/data.xlsx"),
            match=(r"data\.xlsx", r"suffix"),
        ),
        Case(
            "audit-target-all-missing",
            _frame("data.csv", _mutate(lambda f: f.assign(y=np.nan))),
            AUDIT,
            match=(r"data\.csv", r"'y'", r"no values"),
        ),
        Case(
            "audit-out-not-empty",
            _both(good_table, _prior_out),
            AUDIT,
            match=(r"out", r"not empty", r"--force"),
            state=unchanged("out"),
        ),
        Case("audit-unknown-model", good_table, _replace(AUDIT, "--model", "nope"), match=(r"'nope'", r"model")),
        Case(
            "audit-unknown-dataset",
            _noop,
            ("audit", "--dataset", "nope", "--out", "{t}/out"),
            match=(r"'nope'", r"dataset"),
        ),
        Case("audit-dataset-and-data", good_table, (*AUDIT, "--dataset", "credit_data"), match=(r"exactly one",)),
        Case(
            "audit-target-without-data",
            _noop,
            ("audit", "--dataset", "credit_data", "--target", "y", "--out", "{t}/out"),
            match=(r"--target", r"only applies"),
        ),
        Case("audit-data-without-target", good_table, _drop(AUDIT, "--target"), match=(r"--target", r"required")),
        Case("audit-repeated-seed", good_table, (*AUDIT, "--seeds", "1,1"), match=(r"--seed", r"repeats")),
        Case("audit-negative-seed", good_table, (*AUDIT, "--seeds", "-1"), match=(r"non-negative",)),
        Case("audit-max-rows-zero", good_table, (*AUDIT, "--max-rows", "0"), match=(r"positive integer", r"'0'")),
        Case("audit-tau-p-above-one", good_table, (*AUDIT, "--tau-p", "1.5"), match=(r"tau_p", r"1\.5")),
        Case("audit-unknown-operator", good_table, (*AUDIT, "--operators", "zap"), match=(r"operators", r"zap")),
        Case("audit-draws-zero", good_table, (*AUDIT, "--draws", "0"), match=(r"positive integer",)),
        Case("audit-masking-rate-two", good_table, (*AUDIT, "--masking-rates", "2"), match=(r"masking", r"2")),
        Case(
            "audit-constant-features-warn",
            _frame("data.csv", _mutate(lambda f: f.assign(x2=1.0, c="k"))),
            AUDIT,
            code=0,
            match=(r"warning", r"constant", r"'x2'", r"'c'"),
            state=has_files("out", "protocol.json"),
        ),
        Case(
            "audit-every-feature-constant-refused",
            _frame("data.csv", _mutate(lambda f: f.assign(x1=0.0, x2=1.0, c="k"))),
            AUDIT,
            match=(r"data\.csv", r"every feature column is constant", r"'x1' = 0\.0", r"'x2' = 1\.0", r"'c' = 'k'"),
            state=absent(),
        ),
        Case(
            "audit-model-file-every-feature-constant-refused",
            _constant_model_files,
            (*OWN_AUDIT,),
            match=(r"every feature column is constant", r"'x1' = 0\.0", r"'x2' = 1\.0"),
            state=absent(),
        ),
        Case(
            "audit-model-file-some-constant-warns",
            _constant_model_files_partly,
            (*OWN_AUDIT,),
            code=0,
            match=(r"warning", r"constant", r"'x2'"),
            state=has_files("out", "certificates.csv"),
        ),
        Case("audit-good-table", good_table, AUDIT, code=0, state=has_files("out", "certificates.csv", "summary.md")),
        Case(
            "audit-model-file-train-png",
            _both(good_table, _write("train.csv", b"\x89PNG\r\n\x1a\n" + bytes(64))),
            OWN_MODEL,
            match=(r"train\.csv", r"PNG image", r"not a text table"),
            state=absent(),
        ),
        Case(
            "audit-model-file-test-duplicate-header",
            _both(_frame("train.csv", table), _write("data.csv", _dup_header_csv())),
            OWN_MODEL,
            match=(r"data\.csv", r"'x1'", r"more than once"),
            state=absent(),
        ),
        Case(
            "audit-gzip-table",
            lambda ctx: ctx.text("data.csv.gz", __import__("gzip").compress(table().to_csv(index=False).encode())),
            _replace(AUDIT, "--data", "{t}/data.csv.gz"),
            code=0,
            state=has_files("out", "certificates.csv"),
        ),
    ]


def _certify_only() -> list[Case]:
    audit_missing = (
        "certify",
        "--data",
        "{t}/data.csv",
        "--audit",
        "{t}/nope.pkl",
        "--out",
        "{t}/out",
        "--no-progress",
    )
    return [
        Case(
            "certify-audit-pkl-missing",
            good_table,
            audit_missing,
            match=(r"nope\.pkl", r"does not exist"),
            state=absent(),
        ),
        Case(
            "certify-model-from-pkl-missing",
            good_table,
            _replace_flag(audit_missing, "--audit", "--model-from"),
            match=(r"nope\.pkl", r"does not exist", r"warning: --model-from is deprecated.*use --audit instead"),
            state=absent(),
        ),
        Case(
            "certify-audit-folder-without-task",
            _both(good_table, lambda ctx: (ctx / "runs").mkdir()),
            _replace(audit_missing, "--audit", "{t}/runs"),
            match=(r"runs", r"no saved task", r"_task\.zip"),
            state=absent(),
        ),
        Case(
            "certify-model-from-missing",
            good_table,
            ("certify", "--data", "{t}/data.csv", "--model-from", "{t}/nope", "--out", "{t}/out", "--no-progress"),
            match=(r"nope", r"no saved task|does not exist"),
            state=absent(),
        ),
        Case(
            "certify-model-from-with-weights",
            good_table,
            ("certify", "--data", "{t}/data.csv", "--model-from", "{t}/nope", "--weights", "1,1,1", "--out", "{t}/out"),
            match=(r"--weights", r"cannot be combined"),
            state=absent(),
        ),
        Case(
            "certify-dask-without-workers",
            good_table,
            (*CERTIFY, "--engine", "dask"),
            match=(r"--workers", r"--scheduler"),
            state=absent(),
        ),
        Case("certify-workers-local", good_table, (*CERTIFY, "--workers", "2"), match=(r"only apply",), state=absent()),
        Case(
            "certify-id-column-is-target",
            good_table,
            (*CERTIFY, "--id-column", "y"),
            match=(r"id_column", r"'y'"),
            state=absent(),
        ),
        Case(
            "certify-fit-rows-one",
            good_table,
            _replace(CERTIFY, "--fit-rows", "1"),
            match=(r"fit_rows", r"1"),
            state=absent(),
        ),
        Case(
            "certify-unknown-model",
            good_table,
            _replace(CERTIFY, "--model", "nope"),
            match=(r"model", r"'nope'"),
            state=absent(),
        ),
        Case(
            "certify-binary-csv",
            _write("data.csv", b"\x00\x01\x02PK binary\n\x00"),
            CERTIFY,
            match=(r"data\.csv",),
            state=absent(),
        ),
        Case(
            "certify-folder-without-parquet",
            lambda ctx: (ctx / "data").mkdir(),
            _replace(CERTIFY, "--data", "{t}/data"),
            match=(r"data", r"no \*\.parquet"),
            state=absent(),
        ),
        Case(
            "certify-unknown-suffix",
            _write("data.txt", "x"),
            _replace(CERTIFY, "--data", "{t}/data.txt"),
            match=(r"data\.txt", r"format"),
            state=absent(),
        ),
        Case(
            "certify-good-table", good_table, CERTIFY, code=0, state=has_files("out", "_manifest.json", "_summary.json")
        ),
        Case(
            "certify-constant-feature-warns",
            _frame("data.csv", _mutate(lambda f: f.assign(x2=1.0))),
            CERTIFY,
            code=0,
            match=(r"warning", r"constant", r"'x2'"),
            state=has_files("out", "_summary.json"),
        ),
    ]


def _paired_cases() -> list[Case]:
    def rec(fn):
        return _frame("records.csv", _mutate(fn, records))

    return [
        Case(
            "paired-records-missing",
            _noop,
            PAIRED,
            match=(r"records\.csv", r"no such file|does not exist"),
            state=absent(),
        ),
        Case(
            "paired-records-folder",
            lambda ctx: (ctx / "records.csv").mkdir(),
            PAIRED,
            match=(r"records\.csv", r"folder"),
            state=absent(),
        ),
        Case(
            "paired-records-no-suffix",
            _write("records", "a,b\n1,2\n"),
            _replace(PAIRED, "--records", "{t}/records"),
            match=(r"records", r"unknown file type|expected \.csv"),
            state=absent(),
        ),
        Case("paired-records-empty", _write("records.csv", ""), PAIRED, match=(r"records\.csv",), state=absent()),
        Case(
            "paired-records-semicolons-ok",
            lambda ctx: ctx.text("records.csv", records().to_csv(index=False, sep=";")),
            PAIRED,
            code=0,
            state=has_files("out", "intervals.csv"),
        ),
        Case(
            "paired-records-gz-not-gzip",
            lambda ctx: ctx.text("records.csv.gz", records().to_csv(index=False)),
            _replace(PAIRED, "--records", "{t}/records.csv.gz"),
            match=(r"records\.csv\.gz", r"not a gzip file"),
            state=absent(),
        ),
        Case(
            "paired-records-binary",
            _write("records.csv", b"\x00\x01\x02\x03"),
            PAIRED,
            match=(r"records\.csv", r"binary|could not be read"),
            state=absent(),
        ),
        Case(
            "paired-records-latin1",
            _write("records.csv", "model,x\ncaf\xe9,1\n".encode("latin-1")),
            PAIRED,
            match=(r"records\.csv", r"UTF-8|could not be read"),
            state=absent(),
        ),
        Case(
            "paired-records-corrupt-parquet",
            _write("records.parquet", b"PAR1 truncated"),
            _replace(PAIRED, "--records", "{t}/records.parquet"),
            match=(r"records\.parquet",),
            state=absent(),
        ),
        Case(
            "paired-missing-column",
            rec(lambda f: f.drop(columns=["pert_pred"])),
            PAIRED,
            match=(r"records\.csv", r"pert_pred"),
            state=absent(),
        ),
        Case(
            "paired-duplicate-header",
            _write("records.csv", "model,model,condition\na,b,c\n"),
            PAIRED,
            match=(r"records\.csv", r"'model'", r"more than once"),
            state=absent(),
        ),
        Case(
            "paired-empty-cell",
            rec(lambda f: _set(f, 5, "clean_pred", np.nan)),
            PAIRED,
            match=(r"records\.csv", r"row 6", r"clean_pred"),
            state=absent(),
        ),
        Case(
            "paired-probability-above-one",
            rec(lambda f: _set(f, 2, "pert_max_prob", 1.5)),
            PAIRED,
            match=(r"records\.csv", r"row 3", r"pert_max_prob", r"1\.5"),
            state=absent(),
        ),
        Case(
            "paired-probability-inf",
            rec(lambda f: _set(f, 2, "clean_max_prob", np.inf)),
            PAIRED,
            match=(r"records\.csv", r"row 3", r"clean_max_prob", r"inf"),
            state=absent(),
        ),
        Case(
            "paired-probability-text",
            rec(lambda f: _set(f, 4, "clean_max_prob", "high")),
            PAIRED,
            match=(r"records\.csv", r"row 5", r"clean_max_prob", r"high"),
            state=absent(),
        ),
        Case(
            "paired-label-not-integer",
            rec(lambda f: _set(f, 1, "true_label", 1.5)),
            PAIRED,
            match=(r"records\.csv", r"row 2", r"true_label", r"1\.5"),
            state=absent(),
        ),
        Case(
            "paired-true-prob-above-max",
            rec(
                lambda f: _set(f, 0, "clean_true_prob", 1.0).assign(
                    clean_max_prob=lambda g: g["clean_max_prob"].where(g.index != 0, 0.5)
                )
            ),
            PAIRED,
            match=(r"records\.csv", r"row 1", r"clean_true_prob"),
            state=absent(),
        ),
        Case(
            "paired-duplicate-record",
            rec(lambda f: _set(f, 1, "record_id", 0)),
            PAIRED,
            match=(r"records\.csv", r"record_id", r"0"),
            state=absent(),
        ),
        Case(
            "paired-bad-split",
            rec(lambda f: _set(f, 3, "split", "test")),
            PAIRED,
            match=(r"records\.csv", r"row 4", r"split", r"test"),
            state=absent(),
        ),
        Case(
            "paired-tau-above-one",
            good_records,
            _replace(PAIRED, "--tau", "1.5"),
            match=(r"tau", r"1\.5"),
            state=absent(),
        ),
        Case("paired-tau-nan", good_records, _replace(PAIRED, "--tau", "nan"), match=(r"tau", r"nan"), state=absent()),
        Case(
            "paired-tau-text", good_records, _replace(PAIRED, "--tau", "high"), match=(r"tau", r"high"), state=absent()
        ),
        Case(
            "paired-tau-negative",
            good_records,
            _replace(PAIRED, "--tau", "-0.5"),
            match=(r"tau", r"-0\.5"),
            state=absent(),
        ),
        Case(
            "paired-records-and-clean",
            _both(good_records, good_unpaired),
            (*PAIRED, "--clean", "{t}/clean.csv"),
            match=(r"--records", r"not both"),
            state=absent(),
        ),
        Case(
            "paired-clean-without-perturbed",
            good_unpaired,
            _drop(_drop(UNPAIRED, "--perturbed"), "--clean") + ("--clean", "{t}/clean.csv"),
            match=(r"--perturbed",),
            state=absent(),
        ),
        Case(
            "paired-probes-without-clean-outputs",
            good_records,
            (*PAIRED, "--probes", "{t}/records.csv"),
            match=(r"--clean-outputs",),
            state=absent(),
        ),
        Case(
            "paired-out-is-file",
            _both(good_records, _write("out", "x"), lambda ctx: ctx.snap("out")),
            PAIRED,
            match=(r"out", r"not a folder"),
            state=unchanged("out"),
        ),
        Case(
            "paired-out-not-empty",
            _both(good_records, _prior_out),
            PAIRED,
            match=(r"out", r"not empty"),
            state=unchanged("out"),
        ),
        Case("paired-bad-level", good_records, (*PAIRED, "--levels", "I9"), match=(r"I9",), state=absent()),
        Case(
            "paired-budget-two",
            good_records,
            (*PAIRED, "--budget", "2"),
            match=(r"budget|\[0, 1\]", r"2"),
            state=absent(),
        ),
        Case(
            "paired-negative-lambda",
            good_records,
            _replace(PAIRED, "--lambdas", "-1,0.5"),
            match=(r"lambda", r"-1"),
            state=absent(),
        ),
        Case(
            "paired-coverage-above-one",
            good_records,
            (*PAIRED, "--coverages", "0.5,1.5"),
            match=(r"coverage", r"1\.5"),
            state=absent(),
        ),
        Case(
            "paired-unpaired-class-mismatch",
            _both(_frame("clean.csv", side), _frame("pert.csv", lambda: side(n=41, seed=1))),
            UNPAIRED,
            match=(r"class", r"clean\.csv|pert\.csv"),
            state=absent(),
        ),
        Case(
            "paired-unpaired-missing-column",
            _both(_frame("clean.csv", lambda: side().drop(columns=["pred"])), _frame("pert.csv", lambda: side(seed=1))),
            UNPAIRED,
            match=(r"clean\.csv", r"pred"),
            state=absent(),
        ),
        Case(
            "paired-counts-missing-class",
            _both(good_unpaired, _write("counts.csv", "true_label,k\n0,5\n")),
            (*UNPAIRED, "--counts", "{t}/counts.csv"),
            match=(r"counts\.csv", r"class 1"),
            state=absent(),
        ),
        Case(
            "paired-counts-impossible-k",
            _both(good_unpaired, _write("counts.csv", "true_label,k\n0,500\n1,1\n")),
            (*UNPAIRED, "--counts", "{t}/counts.csv"),
            match=(r"counts\.csv", r"k=500"),
            state=absent(),
        ),
        Case(
            "paired-counts-folder",
            _both(good_unpaired, lambda ctx: (ctx / "counts.csv").mkdir()),
            (*UNPAIRED, "--counts", "{t}/counts.csv"),
            match=(r"counts\.csv", r"folder"),
            state=absent(),
        ),
        Case(
            "paired-good-records",
            good_records,
            PAIRED,
            code=0,
            state=has_files("out", "intervals.csv", "manifest.json"),
        ),
        Case("paired-good-unpaired", good_unpaired, UNPAIRED, code=0, state=has_files("out", "intervals.csv")),
        Case(
            "paired-good-records-force-replaces",
            _both(good_records, _prior_out),
            (*PAIRED, "--force"),
            code=0,
            state=has_files("out", "manifest.json"),
        ),
    ]


def _grid_cases() -> list[Case]:
    def rec(fn):
        return _frame("records.parquet", _mutate(fn, records))

    return [
        Case(
            "grid-tau-above-one",
            good_records_pq,
            _replace(GRID, "--tau", "1.5"),
            match=(r"tau", r"1\.5"),
            state=absent(),
        ),
        Case("grid-tau-nan", good_records_pq, _replace(GRID, "--tau", "nan"), match=(r"tau", r"nan"), state=absent()),
        Case("grid-tau-text", good_records_pq, _replace(GRID, "--tau", "x"), match=(r"tau", r"'x'"), state=absent()),
        Case("grid-records-missing", _noop, GRID, match=(r"records\.parquet", r"not exist"), state=absent()),
        Case(
            "grid-records-folder-empty",
            lambda ctx: (ctx / "records").mkdir(),
            _replace(GRID, "--records", "{t}/records"),
            match=(r"records", r"no .*parquet"),
            state=absent(),
        ),
        Case(
            "grid-records-corrupt",
            _write("records.parquet", b"PAR1 nope"),
            GRID,
            match=(r"records\.parquet",),
            state=absent(),
        ),
        Case(
            "grid-missing-column",
            rec(lambda f: f.drop(columns=["clean_pred"])),
            GRID,
            match=(r"records\.parquet", r"clean_pred"),
            state=absent(),
        ),
        Case(
            "grid-probability-above-one-late-row",
            rec(lambda f: _set(f, 100, "pert_max_prob", 1.5)),
            GRID,
            match=(r"records\.parquet", r"row 101", r"pert_max_prob", r"1\.5"),
            state=absent(),
        ),
        Case(
            "grid-empty-cell",
            rec(lambda f: _set(f, 70, "clean_pred", None)),
            GRID,
            match=(r"records\.parquet", r"row 71", r"clean_pred"),
            state=absent(),
        ),
        Case(
            "grid-label-not-integer",
            rec(lambda f: _set(f, 90, "true_label", 2.5)),
            GRID,
            match=(r"records\.parquet", r"row 91", r"true_label"),
            state=absent(),
        ),
        Case("grid-bad-level", good_records_pq, (*GRID, "--levels", "I0,I9"), match=(r"I9",), state=absent()),
        Case(
            "grid-out-is-file",
            _both(good_records_pq, _write("out", "x"), lambda ctx: ctx.snap("out")),
            GRID,
            match=(r"out", r"not a folder"),
            state=unchanged("out"),
        ),
        Case(
            "grid-dask-without-workers",
            good_records_pq,
            (*GRID, "--engine", "dask"),
            match=(r"--workers",),
            state=absent(),
        ),
        Case(
            "grid-clean-coverage-two",
            good_records_pq,
            (*GRID, "--clean-coverage", "2"),
            match=(r"clean.coverage|\[0, 1\]", r"2"),
            state=absent(),
        ),
        Case(
            "grid-corrected-rerun-after-bad-tau",
            _grid_after_bad_tau,
            GRID,
            code=0,
            state=has_files("out", "_summary.json"),
        ),
        Case(
            "grid-good-records",
            good_records_pq,
            GRID,
            code=0,
            state=has_files("out", "_manifest.json", "_summary.json"),
        ),
    ]


def _grid_after_bad_tau(ctx: Ctx) -> None:
    """``paired_grid(tau=1.5)`` first (the Python API, past argparse's own check); the case then
    runs the corrected command, which must not be blocked by anything the bad call left."""
    from core.scale.paired_grid import paired_grid

    records().to_parquet(ctx / "records.parquet", index=False)
    try:
        paired_grid(ctx / "records.parquet", ctx / "out", tau=1.5, lambdas=(0.0, 1.0))
    except ValueError:
        pass


def _synth_cases() -> list[Case]:
    synth = ("synth", "--rows", "50", "--out", "{t}/big.parquet")
    return [
        Case(
            "synth-out-folder",
            lambda ctx: (ctx / "big.parquet").mkdir(),
            synth,
            match=(r"big\.parquet", r"folder"),
            state=lambda ctx: None if (ctx / "big.parquet").is_dir() else "gone",
        ),
        Case(
            "synth-out-bad-suffix",
            _noop,
            _replace(synth, "--out", "{t}/big.xlsx"),
            match=(r"\.parquet or \.csv",),
            state=absent("big.xlsx"),
        ),
        Case(
            "synth-unknown-dataset",
            _noop,
            (*synth, "--dataset", "nope"),
            match=(r"'nope'",),
            state=absent("big.parquet"),
        ),
        Case(
            "synth-rows-zero",
            _noop,
            _replace(synth, "--rows", "0"),
            match=(r"positive integer",),
            state=absent("big.parquet"),
        ),
        Case(
            "synth-out-device",
            _noop,
            ("synth", "--rows", "5", "--out", "/dev/full"),
            match=(r"/dev/full", r"not a regular file"),
            state=lambda ctx: None if Path("/dev/full").is_char_device() else "/dev/full replaced",
        ),
        Case(
            "synth-good",
            _noop,
            synth,
            code=0,
            state=lambda ctx: None if len(pd.read_parquet(ctx / "big.parquet")) == 50 else "wrong rows",
        ),
        Case(
            "synth-good-csv",
            _noop,
            _replace(synth, "--out", "{t}/big.csv"),
            code=0,
            state=lambda ctx: None if len(pd.read_csv(ctx / "big.csv")) == 50 else "wrong rows",
        ),
    ]


# Review store -------------------------------------------------------------------------------


def _store(ctx: Ctx, name: str = "r.sqlite3"):
    from core.reviews import ReviewStore

    store = ReviewStore(ctx / name)
    store.record("fp", 1, reviewer="ana", decision="acceptable")
    store.record("fp", 2, reviewer="bo", decision="confirmed_brittle", note="x")
    return store


def _foreign_db(ctx: Ctx) -> None:
    conn = sqlite3.connect(ctx / "other.db")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    ctx.snap("other.db")


def _newer_db(ctx: Ctx) -> None:
    _store(ctx)
    conn = sqlite3.connect(ctx / "r.sqlite3")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    ctx.snap("r.sqlite3")


def _corrupt_db(ctx: Ctx) -> None:
    store = _store(ctx)
    for i in range(300):  # several pages, so a damaged page is not the header
        store.record("fp", i, reviewer="c", decision="acceptable", note="n" * 200)
    conn = sqlite3.connect(ctx / "r.sqlite3")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    data = bytearray((ctx / "r.sqlite3").read_bytes())
    page = 4096
    for start in range(2 * page, len(data) - page, 3 * page):  # trash every third page after the first two
        data[start + 8 : start + 600] = b"\xa5" * 592
    (ctx / "r.sqlite3").write_bytes(bytes(data))
    ctx.snap("r.sqlite3")


def _text_db(ctx: Ctx) -> None:
    ctx.text("r.sqlite3", "this is a note, not a database\n")
    ctx.snap("r.sqlite3")


def _good_db_and_prior_export(ctx: Ctx) -> None:
    _store(ctx)
    ctx.text("export.csv", "previous export\n")
    ctx.snap("export.csv")


def _export_to(dest: str) -> tuple[str, ...]:
    return ("reviews", "export", "--db", "{t}/r.sqlite3", "--out", dest)


def _open(name: str):
    def call(ctx: Ctx):
        from core.reviews import ReviewStore

        return ReviewStore(ctx / name).export()

    return call


def _raw_sql(sql: str):
    def call(ctx: Ctx):
        conn = sqlite3.connect(ctx / "r.sqlite3")
        try:
            conn.execute(sql)
            conn.commit()
        except sqlite3.IntegrityError as exc:  # what the trigger raises: a refusal, reported as such
            raise ValueError(str(exc)) from None
        finally:
            conn.close()

    return call


def _created_order(ctx: Ctx) -> None:
    import threading

    from core.reviews import ReviewStore

    path = ctx / "r.sqlite3"
    ReviewStore(path)

    def writer(k: int) -> None:
        store = ReviewStore(path)
        for i in range(25):
            store.record(f"fp{k}", i, reviewer=f"w{k}", decision="acceptable")

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    frame = ReviewStore(path).export()
    if len(frame) != 100:
        raise ValueError(f"lost decisions: {len(frame)} of 100 stored")
    if not frame["created_at"].is_monotonic_increasing:
        raise ValueError("created_at order disagrees with review_id order")


def _review_cases() -> list[Case]:
    return [
        Case(
            "reviews-db-missing",
            _noop,
            _export_to("{t}/e.csv"),
            match=(r"r\.sqlite3", r"does not exist"),
            state=absent("e.csv"),
        ),
        Case(
            "reviews-db-folder",
            lambda ctx: (ctx / "r.sqlite3").mkdir(),
            _export_to("{t}/e.csv"),
            match=(r"r\.sqlite3", r"folder|directory"),
            state=absent("e.csv"),
        ),
        Case(
            "reviews-db-foreign",
            _foreign_db,
            ("reviews", "export", "--db", "{t}/other.db", "--out", "{t}/e.csv"),
            match=(r"other\.db", r"not a review database"),
            state=unchanged("other.db"),
        ),
        Case(
            "reviews-db-newer-schema",
            _newer_db,
            _export_to("{t}/e.csv"),
            match=(r"r\.sqlite3", r"schema version 99", r"newer"),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "reviews-db-corrupted",
            _corrupt_db,
            _export_to("{t}/e.csv"),
            match=(r"r\.sqlite3", r"corrupt"),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "reviews-db-text-file",
            _text_db,
            _export_to("{t}/e.csv"),
            match=(r"r\.sqlite3", r"not an SQLite"),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "reviews-out-folder",
            _both(lambda ctx: _store(ctx) and None, lambda ctx: (ctx / "e").mkdir()),
            _export_to("{t}/e"),
            match=(r"'.*e'", r"folder"),
            state=lambda ctx: None if (ctx / "e").is_dir() else "gone",
        ),
        Case(
            "reviews-out-dev-full",
            lambda ctx: _store(ctx) and None,
            _export_to("/dev/full"),
            match=(r"/dev/full", r"not a regular file"),
            state=lambda ctx: None if Path("/dev/full").is_char_device() else "/dev/full replaced",
        ),
        Case(
            "reviews-out-under-a-file",
            _both(lambda ctx: _store(ctx) and None, _write("f", "x")),
            _export_to("{t}/f/e.csv"),
            match=(r"f/e\.csv", r"not a folder"),
            state=absent("e.csv"),
        ),
        Case(
            "reviews-export-good",
            _good_db_and_prior_export,
            _export_to("{t}/export.csv"),
            code=0,
            state=lambda ctx: None if len(pd.read_csv(ctx / "export.csv")) == 2 else "wrong export",
        ),
        Case(
            "reviews-export-stdout",
            lambda ctx: _store(ctx) and None,
            ("reviews", "export", "--db", "{t}/r.sqlite3"),
            code=0,
        ),
        Case(
            "reviews-reviews-db-missing",
            _noop,
            ("reviews", "export", "--reviews-db", "{t}/r.sqlite3", "--fingerprint", "abc", "--out", "{t}/e.csv"),
            match=(r"r\.sqlite3", r"does not exist", r"pass --reviews-db PATH"),
            state=absent("e.csv"),
        ),
        Case(
            "store-api-foreign",
            _foreign_db,
            call=_open("other.db"),
            match=(r"other\.db", r"not a review database"),
            state=unchanged("other.db"),
        ),
        Case(
            "store-api-newer-schema",
            _newer_db,
            call=_open("r.sqlite3"),
            match=(r"schema version 99",),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "store-api-corrupted",
            _corrupt_db,
            call=_open("r.sqlite3"),
            match=(r"corrupt",),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "store-api-text-file",
            _text_db,
            call=_open("r.sqlite3"),
            match=(r"not an SQLite",),
            state=unchanged("r.sqlite3"),
        ),
        Case(
            "store-raw-update-refused",
            lambda ctx: (_store(ctx), ctx.snap("r.sqlite3")) and None,
            call=_raw_sql("UPDATE reviews SET decision = 'acceptable'"),
            match=(r"append-only",),
        ),
        Case(
            "store-raw-delete-refused",
            lambda ctx: _store(ctx) and None,
            call=_raw_sql("DELETE FROM reviews"),
            match=(r"append-only",),
        ),
        Case("store-created-at-in-id-order", _noop, call=_created_order, code=0),
        Case("store-legacy-v1-file-opens", lambda ctx: _legacy_v1(ctx), call=_open("r.sqlite3"), code=0),
    ]


def _legacy_v1(ctx: Ctx) -> None:
    """A review database written by the earlier version (no marker, user_version 1)."""
    conn = sqlite3.connect(ctx / "r.sqlite3")
    conn.executescript("""
        CREATE TABLE reviews (review_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
            audit_fingerprint TEXT NOT NULL, sample_id TEXT NOT NULL, reviewer TEXT NOT NULL,
            decision TEXT NOT NULL, note TEXT NOT NULL DEFAULT '');
        INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note)
            VALUES ('2026-01-01T00:00:00+00:00', 'fp', '1', 'ana', 'acceptable', '');
        PRAGMA user_version = 1;""")
    conn.close()


# Python API -----------------------------------------------------------------------------------


def _intervals(tau):
    def call(ctx: Ctx):
        from core.paired import identified_intervals

        r = records()
        cell = r[(r.model == "cnn") & (r.condition == "blur")]
        return identified_intervals(cell, tau)

    return call


def _api(fn_name: str, tau):
    def call(ctx: Ctx):
        import core.paired as paired

        r = records()
        return getattr(paired, fn_name)(r, tau)

    return call


def _protocol(**kwargs):
    def call(ctx: Ctx):
        from core.cfc import Protocol

        return Protocol(**kwargs)

    return call


def _upload(name: str, content: bytes, target: str = "y"):
    def call(ctx: Ctx):
        from core.tabular.datasets import load_user_data

        buf = io.BytesIO(content)
        buf.name = name
        return load_user_data(buf, target)

    return call


def _paired_upload(name: str, content: bytes):
    def call(ctx: Ctx):
        from core.views.uploads import load_paired_upload

        return load_paired_upload(name, content)

    return call


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _api_cases() -> list[Case]:
    inf_table = _csv_bytes(_set(table(), 10, "x2", np.inf))
    return [
        Case("api-tau-string", _noop, call=_intervals("0.8"), match=(r"`tau`", r"'0\.8'", r"real number")),
        Case("api-tau-bool", _noop, call=_intervals(True), match=(r"`tau`", r"True")),
        Case("api-tau-above-one", _noop, call=_intervals(1.5), match=(r"`tau`", r"1\.5")),
        Case("api-tau-nan", _noop, call=_intervals(float("nan")), match=(r"`tau`", r"nan")),
        Case("api-tau-none", _noop, call=_intervals(None), match=(r"`tau`", r"None")),
        Case("api-tau-numpy-bool", _noop, call=_intervals(np.bool_(True)), match=(r"`tau`", r"True")),
        Case("api-tau-list", _noop, call=_intervals([0.8]), match=(r"`tau`", r"\[0\.8\]")),
        Case("api-tau-numpy-float-ok", _noop, call=_intervals(np.float32(0.8)), code=0),
        Case("api-tau-int-one-ok", _noop, call=_intervals(1), code=0),
        Case("api-grid-tau-string", _noop, call=_api("identified_intervals_grid", "0.8"), match=(r"`tau`", r"'0\.8'")),
        Case("api-targets-tau-bool", _noop, call=_api("paired_targets", False), match=(r"`tau`", r"False")),
        Case("api-five-states-tau-string", _noop, call=_api("five_state_counts", "0.5"), match=(r"`tau`",)),
        Case(
            "api-label-channel-tau-p-string",
            _noop,
            call=lambda ctx: __import__("core.cfc.stressors", fromlist=["x"]).LabelChannel(tau_p="0.9"),
            match=(r"`tau_p`", r"'0\.9'"),
        ),
        Case(
            "api-label-channel-tau-p-bool",
            _noop,
            call=lambda ctx: __import__("core.cfc.stressors", fromlist=["x"]).LabelChannel(tau_p=True),
            match=(r"`tau_p`", r"True"),
        ),
        Case(
            "api-unpaired-summary-tau-string",
            _noop,
            call=lambda ctx: __import__("core.views.paired", fromlist=["x"]).unpaired_class_summary(
                __import__("core.paired.records", fromlist=["x"]).validate_unpaired(side(), side(seed=1)), "0.8"
            ),
            match=(r"`tau`", r"'0\.8'"),
        ),
        Case("api-protocol-zero-weights", _noop, call=_protocol(weights=(0, 0, 0)), match=(r"weights", r"zero")),
        Case("api-protocol-negative-weight", _noop, call=_protocol(weights=(-1, 1, 1)), match=(r"weights", r"-1")),
        Case("api-protocol-bool-weight", _noop, call=_protocol(weights=(True, 1, 1)), match=(r"weights", r"True")),
        Case("api-protocol-one-zero-weight-ok", _noop, call=_protocol(weights=(0, 0, 1)), code=0),
        Case(
            "upload-duplicate-header",
            _noop,
            call=_upload("dup.csv", _dup_header_csv().encode()),
            match=(r"dup\.csv", r"'x1'", r"more than once"),
        ),
        Case("upload-inf", _noop, call=_upload("inf.csv", inf_table), match=(r"inf\.csv", r"'x2'", r"row 11")),
        Case(
            "upload-thousand-classes",
            _noop,
            call=_upload("many.csv", _csv_bytes(table(1200).assign(y=np.arange(1200)))),
            match=(r"many\.csv", r"1200 distinct"),
        ),
        Case(
            "upload-all-nan",
            _noop,
            call=_upload("nan.csv", _csv_bytes(table().assign(x1=np.nan))),
            match=(r"nan\.csv", r"'x1'", r"entirely missing"),
        ),
        Case(
            "upload-every-feature-constant-refused",
            _noop,
            call=_upload("flat.csv", _csv_bytes(table().assign(x1=0.5, x2=3.0, c="k"))),
            match=(r"flat\.csv", r"every feature column is constant", r"'x1' = 0\.5", r"'c' = 'k'"),
        ),
        Case(
            "upload-constant-warns",
            _noop,
            call=_upload("const.csv", _csv_bytes(table().assign(x2=3.0))),
            code=0,
            match=(r"const\.csv", r"'x2'", r"constant"),
        ),
        Case(
            "upload-target-missing",
            _noop,
            call=_upload("t.csv", _csv_bytes(table()), target="label"),
            match=(r"t\.csv", r"'label'"),
        ),
        Case("upload-empty", _noop, call=_upload("e.csv", b""), match=(r"e\.csv", r"empty")),
        Case(
            "upload-paired-duplicate-header",
            _noop,
            call=_paired_upload("p.csv", b"model,model,condition\na,b,c\n"),
            match=(r"p\.csv", r"'model'"),
        ),
        Case(
            "upload-paired-prob-inf",
            _noop,
            call=_paired_upload("p.csv", _csv_bytes(_set(records(), 0, "pert_max_prob", np.inf))),
            match=(r"p\.csv", r"row 1", r"pert_max_prob"),
        ),
        Case(
            "upload-paired-missing-column",
            _noop,
            call=_paired_upload("p.csv", _csv_bytes(records().drop(columns=["model"]))),
            match=(r"p\.csv", r"model"),
        ),
        Case("upload-paired-good", _noop, call=_paired_upload("p.csv", _csv_bytes(records())), code=0),
        Case(
            "api-dataset-frame-inf",
            _noop,
            call=lambda ctx: __import__("core.tabular.datasets", fromlist=["x"]).dataset_from_frame(
                _set(table(), 0, "x1", -np.inf), "y"
            ),
            match=(r"'x1'", r"row 1", r"-inf"),
        ),
        Case(
            "api-load-records-folder",
            lambda ctx: (ctx / "r.csv").mkdir(),
            call=lambda ctx: __import__("core.paired.records", fromlist=["x"]).load_records(ctx / "r.csv"),
            match=(r"r\.csv", r"folder"),
        ),
    ]


PROBE = (
    "probe",
    "--model-file",
    "{t}/m.onnx",
    "--images",
    "{t}/imgs",
    "--labels",
    "{t}/labels.csv",
    "--out",
    "{t}/out",
    "--probes",
    "contrast:2",
    "--natural",
    "none",
    "--no-progress",
)


def _onnx_image_model(ctx: Ctx, *, name: str = "m.onnx", dynamic_size: bool = False) -> None:
    """A 3-class linear image classifier (N, 3, 8, 8) -> (N, 3), written with onnx.helper (no torch)."""
    from onnx import TensorProto, helper, numpy_helper

    h = "h" if dynamic_size else 8
    w = "w" if dynamic_size else 8
    weights = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
        helper.make_node("MatMul", ["m", "W"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        [numpy_helper.from_array(weights, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (ctx / name).write_bytes(model.SerializeToString())


def _pngs(ctx: Ctx, n: int = 4, labels=None, folder: str = "imgs", listed: int | None = None) -> None:
    from PIL import Image

    (ctx / folder).mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    names = [f"im{i}.png" for i in range(n)]
    for name in names:
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(ctx / folder / name)
    labels = list(labels) if labels is not None else [i % 3 for i in range(n)]
    k = n if listed is None else listed
    ctx.csv("labels.csv", pd.DataFrame({"file": names[:k], "label": labels[:k]}))


def _probe_zip(ctx: Ctx, member: str) -> None:
    import zipfile

    _pngs(ctx)
    with zipfile.ZipFile(ctx / "imgs.zip", "w") as zf:
        for f in sorted((ctx / "imgs").iterdir()):
            zf.write(f, f.name)
        zf.write(ctx / "labels.csv", "labels.csv")
        zf.writestr(member, b"\x89PNG")


def _probe_cases() -> list[Case]:
    good = _both(_onnx_image_model, _pngs)
    zipped = _drop(_replace(PROBE, "--images", "{t}/imgs.zip"), "--labels")
    return [
        Case(
            "probe-good",
            good,
            PROBE,
            code=0,
            state=has_files("out", "clean.parquet", "probes.parquet", "natural.parquet", "records.parquet"),
        ),
        Case(
            "probe-non-image-file",
            _both(good, _write("imgs/notes.txt", "hello")),
            PROBE,
            match=(r"imgs/notes\.txt", r"not an image file"),
            state=absent(),
        ),
        Case(
            "probe-corrupt-png",
            _both(good, _write("imgs/im1.png", b"\x89PNG broken")),
            PROBE,
            match=(r"imgs/im1\.png", r"not a readable PNG or JPEG"),
            state=absent(),
        ),
        Case(
            "probe-count-differs",
            _both(_onnx_image_model, lambda ctx: _pngs(ctx, 5, listed=4)),
            PROBE,
            match=(r"holds 5 image", r"labels\.csv lists 4", r"im4\.png"),
            state=absent(),
        ),
        Case(
            "probe-input-size-unreadable",
            _both(lambda ctx: _onnx_image_model(ctx, dynamic_size=True), _pngs),
            PROBE,
            match=(r"m\.onnx", r"cannot read the image size"),
            state=absent(),
        ),
        Case(
            "probe-model-not-onnx",
            _both(_write("m.onnx", b"junk"), _pngs),
            PROBE,
            match=(r"m\.onnx", r"not a readable ONNX model"),
            state=absent(),
        ),
        Case(
            "probe-wrong-classes",
            _both(_onnx_image_model, lambda ctx: _pngs(ctx, labels=[0, 1, 5, 2])),
            PROBE,
            match=(r"m\.onnx", r"outputs 3 classes", r"im2\.png has label 5"),
            state=absent(),
        ),
        Case(
            "probe-labels-no-file-column",
            _both(good, _write("labels.csv", "name,label\nim0.png,0\n")),
            PROBE,
            match=(r"labels\.csv", r"'file'"),
            state=absent(),
        ),
        Case(
            "probe-zip-slip",
            _both(_onnx_image_model, lambda ctx: _probe_zip(ctx, "../evil.png")),
            zipped,
            match=(r"imgs\.zip", r"'\.\./evil\.png'", r"outside the archive"),
            state=absent(),
        ),
        Case(
            "probe-npz-object-array",
            _both(
                _onnx_image_model,
                lambda ctx: np.savez(ctx / "x.npz", images=np.array([object()] * 2), labels=np.zeros(2, int)),
            ),
            _drop(_replace(PROBE, "--images", "{t}/x.npz"), "--labels"),
            match=(r"x\.npz", r"pickled|Python objects"),
            state=absent(),
        ),
    ]


_TEAM = '[members]\n"ana@example.org" = "admin"\n'


def _team_cases() -> list[Case]:
    """The review team's files: refused by the ``dashboard`` command before any server starts."""
    dashboard = ("dashboard", "--team", "{t}/team.toml")
    return [
        Case(
            "team-file-missing",
            _noop,
            dashboard,
            match=(r"team\.toml", r"does not exist"),
        ),
        Case(
            "team-file-unknown-role",
            _write("team.toml", '[members]\n"ana@example.org" = "admin"\n"bo@example.org" = "boss"\n'),
            dashboard,
            match=(r"team\.toml", r"line 3", r"bo@example\.org", r"'boss'", r"admin.*reviewer.*viewer"),
        ),
        Case(
            "team-file-not-an-address",
            _write("team.toml", '[members]\n"ana" = "admin"\n'),
            dashboard,
            match=(r"team\.toml", r"line 2", r"'ana' is not an e-mail address"),
        ),
        Case(
            "team-file-admin-default",
            _write("team.toml", 'default_role = "admin"\n'),
            dashboard,
            match=(r"team\.toml", r"line 1", r"default_role", r"'admin'"),
        ),
        Case(
            "team-file-not-toml",
            _write("team.toml", "[members\n"),
            dashboard,
            match=(r"team\.toml", r"not valid TOML", r"line 1"),
        ),
        Case(
            "team-secrets-without-auth",
            _both(_write("team.toml", _TEAM), _write("secrets.toml", 'x = "y"\n')),
            (*dashboard, "--secrets", "{t}/secrets.toml"),
            match=(r"secrets\.toml", r"no \[auth\] section"),
        ),
        Case(
            "team-secrets-without-team",
            _write("secrets.toml", '[auth]\nredirect_uri = "http://x/oauth2callback"\n'),
            ("dashboard", "--secrets", "{t}/secrets.toml"),
            match=(r"--secrets", r"--team"),
        ),
        Case(
            "team-api-twice",
            _write("team.toml", '[members]\n"a@x.org" = "admin"\n"A@X.org" = "viewer"\n'),
            call=lambda ctx: __import__("core.reviews", fromlist=["load_team"]).load_team(ctx / "team.toml"),
            match=(r"team\.toml", r"line 3", r"listed twice"),
        ),
    ]


def _certify_run(damage: Callable[[Path], None]) -> Callable[[Ctx], None]:
    """A finished ``certify`` run in ``run/`` (one partition), then ``damage(run)``."""

    def setup(ctx: Ctx) -> None:
        from core.cli import main

        good_table(ctx)
        argv = [a.replace("{t}", str(ctx.t)).replace(f"{ctx.t}/out", f"{ctx.t}/run") for a in CERTIFY]
        assert main(argv) == 0
        damage(ctx / "run")

    return setup


def _big_audit_cases() -> list[Case]:
    """A certify folder whose parts disagree: refused by ``dashboard --audit`` naming the part."""
    dashboard = ("dashboard", "--audit", "{t}/run")

    def other_summary(run: Path) -> None:
        summary = json.loads((run / "_summary.json").read_text())
        (run / "_summary.json").write_text(json.dumps({**summary, "fingerprint": "0" * 64}))

    return [
        Case(
            "dashboard-certify-partition-missing",
            _certify_run(lambda run: (run / "part-00000.parquet").unlink()),
            dashboard,
            match=(r"run", r"partition part-00000\.parquet", r"listed but missing"),
        ),
        Case(
            "dashboard-certify-partition-changed",
            _certify_run(lambda run: (run / "part-00000.parquet").write_bytes(b"PAR1 not the partition PAR1")),
            dashboard,
            match=(r"run", r"partition part-00000\.parquet differs from the one the run recorded"),
        ),
        Case(
            "dashboard-certify-summary-of-another-run",
            _certify_run(other_summary),
            dashboard,
            match=(r"run", r"_summary\.json belongs to another run than _manifest\.json"),
        ),
    ]


def build_cases() -> list[Case]:
    cases = (
        _table_cases("audit", AUDIT)
        + _audit_only()
        + _table_cases("certify", CERTIFY)
        + _certify_only()
        + _big_audit_cases()
        + _paired_cases()
        + _grid_cases()
        + _synth_cases()
        + _review_cases()
        + _team_cases()
        + _api_cases()
        + _probe_cases()
    )
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), [i for i in ids if ids.count(i) > 1]
    return cases


CASES = build_cases()


def summarise(results: dict[str, tuple[str, str]]) -> str:
    counts = {v: 0 for v in VERDICTS}
    for verdict, _ in results.values():
        counts[verdict] += 1
    return json.dumps(counts)
