"""Policy for DID callers (``did_roles``), tenant separation, and the seed's execution-cost gate."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from mudrika.errors import InvalidInput
from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import AgentExecutionCost, ExecutionRequest
from mudrika.trust.policy import (
    ALLOWED,
    EXECUTOR_MISMATCH,
    INSUFFICIENT_TRUST,
    NO_ROLE,
    PAYMENT_REQUIRED,
    WRONG_AGENT,
    WRONG_TENANT,
    Policy,
    Principal,
    tenants_from_claims,
)

KEY_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
OTHER_KEY_DID = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"


def _document(**extra: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": 1,
        "roles": [
            {"role_id": "r1", "role_name": "agent", "trust_level": "operator", "realm_name": "mudrika"},
            {"role_id": "r2", "role_name": "reader", "trust_level": "viewer", "realm_name": "mudrika"},
            {"role_id": "r3", "role_name": "boss", "trust_level": "admin", "realm_name": "mudrika"},
        ],
        "operations": {
            "message/send": {"min_level": "operator"},
            "tasks/get": {"min_level": "viewer"},
        },
        "did_roles": {
            KEY_DID: {"roles": ["agent"], "tenants": ["acme"]},
            "did:web:*.partners.example": {"roles": ["reader"], "tenants": ["acme"]},
            "did:web:agents.example:teams:*": {"roles": ["agent"], "tenants": ["globex"]},
            "did:web:Exact.Example": {"roles": ["boss"]},
        },
    }
    document.update(extra)
    return document


@pytest.fixture
def policy() -> Policy:
    return Policy.from_document(_document())


# --- did_roles ------------------------------------------------------------------------------------


def test_did_key_gets_roles_and_tenants_exactly(policy: Policy) -> None:
    principal = policy.principal_for_did(KEY_DID)
    assert principal.roles == frozenset({"agent"})
    assert principal.tenants == frozenset({"acme"})
    assert policy.decide(principal, "message/send").allowed


def test_unlisted_did_is_denied_by_default(policy: Policy) -> None:
    principal = policy.principal_for_did(OTHER_KEY_DID)
    assert principal.roles == frozenset()
    assert policy.decide(principal, "tasks/get").reason == NO_ROLE


@pytest.mark.parametrize(
    ("did", "roles"),
    [
        ("did:web:a.partners.example", {"reader"}),
        ("did:web:deep.a.PARTNERS.example", {"reader"}),
        ("did:web:partners.example", set()),  # the apex is not "below" it
        ("did:web:a.partners.example:x", set()),  # no path unless the pattern has one
        ("did:web:a.partners.example%3A8443", set()),  # ports compare exactly
        ("did:web:evilpartners.example", set()),
        ("did:web:agents.example:teams:blue", {"agent"}),
        ("did:web:agents.example:teams:blue:bot", {"agent"}),
        ("did:web:agents.example:teams", set()),
        ("did:web:exact.example", {"boss"}),  # host case folded
        ("did:web:exact.example:x", set()),
    ],
)
def test_did_web_patterns(policy: Policy, did: str, roles: set[str]) -> None:
    grant = policy.did_grant(did)
    assert (grant.roles if grant else set()) == roles


def test_exact_entry_wins_over_patterns() -> None:
    document = _document()
    document["did_roles"]["did:web:vip.partners.example"] = {"roles": ["boss"], "tenants": ["initech"]}
    policy = Policy.from_document(document)
    grant = policy.did_grant("did:web:vip.partners.example")
    assert grant is not None
    assert grant.roles == frozenset({"boss"})
    assert grant.tenants == frozenset({"initech"})


def test_matching_patterns_unite() -> None:
    document = _document()
    document["did_roles"]["did:web:agents.example:*"] = {"roles": ["boss"], "tenants": ["initech"]}
    grant = Policy.from_document(document).did_grant("did:web:agents.example:teams:blue")
    assert grant is not None
    assert grant.roles == frozenset({"agent", "boss"})
    assert grant.tenants == frozenset({"globex", "initech"})


@pytest.mark.parametrize(
    "pattern",
    [
        "did:key:z6Mk*",  # did:key only exact
        "did:jwk:*",
        "did:web:*",  # a host is needed
        "did:web:*.com",  # a wildcard needs at least two fixed labels
        "did:web:a*.example",
        "did:web:*.example:te*ms",
        "did:web:*.example:*:x",
        "not-a-did",
    ],
)
def test_bad_patterns_fail_at_load_time(pattern: str) -> None:
    document = _document()
    document["did_roles"] = {pattern: {"roles": ["agent"]}}
    with pytest.raises(InvalidInput) as info:
        Policy.from_document(document)
    assert info.value.code == "invalid_policy"


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("did:web:agents.example:*:bots", "as the whole final path segment"),
        ("did:web:agents.example:te*ms:*", "as the whole final path segment"),
        ("did:web:agents.example%3A*:teams", "as the whole final path segment"),  # the port is not final
        ("did:web:agents.example%3A*", "as the whole final path segment"),
        ("did:web:agents.example%3Ax:*", "a port is '%3A' followed by digits"),
        ("did:web:agents.example:%2E%2E:*", "(encoded_unreserved)"),
        ("did:web:agents.example:teams%2Fblue:*", "(encoded_separator)"),
    ],
)
def test_a_pattern_that_would_match_literally_is_refused_at_load_saying_why(pattern: str, says: str) -> None:
    document = _document()
    document["did_roles"] = {pattern: {"roles": ["agent"]}}
    with pytest.raises(InvalidInput) as info:
        Policy.from_document(document)
    assert info.value.code == "invalid_policy"
    assert says in info.value.message


@pytest.mark.parametrize(
    ("roles", "says"),
    [
        ([], "at least 1 item"),
        ([""], "empty"),
        ([" "], "leading or trailing whitespace"),
        (["agent", " agent"], "leading or trailing whitespace"),
        (["age\tnt"], "control character"),
    ],
)
def test_did_roles_entries_must_name_usable_roles(roles: list[str], says: str) -> None:
    document = _document()
    document["did_roles"] = {KEY_DID: {"roles": roles}}
    with pytest.raises(InvalidInput) as info:
        Policy.from_document(document)
    assert info.value.code == "invalid_policy"
    assert says in info.value.message
    assert "did_roles" in info.value.message


@pytest.mark.parametrize("permission", ["", " a2a:send", "a2a:send\n"])
def test_operation_permissions_must_be_usable_names(permission: str) -> None:
    document = _document()
    document["operations"]["message/send"]["permissions"] = [permission]
    with pytest.raises(InvalidInput) as info:
        Policy.from_document(document)
    assert "not a usable name" in info.value.message


def test_junk_dids_get_nothing(policy: Policy) -> None:
    assert policy.did_grant("did:") is None
    assert policy.did_grant("x" * 5000) is None


def test_policy_file_with_did_roles_loads_from_yaml(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text(
        "version: 1\n"
        "roles:\n"
        "  - {role_id: r1, role_name: agent, trust_level: operator, realm_name: mudrika}\n"
        "operations:\n"
        "  message/send: {min_level: operator}\n"
        "did_roles:\n"
        f"  '{KEY_DID}': {{roles: [agent], tenants: [acme]}}\n"
        "tenant_claim: organization\n"
        "require_tenant: true\n"
    )
    policy = Policy.from_file(file)
    assert policy.require_tenant
    assert policy.tenant_claim == "organization"
    assert policy.decide(policy.principal_for_did(KEY_DID), "message/send", tenant="acme").allowed


# --- tenants --------------------------------------------------------------------------------------


def test_a_caller_entitled_in_one_tenant_is_not_entitled_in_another(policy: Policy) -> None:
    principal = policy.principal_for_did(KEY_DID)
    assert policy.decide(principal, "message/send", tenant="acme").allowed
    other = policy.decide(principal, "message/send", tenant="globex")
    assert not other.allowed
    assert other.reason == WRONG_TENANT
    assert other.caller_level == TrustLevel.OPERATOR


def test_no_tenant_is_allowed_unless_required() -> None:
    principal = Principal(subject="s", roles=frozenset({"agent"}), tenants=frozenset({"acme"}))
    assert Policy.from_document(_document()).decide(principal, "message/send").allowed
    strict = Policy.from_document(_document(require_tenant=True))
    assert strict.decide(principal, "message/send").reason == WRONG_TENANT
    assert strict.decide(principal, "message/send", tenant="").reason == WRONG_TENANT
    assert strict.decide(principal, "message/send", tenant="acme").allowed


def test_a_principal_without_tenants_cannot_name_one(policy: Policy) -> None:
    principal = Principal(subject="s", roles=frozenset({"boss"}))
    assert policy.decide(principal, "tasks/get", tenant="acme").reason == WRONG_TENANT


@pytest.mark.parametrize(
    ("claims", "claim", "prefix", "tenants"),
    [
        ({"organization": ["acme", "globex"]}, "organization", "", {"acme", "globex"}),
        ({"organization": {"acme": {"id": "1"}}}, "organization", "", {"acme"}),
        ({"organization": "acme"}, "organization", "", {"acme"}),
        ({"groups": ["/tenants/acme", "/staff", "/tenants/x/y"]}, "groups", "/tenants/", {"acme"}),
        ({"ext": {"tenant": ["t1", 5, ""]}}, "ext.tenant", "", {"t1"}),
        ({"organization": 7}, "organization", "", set()),
        ({}, "organization", "", set()),
    ],
)
def test_tenants_from_claims(claims: dict[str, Any], claim: str, prefix: str, tenants: set[str]) -> None:
    assert tenants_from_claims(claims, claim=claim, prefix=prefix) == tenants


def test_policy_reads_the_configured_tenant_claim() -> None:
    policy = Policy.from_document(_document(tenant_claim="groups", tenant_prefix="/tenants/"))
    assert policy.tenants_for_claims({"groups": ["/tenants/acme"]}) == {"acme"}
    assert Policy.from_document(_document()).tenants_for_claims({"groups": ["/tenants/acme"]}) == set()


# --- the seed's execution-cost gate ---------------------------------------------------------------


def _cost(minimum: str = "operator", credits: int = 10) -> AgentExecutionCost:
    return AgentExecutionCost.model_validate(
        {
            "agentId": "agent-1",
            "agentName": "Echo",
            "creditsPerRequest": credits,
            "creatorDid": KEY_DID,
            "minimumTrustLevel": minimum,
        }
    )


def _request(**overrides: Any) -> ExecutionRequest:
    fields: dict[str, Any] = {
        "requestId": str(uuid.uuid4()),
        "executorDid": KEY_DID,
        "agentId": "agent-1",
        "inputData": "hello",
        "estimatedCredits": 10,
        "trustLevel": "operator",
    }
    fields.update(overrides)
    return ExecutionRequest.model_validate(fields)


@pytest.mark.parametrize(
    ("cost", "request_fields", "reason"),
    [
        (_cost(), {}, ALLOWED),
        (_cost(minimum="admin"), {}, INSUFFICIENT_TRUST),
        (_cost(), {"trustLevel": "super_admin"}, INSUFFICIENT_TRUST),  # a claim above the grant
        (_cost(), {"trustLevel": "guest"}, ALLOWED),  # claiming less is harmless
        (_cost(), {"agentId": "agent-2"}, WRONG_AGENT),
        (_cost(), {"executorDid": OTHER_KEY_DID}, EXECUTOR_MISMATCH),
        (_cost(credits=11), {}, PAYMENT_REQUIRED),
    ],
)
def test_execution_gate(
    policy: Policy, cost: AgentExecutionCost, request_fields: dict[str, Any], reason: str
) -> None:
    decision = policy.decide_execution(
        policy.principal_for_did(KEY_DID), request=_request(**request_fields), cost=cost
    )
    assert decision.reason == reason
    assert decision.allowed is (reason == ALLOWED)
    assert decision.required_level == cost.minimum_trust_level


def test_execution_gate_uses_the_policy_level_not_the_claimed_one(policy: Policy) -> None:
    unknown = policy.principal_for_did(OTHER_KEY_DID)
    decision = policy.decide_execution(
        unknown, request=_request(executorDid=OTHER_KEY_DID, trustLevel="admin"), cost=_cost(minimum="guest")
    )
    assert decision.reason == NO_ROLE


def test_execution_gate_needs_an_authenticated_did(policy: Policy) -> None:
    token_caller = Principal(subject="svc", roles=frozenset({"boss"}))
    decision = policy.decide_execution(token_caller, request=_request(), cost=_cost())
    assert decision.reason == EXECUTOR_MISMATCH


def test_execution_gate_checks_the_tenant(policy: Policy) -> None:
    principal = policy.principal_for_did(KEY_DID)
    decision = policy.decide_execution(principal, request=_request(), cost=_cost(), tenant="globex")
    assert decision.reason == WRONG_TENANT
    assert policy.decide_execution(principal, request=_request(), cost=_cost(), tenant="acme").allowed


def test_seed_models_use_camel_case_and_refuse_unknown_fields() -> None:
    assert _cost().model_dump()["minimumTrustLevel"] == "operator"
    with pytest.raises(ValueError, match="extra"):
        _request(extra="x")
    with pytest.raises(ValueError, match="did"):
        _request(executorDid="not-a-did")


def test_credits_accept_integral_floats_from_protobuf_peers() -> None:
    assert _request(estimatedCredits=5.0).estimated_credits == 5
    with pytest.raises(ValueError, match="integer"):
        _request(estimatedCredits=5.5)
    with pytest.raises(ValueError, match="integer"):
        _request(estimatedCredits=True)
