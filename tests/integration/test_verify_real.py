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
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, HostRun, ok_result
from integration.test_host_real import OPEN, cancel_here, harness, timeout_here
from timing import SLOW

from concorde_workers.adapters.cli.main import main
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.contracts import validator
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.integration
__all__ = ["harness"]

MAIN = "{worktree}/src/app/main.py"
PREDICATE = "contract.attestation.worker-run"
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


# --- every ending the host produces verifies untouched ------------------------------------------

ERROR = {
    "code": "cannot",
    "detail": "it cannot",
    "evidence": [],
    "attempts": [],
    "unhandled": {"reason": "capability", "explanation": "no"},
    "options": [],
    "recommendation": "",
}
ENDINGS = [
    "ok",
    "blocked",
    "worker_failed",
    "audit_violation",
    "worker_timeout",
    "claude_failed",
    "worker_result_invalid",
    "checks_failed",
    "validation_unavailable",
    "interrupted",
    "grant_malformed",
]


@pytest.mark.parametrize("ending", ENDINGS)
def test_verify_holds_on_the_untouched_trace_of_every_ending(
    harness: HostHarness, keys: tuple[Path, Path], ending: str
) -> None:
    """ok; failed with a code of each kind (the worker's, the audit's, a timeout, the program's,
    its result, the round validation's); blocked; interrupted; refused before launch."""
    cancel, deadline = Cancellation(), None
    grant: dict[str, Any] | None = None
    validation: Callable[[ValidationInput], ValidationOutcome] | None = None
    steps: list[Any] = {
        "ok": [Step.write(MAIN, "print('ok')\n"), Step.result(ok_result())],
        "blocked": [Step.result(ok_result(status="blocked", error=ERROR))],
        "worker_failed": [Step.result(ok_result(status="failed", error=ERROR))],
        "audit_violation": [
            Step.write("{worktree}/src/app/util.py", "changed outside rw\n"),
            Step.result(ok_result()),
        ],
        "claude_failed": [Step.write(MAIN, "half\n"), Step.crash("raise")],
        "worker_result_invalid": [Step.line("text", text="I am done")],
        "interrupted": [
            Step.write(MAIN, "partial\n"),
            cancel_here(harness, cancel, "cancelled"),
            Step.sleep(3600),
        ],
    }.get(ending, [Step.write(MAIN, "print('x')\n"), Step.result(ok_result())])
    if ending == "worker_timeout":
        deadline, at = timeout_here(harness)
        steps = [Step.write(MAIN, "slow\n"), at, Step.sleep(3600)]
    if ending == "checks_failed":

        def validation(given: ValidationInput) -> ValidationOutcome:
            return ValidationOutcome(
                repair="fix it", failure=LinkAnswer(code="checks_failed", detail="tests fail")
            )

    if ending == "validation_unavailable":

        def validation(given: ValidationInput) -> ValidationOutcome:
            raise RuntimeError("the validation broke")

    if ending == "grant_malformed":
        grant = {
            "task_type": "implement",
            "entries": [{"path": "/abs", "level": "rw"}],
            "context_identity": "sha256:" + "1" * 64,
        }
    run = harness.run(
        [*OPEN, *steps],
        cancel=cancel,
        deadline=deadline,
        grant=grant,
        validation=validation,
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
        environ={"CONCORDE_SIGNING_KEY": str(keys[0])},
    )
    expected = None if ending == "ok" else ending
    if ending in ("blocked", "worker_failed"):
        expected = ending if ending == "worker_failed" else "worker_blocked"
    assert run.code == expected, run.record.error
    code, found = verify(run.run_dir, "--key", str(keys[1]))
    assert (code, discrepancies(found)) == (0, []), found
    assert found["signature"].endswith("the signature holds")
    statement = json.loads(
        base64.b64decode(json.loads((run.run_dir / "attestation.json").read_text())["payload"])
    )
    assert statement["predicate"]["ending"]["code"] == run.code
    problems = [e.message for e in validator(PREDICATE).iter_errors(statement["predicate"])]
    assert problems == [], problems


# --- every kind of file tampered with is named ---------------------------------------------------


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _patch(run_dir: Path) -> str:
    path = run_dir / "rounds/2/changes.patch"
    path.write_text(path.read_text().replace("+two", "+TWO"))
    return "rounds/2/changes.patch"


def _patch_gone(run_dir: Path) -> str:
    (run_dir / "rounds/1/changes.patch").unlink()
    return "rounds/1/changes.patch"


def _patch_and_its_node(run_dir: Path) -> str:
    """A patch rewritten with its node's digest made to match: the node's own digest (in the
    statement) and Git's replay of the chain tell."""
    import hashlib

    path = run_dir / "rounds/2/changes.patch"
    path.write_text(path.read_text().replace("+two", "+TWO"))
    digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()

    def change(node: dict[str, Any]) -> None:
        for listed in node["files"]:
            if listed["path"] == "changes.patch":
                listed["digest"] = digest

    _edit_json(run_dir / "rounds/2/trace.json", change)
    return "rounds/2/trace.json"


def _transcript(run_dir: Path) -> str:
    with (run_dir / "transcript.jsonl").open("a") as f:
        f.write('{"forged": true}\n')
    return "transcript.jsonl"


def _round_node(run_dir: Path) -> str:
    def change(node: dict[str, Any]) -> None:
        node["content"]["audit"]["changed"] = ["src/app/main.py"]  # new.py's creation hidden

    _edit_json(run_dir / "rounds/1/trace.json", change)
    return "rounds/1/trace.json"


