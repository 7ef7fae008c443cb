"""The plan as text for a person at a shell (`concorde-workers plan`): the verdict line, every
reason a run would not launch with its repair, then the plan's sections (resolution, placement,
Git administrative paths, grant, deny rules and sandbox lists, programs, settings, round 1's
command, confinement, environment, digests and brief, notes).

Pure: it reads the plan's JSON document (application/preparation/planner.py `plan_json`), so the
text and `plan --json` say the same. Every line passes `terminal_lines`: a grant path, an
instruction or a runtime path the request gave cannot steer the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from concorde_workers.application.preparation.planner import Plan, plan_json
from concorde_workers.domain.ground.text import terminal_lines

__all__ = ["render", "verdict_line"]


def render(plan: Plan) -> str:
    """The plan as text for a person at a shell, every line with its control characters escaped
    (a grant path, an instruction or a runtime path the request gave cannot steer the
    terminal)."""
    data = plan_json(plan)
    lines: list[str] = []
    add: Callable[..., None] = lines.append
    add(f"concorde-workers plan — {verdict_line(plan)}")
    add(f"  run id {plan.run_id}, runtime directory {plan.runtime_directory} (not created)")
    for reason in plan.reasons:
        add("")
        add(f"REFUSED {reason.code} (reason {reason.reason.value})")
        lines.extend(f"  {line}" for line in reason.message.splitlines())
    _section(
        lines,
        "Resolution",
        [f"{k}: {_short(v['value'])}  ← {v['source']}" for k, v in data["resolution"].items()],
    )
    if data["placement"]:
        p = data["placement"]
        _section(
            lines,
            "Placement",
            [f"holds: {p['worktree']} lies directly in {p['primary']}/.claude/worktrees/"],
        )
    _section(lines, "Git administrative paths (hidden from every tool)", data["git_admin_paths"])
    _section(lines, "Grant", [f"{e['level']:<5} {e['path']}" for e in data["grant"]])
    if data["deny_rules"] is not None:
        _section(lines, f"Deny rules ({data['deny_rules']['count']})", data["deny_rules"]["rules"])
        for key, paths in data["sandbox"].items():
            _section(lines, f"Sandbox {key}", paths)
        _section(lines, "Tool set", [data["tools"]])
    _section(
        lines,
        "Programs (version, the least the policy relies on, where, what said it, how it was found)",
        [_program_line(p) for p in data["programs"]],
    )
    if data.get("settings"):
        _section(
            lines,
            "Worker settings beside those lists (control/settings.json)",
            [
                f"{key}: {json.dumps(value, sort_keys=True)}"
                for key, value in _flat(data["settings"]).items()
            ],
        )
    if "round1" in data:
        _round1_lines(lines, data)
    _section(lines, "Notes", data["notes"])
    return terminal_lines(lines)


def verdict_line(plan: Plan) -> str:
    """The plan's first line after its name (issue 31 §2): that a run would launch, or that it
    would be refused, with the first reason and its repair."""
    reasons = plan.reasons
    if plan.launches:
        return "a run would launch"
    if not reasons:  # no preparation and no reason: cannot happen, said rather than hidden
        return "a run would be refused"
    first = reasons[0]
    message = first.message.splitlines()[0] if first.message else ""
    more = f" (and {len(reasons) - 1} more below)" if len(reasons) > 1 else ""
    return f"a run would be refused: {first.code}: {message}{more}"


def _round1_lines(lines: list[str], data: dict[str, Any]) -> None:
    """Round 1's command, adaptations, confinement, environment, digests and brief."""
    r1 = data["round1"]
    _section(
        lines,
        "Round 1 command (cwd " + r1["cwd"] + ", the brief on stdin)",
        [" ".join(_quote(a) for a in r1["argv"])],
    )
    if r1["adaptations"]:
        _section(lines, "Adapted to the installed program", r1["adaptations"])
    if data["confinement"] is not None:
        mounts = data["confinement"]["mounts"]
        _section(
            lines,
            f"Confinement: the whole agent in a mount and PID namespace "
            f"({len(mounts)} mounts over a read-only /)",
            [f"{m['kind']:<15} {m['path']}  ({m['why']})" for m in mounts]
            + [
                f"{'own group':<15} {path}  (the round's own control group, read-only, or "
                "nothing: no other run's is named)"
                for path in data["confinement"]["control_groups"]
            ],
        )
    _section(
        lines,
        "Round 1 environment (cleared, then exactly)",
        [f"{k}={v}" for k, v in r1["environment"].items()],
    )
    _section(
        lines,
        "Digests the run record would carry",
        [f"{k}: {v}" for k, v in data["digests"].items()],
    )
    _section(lines, "Brief", data["brief"].rstrip("\n").splitlines())


def _program_line(program: dict[str, Any]) -> str:
    version = program["version"] or "version unknown"
    said = program["problem"] or program["source"]
    found = f"; found by {program['origin']}" if program.get("origin") else ""
    least = f" (at least {program['minimum']})" if program["minimum"] else ""
    return f"{program['program']} {version}{least} {program['path']}  ← {said}{found}"


def _flat(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys down to the values that are no object."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _section(lines: list[str], title: str, items: list[str]) -> None:
    if not items:
        return
    lines.append("")
    lines.append(title)
    lines.extend(f"  {item}" for item in items)


def _short(value: Any) -> str:
    text = _shown(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _shown(value: Any) -> str:
    """A resolved value as a person reads it (issue 19 §2: plan printed Python's reprs):
    `timeout_seconds 900, max_budget_usd none`, a list comma-separated, nothing as `none`."""
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(_shown(v) for v in value) or "none"
    return str(value)


def _quote(arg: str) -> str:
    if len(arg) > 200:
        return f"'<{len(arg)} characters of JSON>'"
    return arg if arg and all(c.isalnum() or c in "-_./:,=@" for c in arg) else repr(arg)
