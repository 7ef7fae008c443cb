"""End-to-end: a run of the real program of every backend (tests/e2e/backends.py) against its
scripted model server, signed with the machine's Ed25519 key, then `concorde-workers verify RUN_DIR --key PUBKEY` (issue 30 §4): the
trace holds, Git replays its patch onto the starting commit, the signature holds for the public
key; a patch changed afterwards is named. The key is the host's alone: the worker, reading it
from its Bash, finds nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from e2e.backends import BackendWorld, backend_world
from e2e.test_hidden_e2e import split

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]


def make_keys(folder: Path) -> tuple[Path, Path]:
    private = Ed25519PrivateKey.generate()
    folder.mkdir(parents=True, exist_ok=True)
    key, public = folder / "signing-key.pem", folder / "signing-key.pub.pem"
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key.chmod(0o600)
    public.write_bytes(
        private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return key, public


def verify(run_dir: str, public: Path) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", run_dir, "--key", str(public), "--json"], out, err)
    assert err.getvalue() == "", err.getvalue()
    return code, json.loads(out.getvalue())


def assert_verified_then_tampered(run_dir: str, public: Path) -> None:
    code, found = verify(run_dir, public)
    assert code == 0 and found["verified"], found
    assert found["chain"] == "Git applied the patches of 1 round(s) onto the starting commit"
    assert found["signature"].endswith("the signature holds"), found
    patch = Path(run_dir) / "rounds/1/changes.patch"
    patch.write_bytes(patch.read_bytes().replace(b"+print", b"+exit(1); print"))
    code, found = verify(run_dir, public)
    assert code == 1
    named = {f["file"] for f in found["findings"] if f["discrepancy"]}
    assert "rounds/1/changes.patch" in named, found


def test_a_run_signed_and_verified(backend_world: BackendWorld, tmp_path: Path) -> None:
    w = backend_world
    key, public = make_keys(tmp_path / "machine-keys")
    w.environ["CONCORDE_SIGNING_KEY"] = str(key)
    new = w.worktree / "src" / "app" / "new.py"
    run, said = w.commands(
        [f"printf 'print(1)\\n' > {new}; echo rc=$?", f"cat {split(key)}; echo rc=$?"]
    )
    assert run.record.status == "ok", run.explain()
    assert said[0].strip().endswith("rc=0"), said[0]
    assert new.read_text() == "print(1)\n"
    assert "PRIVATE KEY" not in said[1] and "rc=0" not in said[1], said  # the host's alone
    assert_verified_then_tampered(run.record.run_directory, public)
