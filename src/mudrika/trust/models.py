"""Trust models carried in agent cards: ``KeycloakRole`` and ``AgentTrust``.

Why these shapes: an agent card advertises who vouches for the agent (its identity provider, the Keycloak
roles it inherits, its certificate) and which operations need which trust level.  Cards carry the fields
in camelCase (``roleName``, ``trustLevel``…); Python code and our own policy files may use snake_case.
Both spellings are accepted on input and camelCase is emitted on output, so a card we re-serialise reads
the same to the next agent.

The models are frozen and refuse unknown fields: a misspelt ``trustlevel`` must be an error, not a role
that silently has no level.  Trust levels are parsed with :func:`mudrika.trust.levels.parse` (so
``"Super-Admin"`` works); every other scalar is strict (no number-to-string or string-to-bool coercion).
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
)
from pydantic.alias_generators import to_camel

from mudrika.errors import InvalidInput
from mudrika.trust.levels import TrustLevel, parse

__all__ = [
    "EXTERNAL_PROVIDERS",
    "AgentExecutionCost",
    "AgentTrust",
    "ConfiguredName",
    "ExecutionRequest",
    "IdentityProvider",
    "KeycloakRole",
    "Level",
    "name_refusal",
    "validate_fingerprint",
]

IdentityProvider = Literal["keycloak", "azure_ad", "okta", "auth0", "custom"]

# Providers whose group names can be mapped onto Keycloak roles through ``external_mappings``.
EXTERNAL_PROVIDERS: frozenset[str] = frozenset({"azure_ad", "okta", "auth0", "custom"})

# Size caps: cards come from other agents; nothing in them may be unbounded.
_MAX_NAME = 256
_MAX_ITEMS = 1024
_MAX_CERT = 64 * 1024


def _coerce_level(value: Any) -> TrustLevel:
    # pydantic attaches the field path to a ValueError; InvalidInput would escape without one.
    if isinstance(value, TrustLevel):
        return value
    if not isinstance(value, str):
        raise ValueError(f"trust level must be a string, not {type(value).__name__}")
    try:
        return parse(value)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None


Level = Annotated[TrustLevel, BeforeValidator(_coerce_level)]
"""A ``TrustLevel`` field that accepts any spelling :func:`parse` accepts."""

Name = Annotated[StrictStr, Field(min_length=1, max_length=_MAX_NAME)]


def name_refusal(value: object) -> str | None:
    """Why ``value`` cannot be a name an operator configures (a role, a permission, an allowed client
    id), or None when it can.

    Why one rule: these names are compared for equality with what tokens and DIDs carry, so a name no
    caller can present (``""``, ``" admin"``, one with a control character) is a configuration
    mistake that silently grants nothing — or, for an allow-list, admits a token whose claim is
    empty.  Refused when the configuration is loaded, with the reason.
    """
    if not isinstance(value, str):
        return "not a string"
    if not value:
        return "empty"
    if len(value) > _MAX_NAME:
        return f"longer than {_MAX_NAME} characters"
    if value != value.strip():
        return "leading or trailing whitespace"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return "control character"
    return None


def _configured_name(value: str) -> str:
    reason = name_refusal(value)
    if reason is not None:
        raise ValueError(f"not a usable name ({reason})")
    return value


ConfiguredName = Annotated[StrictStr, AfterValidator(_configured_name)]
"""A role, permission or client-id name in configuration: :func:`name_refusal` must find nothing."""

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_HEX_PAIRS = re.compile(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){31}")
_B64 = re.compile(r"[A-Za-z0-9+/_-]{43}={0,1}")


def validate_fingerprint(value: str) -> str:
    """Check the ``SHA256:<digest>`` form: 64 hex digits (bare or ``AB:CD:…`` pairs) or base64(url).

    Why strict: the fingerprint pins the agent's certificate; a value that does not decode to exactly
    32 bytes cannot pin anything and must be refused at the boundary.
    """
    prefix, sep, digest = value.partition(":")
    if not sep or prefix != "SHA256":
        raise ValueError("certificate fingerprint must start with 'SHA256:'")
    if _HEX64.fullmatch(digest) or _HEX_PAIRS.fullmatch(digest):
        return value
    if _B64.fullmatch(digest):
        padded = digest + "=" * (-len(digest) % 4)
        try:
            raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == 32:
            return value
    raise ValueError("certificate fingerprint must be SHA256: followed by 32 bytes in hex or base64")


class _CardModel(BaseModel):
    """camelCase on the wire, snake_case accepted, frozen, unknown fields refused."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        str_max_length=_MAX_CERT,
    )


