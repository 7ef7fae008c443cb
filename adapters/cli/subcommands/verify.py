"""`verify RUN_DIR [--key PUBKEY] [--json]` (issue 30 §4): the run's trace checked and its
attestation's signature, from the run directory alone (application/evidence/verify.py).

Exit 0 when everything holds (notes, such as an unsigned statement when no key was asked for,
are said); 1 naming each discrepancy; 2 when RUN_DIR or the key cannot be read.
"""

from __future__ import annotations

import argparse
import posixpath
from typing import TextIO

from concorde_workers.adapters.cli.output import print_json, print_refusal
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.wiring import Wiring
from concorde_workers.application.evidence.verify import Verification
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.text import terminal_lines
from concorde_workers.ports.machine.filesystem import FileSystemError, read_regular_text

__all__ = ["account", "run_verify"]

MAX_PUBLIC_KEY_BYTES = 16 * 1024


def account(result: Verification) -> list[str]:
    """What a person reads: the verdict first, then each finding and how it was checked."""
    bad = [f for f in result.findings if f.discrepancy]
    notes = [f for f in result.findings if not f.discrepancy]
    verdict = (
        "verified: the trace holds"
        if not bad
        else f"NOT VERIFIED: {len(bad)} discrepanc{'y' if len(bad) == 1 else 'ies'}"
    )
    lines = [f"{verdict} ({result.run_dir})"]
    lines += [f"  [FAILED] {f.file or 'the run'}: {f.problem}" for f in bad]
    lines += [f"  [note] {f.file or 'the run'}: {f.problem}" for f in notes]
    if result.git:
        lines.append(f"  chain: {result.git}")
    if result.signature:
        lines.append(f"  signature: {result.signature}")
    return lines


def _key(path: str, cwd: str, wiring: Wiring) -> bytes | Refusal:
    target = posixpath.normpath(posixpath.join(cwd, path))
    try:
        return read_regular_text(
            wiring.container().filesystem(), target, MAX_PUBLIC_KEY_BYTES
        ).encode()
    except FileSystemError as error:
        return Refusal(
            code=Code.TRACE_UNVERIFIED,
            reason=Reason.INPUT,
            file=target,
            message=f"--key {target}: {error.os_error_text}; give the PEM Ed25519 public key "
            "file (openssl pkey -in <private key> -pubout)",
        )


def run_verify(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 the trace holds, 1 a discrepancy, 2 RUN_DIR or --key cannot be read."""
    container = wiring.container()
    run_dir = posixpath.normpath(posixpath.join(container.cwd(), args.run_dir))
    key = None if args.key is None else _key(args.key, container.cwd(), wiring)
    if isinstance(key, Refusal):
        print_refusal(key, args.json, out, err)
        return ExitStatus.REFUSED
    result = container.verifier().verify(run_dir, key)
    if result.refusal is not None:
        print_refusal(result.refusal, args.json, out, err)
        return ExitStatus.REFUSED
    if args.json:
        print_json(result.to_json(), out)
    else:
        out.write(terminal_lines(account(result)))
    return ExitStatus.OK if result.holds else ExitStatus.FAILED
