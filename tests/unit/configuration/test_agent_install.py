"""`concorde-workers install-agents` (issue 12 §2): the shipped pins written into the user data
folder and installed there with `npm ci`, once per lockfile (domain/setup/agent_install.py decides,
application/setup/agent_install.py does it through the ports; the real npm is
tests/integration/test_packaging.py's)."""

from __future__ import annotations

from fakes.filesystem import FakeFileSystem
from fakes.process import FakeProcess, FakeProcessRunner, FakeStart

from concorde_workers.application.setup.agent_install import AgentInstaller
from concorde_workers.domain.setup.agent_install import NPM_CI, install_plan, lock_stamp

HOME = "/home/dev"
FOLDER = f"{HOME}/.local/share/concorde-workers"
PACKAGE = '{"dependencies": {"@mariozechner/pi-coding-agent": "0.73.1"}}\n'
LOCK = '{"lockfileVersion": 3}\n'
ENV = {"HOME": HOME, "PATH": "/usr/bin", "npm_config_cache": "/var/cache/npm"}


def world() -> tuple[FakeFileSystem, FakeProcessRunner]:
    fs = FakeFileSystem()
    fs.write("/usr/bin/npm", "", 0o755)
    return fs, FakeProcessRunner()


def npm_ci(fs: FakeFileSystem) -> FakeProcess:
    def installs(start: FakeStart) -> None:
        fs.write(f"{start.cwd}/node_modules/.bin/pi", "#!/usr/bin/env node\n", 0o755)

    return FakeProcess(on_start=installs)


def test_the_pins_are_written_to_the_user_data_folder_and_npm_ci_installs_them_once() -> None:
    fs, runner = world()
    runner.add(npm_ci(fs))
    told: list[str] = []
    outcome = AgentInstaller(fs, runner, ENV).install(PACKAGE, LOCK, before_npm=told.append)
    assert (outcome.status, outcome.folder, outcome.installed) == (0, FOLDER, True)
    assert told == [FOLDER]
    assert fs.read_text(f"{FOLDER}/package.json") == PACKAGE
    assert fs.read_text(f"{FOLDER}/package-lock.json") == LOCK
    [start] = runner.starts
    assert start.argv == ("/usr/bin/npm", *NPM_CI) and start.cwd == FOLDER
    assert start.argv[1] == "ci", "exactly the lockfile, never a newer release"
    assert start.env["npm_config_cache"] == "/var/cache/npm", "the user's own npm settings"
    assert fs.read_text(f"{FOLDER}/node_modules/.concorde-lock").strip() == lock_stamp(LOCK)
    again = AgentInstaller(fs, runner, ENV).install(PACKAGE, LOCK, before_npm=told.append)
    assert again.status == 0 and not again.installed and "already installed" in again.message
    assert told == [FOLDER], "no npm ci announced for what is already installed"
    assert len(runner.starts) == 1
    runner.add(npm_ci(fs))
    moved = AgentInstaller(fs, runner, ENV).install(PACKAGE, '{"lockfileVersion": 3, "x": 1}\n')
    assert moved.installed and len(runner.starts) == 2


def test_xdg_data_home_is_the_user_data_folders_parent() -> None:
    fs, runner = world()
    runner.add(npm_ci(fs))
    outcome = AgentInstaller(fs, runner, {**ENV, "XDG_DATA_HOME": "/data"}).install(PACKAGE, LOCK)
    assert outcome.folder == "/data/concorde-workers" and fs.is_file(
        "/data/concorde-workers/node_modules/.bin/pi"
    )


def test_without_npm_or_a_home_nothing_is_written_and_it_is_refused() -> None:
    fs, runner = world()
    fs.remove("/usr/bin/npm")
    no_npm = AgentInstaller(fs, runner, ENV).install(PACKAGE, LOCK)
    assert no_npm.status == 2 and "npm is not found" in no_npm.message
    no_home = AgentInstaller(fs, runner, {"PATH": "/usr/bin"}).install(PACKAGE, LOCK)
    assert no_home.status == 2 and "no user data folder" in no_home.message
    assert not fs.exists(FOLDER) and runner.starts == []


def test_a_failed_npm_is_named_and_leaves_no_stamp() -> None:
    fs, runner = world()
    runner.add(FakeProcess(exit_status=1, stderr=b"npm error code ENOTFOUND registry\n"))
    outcome = AgentInstaller(fs, runner, ENV).install(PACKAGE, LOCK)
    assert outcome.status == 1 and "ENOTFOUND" in outcome.message and "exited 1" in outcome.message
    assert not fs.exists(f"{FOLDER}/node_modules/.concorde-lock")


def test_the_plan_is_nothing_when_the_stamp_names_these_pins() -> None:
    plan = install_plan(FOLDER, PACKAGE, LOCK, "/usr/bin/npm", lock_stamp(LOCK) + "\n")
    assert not plan.needed and plan.files == {} and plan.argv == ()
    other = install_plan(FOLDER, PACKAGE, LOCK, "/usr/bin/npm", "0" * 64)
    assert other.needed and set(other.files) == {
        f"{FOLDER}/package.json",
        f"{FOLDER}/package-lock.json",
    }
