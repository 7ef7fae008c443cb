"""A machine's resources.json (issue 20 §1–2), row by row: what it holds, each bad shape
refused naming the file and the repair, the request's limits over its defaults, and what a
machine without control groups does with each kind of run."""

from __future__ import annotations

import json

import pytest

from concorde_workers.domain.configuration.machine_resources import (
    MachineResources,
    WithoutGroups,
    parse_machine_resources,
    resources_location,
)
from concorde_workers.domain.configuration.resources import Enforcement, GroupKind, ResourceLimits
from concorde_workers.domain.setup.doctor import resources_check

FILE = "/home/u/.config/concorde/resources.json"


def test_a_full_file_gives_its_defaults_and_its_choice() -> None:
    text = json.dumps(
        {
            "schema_version": 1,
            "defaults": {"processes": 256, "memory_mib": 2048},
            "without_groups": "run",
        }
    )
    assert parse_machine_resources(text, FILE) == MachineResources(
        defaults=ResourceLimits(processes=256, memory_mib=2048),
        without_groups=WithoutGroups.RUN,
        file=FILE,
    )


def test_a_file_of_only_its_version_keeps_the_built_in_setting() -> None:
    assert parse_machine_resources('{"schema_version": 1}', FILE) == MachineResources(file=FILE)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", f"{FILE} is not JSON ("),
        ("[]", f'{FILE} must be a JSON object with "schema_version": 1'),
        ('{"schema_version": 2}', f'{FILE} must be a JSON object with "schema_version": 1'),
        (
            '{"schema_version": 1, "limits": {}}',
            f'{FILE} has the unknown field \'limits\': it holds "defaults" and "without_groups"',
        ),
        (
            '{"schema_version": 1, "defaults": {"processes": 3}}',
            f"{FILE} has an invalid defaults.processes: Input should be greater than or equal to 16",
        ),
        (
            '{"schema_version": 1, "defaults": {"disk_mib": 3}}',
            f"{FILE} has an invalid defaults.disk_mib: Extra inputs are not permitted",
        ),
        (
            '{"schema_version": 1, "without_groups": "maybe"}',
            f'{FILE} has an invalid "without_groups": it is "refuse-when-asked", "refuse" or "run"',
        ),
        ("[" * 10_000 + "]" * 10_000, f"{FILE} is not JSON ("),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "another-version",
        "unknown-field",
        "out-of-bounds",
        "unknown-limit",
        "unknown-choice",
        "too-deep",
    ],
)
def test_a_bad_file_is_said_naming_it_and_the_repair(text: str, said: str) -> None:
    parsed = parse_machine_resources(text, FILE)
    assert parsed.problem is not None and parsed.problem.startswith(said), parsed.problem
    assert parsed.refusal(False, None) == parsed.problem  # every run is refused with it


def test_the_request_s_fields_go_over_the_machine_s_defaults_one_by_one() -> None:
    machine = MachineResources(defaults=ResourceLimits(processes=256, memory_mib=2048))
    asked = ResourceLimits.model_validate({"memory_mib": 768})
    assert machine.limits(asked) == ResourceLimits(processes=256, memory_mib=768)
    assert machine.limits(None) == machine.defaults


NONE = "no cgroup v2 hierarchy here"
ASKED = (
    "the request asks for resource limits (processes 512, memory 1024 MiB (swap off), "
    f"CPU weight 100, runtime spaces 512 MiB each (config/; home/, tmp/, work/)) and this machine cannot enforce them: {NONE}"
)
REFUSED = (
    f"this machine cannot enforce resource limits ({NONE}) and its {FILE} says "
    '"without_groups": "refuse"'
)


@pytest.mark.parametrize(
    ("choice", "asked", "groups_missing", "refused"),
    [
        (WithoutGroups.REFUSE_WHEN_ASKED, True, NONE, ASKED),
        (WithoutGroups.REFUSE_WHEN_ASKED, False, NONE, None),
        (WithoutGroups.REFUSE, True, NONE, REFUSED),
        (WithoutGroups.REFUSE, False, NONE, REFUSED),
        (WithoutGroups.RUN, True, NONE, None),
        (WithoutGroups.RUN, False, NONE, None),
        (WithoutGroups.REFUSE, True, None, None),  # groups there: nothing to refuse
    ],
)
def test_what_a_machine_without_groups_does_with_a_run(
    choice: WithoutGroups, asked: bool, groups_missing: str | None, refused: str | None
) -> None:
    machine = MachineResources(without_groups=choice, file=FILE)
    assert machine.refusal(asked, groups_missing) == refused


@pytest.mark.parametrize(
    ("environ", "where"),
    [
        (
            {"CONCORDE_RESOURCES": "/etc/concorde/resources.json", "HOME": "/home/u"},
            "/etc/concorde/resources.json",
        ),
        ({"HOME": "/home/u"}, "/home/u/.config/concorde/resources.json"),
        ({"CONCORDE_MODEL_MAP": "/srv/map/models.json"}, "/srv/map/resources.json"),
        ({}, None),
    ],
)
def test_the_file_lies_beside_the_model_map_unless_named(
    environ: dict[str, str], where: str | None
) -> None:
    assert resources_location(environ) == where


V1 = Enforcement(kind=GroupKind.V1, parents=("/sys/fs/cgroup/pids",), cpu=True)
WITHOUT = Enforcement(kind=GroupKind.NONE, problem=NONE)
DEFAULTS = "defaults processes 512, memory 1024 MiB (swap off), CPU weight 100, runtime spaces 512 MiB each (config/; home/, tmp/, work/)"


@pytest.mark.parametrize(
    ("enforcement", "machine", "ok", "state"),
    [
        (V1, MachineResources(), True, f"{V1.text()}; {DEFAULTS}"),
        (
            WITHOUT,
            MachineResources(),
            True,
            f"{WITHOUT.text()}; {DEFAULTS}; runs go without them, "
            "and a request that asks for limits is refused",
        ),
        (
            WITHOUT,
            MachineResources(without_groups=WithoutGroups.REFUSE, file=FILE),
            True,
            f"{WITHOUT.text()}; {DEFAULTS}; every run is refused",
        ),
        (
            WITHOUT,
            MachineResources(without_groups=WithoutGroups.RUN, file=FILE),
            True,
            f"{WITHOUT.text()}; {DEFAULTS}; every run goes without them",
        ),
        (
            V1,
            MachineResources(file=FILE, problem=f"{FILE} is not JSON (x)"),
            False,
            f"{FILE} is not JSON (x)",
        ),
    ],
    ids=["enforced", "none-default", "none-refuse", "none-run", "broken-file"],
)
def test_doctor_says_the_limits_and_fails_only_on_a_broken_machine_file(
    enforcement: Enforcement, machine: MachineResources, ok: bool, state: str
) -> None:
    check = resources_check(enforcement, machine)
    assert (check.name, check.ok, check.state) == ("resource limits", ok, state)
    assert check.repair == (
        "" if ok else "repair it as domain/configuration/machine_resources.py shows, or remove it"
    )
