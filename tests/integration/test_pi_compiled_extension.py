"""pi's permission extension compiled by the host into jiti's cache (issue 32 §4; docs/
decisions.md "pi's extension compiled once a run").

The command `PiBackend.compiled_cache` names (node, adapters/pi/extension/precompile.mjs, the
pinned pi's own jiti) is run as the host runs it, on a run's generated control/permission.ts and
control/pi_policy.ts; its folder is copied into a fresh <rt>/tmp/jiti, and a node process loads
both files as pi 0.73.1's extension loader does (`jiti/static` made from pi's
core/extensions/loader.js, `jiti.import`): jiti finds both compiled (a cache hit, no Babel run),
so the names and closing lines the host wrote are pi's. A host that wrote another name or
another source's hash would be a miss here, and each round would compile again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.pi_extension_world import PI_PACKAGE, build_world, node_available

from concorde_workers.adapters.pi import layout
from concorde_workers.adapters.pi.backend import PRECOMPILE
from concorde_workers.application.rounds.compiled_cache import ENVIRONMENT

pytestmark = [pytest.mark.integration]

LOADER = PI_PACKAGE / "dist" / "core" / "extensions" / "loader.js"
LOAD_AS_PI = """
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
const [loader, ...files] = process.argv.slice(1);
// pi's loader imports "jiti/static", which the package exports for `import` only: its file,
// by the package's exports map, from the jiti pi resolves.
const manifest = createRequire(loader).resolve("jiti/package.json");
const exported = JSON.parse(readFileSync(manifest, "utf8")).exports["./static"];
const entry = new URL(exported.import?.default ?? exported.import ?? exported, pathToFileURL(manifest));
const { createJiti } = await import(entry.href);
const jiti = createJiti(pathToFileURL(loader).href, { moduleCache: false });
for (const file of files) {
  try { await jiti.import(file, { default: true }); } catch {}
}
"""


def test_the_hosts_compiled_extension_is_what_pis_loader_finds_in_its_cache(
    tmp_path: Path,
) -> None:
    if not node_available():
        pytest.fail("node, jiti, pi or sandbox-runtime is missing: run ./scripts/setup")
    world = build_world(tmp_path)
    runtime = world.policy.runtime
    node = shutil.which("node")
    assert node is not None
    folder = layout.compiled_extension(runtime)
    files = [layout.permission_extension(runtime), f"{runtime.control}/pi_policy.ts"]
    program = os.path.realpath(PI_PACKAGE / "dist" / "cli.js")
    subprocess.run(
        [node, str(PRECOMPILE), program, folder, *files], env=ENVIRONMENT, check=True, timeout=120
    )
    compiled = sorted(os.listdir(folder))
    assert [name.split(".")[0] for name in compiled] == ["control-permission", "control-pi_policy"]
    cache = Path(layout.jiti_cache(runtime))
    shutil.rmtree(cache)
    shutil.copytree(folder, cache)
    done = subprocess.run(
        [node, "--input-type=module", "-e", LOAD_AS_PI, str(LOADER), *files],
        env={**ENVIRONMENT, "TMPDIR": runtime.tmp, "JITI_DEBUG": "1", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = done.stdout + done.stderr
    hits = [line for line in said.splitlines() if "[cache]" in line and "[hit]" in line]
    assert len(hits) == 2 and "[miss]" not in said, said
    assert sorted(os.listdir(cache)) == compiled  # nothing written anew
