"""The DID document model (W3C DID Core 1.0 §5) and the one question verifiers ask of it.

Why a model and not a dict: a verifier must never take "a key that appears somewhere in the document"
— it must take the key the document authorises *for this purpose* (DID Core §5.3: a key in
``assertionMethod`` may sign credentials, one only in ``keyAgreement`` may not).  :meth:`DIDDocument.key_for`
answers exactly that and raises :class:`~mudrika.errors.UntrustedKeyError` otherwise.

What is validated when a document is built (``from_json``): ``id`` and ``controller`` are DIDs; each
verification method has an id that is a DID URL of this document's DID (or of a controller), a type, a
controller DID and exactly one kind of key material (``publicKeyMultibase``, ``publicKeyJwk``, or the
legacy ``publicKeyBase58``; ``blockchainAccountId`` alone is allowed for methods such as did:pkh);
JWKs carry no private members (§5.2.1); ids are unique; every reference in a verification relationship
resolves to a verification method of this document (``dangling_reference``); key material of the
types we understand decodes to a valid key, so a broken key is an error at load time, not at
verification time.  Unknown top-level and verification-method properties are preserved — DID
documents are extensible (§4.1) — but never interpreted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeAlias, TypeVar, cast, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from mudrika.crypto.keys import KeyType, PublicKey
from mudrika.crypto.multibase import base58btc_decode, varint_decode
from mudrika.errors import InvalidInput, UntrustedKeyError
from mudrika.identity._x25519 import X25519_MULTICODEC, X25519PublicKey
from mudrika.identity.did import DID, DIDURL, MAX_DID_URL_LENGTH, parse_did

__all__ = [
    "PURPOSES",
    "SIGNING_PURPOSES",
    "AgreementKey",
    "DIDDocument",
    "Purpose",
    "Service",
    "SigningPurpose",
    "VerificationMethod",
    "X25519PublicKey",
]

Purpose: TypeAlias = Literal[
    "authentication", "assertionMethod", "keyAgreement", "capabilityInvocation", "capabilityDelegation"
]
SigningPurpose: TypeAlias = Literal[
    "authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation"
]
#: The verification relationships of DID Core §5.3, in the order documents usually list them.
PURPOSES: Final[tuple[Purpose, ...]] = (
    "authentication",
    "assertionMethod",
    "keyAgreement",
    "capabilityInvocation",
    "capabilityDelegation",
)
#: The four relationships a signing key may serve (all but ``keyAgreement``), in the same order.
SIGNING_PURPOSES: Final[tuple[SigningPurpose, ...]] = (
    "authentication",
    "assertionMethod",
    "capabilityInvocation",
    "capabilityDelegation",
)
#: A key usable for ``keyAgreement``: X25519, or an EC key used for ECDH.
AgreementKey: TypeAlias = PublicKey | X25519PublicKey
#: A method driver's recipe for a verification method that costs enough to build only on demand: it
#: returns the method's JSON fields and its key (see :meth:`DIDDocument._assemble`).
DeferredMethod: TypeAlias = Callable[[], tuple[dict[str, Any], AgreementKey]]

_MAX_METHODS: Final = 64
_MAX_ENTRIES: Final = 64
_MAX_SERVICES: Final = 64
_MAX_TEXT: Final = 512
_MAX_JWK_MEMBERS: Final = 32
_JWK_PRIVATE: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})

_X25519: Final = "x25519"
_ANY: Final[frozenset[str]] = frozenset({*(kt.value for kt in KeyType), _X25519})
#: Verification method types we can take a key from, and the key kinds each may carry.  Anything
#: else (e.g. ``EcdsaSecp256k1RecoveryMethod2020``) is kept in the document but yields no key.
_TYPE_KINDS: Final[Mapping[str, frozenset[str]]] = {
    "Multikey": _ANY,
    "JsonWebKey2020": _ANY,
    "JsonWebKey": _ANY,
    "Ed25519VerificationKey2018": frozenset({KeyType.ED25519.value}),
    "Ed25519VerificationKey2020": frozenset({KeyType.ED25519.value}),
    "EcdsaSecp256k1VerificationKey2019": frozenset({KeyType.SECP256K1.value}),
    "EcdsaSecp256r1VerificationKey2019": frozenset({KeyType.P256.value}),
    "P256Key2021": frozenset({KeyType.P256.value}),
    "X25519KeyAgreementKey2019": frozenset({_X25519}),
    "X25519KeyAgreementKey2020": frozenset({_X25519}),
}
#: ``publicKeyBase58`` carries raw bytes with no codec, so the type must say what they are.
_BASE58_KIND: Final[Mapping[str, str]] = {
    "Ed25519VerificationKey2018": KeyType.ED25519.value,
    "Ed25519VerificationKey2020": KeyType.ED25519.value,
    "EcdsaSecp256k1VerificationKey2019": KeyType.SECP256K1.value,
    "EcdsaSecp256r1VerificationKey2019": KeyType.P256.value,
    "P256Key2021": KeyType.P256.value,
    "X25519KeyAgreementKey2019": _X25519,
    "X25519KeyAgreementKey2020": _X25519,
}


def _text(value: str, what: str) -> str:
    if not value or len(value) > MAX_DID_URL_LENGTH:
        raise InvalidInput(
            f"{what} must be a non-empty string of at most {MAX_DID_URL_LENGTH} characters",
            code="bad_did_document",
            field=what,
        )
    return value


def _kind(key: AgreementKey) -> str:
    return _X25519 if isinstance(key, X25519PublicKey) else key.key_type.value


class VerificationMethod(BaseModel):
    """A verification method (DID Core §5.2).  Extra properties are kept but never interpreted."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    type: str
    controller: str
    public_key_multibase: str | None = Field(default=None, alias="publicKeyMultibase")
    public_key_jwk: dict[str, Any] | None = Field(default=None, alias="publicKeyJwk")
    public_key_base58: str | None = Field(default=None, alias="publicKeyBase58")
    blockchain_account_id: str | None = Field(default=None, alias="blockchainAccountId")

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return _text(value, "verificationMethod.id")

    @field_validator("type")
    @classmethod
    def _check_type(cls, value: str) -> str:
        if not value or len(value) > _MAX_TEXT:
            raise InvalidInput("verification method type missing or too long", code="bad_verification_method")
        return value

    @field_validator("controller")
    @classmethod
    def _check_controller(cls, value: str) -> str:
        parse_did(_text(value, "verificationMethod.controller"))
        return value

    @field_validator("public_key_jwk")
    @classmethod
    def _check_jwk(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        if len(value) > _MAX_JWK_MEMBERS:
            raise InvalidInput("publicKeyJwk has too many members", code="bad_verification_method")
        leaked = _JWK_PRIVATE.intersection(value)
        if leaked:
            # DID Core §5.2.1: publicKeyJwk MUST NOT contain private key members.
            raise InvalidInput(
                "publicKeyJwk contains private key members", code="private_jwk", members=sorted(leaked)
            )
        return value

    @model_validator(mode="after")
    def _check_material(self) -> Self:
        private = [name for name in self.model_extra or {} if name.lower().startswith("privatekey")]
        if private:
            # A DID document is public: a private key in it is a leak, never something to use.
            raise InvalidInput(
                "verification method carries private key material",
                code="private_key_material",
                id=self.id[:128],
                members=sorted(private)[:4],
            )
        materials = [
            name
            for name, value in (
                ("publicKeyMultibase", self.public_key_multibase),
                ("publicKeyJwk", self.public_key_jwk),
                ("publicKeyBase58", self.public_key_base58),
            )
            if value is not None
        ]
        if len(materials) > 1:
            raise InvalidInput(
                "verification method has more than one kind of key material",
                code="ambiguous_key_material",
                id=self.id[:128],
                got=materials,
            )
        if not materials and self.blockchain_account_id is None:
            raise InvalidInput(
                "verification method has no key material", code="missing_key_material", id=self.id[:128]
            )
        return self

    def unusable(self) -> UntrustedKeyError | None:
        """Why no key can be taken from this method (a type we do not use, no key material), or None."""
        if self.type not in _TYPE_KINDS:
            return UntrustedKeyError(
                "verification method type is not supported",
                code="unsupported_method_type",
                type=self.type[:64],
            )
        if (
            self.public_key_multibase is None
            and self.public_key_jwk is None
            and self.public_key_base58 is None
        ):
            return UntrustedKeyError(
                "verification method carries no public key (only an account id)",
                code="no_public_key",
                id=self.id[:128],
            )
        return None

    def public_key(self) -> AgreementKey:
        """Decode the key; ``UntrustedKeyError`` when :meth:`unusable`, ``InvalidInput`` for bad bytes."""
        problem = self.unusable()
        if problem is not None:
            raise problem
        allowed = _TYPE_KINDS[self.type]
        key: AgreementKey
        if self.public_key_multibase is not None:
            key = _from_multibase(self.public_key_multibase)
        elif self.public_key_jwk is not None:
            jwk = self.public_key_jwk
            key = X25519PublicKey.from_jwk(jwk) if jwk.get("crv") == "X25519" else PublicKey.from_jwk(jwk)
        else:
            key = _from_base58(self.type, self.public_key_base58 or "")
        if _kind(key) not in allowed:
            raise InvalidInput(
                "key type does not match the verification method type",
                code="key_type_mismatch",
                type=self.type[:64],
                key=_kind(key),
            )
        return key


def _from_multibase(value: str) -> AgreementKey:
    if not value.startswith("z"):
        raise InvalidInput("publicKeyMultibase must be base58btc ('z')", code="bad_multibase")
    codec, _ = varint_decode(base58btc_decode(value[1:])[:9])
    if codec == X25519_MULTICODEC:
        return X25519PublicKey.from_multikey(value)
    return PublicKey.from_multikey(value)


def _from_base58(vm_type: str, value: str) -> AgreementKey:
    kind = _BASE58_KIND.get(vm_type)
    if kind is None:
        raise InvalidInput(
            "publicKeyBase58 is not defined for this verification method type",
            code="bad_verification_method",
            type=vm_type[:64],
        )
    raw = base58btc_decode(value)
    if kind == _X25519:
        return X25519PublicKey(raw)
    return PublicKey.from_raw(KeyType(kind), raw)


class Service(BaseModel):
    """A service endpoint (DID Core §5.4).  Extra properties are kept."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    type: str | tuple[str, ...]
    service_endpoint: str | dict[str, Any] | tuple[str | dict[str, Any], ...] = Field(alias="serviceEndpoint")

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if any(char.isspace() for char in _text(value, "service.id")):
            raise InvalidInput("service id must be a URI", code="bad_did_document", field="service.id")
        return value


_Entry: TypeAlias = str | VerificationMethod
_Model = TypeVar("_Model", bound=BaseModel)
#: Per model: the all-None ``__dict__`` template and the alias -> field name map (built on first use).
_LAYOUTS: dict[type[BaseModel], tuple[dict[str, None], dict[str, str]]] = {}
#: The fields a deferred ``keyAgreement`` method adds to; absent from ``__dict__`` until it is built.
_DEFERRED_FIELDS: Final = ("verification_methods", "key_agreement")
_DEFERRED_LOCK = threading.Lock()
_NO_PURPOSES: Final[dict[Purpose, tuple[str, ...]]] = dict.fromkeys(PURPOSES, ())


def _construct(
    model: type[_Model], values: Mapping[str, Any], private: dict[str, Any] | None = None
) -> _Model:
    """``model_construct`` for our own drivers' output, without its per-call scan of every field.

    ``values`` are keyed by alias (the JSON names), already valid, and carry no extra properties;
    absent fields are ``None`` (every optional field of these models defaults to ``None``).  The
    instance is set up exactly as ``model_construct`` sets it up (``__dict__``, fields set, extras,
    private attributes); tests check the result against a fully validated document.
    """
    empty, names = _LAYOUTS.get(model) or _layout(model)
    # Walk the few values given rather than every field: a copy of the all-None template, then the
    # given ones written over it (the resolution hot path builds two or three of these per DID).
    state: dict[str, Any] = empty.copy()
    fields_set: set[str] = set()
    for alias, value in values.items():
        name = names[alias]
        state[name] = value
        fields_set.add(name)
    instance = model.__new__(model)  # as _instance does, inline: this runs twice per did:key
    _SET_DICT(instance, state)
    _SET_FIELDS_SET(instance, fields_set)
    _SET_EXTRA(instance, {})
    _SET_PRIVATE(instance, private)
    return instance


def _layout(model: type[BaseModel]) -> tuple[dict[str, None], dict[str, str]]:
    """The all-None ``__dict__`` template of ``model`` and its alias -> field name map."""
    layout = _LAYOUTS.get(model)
    if layout is None:
        fields = model.model_fields
        layout = (
            dict.fromkeys(fields),
            {(info.alias or name): name for name, info in fields.items()},
        )
        _LAYOUTS[model] = layout
    return layout


# BaseModel's own slots, set through their descriptors: ``object.__setattr__`` would first check, on
# every call, that no class between the model and ``object`` overrides attribute setting (a walk up a
# pydantic model's bases that cost more than the rest of building a verification method).
_SET_DICT: Final = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET: Final = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA: Final = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE: Final = BaseModel.__dict__["__pydantic_private__"].__set__


def _instance(
    model: type[_Model], state: dict[str, Any], fields_set: set[str], private: dict[str, Any] | None
) -> _Model:
    """An instance of ``model`` set up as ``model_construct`` sets one up, from its finished parts."""
    instance = model.__new__(model)
    _SET_DICT(instance, state)
    _SET_FIELDS_SET(instance, fields_set)
    _SET_EXTRA(instance, {})
    _SET_PRIVATE(instance, private)
    return instance


class DIDDocument(BaseModel):
    """A DID document (DID Core §5).  Build with :meth:`from_json`; query with :meth:`key_for`."""

    model_config = ConfigDict(frozen=True, extra="allow")

    context: str | tuple[str | dict[str, Any], ...] | None = Field(default=None, alias="@context")
    id: str
    controller: str | tuple[str, ...] | None = None
    also_known_as: tuple[str, ...] | None = Field(default=None, alias="alsoKnownAs")
    verification_methods: tuple[VerificationMethod, ...] | None = Field(
        default=None, alias="verificationMethod"
    )
    authentication: tuple[_Entry, ...] | None = None
    assertion_method: tuple[_Entry, ...] | None = Field(default=None, alias="assertionMethod")
    key_agreement: tuple[_Entry, ...] | None = Field(default=None, alias="keyAgreement")
    capability_invocation: tuple[_Entry, ...] | None = Field(default=None, alias="capabilityInvocation")
    capability_delegation: tuple[_Entry, ...] | None = Field(default=None, alias="capabilityDelegation")
    service: tuple[Service, ...] | None = None

    _did: DID = PrivateAttr()
    _methods: dict[str, VerificationMethod] = PrivateAttr(default_factory=dict)
    _purposes: dict[Purpose, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _keys: dict[str, AgreementKey | None] = PrivateAttr(default_factory=dict)
    _deferred: DeferredMethod | None = PrivateAttr(default=None)

    # -- construction --------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DIDDocument:
        """Validate a DID document given as parsed JSON (DID Core JSON representation, camelCase)."""
        if not isinstance(data, Mapping):
            raise InvalidInput("a DID document must be a JSON object", code="bad_did_document")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = [
                {"loc": ".".join(str(part) for part in err["loc"])[:128], "msg": err["msg"][:128]}
                for err in exc.errors(include_url=False, include_input=False)[:8]
            ]
            raise InvalidInput("malformed DID document", code="bad_did_document", errors=problems) from None

    @model_validator(mode="after")
    def _check_document(self) -> Self:
        self._index()
        return self

    def _index(self) -> None:
        # 1. The document id and controllers are DIDs (DID Core §5.1.1, §5.1.2).
        try:
            did = parse_did(_text(self.id, "id"))
        except InvalidInput as exc:
            raise InvalidInput(
                "DID document id is not a DID", code="bad_document_id", reason=exc.code
            ) from None
        controllers = (self.controller,) if isinstance(self.controller, str) else (self.controller or ())
        owners = {str(did)}
        for controller in controllers:
            owners.add(str(parse_did(_text(controller, "controller"))))
        # 2. Gather every verification method (top-level and embedded); ids unique and owned by us.
        methods: dict[str, VerificationMethod] = {}
        embedded = [
            entry
            for purpose in PURPOSES
            for entry in self._entries(purpose)
            if isinstance(entry, VerificationMethod)
        ]
        top = list(self.verification_methods or ())
        if len(top) + len(embedded) > _MAX_METHODS:
            raise InvalidInput("too many verification methods", code="too_large", limit=_MAX_METHODS)
        for method in top + embedded:
            url = DIDURL.absolute(method.id, did)
            if url.did_str not in owners:
                raise InvalidInput(
                    "verification method id belongs to another DID",
                    code="foreign_verification_method",
                    id=method.id[:128],
                )
            key = str(url)
            if key in methods:
                raise InvalidInput(
                    "duplicate verification method id", code="duplicate_id", id=method.id[:128]
                )
            methods[key] = method
        if len(self.also_known_as or ()) > _MAX_ENTRIES:
            raise InvalidInput("too many alsoKnownAs entries", code="too_large", limit=_MAX_ENTRIES)
        # 3. Service ids are unique too, and distinct from verification method ids (§5.4).
        if len(self.service or ()) > _MAX_SERVICES:
            raise InvalidInput("too many services", code="too_large", limit=_MAX_SERVICES)
        seen = set(methods)
        for service in self.service or ():
            sid = str(DIDURL.absolute(service.id, did)) if service.id[0] in "#?/" else service.id
            if sid in seen:
                raise InvalidInput("duplicate id in DID document", code="duplicate_id", id=service.id[:128])
            seen.add(sid)
        # 4. Every reference resolves to a verification method of this document.
        purposes: dict[Purpose, tuple[str, ...]] = {}
        for purpose in PURPOSES:
            entries = self._entries(purpose)
            if len(entries) > _MAX_ENTRIES:
                raise InvalidInput(
                    "too many entries in a verification relationship", code="too_large", purpose=purpose
                )
            ids: list[str] = []
            for entry in entries:
                ref = entry if isinstance(entry, str) else entry.id
                key = str(DIDURL.absolute(_text(ref, purpose), did))
                if key not in methods:
                    raise InvalidInput(
                        "reference does not resolve to a verification method of this document",
                        code="dangling_reference",
                        purpose=purpose,
                        ref=ref[:128],
                    )
                ids.append(key)
            purposes[purpose] = tuple(ids)
        # 5. Decode the key material of every method whose type we understand (fail at load time).
        keys: dict[str, AgreementKey | None] = {}
        for key_id, method in methods.items():
            keys[key_id] = None if method.unusable() is not None else method.public_key()
        self._did = did
        self._methods = methods
        self._purposes = purposes
        self._keys = keys

    @classmethod
    def _assemble(
        cls,
        did: DID,
        context: tuple[str, ...],
        methods: list[tuple[dict[str, Any], AgreementKey]],
        purposes: Mapping[Purpose, tuple[str, ...]],
        *,
        deferred_key_agreement: DeferredMethod | None = None,
    ) -> DIDDocument:
        """Build a document our own method drivers generated from keys they already decoded.

        Skips re-validation (the driver built every field from a checked key), which keeps did:key
        and did:jwk resolution cheap; the indexes are the same ones :meth:`_index` would build.

        ``deferred_key_agreement`` is a method appended to ``verificationMethod`` and referenced from
        ``keyAgreement`` that is built only when something reads it (the did:key X25519 key: a modular
        inverse and a base58 encoding that most verifiers, which only check signatures, never need).
        Until then those two fields are absent from ``__dict__``; every way of reading the document
        (attributes, queries, dumps, equality, copies) builds the method first, so no reader
        can tell the difference.
        """
        keys: dict[str, AgreementKey | None] = {}
        by_id: dict[str, VerificationMethod] = {}
        for fields, key in methods:
            by_id[fields["id"]] = _construct(VerificationMethod, fields)
            keys[fields["id"]] = key
        empty, names = _LAYOUTS.get(cls) or _layout(cls)
        # The document's fields written straight by name (what _construct would do with the aliases).
        state: dict[str, Any] = empty.copy()
        state["context"] = context
        state["id"] = str(did)
        state["verification_methods"] = tuple(by_id.values())
        fields_set = {"context", "id", "verification_methods"}
        for purpose, ids in purposes.items():
            name = names[purpose]
            state[name] = ids
            fields_set.add(name)
        if deferred_key_agreement is not None:
            # Recorded as set (keyAgreement is in the model dump) but absent from __dict__ until
            # first read, with verificationMethod; _build_deferred fills both in.
            fields_set.add("key_agreement")
            for name in _DEFERRED_FIELDS:
                del state[name]
        all_purposes = _NO_PURPOSES.copy()  # every relationship, in PURPOSES order
        all_purposes.update(purposes)
        private = {
            "_did": did,
            "_methods": by_id,
            "_purposes": all_purposes,
            "_keys": keys,
            "_deferred": deferred_key_agreement,
        }
        return _instance(cls, state, fields_set, private)

    def _build_deferred(self) -> None:
        """Build the deferred ``keyAgreement`` method, once (a lock keeps two threads from both adding it)."""
        private = self.__pydantic_private__
        if private is None or private.get("_deferred") is None:
            return
        with _DEFERRED_LOCK:
            derive: DeferredMethod | None = private.get("_deferred")
            if derive is None:
                return
            fields, key = derive()
            method = _construct(VerificationMethod, fields)
            methods: dict[str, VerificationMethod] = {**private["_methods"], method.id: method}
            self.__dict__["verification_methods"] = tuple(methods.values())
            self.__dict__["key_agreement"] = (method.id,)
            private["_keys"] = {**private["_keys"], method.id: key}
            private["_purposes"] = {**private["_purposes"], "keyAgreement": (method.id,)}
            private["_methods"] = methods
            private["_deferred"] = None

    if not TYPE_CHECKING:
        # Only the two deferred fields can be missing from __dict__; everything else goes to pydantic.

        def __getattr__(self, name: str) -> Any:
            if name in _DEFERRED_FIELDS:
                self._build_deferred()
                if name in self.__dict__:
                    return self.__dict__[name]
            return super().__getattr__(name)

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._build_deferred()
        return super().model_dump(*args, **kwargs)

    def model_dump_json(self, *args: Any, **kwargs: Any) -> str:
        self._build_deferred()
        return super().model_dump_json(*args, **kwargs)

    def model_copy(self, *args: Any, **kwargs: Any) -> Self:
        self._build_deferred()
        return super().model_copy(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        self._build_deferred()
        if isinstance(other, DIDDocument):
            other._build_deferred()
        return super().__eq__(other)

    def __hash__(self) -> int:
        self._build_deferred()
        # What pydantic generates for a frozen model (the field values, in order); it generates
        # nothing once the class defines __hash__ itself, and BaseModel.__hash__ is None.
        return hash(tuple(self.__dict__[name] for name in type(self).model_fields))

    def __iter__(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        self._build_deferred()
        return super().__iter__()

    def __repr_args__(self) -> Any:
        self._build_deferred()
        return super().__repr_args__()

    def __copy__(self) -> Self:
        self._build_deferred()
        return super().__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        self._build_deferred()
        return super().__deepcopy__(memo)

    def _entries(self, purpose: Purpose) -> tuple[_Entry, ...]:
        if purpose == "authentication":
            return self.authentication or ()
        if purpose == "assertionMethod":
            return self.assertion_method or ()
        if purpose == "keyAgreement":
            return self.key_agreement or ()
        if purpose == "capabilityInvocation":
            return self.capability_invocation or ()
        return self.capability_delegation or ()

    # -- queries -------------------------------------------------------------------------------------
    def _private(self) -> dict[str, Any]:
        # The private attributes, straight from pydantic's dict: its ``__getattr__`` route costs
        # about a microsecond per read, and a key lookup reads several of them.
        return cast(dict[str, Any], self.__pydantic_private__)

    @property
    def did(self) -> DID:
        did: DID = self._private()["_did"]
        return did

    def to_json(self) -> dict[str, Any]:
        """The DID Core JSON representation (camelCase, ``@context`` kept, unknown properties kept)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @property
    def all_methods(self) -> Mapping[str, VerificationMethod]:
        """Every verification method (top-level and embedded), by absolute id, in document order."""
        self._build_deferred()
        return MappingProxyType(self._private()["_methods"])

    def authorised(self, purpose: Purpose) -> tuple[str, ...]:
        """Absolute ids of the verification methods authorised for ``purpose``, in document order."""
        if purpose == "keyAgreement":
            self._build_deferred()
        found: tuple[str, ...] = self._private()["_purposes"].get(purpose, ())
        return found

    def verification_method(self, did_url: str) -> VerificationMethod:
        """The verification method with this id (absolute, or relative ``#frag``); else ``unknown_key``."""
        key_id = self._lookup(did_url)  # first: the lookup may build the deferred method
        method: VerificationMethod = self._private()["_methods"][key_id]
        return method

    @overload
    def key_for(self, did_url: str, purpose: Literal["keyAgreement"]) -> AgreementKey: ...
    @overload
    def key_for(self, did_url: str, purpose: SigningPurpose) -> PublicKey: ...
    @overload
    def key_for(self, did_url: str, purpose: Purpose) -> AgreementKey: ...
    def key_for(self, did_url: str, purpose: Purpose) -> AgreementKey:
        """The public key of ``did_url`` if, and only if, this document authorises it for ``purpose``.

        Raises :class:`UntrustedKeyError`: ``unknown_key`` (no such method here),
        ``not_authorised_for_purpose`` (the method exists but is not in that relationship),
        ``unsupported_method_type``/``no_public_key`` (nothing we can verify with),
        ``key_type_mismatch`` (an X25519 key asked for a signing purpose).
        """
        if purpose == "keyAgreement":
            self._build_deferred()
        key_id = self._lookup(did_url)
        if purpose not in PURPOSES:
            raise InvalidInput(
                "unknown verification relationship", code="bad_purpose", purpose=str(purpose)[:32]
            )
        private = self._private()  # read after the lookup: it may have built the deferred method
        if key_id not in private["_purposes"].get(purpose, ()):
            raise UntrustedKeyError(
                "key is not authorised for this purpose",
                code="not_authorised_for_purpose",
                kid=key_id[:256],
                purpose=purpose,
            )
        key: AgreementKey | None = private["_keys"].get(key_id)
        if key is None:
            raise private["_methods"][key_id].unusable() or UntrustedKeyError(
                "verification method yields no key", code="no_public_key", kid=key_id[:256]
            )
        if purpose != "keyAgreement" and isinstance(key, X25519PublicKey):
            raise UntrustedKeyError(
                "an X25519 key cannot be used for signatures",
                code="key_type_mismatch",
                kid=key_id[:256],
                purpose=purpose,
            )
        return key

    def _lookup(self, did_url: str) -> str:
        private = self._private()
        key_id = str(DIDURL.absolute(did_url, private["_did"]))
        if key_id not in private["_methods"] and private["_deferred"] is not None:
            self._build_deferred()  # the URL may name the deferred method
        if key_id not in private["_methods"]:
            raise UntrustedKeyError(
                "no such verification method in the DID document", code="unknown_key", kid=key_id[:256]
            )
        return key_id
