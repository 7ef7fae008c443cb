"""`demo --backend pi|codex` (issue 33 "Done means"): the demo's run takes the caller's PATH,
LANG, HOME, XDG_DATA_HOME and the variables naming the chosen backend's programs, and its own
configuration of that backend; never the caller's own (their codex.json, their key, their pi
configuration directory). The run itself: tests/e2e/test_codex_demo_e2e.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from concorde_workers.adapters.cli.parser import parser
from concorde_workers.adapters.cli.subcommands.demo import demo_environ
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND, DEMO_BACKENDS

CALLER = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/home/u",
    "XDG_DATA_HOME": "/home/u/.data",
    "CONCORDE_CODEX": "/opt/codex/bin/codex",
    "CONCORDE_PI": "/opt/pi/bin/pi",
    "CONCORDE_CODEX_CONFIG": "/home/u/.config/concorde/codex.json",
    "OPENAI_API_KEY": "sk-the-user-s-own",
    "PI_CODING_AGENT_DIR": "/home/u/.pi/agent",
    "HTTPS_PROXY": "http://proxy.example:3128",
}


@dataclass
class World:
    """What demo_environ reads of a demo world."""

    backend: str
    environ_additions: dict[str, str] = field(default_factory=dict)


def test_a_codex_demo_takes_its_own_codex_json_and_key_and_finds_codex_as_any_run() -> None:
    own = {"CONCORDE_CODEX_CONFIG": "/tmp/d/codex.json", "CONCORDE_DEMO_API_KEY": "demo"}
    env = demo_environ(CALLER, World("codex", own))  # type: ignore[arg-type]
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/home/u",
        "XDG_DATA_HOME": "/home/u/.data",
        "CONCORDE_CODEX": "/opt/codex/bin/codex",
        **own,
    }


def test_a_pi_demo_keeps_what_it_kept() -> None:
    own = {"PI_CODING_AGENT_DIR": "/tmp/d/pi-agent"}
    env = demo_environ(CALLER, World(DEFAULT_BACKEND, own))  # type: ignore[arg-type]
    assert (
        env["PI_CODING_AGENT_DIR"] == "/tmp/d/pi-agent" and env["CONCORDE_PI"] == "/opt/pi/bin/pi"
    )
    assert not {"CONCORDE_CODEX", "CONCORDE_CODEX_CONFIG", "OPENAI_API_KEY", "HTTPS_PROXY"} & set(
        env
    )


@pytest.mark.parametrize("backend", DEMO_BACKENDS)
def test_demo_takes_each_backend_it_has_a_scripted_server_of(backend: str) -> None:
    args: Any = parser().parse_args(["demo", "--backend", backend])
    assert args.backend == backend
    assert parser().parse_args(["demo"]).backend == DEFAULT_BACKEND
