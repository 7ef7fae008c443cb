"""FakeSandboxProbe: the SandboxProbe port in memory — it answers the fact the test gives and
records what it was asked to run with. tests/integration/test_doctor_cli.py holds the real
adapter (adapters/sandboxes/sandbox_probe.py) to the same two answers: ran without reaching 127.0.0.1
inside the real sandbox, reached it without one."""

from __future__ import annotations

from dataclasses import dataclass, field

from concorde_workers.domain.setup.doctor import SandboxFact


@dataclass
class FakeSandboxProbe:
    fact: SandboxFact = field(
        default_factory=lambda: SandboxFact(
            ran=True, reached=False, detail="concorde-sandbox-ran | connect refused: no network"
        )
    )
    asked: list[tuple[str, str]] = field(default_factory=list)

    def network(self, node: str, sandbox_runtime: str) -> SandboxFact:
        self.asked.append((node, sandbox_runtime))
        return self.fact