def _record(run_dir: Path) -> str:
    def change(node: dict[str, Any]) -> None:
        node["content"]["deleted"] = ["src/app/secret.py"]

    _edit_json(run_dir / "trace.json", change)
    return "trace.json"


def _status(run_dir: Path) -> str:
    _edit_json(run_dir / "status.json", lambda status: status.update(status="failed"))
    return "status.json"


def _statement(run_dir: Path) -> str:
    path = run_dir / "attestation.json"
    envelope = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["ending"]["status"] = "blocked"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(envelope))
    return "attestation.json"


def _signature(run_dir: Path) -> str:
    path = run_dir / "attestation.json"
    envelope = json.loads(path.read_text())
    sig = base64.b64decode(envelope["signatures"][0]["sig"])
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes([sig[0] ^ 1]) + sig[1:]).decode()
    path.write_text(json.dumps(envelope))
    return "attestation.json"


def _attestation_gone(run_dir: Path) -> str:
    (run_dir / "attestation.json").unlink()
    return "attestation.json"


TAMPERING = {
    "a patch": _patch,
    "a patch deleted": _patch_gone,
    "a patch and its node's digest": _patch_and_its_node,
    "the transcript": _transcript,
    "a round node": _round_node,
    "the record": _record,
    "status.json": _status,
    "the statement": _statement,
    "the signature": _signature,
    "the attestation deleted": _attestation_gone,
}


@pytest.fixture
def signed_run(harness: HostHarness, keys: tuple[Path, Path]) -> HostRun:
    run = two_round_run(harness, keys[0])
    assert run.record.status == "ok", run.record.error
    return run


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_a_file_tampered_with_is_named_and_verify_fails(
    signed_run: HostRun, keys: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    copy = tmp_path / "copy" / "workers" / signed_run.run_dir.name
    shutil.copytree(signed_run.run_dir, copy)
    named = TAMPERING[kind](copy)
    code, found = verify(copy, "--key", str(keys[1]))
    assert code == 1, found
    assert named in [file for file, _ in discrepancies(found)], found


def test_a_trace_copied_elsewhere_verifies_there_from_its_patches_alone(
    signed_run: HostRun, keys: tuple[Path, Path], harness: HostHarness, tmp_path: Path
) -> None:
    """On another machine the repository is not at hand: the worktree moved away here."""
    copy = tmp_path / "elsewhere" / "workers" / signed_run.run_dir.name
    shutil.copytree(signed_run.run_dir, copy)
    moved = harness.root / "moved-away"
    harness.worktree.rename(moved)
    try:
        code, found = verify(copy, "--key", str(keys[1]))
    finally:
        moved.rename(harness.worktree)
    assert (code, discrepancies(found)) == (0, []), found
    assert found["chain"].endswith("the patches alone were checked"), found
    code, found = verify(copy, "--key", str(keys[1]))  # the repository back: Git replays
    assert (code, found["chain"]) == (
        0,
        "Git applied the patches of 2 round(s) onto the starting commit",
    ), found


# --- show, show --diff and the report say what fails its digest ----------------------------------


def show(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["show", *argv], out, err)
    return status, out.getvalue() + err.getvalue()


def test_show_diff_says_a_tampered_patch_fails_its_digest_and_a_deleted_one_is_missing(
    signed_run: HostRun,
) -> None:
    run_dir = signed_run.run_dir
    genuine = show(str(run_dir), "--diff")[1]
    assert "WARNING" not in genuine and "kept no patch" not in genuine
    _patch(run_dir)
    status, out = show(str(run_dir), "--diff", "--round", "2")
    assert status == 0
    assert "# WARNING: " in out and "rounds/2/changes.patch fails its digest" in out, out
    _patch_gone(run_dir)
    status, out = show(str(run_dir), "--diff", "--round", "1")
    assert "rounds/1/changes.patch is missing, though its round's node lists it" in out, out
    assert "kept no patch" not in out
    status, out = show(str(run_dir))
    assert "WARNING: rounds/1/changes.patch is missing or unreadable" in out, out
    assert "WARNING: rounds/2/changes.patch fails its digest" in out, out
    assert f"concorde-workers verify {run_dir}" in out


def test_the_report_says_what_fails_its_digest(signed_run: HostRun) -> None:
    from concorde_workers.adapters.cli.views.report import report_html
    from concorde_workers.adapters.machine.filesystem import LocalFileSystem
    from concorde_workers.application.evidence.report import gather
    from concorde_workers.container import PROFILES

    _transcript(signed_run.run_dir)
    _patch(signed_run.run_dir)
    page = report_html(gather(LocalFileSystem(), str(signed_run.run_dir), PROFILES))
    assert "not as the host wrote it: transcript.jsonl fails its digest" in page
    assert "rounds/2/changes.patch fails its digest" in page


# --- a key that cannot sign refuses the run --------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"not a key\n", "it is no PEM private key without a passphrase"),
        (None, "which does not exist"),
    ],
)
def test_a_signing_key_that_cannot_sign_refuses_every_run_before_it_starts(
    harness: HostHarness, tmp_path: Path, content: bytes | None, why: str
) -> None:
    from concorde_workers.application.run.host import RequestRefused

    key = tmp_path / "bad-key.pem"
    if content is not None:
        key.write_bytes(content)
    with pytest.raises(RequestRefused) as refused:
        harness.run([*OPEN, Step.result(ok_result())], environ={"CONCORDE_SIGNING_KEY": str(key)})
    assert refused.value.refusal.code == "signing_key_invalid"
    assert why in refused.value.refusal.message and str(key) in refused.value.refusal.message
    assert not (harness.parent / "workers").exists() or not any(
        (harness.parent / "workers").iterdir()
    )
