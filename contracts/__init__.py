"""Contracts of seed 002 and our own, as JSON files, with a loader.

Each contract is one package-data file `<id>.json` holding `id`, `version`, `schema` (JSON Schema
draft 2020-12), `semantics` and `example`. The seven `contract.workers.*` files are the objects of
seed 002 "Workers contracts" verbatim; `contract.tracing.node` and `contract.tracing.error` are
ours (design.md, "Decisions where the spec is silent": Trace node), and so is
`contract.attestation.worker-run`, the predicate of a run's signed in-toto statement (issue 30
§4, docs/decisions.md "The attestation and verify").

A schema refers to another contract as `urn:concorde:<contract id>`; `validator` resolves those
references against every contract shipped here and checks the `project-path` format.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported when a validator is first made: a run without a
    # configuration or an output schema to check never loads it (docs/benchmarks.md)
    from jsonschema import FormatChecker
    from referencing import Registry

__all__ = [
    "URN_PREFIX",
    "Contract",
    "UnknownContract",
    "all_contracts",
    "is_project_path",
    "load",
    "schema_digest",
    "schema_validator",
    "validator",
    "worker_result_schema",
]

URN_PREFIX = "urn:concorde:"
"""The URI prefix by which one contract's schema refers to another: `urn:concorde:<id>`."""

_SUFFIX = ".json"
_FIELDS = ("id", "version", "schema", "semantics", "example")


class UnknownContract(LookupError):
    """No contract with this id ships with the package."""

    def __init__(self, contract_id: str, known: tuple[str, ...]) -> None:
        self.contract_id = contract_id
        self.known = known
        super().__init__(
            f"unknown contract {contract_id!r}; the known contracts are: {', '.join(known)}"
        )


@dataclass(frozen=True)
class Contract:
    """One contract: its id, version, JSON schema, the semantics text and an example value.

    `schema` and `example` are the parsed JSON as loaded; treat them as read-only (copy before
    changing one, e.g. with `copy.deepcopy`).
    """

    id: str
    version: int
    schema: Mapping[str, Any]
    semantics: str
    example: Any


def _files() -> dict[str, Traversable]:
    """The contract files of the package by contract id (the file name without `.json`)."""
    root = resources.files(__name__)
    return {
        entry.name[: -len(_SUFFIX)]: entry
        for entry in root.iterdir()
        if entry.is_file() and entry.name.endswith(_SUFFIX)
    }


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ValueError(f"duplicate keys {duplicates}")
    return dict(pairs)


@functools.cache
def _load_all() -> MappingProxyType[str, Contract]:
    loaded: dict[str, Contract] = {}
    for name, entry in sorted(_files().items()):
        text = entry.read_text(encoding="utf-8")
        data = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
        if not isinstance(data, dict) or tuple(data) != _FIELDS:
            raise ValueError(f"contract file {name}{_SUFFIX} must hold exactly the keys {_FIELDS}")
        if data["id"] != name:
            raise ValueError(f"contract file {name}{_SUFFIX} holds the id {data['id']!r}")
        loaded[name] = Contract(
            id=data["id"],
            version=data["version"],
            schema=data["schema"],
            semantics=data["semantics"],
            example=data["example"],
        )
    return MappingProxyType(loaded)


def load(contract_id: str) -> Contract:
    """The contract with this id; `UnknownContract` when none ships with the package."""
    contracts = _load_all()
    try:
        return contracts[contract_id]
    except KeyError:
        raise UnknownContract(contract_id, tuple(contracts)) from None


def all_contracts() -> tuple[Contract, ...]:
    """Every contract shipped with the package, ordered by id."""
    return tuple(_load_all().values())


def schema_digest(contract: Contract) -> str:
    """`sha256:` + the hex digest of the schema's canonical JSON (sorted keys, compact).

    Pinned together with the version in the tests: a schema change without a version change
    fails there.
    """
    canonical = json.dumps(
        contract.schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def is_project_path(value: object) -> bool:
    """The `project-path` format: a non-empty relative path with no `..` segment.

    Used for paths relative to a node's folder or the worktree, such as the run trace's
    transcript (seed 002, contract.workers.worker-run-trace). A non-string passes, as JSON
    Schema formats constrain strings only.
    """
    if not isinstance(value, str):
        return True
    if not value or posixpath.isabs(value) or "\x00" in value:
        return False
    return ".." not in value.split("/")


def _format_checker() -> FormatChecker:
    from jsonschema import FormatChecker

    checker = FormatChecker()
    checker.checks("project-path")(is_project_path)
    return checker


@functools.cache
def _registry() -> Registry:
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resources(
        (URN_PREFIX + contract.id, DRAFT202012.create_resource(contract.schema))
        for contract in all_contracts()
    )


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """A `jsonschema.Draft202012Validator` for any schema, such as `worker_result_schema(...)`,
    with the `project-path` format and the `urn:concorde:<id>` references of `validator`."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, registry=_registry(), format_checker=_format_checker())


@functools.cache
def validator(contract_id: str) -> Any:
    """A `jsonschema.Draft202012Validator` for the contract's schema.

    It checks formats, `project-path` included, and resolves `urn:concorde:<id>` references to
    the other contracts. Use `.iter_errors(value)`, `.is_valid(value)` or `.validate(value)`.
    """
    return schema_validator(load(contract_id).schema)


def worker_result_schema(output_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The schema a worker's result is validated against, and passed to `--json-schema`.

    Seed 002, contract.workers.worker-result: the caller supplies the schema of `output`, which
    the host embeds at that key; without one, `output` stays any object (the worker then
    returns an empty object). The returned dict is a fresh copy.
    """
    schema: dict[str, Any] = json.loads(json.dumps(load("contract.workers.worker-result").schema))
    if output_schema is not None:
        schema["properties"]["output"] = json.loads(json.dumps(output_schema))
    return schema
