"""Generation of the pi permission extension (seed 001 "Run directory", "Both backends enforce
the same grant"; notes/harness.md §2.1-§2.2): the template's placeholders, the embedded policy
(Policy.to_json() plus pi's keys), the sandbox-runtime path, and PiBackend.generate."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from fakes.agent import make_context
from fakes.filesystem import FakeFileSystem

from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.adapters.pi.backend import PiBackend
from concorde_workers.adapters.pi.extension import (
    POLICY_PLACEHOLDER,
    SANDBOX_SPECIFIER,
    embedded_policy,
    extension_policy,
    generate_extension,
    policy_module_path,
    render_extension,
    sandbox_runtime_package,
    template_text,
)
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.ground.text import digest_text

PACKAGE = "/opt/srt/node_modules/@anthropic-ai/sandbox-runtime"


def test_the_template_has_each_placeholder_once() -> None:
    text = template_text("permission.ts")
    assert text.count(POLICY_PLACEHOLDER) == 1
    assert text.count(SANDBOX_SPECIFIER) == 1
    assert 'from "./pi_policy.ts"' in text


def test_pi_policy_uses_node_built_ins_only() -> None:
    text = template_text("pi_policy.ts")
    imports = re.findall(r'^import .* from "([^"]+)";$', text, flags=re.M)
    assert imports and all(spec.startswith("node:") for spec in imports)


def test_the_sandbox_runtime_package_comes_from_the_environment_or_the_primary() -> None:
    assert sandbox_runtime_package({"CONCORDE_SANDBOX_RUNTIME": PACKAGE}, "/p") == PACKAGE
    assert sandbox_runtime_package({"CONCORDE_SANDBOX_RUNTIME": ""}, "/p") == (
        "/p/.concorde/tools/pi-runtime/node_modules/@anthropic-ai/sandbox-runtime"
    )
    assert sandbox_runtime_package({}, "/p").endswith("@anthropic-ai/sandbox-runtime")


@pytest.mark.req("Both backends enforce the same grant")
def test_the_embedded_policy_is_the_shared_policy_plus_pis_keys() -> None:
    context = make_context(entries={"src/": "rw", "docs/": "ro", "src/x.py": "names"})
    data = extension_policy(
        context.policy,
        limits=Limits(max_turns=5, max_budget_usd=1.5),
        result_schema=context.result_schema,
        package=PACKAGE,
        rg="/usr/bin/rg",
        fd="/usr/bin/fdfind",
    )
    shared = context.policy.to_json()
    for key in shared:
        if key != "sandbox":
            assert data[key] == shared[key]
    for key in ("denyRead", "allowWrite", "denyWrite"):
        assert data["sandbox"][key] == shared["sandbox"][key]
    assert data["sandbox"]["allowRead"] == [*shared["sandbox"]["allowRead"], f"{PACKAGE}/vendor"]
    assert data["programs"] == {"rg": "/usr/bin/rg", "fd": "/usr/bin/fdfind"}
    assert data["limits"] == {"maxTurns": 5, "maxBudgetUsd": 1.5}
    assert data["resultSchema"] == json.loads(context.result_schema)
    assert data["sandboxRuntime"] == PACKAGE
    rt = context.policy.runtime
    assert data["hidden"] == [rt.control, rt.config, f"{rt.tmp}/jiti"]
    assert f"{rt.tmp}/jiti" in data["sandbox"]["denyRead"]
    assert f"{rt.tmp}/jiti" in data["sandbox"]["denyWrite"]
    assert f"{rt.work}/.pi" in data["sandbox"]["denyWrite"]


def test_rendering_replaces_the_placeholders_and_names_the_module_digest() -> None:
    context = make_context()
    data = extension_policy(
        context.policy,
        limits=Limits(),
        result_schema=context.result_schema,
        package=PACKAGE,
        rg=None,
        fd=None,
    )
    permission, module = render_extension(data, PACKAGE)
    assert POLICY_PLACEHOLDER not in permission
    assert SANDBOX_SPECIFIER not in permission
    assert f'from "{PACKAGE}/dist/index.js";' in permission
    assert embedded_policy(permission) == data
    assert module == template_text("pi_policy.ts")
    digest = hashlib.sha256(module.encode()).hexdigest()
    assert permission.splitlines()[0].endswith(f"pi_policy.ts sha256:{digest}")
    assert data["limits"] == {"maxTurns": 200, "maxBudgetUsd": None}


def test_a_grant_path_spelled_like_the_import_specifier_stays_in_the_policy() -> None:
    context = make_context(entries={"src/": "rw", "@concorde/sandbox-runtime": "names"})
    data = extension_policy(
        context.policy,
        limits=Limits(),
        result_schema=context.result_schema,
        package=PACKAGE,
        rg=None,
        fd=None,
    )
    permission, _ = render_extension(data, PACKAGE)
    assert embedded_policy(permission) == data
    assert "@concorde/sandbox-runtime" in embedded_policy(permission)["names"]
    assert permission.count(f'"{PACKAGE}/dist/index.js"') == 1


def test_generate_extension_writes_both_files_into_control() -> None:
    context = make_context()
    files = generate_extension(
        context.policy,
        limits=Limits(),
        result_schema=context.result_schema,
        environ={"CONCORDE_SANDBOX_RUNTIME": PACKAGE},
        rg=None,
        fd=None,
    )
    rt = context.policy.runtime
    assert set(files) == {pi_layout.permission_extension(rt), policy_module_path(rt)}
    assert policy_module_path(rt) == f"{rt.control}/pi_policy.ts"


def test_pi_backend_generate_adds_the_extension_and_its_digest() -> None:
    fs = FakeFileSystem()
    fs.write("/usr/bin/rg", "", mode=0o755)
    fs.write("/usr/bin/fdfind", "", mode=0o755)
    context = make_context(environ={"PATH": "/usr/bin", "CONCORDE_SANDBOX_RUNTIME": PACKAGE})
    generated = PiBackend(fs=fs, environ={}).generate(context)
    rt = context.policy.runtime
    permission = generated.files[pi_layout.permission_extension(rt)]
    assert policy_module_path(rt) in generated.files
    assert rt.result_schema in generated.files and pi_layout.pi_settings(rt) in generated.files
    assert generated.settings_digest == digest_text(permission)
    data = embedded_policy(permission)
    assert data["programs"] == {"rg": "/usr/bin/rg", "fd": "/usr/bin/fdfind"}
    assert data["limits"]["maxTurns"] == context.request.limits.max_turns
    assert data["sandboxRuntime"] == PACKAGE


def test_the_extension_registers_every_tool_and_the_hardening() -> None:
    """What the template must keep (the integration tests run it; this guards the text)."""
    text = template_text("permission.ts")
    for name in ("read", "write", "edit", "bash", "grep", "find", "ls", "concorde_result"):
        assert name in text
    assert "strictAllowlist: true" in text
    assert 'executionMode: "sequential"' in text
    assert "SandboxManager.reset()" in text
    assert '"Result recorded; the session ends now."' in text
    assert '"concorde-limit"' in text
    assert "[concorde-limit]" in text
    assert "detached: true" in text
