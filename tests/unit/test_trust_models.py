"""KeycloakRole and AgentTrust: camelCase and snake_case in, camelCase out, strict validation."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import AgentTrust, KeycloakRole, validate_fingerprint

DIGEST = hashlib.sha256(b"agent certificate").digest()
GUID = "7C9E6679-7425-40DE-944B-E07FC1F90AE7"


def role_camel(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "roleId": "r-1",
        "roleName": "agent-admin",
        "permissions": ["agents:manage"],
        "trustLevel": "admin",
        "realmName": "agents",
        "externalMappings": {"azure_ad": ["Agent-Admins", GUID], "okta": ["agent-admins"]},
        "operationPermissions": {"tasks/cancel": "manager"},
    }
    data.update(overrides)
    return data


def trust_camel(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "identityProvider": "keycloak",
        "inheritedRoles": [role_camel()],
        "certificate": None,
        "certificateFingerprint": "SHA256:" + DIGEST.hex(),
        "creatorId": "did:web:agents.example.com",
        "creationTimestamp": "2025-01-15T09:30:00Z",
        "trustVerificationRequired": True,
        "allowedOperations": {"message/send": "operator"},
    }
    data.update(overrides)
    return data


SNAKE_ROLE = {
    "role_id": "r-1",
    "role_name": "agent-admin",
    "permissions": ["agents:manage"],
    "trust_level": "admin",
    "realm_name": "agents",
    "external_mappings": {"azure_ad": ["Agent-Admins", GUID], "okta": ["agent-admins"]},
    "operation_permissions": {"tasks/cancel": "manager"},
}


def test_role_accepts_camel_case_and_emits_camel_case() -> None:
    role = KeycloakRole.model_validate(role_camel())
    assert role.role_name == "agent-admin"
    assert role.trust_level is TrustLevel.ADMIN
    assert role.operation_permissions == {"tasks/cancel": TrustLevel.MANAGER}
    dumped = role.model_dump(mode="json")
    assert dumped == role_camel()


def test_role_accepts_snake_case_too() -> None:
    role = KeycloakRole.model_validate(SNAKE_ROLE)
    assert role == KeycloakRole.model_validate(role_camel())
    assert role.model_dump(mode="json", by_alias=False) == SNAKE_ROLE


def test_role_accepts_python_keywords() -> None:
    role = KeycloakRole(role_id="x", role_name="y", trust_level=TrustLevel.GUEST, realm_name="r")
    assert role.permissions == []
    assert role.external_mappings == {}
    assert role.model_dump(mode="json")["trustLevel"] == "guest"


def test_role_json_round_trip() -> None:
    role = KeycloakRole.model_validate(role_camel())
    text = role.model_dump_json()
    assert '"roleName"' in text
    assert '"role_name"' not in text
    assert KeycloakRole.model_validate_json(text) == role


@pytest.mark.parametrize("spelling", ["Admin", " ADMIN ", "admin"])
def test_role_level_uses_the_level_parser(spelling: str) -> None:
    assert KeycloakRole.model_validate(role_camel(trustLevel=spelling)).trust_level is TrustLevel.ADMIN


def test_role_level_super_admin_with_dash() -> None:
    assert (
        KeycloakRole.model_validate(role_camel(trustLevel="Super-Admin")).trust_level
        is TrustLevel.SUPER_ADMIN
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trustLevel", "root"),
        ("trustLevel", 5),
        ("permissions", [1, 2]),
        ("permissions", "agents:manage"),
        ("roleName", ""),
        ("roleId", 7),
        ("operationPermissions", {"tasks/cancel": "boss"}),
        ("externalMappings", {"azuread": ["x"]}),
        ("externalMappings", {"keycloak": ["x"]}),
        ("externalMappings", {"okta": "not-a-list"}),
    ],
)
def test_role_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        KeycloakRole.model_validate(role_camel(**{field: value}))
    assert info.value.errors()[0]["loc"][0] == field


def test_role_error_names_the_field_and_valid_levels() -> None:
    with pytest.raises(ValidationError) as info:
        KeycloakRole.model_validate(role_camel(trustLevel="root"))
    text = str(info.value)
    assert "trustLevel" in text
    assert "super_admin" in text


def test_role_refuses_unknown_fields_and_is_frozen() -> None:
    with pytest.raises(ValidationError, match="trustlevel"):
        KeycloakRole.model_validate(role_camel(trustlevel="admin"))
    role = KeycloakRole.model_validate(role_camel())
    with pytest.raises(ValidationError):
        role.role_name = "other"


def test_role_requires_its_identity_fields() -> None:
    for missing in ("roleId", "roleName", "trustLevel", "realmName"):
        data = role_camel()
        del data[missing]
        with pytest.raises(ValidationError):
            KeycloakRole.model_validate(data)


def test_agent_trust_camel_in_camel_out() -> None:
    trust = AgentTrust.model_validate(trust_camel())
    assert trust.identity_provider == "keycloak"
    assert trust.inherited_roles[0].trust_level is TrustLevel.ADMIN
    assert trust.allowed_operations == {"message/send": TrustLevel.OPERATOR}
    assert trust.creation_timestamp == datetime(2025, 1, 15, 9, 30, tzinfo=UTC)
    dumped = trust.model_dump(mode="json")
    assert set(dumped) == {
        "identityProvider",
        "inheritedRoles",
        "certificate",
        "certificateFingerprint",
        "creatorId",
        "creationTimestamp",
        "trustVerificationRequired",
        "allowedOperations",
    }
    assert dumped["inheritedRoles"][0]["roleName"] == "agent-admin"
    assert AgentTrust.model_validate(dumped) == trust


def test_agent_trust_snake_case_accepted() -> None:
    trust = AgentTrust.model_validate(
        {
            "identity_provider": "azure_ad",
            "inherited_roles": [SNAKE_ROLE],
            "certificate_fingerprint": None,
            "creator_id": "creator",
            "creation_timestamp": datetime(2025, 1, 1, tzinfo=UTC),
            "trust_verification_required": False,
            "allowed_operations": {"tasks/get": "Viewer"},
        }
    )
    assert trust.identity_provider == "azure_ad"
    assert trust.trust_verification_required is False
    assert trust.allowed_operations["tasks/get"] is TrustLevel.VIEWER


@pytest.mark.parametrize("provider", ["keycloak", "azure_ad", "okta", "auth0", "custom"])
def test_agent_trust_identity_providers(provider: str) -> None:
    assert AgentTrust.model_validate(trust_camel(identityProvider=provider)).identity_provider == provider


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("identityProvider", "google"),
        ("creationTimestamp", "2025-01-15T09:30:00"),
        ("creationTimestamp", datetime(2025, 1, 15)),
        ("trustVerificationRequired", "yes"),
        ("trustVerificationRequired", 1),
        ("allowedOperations", {"message/send": "operatr"}),
        ("creatorId", ""),
        ("certificate", 12),
        ("inheritedRoles", [{"roleName": "x"}]),
    ],
)
def test_agent_trust_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        AgentTrust.model_validate(trust_camel(**{field: value}))
    assert info.value.errors()[0]["loc"][0] == field


def test_agent_trust_refuses_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        AgentTrust.model_validate(trust_camel(signature="x"))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


VALID_FINGERPRINTS = [
    "SHA256:" + DIGEST.hex(),
    "SHA256:" + DIGEST.hex().upper(),
    "SHA256:" + ":".join(f"{b:02X}" for b in DIGEST),
    "SHA256:" + _b64(DIGEST),
    "SHA256:" + _b64(DIGEST).rstrip("="),
    "SHA256:" + _b64url(DIGEST),
]

INVALID_FINGERPRINTS = [
    DIGEST.hex(),
    "sha256:" + DIGEST.hex(),
    "SHA1:" + hashlib.sha1(b"x").hexdigest(),
    "SHA256:" + DIGEST.hex()[:-2],
    "SHA256:" + DIGEST.hex() + "00",
    "SHA256:" + "zz" * 32,
    "SHA256:" + _b64(DIGEST[:31]),
    "SHA256:" + _b64(DIGEST + b"\x00"),
    "SHA256:" + _b64(DIGEST)[:-2] + "!=",
    "SHA256:",
    "SHA256: " + DIGEST.hex(),
]


@pytest.mark.parametrize("value", VALID_FINGERPRINTS)
def test_fingerprint_forms_accepted(value: str) -> None:
    assert validate_fingerprint(value) == value
    assert (
        AgentTrust.model_validate(trust_camel(certificateFingerprint=value)).certificate_fingerprint == value
    )


@pytest.mark.parametrize("value", INVALID_FINGERPRINTS)
def test_fingerprint_forms_rejected(value: str) -> None:
    with pytest.raises(ValueError, match="SHA256"):
        validate_fingerprint(value)
    with pytest.raises(ValidationError) as info:
        AgentTrust.model_validate(trust_camel(certificateFingerprint=value))
    assert info.value.errors()[0]["loc"][0] == "certificateFingerprint"


def test_fingerprint_optional() -> None:
    assert AgentTrust.model_validate(trust_camel(certificateFingerprint=None)).certificate_fingerprint is None
