"""ONE node process that answers the pi extension's decisions in batches.

`tests/fakes/pi_extension_driver.mjs --serve` loads the extension's `pi_policy.ts` once, with
jiti as pi loads it, then reads one JSON line per batch (a policy as the extension embeds it and
its queries) and writes one JSON line of answers. A parity test sends hundreds of generated
grants, each with its paths, through the same process instead of starting node for each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Any

from fakes.pi_extension_world import DRIVER, REPO

PI_POLICY = REPO / "adapters" / "pi" / "extension" / "pi_policy.ts"


class PiPolicyServer:
    """The driver in serve mode; `decide` is one batch. Close it (or use it as a context)."""

    def __init__(
        self,
        pi_policy: Path = PI_POLICY,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._process = subprocess.Popen(
            [shutil.which("node") or "node", str(DRIVER), "--serve", str(REPO), str(pi_policy)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=cwd,
            env=env,
        )
        self.batches = 0
        self.queries = 0

    def decide(self, policy: dict[str, Any], queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The answers to `queries` under `policy`, in order."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps({"policy": policy, "queries": queries}) + "\n")
            process.stdin.flush()
        except BrokenPipeError as error:
            raise AssertionError(f"the driver died: {self._stderr_text()}") from error
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the driver died ({process.wait()}): {self._stderr_text()}")
        self.batches += 1
        self.queries += len(queries)
        answers: list[dict[str, Any]] = json.loads(line)["answers"]
        assert len(answers) == len(queries)
        return answers

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self) -> None:
        """End the driver: its stdin closes, it answers what it read and exits."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=60)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._stderr.close()

    def __enter__(self) -> PiPolicyServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
