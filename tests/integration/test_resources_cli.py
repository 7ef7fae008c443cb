"""`plan` and the limit flags (issue 20 §4): the limits in force and how this machine enforces
them, in the text and in `--json`; a bad flag refused naming it and the repair; a request file's
`resources` under the flags."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from integration.test_plan_cli import flags, plan

from concorde_workers.adapters.processes.cgroups import CgroupGroups


def test_plan_says_the_limits_and_how_this_machine_enforces_them(project: Any) -> None:
    shown = plan(
        *flags(project, "--max-processes", "64", "--max-memory", "512m", "--cpu-weight", "50")
    )
    assert shown.status == 0, shown.both
    enforcement = CgroupGroups().enforcement().text()
    assert (
        f"Resources (each round in a control group of its own): processes 64, memory 512 "
        f"MiB (swap off), CPU weight 50, runtime spaces 512 MiB each (config/; home/, tmp/, work/); {enforcement}"
    ) in shown.out
    as_json = plan(*flags(project, "--max-memory", "2g", "--json")).json()
    assert as_json["resources"]["limits"] == {
        "processes": 512,
        "memory_mib": 2048,
        "cpu_weight": 100,
        "space_mib": 512,
    }
    assert as_json["resources"]["enforced"] is True and as_json["resources"]["refused"] is None


def test_plan_names_the_bound_of_work_and_home_the_run_s_one_space(project: Any) -> None:
    """Issue 30 §2: config/ (the agent's) and home/, tmp/, work/ (the worker's) are a tmpfs of
    the run's size each, and plan says so, in the text (each folder a writable mount of a space)
    and in --json."""
    shown = plan(*flags(project, "--max-space", "64m"))
    assert shown.status == 0, shown.both
    assert (
        "the runtime directory's writable spaces, the run's own for a confined run: the agent's "
        "(config/) and the worker's (home/, tmp/ and work/), a tmpfs of 64 MiB each"
    ) in shown.out
    for folder in ("config", "home", "tmp", "work"):
        assert re.search(
            rf"writable +/\S+/concorde-\S+/{folder}  \(the run's writable space", shown.out
        )
    assert (
        plan(*flags(project, "--max-space", "64m", "--json")).json()["resources"]["limits"][
            "space_mib"
        ]
        == 64
    )


@pytest.mark.parametrize(
    ("flag", "value", "repair"),
    [
        ("--max-memory", "lots", "give MiB or a size such as 512m or 2g"),
        ("--max-memory", "1.5g", "give MiB or a size such as 512m or 2g"),
        ("--max-processes", "-3", "give a number"),
        ("--cpu-weight", "heavy", "give a number"),
        ("--max-space", "big", "give MiB or a size such as 512m or 2g"),
    ],
)
def test_a_limit_flag_that_is_no_limit_is_refused_naming_it(
    project: Any, flag: str, value: str, repair: str
) -> None:
    shown = plan(*flags(project, flag, value))
    assert shown.status == 2
    assert f"{flag} {value!r} is no limit: {repair}" in shown.err


def test_a_limit_out_of_its_bounds_is_refused_naming_the_field(project: Any) -> None:
    shown = plan(*flags(project, "--max-processes", "3"))
    assert shown.status == 2 and "request_invalid" in shown.err
    assert "resources.processes" in shown.err, shown.err


def test_the_flags_go_over_the_request_file_s_resources(project: Any, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "worktree": str(project.worktree),
                "task_type": "implement",
                "grant": json.loads(Path(project.grant_file).read_text()),
                "instructions": "x",
                "resources": {"processes": 200, "memory_mib": 768},
            }
        )
    )
    as_json = plan(str(request), "--max-memory", "1g", "--json").json()
    assert as_json["resources"]["limits"] == {
        "processes": 200,
        "memory_mib": 1024,
        "cpu_weight": 100,
        "space_mib": 512,
    }
