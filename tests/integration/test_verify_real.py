"""`verify RUN_DIR [--key PUBKEY]` for real (issue 30 §4): `WorkerHost.run` with the real Git,
a real worktree and the test agent program, then the command line's `verify` over the run
directory it left.

- Every run writes attestation.json after its final record: an in-toto statement in a DSSE
  envelope, signed with the machine's Ed25519 key when one is configured.
- `verify` exits 0 on the untouched trace of every ending the host produces (ok; failed with
  each kind of code; blocked; interrupted; refused before launch), with Git replaying the
  patches where the repository is at hand, and on a copy of the trace elsewhere.
- It exits 1 naming the file when any kind of file was tampered with: a patch, the transcript,
  a round node, the run node (the record), status.json, the statement, the signature.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, HostRun, ok_result
from integration.test_host_real import OPEN, harness
from timing import SLOW

from concorde_workers.adapters.cli.main import main
from concorde_workers.application.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.integration
__all__ = ["harness"]

MAIN = "{worktree}/src/app/main.py"
TWO_ROUNDS = Limits(timeout_seconds=SLOW, rounds=2, retries=0, retry_delay_seconds=0)


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """A machine's signing key (private, 0600) and the public key a reviewer is given."""
    private = Ed25519PrivateKey.generate()
    folder = tmp_path / "keys"
    folder.mkdir()
    key = folder / "signing-key.pem"
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key.chmod(0o600)
    public = folder / "signing-key.pub.pem"
    public.write_bytes(
        private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return key, public


def verify(run_dir: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", str(run_dir), "--json", *flags], out, err)
    assert err.getvalue() == "", err.getvalue()
    return code, json.loads(out.getvalue())


def discrepancies(found: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["file"], f["problem"]) for f in found["findings"] if f["discrepancy"]]


def two_round_run(harness: HostHarness, key: Path | None) -> HostRun:
    start = (harness.worktree / "src/app/main.py").read_text()

    def validation(given: ValidationInput) -> ValidationOutcome:
        return ValidationOutcome(repair="again" if given.round == 1 else None)

    return harness.run(
        [
            *OPEN,
            Step.write(MAIN, start + "one\n"),
            Step.write("{worktree}/src/app/new.py", "n\n"),
            Step.result(ok_result()),
        ],
        [
            *OPEN,
            Step.write(MAIN, start + "one\ntwo\n"),
            Step.write("{worktree}/src/app/data.bin", "\x00\x01binary\x00"),
            Step.result(ok_result()),
        ],
        validation=validation,
        limits=TWO_ROUNDS,
        environ={"CONCORDE_SIGNING_KEY": str(key)} if key else None,
    )


def test_a_signed_run_verifies_with_its_key_and_git_replays_its_patches(
    harness: HostHarness, keys: tuple[Path, Path]
) -> None:
    key, public = keys
    run = two_round_run(harness, key)
    assert run.record.status == "ok", run.record.error
    code, found = verify(run.run_dir, "--key", str(public))
    assert (code, discrepancies(found)) == (0, []), found
    assert found["verified"] is True
    assert found["chain"] == "Git applied the patches of 2 round(s) onto the starting commit"
    assert found["signature"].endswith(": the signature holds"), found
    envelope = json.loads((run.run_dir / "attestation.json").read_text())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    names = [s["name"] for s in statement["subject"]]
    assert names == ["rounds/1/changes.patch", "rounds/2/changes.patch", "tree"]
    predicate = statement["predicate"]
    assert predicate["ending"] == {"status": "ok", "outcome": "ok", "code": None}
    assert (
        predicate["repository"]["final_tree"]
        == run.trace("rounds/2/trace.json")["metadata"]["tree"]
    )
    assert [r["audit"]["verdict"] for r in predicate["rounds"]] == ["clean", "clean"]


def test_an_unsigned_run_says_so_and_fails_only_when_a_key_is_asked_for(
    harness: HostHarness, keys: tuple[Path, Path]
) -> None:
    run = two_round_run(harness, None)
    code, found = verify(run.run_dir)
    assert (code, discrepancies(found)) == (0, []), found
    assert found["signature"].startswith("unsigned"), found
    code, found = verify(run.run_dir, "--key", str(keys[1]))
    assert code == 1
    assert discrepancies(found) == [("attestation.json", found["signature"])], found


def test_another_key_does_not_verify(
    harness: HostHarness, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    run = two_round_run(harness, keys[0])
    other = tmp_path / "other.pub.pem"
    other.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    code, found = verify(run.run_dir, "--key", str(other))
    assert code == 1
    assert [f for f, _ in discrepancies(found)] == ["attestation.json"], found
