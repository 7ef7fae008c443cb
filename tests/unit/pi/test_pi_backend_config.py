"""The pi worker's configuration directory (seed 001 "Run directory", Requirements): its own
PI_CODING_AGENT_DIR, a settings.json of Concorde's own, nothing from the user's pi settings, and
copies of only the files that say how to reach a provider."""

from __future__ import annotations

import json
import posixpath

import pytest
from fakes.agent import make_context
from fakes.filesystem import FakeFileSystem

from concorde_workers.adapters.pi.backend import PRECOMPILE, PiBackend
from concorde_workers.ports.agents.agent import RoundKind

HOME = "/home/u"
RT = "/tmp/concorde-abc123-k9"
USER_PI = f"{HOME}/.pi/agent"


def backend_and_context(environ: dict[str, str] | None = None) -> tuple[PiBackend, object]:
    env = {"HOME": HOME, "PATH": "/usr/bin", **(environ or {})}
    fs = FakeFileSystem()
    for name in ("auth.json", "models.json", "settings.json"):
        fs.write(f"{USER_PI}/{name}", "{}\n")
    return PiBackend(fs, env), make_context(runtime_dir=RT, environ=env)


@pytest.mark.req("A pi worker has its own configuration directory")
def test_every_pi_round_has_the_runtime_config_as_its_agent_dir() -> None:
    backend, context = backend_and_context({"PI_CODING_AGENT_DIR": USER_PI})
    env = backend.environment(context)  # type: ignore[arg-type]
    assert env["PI_CODING_AGENT_DIR"] == f"{RT}/config"
    for kind in RoundKind:
        argv = backend.command(context, kind, "s-1").argv  # type: ignore[arg-type]
        assert f"{RT}/config/sessions" in argv


@pytest.mark.req("A pi worker's settings are Concorde's own")
def test_the_generated_settings_hold_only_default_project_trust_never() -> None:
    backend, context = backend_and_context()
    files = backend.generate(context).files  # type: ignore[arg-type]
    assert json.loads(files[f"{RT}/config/settings.json"]) == {"defaultProjectTrust": "never"}


@pytest.mark.req("A pi worker takes nothing from the user's pi settings")
def test_the_users_pi_settings_are_never_read() -> None:
    backend, context = backend_and_context()
    fs = backend._fs
    assert isinstance(fs, FakeFileSystem)
    fs.ops.clear()
    backend.generate(context)  # type: ignore[arg-type]
    backend.credential_copies(context)  # type: ignore[arg-type]
    backend.environment(context)  # type: ignore[arg-type]
    backend.command(context, RoundKind.INITIAL, None)  # type: ignore[arg-type]
    touched = [
        op
        for op in fs.ops
        if posixpath.basename(str(op[1])) == "settings.json" and str(op[1]).startswith(USER_PI)
    ]
    assert touched == []


@pytest.mark.req("Only the pi files that say how to reach a provider are copied")
@pytest.mark.parametrize(
    ("configured", "source"),
    [
        (None, USER_PI),
        ("~/custom-pi", f"{HOME}/custom-pi"),
        ("/opt/pi-config", "/opt/pi-config"),
    ],
)
def test_only_auth_and_models_are_copied(configured: str | None, source: str) -> None:
    environ = {} if configured is None else {"PI_CODING_AGENT_DIR": configured}
    backend, context = backend_and_context(environ)
    copies = backend.credential_copies(context)  # type: ignore[arg-type]
    assert list(copies) == [
        (f"{source}/auth.json", f"{RT}/config/auth.json"),
        (f"{source}/models.json", f"{RT}/config/models.json"),
    ]


def test_the_extension_is_compiled_once_a_run_by_pis_own_jiti_into_control() -> None:
    """issue 32 §4: node runs adapters/pi/extension/precompile.mjs with pi's program (whose
    jiti it uses) over the two generated files into control/jiti, which no round writes; the
    rounds' cache, cleared before each (`round_scratch`), is filled from it."""
    backend, context = backend_and_context({"CONCORDE_PI": "/opt/pi/dist/cli.js"})
    fs = backend._fs  # type: ignore[attr-defined]
    fs.write("/opt/pi/dist/cli.js", "", 0o755)
    fs.write("/usr/bin/node", "", 0o755)
    compiled = backend.compiled_cache(context)  # type: ignore[arg-type]
    assert compiled is not None
    assert compiled.argv == (
        "/usr/bin/node",
        str(PRECOMPILE),
        "/opt/pi/dist/cli.js",
        f"{RT}/control/jiti",
        f"{RT}/control/permission.ts",
        f"{RT}/control/pi_policy.ts",
    )
    assert (compiled.folder, compiled.cache) == (f"{RT}/control/jiti", f"{RT}/tmp/jiti")
    assert compiled.cache in backend.round_scratch(context)  # type: ignore[arg-type]


def test_without_node_nothing_is_compiled() -> None:
    backend, context = backend_and_context({"CONCORDE_PI": "/opt/pi/dist/cli.js"})
    backend._fs.write("/opt/pi/dist/cli.js", "", 0o755)  # type: ignore[attr-defined]
    assert backend.compiled_cache(context) is None  # type: ignore[arg-type]
