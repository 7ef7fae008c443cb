"""The worker's claim judged once (seed 000 "Rounds"): the result contract by its model
(domain/run/worker_result.py), then `output` by the caller's output schema, resolved against the
result schema the agent was given. jsonschema is imported on the first output schema to check."""

from __future__ import annotations

import json
from typing import Any

from concorde_workers.contracts import schema_validator
from concorde_workers.domain.ground.record_fields import JsonObject
from concorde_workers.domain.run.worker_result import WorkerResult, judge_result

__all__ = ["ANY_OBJECT", "ResultJudge"]

ANY_OBJECT: dict[str, Any] = {"type": "object"}
"""The result schema's `output` when the caller gave no output schema (seed 002)."""


class ResultJudge:
    """Judges each round's worker result against one run's result schema."""

    def __init__(self, result_schema: str) -> None:
        self._schema_root: dict[str, Any] = json.loads(result_schema)
        self._output_schema = self._schema_root["properties"]["output"]
        self._validator: Any = None  # made on first need: jsonschema costs 0.2 s to import

    def judge(self, data: dict[str, Any]) -> WorkerResult | str:
        """The worker result as its model, or the first problem found with it: the result
        contract's, else the caller's output schema's."""
        judged = judge_result(data)
        if isinstance(judged, str):
            return judged
        problem = self._output_problem(judged.output)
        return judged if problem is None else problem

    def _output_problem(self, output: JsonObject) -> str | None:
        """The first problem the caller's output schema finds, by its place in the result (the
        same error first however the output's keys are ordered)."""
        if self._output_schema == ANY_OBJECT:
            return None  # no caller schema: the model already holds output to be an object
        if self._validator is None:
            # The result schema as the agent was given it: the caller's output schema resolves
            # its references against this root, as when the whole result was checked with it.
            self._validator = schema_validator(self._schema_root)
        errors = sorted(
            self._validator.descend(output, self._output_schema, path="output"),
            key=lambda e: ([str(p) for p in e.path], e.message),
        )
        if not errors:
            return None
        return f"{'/'.join(str(p) for p in errors[0].path)}: {errors[0].message}"