def _check_mapping_keys(value: dict[str, list[str]]) -> dict[str, list[str]]:
    unknown = sorted(set(value) - EXTERNAL_PROVIDERS)
    if unknown:
        raise ValueError(
            f"unknown identity provider(s) {unknown} in externalMappings; "
            f"allowed: {sorted(EXTERNAL_PROVIDERS)}"
        )
    return value


class KeycloakRole(_CardModel):
    """A Keycloak role as an agent card carries it, with its trust level and IdP group mappings.

    ``external_mappings`` maps an external identity provider to the group names (or, for Azure AD,
    group object GUIDs) whose members hold this role, e.g. ``{"azure_ad": ["Agents-Admins",
    "7c9e6679-7425-40de-944b-e07fc1f90ae7"], "okta": ["agent-admins"]}``.
    ``operation_permissions`` raises the minimum level of individual operations for everyone.
    """

    role_id: Name
    role_name: Name
    permissions: list[Name] = Field(default_factory=list, max_length=_MAX_ITEMS)
    trust_level: Level
    realm_name: Name
    external_mappings: Annotated[
        dict[StrictStr, list[Name]], Field(max_length=8), AfterValidator(_check_mapping_keys)
    ] = Field(default_factory=dict)
    operation_permissions: dict[Name, Level] = Field(default_factory=dict, max_length=_MAX_ITEMS)


class AgentTrust(_CardModel):
    """Who vouches for an agent and what each of its operations requires.

    ``allowed_operations`` maps an operation (A2A method such as ``message/send``) to the minimum
    trust level a caller needs.  ``certificate_fingerprint`` is ``SHA256:`` plus the digest in hex or
    base64.  ``creation_timestamp`` must carry a timezone: a naive time is ambiguous across agents.
    """

    identity_provider: IdentityProvider
    inherited_roles: list[KeycloakRole] = Field(default_factory=list, max_length=_MAX_ITEMS)
    certificate: StrictStr | None = None
    certificate_fingerprint: Annotated[StrictStr, AfterValidator(validate_fingerprint)] | None = None
    creator_id: Name
    creation_timestamp: AwareDatetime
    trust_verification_required: StrictBool = True
    allowed_operations: dict[Name, Level] = Field(default_factory=dict, max_length=_MAX_ITEMS)


Did = Annotated[StrictStr, Field(min_length=8, max_length=2048, pattern=r"^did:[a-z0-9]+:")]


def _integral(value: Any) -> Any:
    # A2A 1.0 carries data parts as google.protobuf.Value, whose only number is a double: an
    # ExecutionRequest that went through a protobuf peer arrives with ``5.0`` for ``5``.  An integral
    # float is the same number; a fractional one is refused (credits are whole).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Credits = Annotated[StrictInt, BeforeValidator(_integral), Field(ge=0, le=2**53 - 1)]


class AgentExecutionCost(_CardModel):
    """What executing an agent costs and who may execute it (the seed's credit model).

    Published by the agent (or its operator); ``minimum_trust_level`` is the level a caller must
    *hold under this agent's policy* — the policy, not the request, says what a caller holds.
    """

    agent_id: Name
    agent_name: Name
    credits_per_request: Credits
    creator_did: Did
    minimum_trust_level: Level


class ExecutionRequest(_CardModel):
    """A caller's request to execute an agent with credit verification (the seed's model).

    Everything here is the caller's claim: ``executor_did`` must be the authenticated caller,
    ``trust_level`` is what the caller *says* it holds (a claim above what the policy grants is
    refused, never believed), ``estimated_credits`` is what it offers to pay.
    """

    request_id: uuid.UUID
    executor_did: Did
    agent_id: Name
    input_data: Annotated[StrictStr, Field(max_length=_MAX_CERT)]
    estimated_credits: Credits
    trust_level: Level
