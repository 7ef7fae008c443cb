"""The contracts package: the seven contracts of seed 002 verbatim, our two tracing contracts and
the attestation's predicate, and the loader (ids, versions pinned with their schema digests,
validators, the project-path format)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from concorde_workers import contracts
from concorde_workers.contracts import (
    Contract,
    UnknownContract,
    all_contracts,
    is_project_path,
    load,
    schema_digest,
    validator,
    worker_result_schema,
)

REPO = Path(__file__).resolve().parents[3]
SEED_002_NAME = "002_6ede7f2be8237311.txt"
# The seed as vendored in docs/spec/ (test_conformance checks it against ../shared/seeds), else
# the shared folder beside the clone.
SEED_002_PLACES = (
    REPO / "docs" / "spec" / SEED_002_NAME,
    REPO.parent / "shared" / "seeds" / SEED_002_NAME,
)

SEED_IDS = (
    "contract.workers.worker-result",
    "contract.workers.grant-input",
    "contract.workers.worker-configuration",
    "contract.workers.model-map",
    "contract.workers.worker-run-trace",
    "contract.workers.worker-round-trace",
    "contract.workers.worker-run-record",
)
OUR_IDS = (
    "contract.tracing.node",
    "contract.tracing.error",
    "contract.attestation.worker-run",
    # the Codex CLI's extensions of three seed contracts (issue 33 §4; docs/decisions.md 72)
    "contract.concorde.model-map-codex",
    "contract.concorde.worker-configuration-codex",
    "contract.concorde.worker-run-record-codex",
)

# Every contract's version with the digest of its schema. A schema change must come with a version
# change (the contracts' own rule: "A behaviour or field change increments the version"); then
# pin the new pair here.
PINNED: dict[str, tuple[int, str]] = {
    "contract.concorde.model-map-codex": (
        1,
        "sha256:9b89d3c5d473a2e2b385894560ba3fa9b222db8376300e61c41396d3361e66db",
    ),
    "contract.concorde.worker-configuration-codex": (
        1,
        "sha256:28e705aa7080a2a9c0ccd9c5d9a9f6f01d5caa54225d34cb9b1091c6a254ce74",
    ),
    "contract.concorde.worker-run-record-codex": (
        1,
        "sha256:630f3dd864420146bc01f02e1f58522528f802d945b292ba2f889bf9007b01b3",
    ),
    "contract.attestation.worker-run": (
        1,
        "sha256:44927dad74e13ea32cf58ea2c4769e3972878feb3dffadbfe3b64c2448237af5",
    ),
    "contract.tracing.error": (
        1,
        "sha256:295dae89a24be9b0c1c00f148410d43f08ec97f886832da5e334867c3422a8a8",
    ),
    "contract.tracing.node": (
        3,  # 3: a node's backend may be codex (issue 33 §4)
        "sha256:4c53a8716087aec3cf6e773de91b5610a058639c2d4f96db0accfb75642a2281",
    ),
    "contract.workers.grant-input": (
        2,
        "sha256:642e0006a163d6af3aa375a68a13b4f9325cfc83d053f09740d0c713d641e5e3",
    ),
    "contract.workers.model-map": (
        1,
        "sha256:866b0c529f31b28426af1a5094f2f896575d066c80547fb0842859eb3aae51d9",
    ),
    "contract.workers.worker-configuration": (
        10,
        "sha256:8e0544714ccfc859accbdfcf6145302cbe3897ec814579120d9d6136cf827bff",
    ),
    "contract.workers.worker-result": (
        2,
        "sha256:dbf16323e01d0f964939aa966807047146c2f351ff1ea8d0e09e5ebc9b9c5fde",
    ),
    "contract.workers.worker-round-trace": (
        5,
        "sha256:bd4ee87f1e6bf8742f15be52670905b27180e063ee7827135633f70224e8e4b8",
    ),
    "contract.workers.worker-run-record": (
        4,
        "sha256:7b7fa81bf2f10b9b5fcbde900e8ae8bf8e590432bfa912433509cd79900b0a27",
    ),
    "contract.workers.worker-run-trace": (
        5,
        "sha256:739e02a71d204c7c17573382d124a28f0d77c2a38889cdae041a48401fdef62f",
    ),
}

CONTRACTS_DIR = Path(contracts.__file__).resolve().parent
ALL_IDS = tuple(contract.id for contract in all_contracts())


def seed_objects() -> list[dict[str, Any]]:
    """Every JSON object of seed 002 that starts at a line `{` (and ends at its matching `}`)."""
    seed = next((place for place in SEED_002_PLACES if place.is_file()), None)
    if seed is None:
        pytest.fail(
            f"seed 002 not found at {' nor '.join(map(str, SEED_002_PLACES))}: vendor it in "
            "docs/spec/ or put the shared folder beside the clone to compare the contracts"
        )
    text = seed.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    offset = 0
    end = 0
    for line in text.splitlines(keepends=True):
        if offset >= end and line.rstrip("\r\n") == "{":
            value, end = decoder.raw_decode(text, offset)
            found.append(value)
        offset += len(line)
    return found


def example(contract_id: str) -> Any:
    return copy.deepcopy(load(contract_id).example)


# --- the set of contracts --------------------------------------------------------------------


def test_the_seven_contracts_of_seed_002_and_ours_ship_with_the_package() -> None:
    assert set(SEED_IDS) | set(OUR_IDS) == set(ALL_IDS)


def test_ids_are_unique_and_each_file_is_named_after_its_id() -> None:
    files = sorted(CONTRACTS_DIR.glob("*.json"))
    ids = [json.loads(path.read_text(encoding="utf-8"))["id"] for path in files]
    assert len(ids) == len(set(ids))
    assert [path.name for path in files] == [f"{contract_id}.json" for contract_id in ids]
    assert sorted(ids) == list(ALL_IDS)


def test_each_contract_file_holds_exactly_id_version_schema_semantics_example() -> None:
    for path in CONTRACTS_DIR.glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert list(data) == ["id", "version", "schema", "semantics", "example"], path.name
        assert isinstance(data["version"], int) and data["version"] >= 1
        assert isinstance(data["semantics"], str) and data["semantics"].strip()


def test_the_contract_files_equal_the_objects_of_seed_002_verbatim() -> None:
    seed = seed_objects()
    assert [obj["id"] for obj in seed] == list(SEED_IDS)
    for obj in seed:
        path = CONTRACTS_DIR / f"{obj['id']}.json"
        shipped = json.loads(path.read_text(encoding="utf-8"))
        # key order included: the files are the spec's text, not a rearrangement of it
        assert json.dumps(shipped) == json.dumps(obj), f"{path.name} differs from seed 002"
        contract = load(obj["id"])
        assert (contract.version, contract.schema, contract.semantics, contract.example) == (
            obj["version"],
            obj["schema"],
            obj["semantics"],
            obj["example"],
        )


# --- versions and schema digests -------------------------------------------------------------


@pytest.mark.parametrize("contract_id", ALL_IDS)
def test_a_schema_change_comes_with_a_version_change(contract_id: str) -> None:
    contract = load(contract_id)
    assert contract_id in PINNED, f"pin {contract_id} with its version and schema digest"
    pinned_version, pinned_digest = PINNED[contract_id]
    actual = (contract.version, schema_digest(contract))
    assert actual == (pinned_version, pinned_digest), (
        f"{contract_id}: the schema or version changed (now version {contract.version}, "
        f"{actual[1]}; pinned version {pinned_version}, {pinned_digest}). A schema change must "
        "bump the contract's version; then pin the new version and digest in PINNED."
    )


def test_every_pinned_contract_exists() -> None:
    assert set(PINNED) == set(ALL_IDS)


def test_the_schema_digest_is_sha256_of_the_canonical_json() -> None:
    contract = Contract(
        id="x", version=1, schema={"b": [1, 2], "a": "é"}, semantics="s", example={}
    )
    reordered = Contract(
        id="y", version=2, schema={"a": "é", "b": [1, 2]}, semantics="t", example=None
    )
    assert schema_digest(contract) == schema_digest(reordered)
    assert schema_digest(contract) == (
        "sha256:" + hashlib.sha256('{"a":"é","b":[1,2]}'.encode()).hexdigest()
    )
    changed = Contract(id="x", version=1, schema={"b": [2, 1], "a": "é"}, semantics="s", example={})
    assert schema_digest(changed) != schema_digest(contract)


# --- schemas and examples --------------------------------------------------------------------


@pytest.mark.parametrize("contract_id", ALL_IDS)
def test_each_schema_is_a_valid_draft_2020_12_schema(contract_id: str) -> None:
    Draft202012Validator.check_schema(load(contract_id).schema)


@pytest.mark.parametrize("contract_id", ALL_IDS)
def test_each_example_validates_against_its_schema(contract_id: str) -> None:
    errors = [error.message for error in validator(contract_id).iter_errors(example(contract_id))]
    assert errors == []


def test_the_error_contract_example_is_the_returned_run_records_error() -> None:
    assert (
        example("contract.tracing.error") == example("contract.workers.worker-run-record")["error"]
    )


def test_the_node_example_carries_a_worker_run_trace_and_the_records_error() -> None:
    node = example("contract.tracing.node")
    assert validator("contract.workers.worker-run-trace").is_valid(node["content"])
    assert node["error"] == example("contract.tracing.error")


# --- loader ----------------------------------------------------------------------------------


def test_an_unknown_id_is_refused_naming_it_and_the_known_ids() -> None:
    with pytest.raises(UnknownContract) as raised:
        load("contract.workers.nope")
    message = str(raised.value)
    assert "contract.workers.nope" in message
    for contract_id in ALL_IDS:
        assert contract_id in message
    assert raised.value.known == ALL_IDS
    with pytest.raises(UnknownContract):
        validator("contract.workers.nope")


def test_a_contract_is_frozen() -> None:
    contract = load("contract.workers.model-map")
    with pytest.raises(AttributeError):
        contract.version = 2  # type: ignore[misc]


# --- the project-path format -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("transcript.jsonl", True),
        ("rounds/1/stderr.log", True),
        ("checks/check.http.tests/output.log", True),
        ("a..b/c", True),
        ("", False),
        ("/abs/transcript.jsonl", False),
        ("../transcript.jsonl", False),
        ("rounds/../../x", False),
        ("rounds/..", False),
        (7, True),  # formats constrain strings only
    ],
)
def test_project_path_is_relative_without_parent_segments(value: object, valid: bool) -> None:
    assert is_project_path(value) is valid


@pytest.mark.parametrize("transcript", ["../transcript.jsonl", "/tmp/x/transcript.jsonl"])
def test_the_validators_check_the_project_path_format(transcript: str) -> None:
    content = example("contract.workers.worker-run-trace")
    content["transcript"] = transcript
    assert not validator("contract.workers.worker-run-trace").is_valid(content)
    content["transcript"] = "transcript.jsonl"
    assert validator("contract.workers.worker-run-trace").is_valid(content)


# --- the tracing node and error contracts ----------------------------------------------------


def node_problems(node: dict[str, Any]) -> list[str]:
    return [error.message for error in validator("contract.tracing.node").iter_errors(node)]


def running_round_node() -> dict[str, Any]:
    return {
        "kind": "worker-round",
        "id": "w-20261002T101500-a1b2c3/1",
        "parent": "w-20261002T101500-a1b2c3",
        "started_at": "2026-10-02T10:15:02Z",
        "ended_at": None,
        "status": "running",
        "outcome": None,
        "error": None,
        "files": [],
        "metadata": {},
        "usage": {
            "tokens_in": None,
            "tokens_out": None,
            "tokens_cache_read": None,
            "tokens_cache_write": None,
            "cost_usd": None,
            "turns": None,
            "duration_seconds": None,
        },
        "content": example("contract.workers.worker-round-trace"),
    }


def test_a_running_round_node_is_valid() -> None:
    assert node_problems(running_round_node()) == []


def test_the_node_refers_to_the_run_trace_and_round_trace_contracts() -> None:
    node = example("contract.tracing.node")
    del node["content"]["rounds"]
    assert node_problems(node)
    round_node = running_round_node()
    round_node["content"]["prompt"] = "again"
    assert node_problems(round_node)


def test_the_nodes_error_is_checked_recursively_through_its_causes() -> None:
    node = example("contract.tracing.node")
    cause = example("contract.tracing.error")
    node["error"]["causes"] = [cause]
    assert node_problems(node) == []
    cause["unhandled"]["reason"] = "laziness"
    assert node_problems(node)
    link = example("contract.tracing.error")
    link["causes"] = [{"code": "x"}]
    assert not validator("contract.tracing.error").is_valid(link)


@pytest.mark.parametrize(
    "change",
    [
        {"ended_at": "2026-10-02T10:16:00Z"},  # running, yet ended
        {"outcome": "ok"},  # running, yet with an outcome
        {"started_at": "2026-10-02 10:15:02"},  # not UTC ISO 8601 with Z
        {"parent": None},  # a round lies below its run
        {"metadata": {"round": 1}},  # a round's metadata is empty
        {"usage": {"tokens_in": 1}},  # a round's usage has every field
        {"files": [{"path": "../stderr.log", "digest": "sha256:" + "0" * 64}]},
        {"files": [{"path": "stderr.log", "digest": "md5:0"}]},
        {"kind": "Worker Round"},
        {"extra": 1},
    ],
)
def test_a_node_breaking_the_uniform_fields_is_invalid(change: dict[str, Any]) -> None:
    node = running_round_node()
    node.update(change)
    assert node_problems(node)


@pytest.mark.parametrize(
    ("status", "outcome", "valid"),
    [
        ("failed", "failed", True),
        ("failed", "interrupted", True),
        ("blocked", "interrupted", True),
        ("failed", "ok", False),
        ("blocked", "failed", False),
        ("failed", None, False),
    ],
)
def test_outcome_is_the_status_or_interrupted(
    status: str, outcome: str | None, valid: bool
) -> None:
    node = example("contract.tracing.node")
    node["status"], node["outcome"] = status, outcome
    assert (node_problems(node) == []) is valid


def test_a_worker_run_that_did_not_end_ok_has_an_error_and_one_that_did_has_none() -> None:
    node = example("contract.tracing.node")
    node["error"] = None
    assert node_problems(node)
    node["status"] = node["outcome"] = "ok"
    assert node_problems(node) == []
    node["error"] = example("contract.tracing.error")
    assert node_problems(node)


def test_a_worker_runs_own_usage_records_nothing() -> None:
    node = example("contract.tracing.node")
    node["usage"] = {"tokens_in": 1}
    assert node_problems(node)


# --- the worker result schema with the caller's output schema ---------------------------------


def test_the_callers_output_schema_is_embedded_at_output() -> None:
    result = example("contract.workers.worker-result")
    output_schema = {
        "type": "object",
        "required": ["findings"],
        "properties": {"findings": {"type": "array"}},
    }
    schema = worker_result_schema(output_schema)
    assert schema["properties"]["output"] == output_schema
    assert not contracts.schema_validator(schema).is_valid(result)
    result["output"] = {"findings": []}
    assert contracts.schema_validator(schema).is_valid(result)
    # the shipped contract is untouched, and without a caller schema output is any object
    assert load("contract.workers.worker-result").schema["properties"]["output"] == {
        "type": "object"
    }
    assert worker_result_schema() == load("contract.workers.worker-result").schema


def _without_codex(node: Any) -> Any:
    """A schema with what the Codex extension adds taken out: `codex` from a backend enum and
    the `codex` member of a per-backend object."""
    if isinstance(node, list):
        return [_without_codex(v) for v in node if v != "codex"]
    if isinstance(node, dict):
        return {k: _without_codex(v) for k, v in node.items() if k != "codex"}
    return node


def test_each_codex_extension_is_its_seed_contract_with_codex_added_and_nothing_else() -> None:
    """Issue 33 §4: the seven stay verbatim; the extensions are ours, used only for a value
    that names codex."""
    from concorde_workers.domain.ground.backends import EXTENSION_CONTRACTS, contract_for

    for seed_id, extension_id in EXTENSION_CONTRACTS.items():
        seed, extension = load(seed_id), load(extension_id)
        assert "codex" not in json.dumps(seed.schema)
        assert "codex" in json.dumps(extension.schema)
        assert _without_codex(extension.schema) == seed.schema, extension_id
        assert contract_for(seed_id, {"default": {"backend": "pi"}}) == seed_id
        assert contract_for(seed_id, {"default": {"backend": "codex"}}) == extension_id
    assert contract_for("contract.workers.model-map", {"models": {"m": {"pi": "x"}}}) == (
        "contract.workers.model-map"
    )
    assert contract_for("contract.workers.model-map", {"models": {"m": {"codex": "x"}}}) == (
        "contract.concorde.model-map-codex"
    )
