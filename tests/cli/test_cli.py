"""One command-line vocabulary (docs/cli.md): renamed options, number lists, who registers what."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd
import pytest

import core.cli
from core.cli import _number_list_options, build_parser, main
from core.cli.options import _RenamedOption, argument_type, comma_floats, float_list, names, takes_number_list

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command, ``reviews export`` as one."""
    commands = _subparsers(build_parser())
    reviews = commands.pop("reviews")
    commands.update({f"reviews {k}": v for k, v in _subparsers(reviews).items()})
    return commands


# ---------------------------------------------------------------------------------------------
# Renamed options: the old name works for one release, with a warning naming the new one

#: (command, old spelling, new spelling, value, dest) of every renamed option.
RENAMED = [
    (["certify", "--data", "d.csv", "--out", "o"], "--model-from", "--audit", "runs/a", "audit"),
    (["reviews", "export"], "--db", "--reviews-db", "r.sqlite3", "reviews_db"),
    (["reviews", "export"], "--audit", "--fingerprint", "3f2a", "fingerprint"),
    (["probe", "--images", "imgs", "--out", "o"], "--model", "--model-file", "m.onnx", "model_file"),
]


@pytest.mark.parametrize(("argv", "old", "new", "value", "dest"), RENAMED, ids=[r[1] for r in RENAMED])
def test_an_old_option_name_parses_as_the_new_one_and_warns_naming_it(argv, old, new, value, dest):
    parser = build_parser()
    with pytest.warns(DeprecationWarning, match=rf"^{re.escape(old)} is deprecated .*; use {re.escape(new)} instead"):
        old_args = parser.parse_args([*argv, old, value])
    new_args = parser.parse_args([*argv, new, value])
    assert getattr(old_args, dest) == getattr(new_args, dest) and getattr(new_args, dest) is not None
    assert {k: v for k, v in vars(old_args).items() if k != "_spelled"} == vars(new_args)
    assert old_args._spelled == {dest: old} and not hasattr(new_args, "_spelled")


def test_every_renamed_option_is_tested_and_documented():
    hidden = {
        (name, flag, action.new)
        for name, sub in _commands().items()
        for action in sub._actions
        if isinstance(action, _RenamedOption)
        for flag in action.option_strings
    }
    tested = {(" ".join(argv[:2]) if argv[0] == "reviews" else argv[0], old, new) for argv, old, new, *_ in RENAMED}
    assert hidden == tested
    for command, old, new in hidden:
        assert f"`{command} {old}" in CLI_DOC and f"`{command} {new}" in CLI_DOC, (command, old)


