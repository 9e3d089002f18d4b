"""core.views.commands: the CLI lines reproduce the interactive settings."""

from __future__ import annotations

import shlex

import pytest

from core.cfc.protocol import Protocol
from core.views.commands import cli_commands


@pytest.mark.parametrize(
    "protocol, blocks",
    [
        (Protocol(), None),
        (
            Protocol(
                grouping="domain_block",
                baseline="median",
                depth=2,
                operators=(),
                severities=(0.25, 1.0),
                weights=(0.5, 0.25, 0.25),
                path="adaptive",
                merge_threshold=0.55,
            ),
            "my blocks.yaml",
        ),
    ],
    ids=["default", "custom"],
)
def test_cli_commands_reproduce_the_interactive_settings(protocol, blocks):
    from core.cli import build_parser
    from core.cli.options import protocol_from_args

    commands = cli_commands("big table.csv", "default", model="logreg", seed=7, protocol=protocol, blocks_file=blocks)
    for name in ("audit", "certify"):
        argv = shlex.split(commands[name])
        assert argv[:4] == ["python", "-m", "core", name]
        args = build_parser().parse_args(argv[3:])
        assert (args.data, args.target, args.blocks) == ("big table.csv", "default", blocks)
        assert protocol_from_args(args) == protocol
        assert args.max_rows is None if name == "audit" else not hasattr(args, "max_rows")
    audit = build_parser().parse_args(shlex.split(commands["audit"])[3:])
    assert (audit.models, audit.seeds) == (["logreg"], [7])
