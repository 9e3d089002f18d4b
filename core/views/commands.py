"""The command lines that run the dashboard's interactive audit settings on a full table."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.cfc.protocol import Protocol

__all__ = ["cli_commands"]


def cli_commands(
    file_name: str, target: str, *, model: str, seed: int, protocol: Protocol, blocks_file: str | None = None
) -> dict[str, str]:
    """Shell commands that run the interactive audit's settings on the full table.

    Parameters
    ----------
    file_name : str
        The table's file name (the user runs the command where the file is).
    target : str
        Target column.
    model, seed : str, int
        As in the sidebar.
    protocol : Protocol
        The applied protocol; every field is spelt out, so the CLI's own defaults do not matter.
    blocks_file : str, optional
        Name of the domain-block file, when one was uploaded.

    Returns
    -------
    dict
        ``"audit"``: ``python -m core audit`` (the complete audit: certificates, held-out
        labels, evaluation, calibration) on every row; ``"certify"``: ``python -m core certify``
        (certificates of every row in partitions, bounded memory, resumable).
    """
    stem = Path(file_name).stem or "table"
    proto = [
        "--grouping",
        protocol.grouping,
        "--baseline",
        protocol.baseline,
        "--path",
        protocol.path,
        "--operators",
        ",".join(protocol.operators),
        "--severities",
        ",".join(repr(float(v)) for v in protocol.severities),
        "--weights",
        ",".join(repr(float(v)) for v in protocol.weights),
        "--merge-threshold",
        repr(float(protocol.merge_threshold)),
    ]
    if protocol.depth is not None:
        proto += ["--depth", str(int(protocol.depth))]
    if blocks_file is not None:
        proto += ["--blocks", blocks_file]
    common = ["--data", file_name, "--target", target, "--model", model, "--seed", str(int(seed))]
    commands = {
        "audit": ["python", "-m", "core", "audit", *common, *proto, "--out", f"{stem}-audit"],
        "certify": ["python", "-m", "core", "certify", *common, *proto, "--out", f"{stem}-certificates"],
    }
    return {name: shlex.join(argv) for name, argv in commands.items()}