def test_certify_with_the_old_name_prints_one_warning_line_and_names_the_flag_typed(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,0\n2,1\n")
    for flag in ("--model-from", "--audit"):
        code = main(["certify", "--data", str(data), flag, str(tmp_path / "nope.pkl"), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and not (tmp_path / "o").exists()
        # A missing path is missing (not "a task saved by an earlier version as a pickle").
        assert "nope.pkl: it does not exist" in err and "pickle" not in err
        warnings = [line for line in err.splitlines() if line.startswith("warning:")]
        if flag == "--model-from":
            assert warnings == [
                "warning: --model-from is deprecated and will be removed in the next release; use --audit instead."
            ]
        else:
            assert warnings == []
        code = main(["certify", "--data", str(data), flag, "x", "--depth", "2", "--out", str(tmp_path / "o")])
        assert code == 2 and f"--depth cannot be combined with {flag}" in capsys.readouterr().err


def test_reviews_export_under_old_and_new_names_gives_the_same_file(tmp_path, capsys):
    from core.reviews import ReviewStore

    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(db)
    store.record("audit-a", 1, reviewer="ana", decision="acceptable")
    store.record("audit-b", 2, reviewer="bo", decision="confirmed_brittle")
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    assert main(["reviews", "export", "--db", str(db), "--audit", "audit-b", "--out", str(old)]) == 0
    err = capsys.readouterr().err
    assert "warning: --db is deprecated" in err and "use --reviews-db instead" in err
    assert "warning: --audit is deprecated" in err and "use --fingerprint instead" in err
    assert main(["reviews", "export", "--reviews-db", str(db), "--fingerprint", "audit-b", "--out", str(new)]) == 0
    assert "warning:" not in capsys.readouterr().err
    assert old.read_bytes() == new.read_bytes()
    exported = pd.read_csv(new)
    assert len(exported) == 1 and exported["reviewer"].tolist() == ["bo"]
    assert main(["reviews", "export", "--reviews-db", str(tmp_path / "nope.sqlite3")]) == 2
    assert "pass --reviews-db PATH" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Number lists: declared by the options' types, not listed in core/cli/__init__.py


def test_the_number_list_options_come_from_the_parsers():
    options = _number_list_options(build_parser())
    assert options["audit"] == {
        "--seed",
        "--seeds",
        "--severities",
        "--weights",
        "--masking-rates",
        "--dropout-rates",
        "--noise-scales",
    }
    assert options["certify"] == {"--severities", "--weights"}
    assert options["paired"] == options["paired-grid"] == {"--coverages", "--lambdas"}
    assert options["probe"] == {"--mean", "--std"}
    assert options["synth"] == options["report"] == frozenset()
    # core/cli/__init__.py names no option of any command.
    source = Path(core.cli.__file__).read_text(encoding="utf-8")
    every = {flag for sub in _commands().values() for a in sub._actions for flag in a.option_strings}
    assert not [flag for flag in every - {"-h", "--help"} if f'"{flag}"' in source]


def test_a_type_declares_a_number_list():
    assert takes_number_list(float_list) and not takes_number_list(names) and not takes_number_list(int)
    assert takes_number_list(argument_type(comma_floats, bool, expected="numbers"))
    assert not takes_number_list(argument_type(comma_floats, expected="x", number_list=False))
    assert takes_number_list(argument_type(lambda t: [int(v) for v in t.split(",")], expected="x", number_list=True))


def test_a_negative_number_list_reaches_its_option(tmp_path, capsys):
    # --weights -1,1,1 would read as an option without the joining; the protocol refuses the value.
    code = main(["audit", "--dataset", "breast_cancer", "--weights", "-1,1,1", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "`weights`" in err and "-1" in err and "expected one argument" not in err
    # audit's --seeds declares its list through number_list=True: the value reaches its check.
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "--dataset", "breast_cancer", "--seeds", "-1,2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "expected comma-separated non-negative integers; got '-1,2'" in err
    # An option that takes no number list is not joined: argparse reads "-1,2" as an unknown option.
    with pytest.raises(SystemExit):
        main(["audit", "--dataset", "breast_cancer", "--max-rows", "-1,2", "--out", str(tmp_path / "o")])
    assert "argument --max-rows: expected one argument" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Who registers what, and the vocabulary of docs/cli.md


def test_each_command_is_registered_by_its_module_of_core_cli_as_docs_cli_md_says():
    commands = _commands()
    owner = {name: sub.get_default("func").__module__ for name, sub in commands.items()}
    assert owner["paired"] == owner["paired-grid"] == "core.cli.paired"
    assert owner["certify"] == owner["synth"] == "core.cli.scale"
    assert owner["audit"] == "core.cli.tabular"
    assert owner["reviews export"] == "core.cli.reviews"
    # The table of docs/cli.md: | `command` | what it does | `core/cli/<module>.py` |
    listed = dict(re.findall(r"^\| `([a-z -]+)` \| [^|]+ \| `(core/cli/[a-z_]+\.py)` \|$", CLI_DOC, re.MULTILINE))
    for name, module in owner.items():
        assert name in listed, f"docs/cli.md does not list the command {name!r}"
        assert module.startswith("core.cli."), f"{name!r} is registered outside core/cli/ ({module})"
        assert listed[name] == module.replace(".", "/") + ".py", f"docs/cli.md names {listed[name]} for {name!r}"
    assert sorted(listed) == sorted(owner), "docs/cli.md lists a command that no module registers"


def test_seed_is_a_non_negative_integer_for_every_command():
    commands = _commands()
    with_seed = sorted(name for name, sub in commands.items() if "--seed" in sub._option_string_actions)
    assert with_seed == ["audit", "certify", "paired", "paired-grid", "probe", "synth"]
    for name in ("certify", "paired", "paired-grid", "synth"):
        seed = commands[name]._option_string_actions["--seed"].type
        assert seed("0") == 0 and seed("7") == 7
        with pytest.raises(argparse.ArgumentTypeError, match="expected a non-negative integer; got '-1'"):
            seed("-1")
