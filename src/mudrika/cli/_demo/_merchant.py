"""The demo's merchant: a real a2a-sdk agent under uvicorn on 127.0.0.1, behind the A2A middleware.

Why it is built from the same pieces a production merchant would use: the middleware authenticates
DID-signed requests (RFC 9421, the shopping agent's did:key) and bearer tokens (from a local
development issuer: no Keycloak here), decides every call with the policy file, and only then lets
a message reach the agent.  The agent answers an AP2 IntentMandate with a CartMandate it signs, and
accepts a PaymentMandate only when the whole chain verifies against its own trust root.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import uvicorn
from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill, Role
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from starlette.applications import Starlette

from mudrika.cli._demo._identities import MERCHANT_NAME, Party, iso
from mudrika.cli._demo._v02 import (
    CHECKOUT_KEY,
    CHECKOUT_OFFER_KEY,
    CHECKOUT_RECEIPT_KEY,
    CHECKOUT_REQUEST_KEY,
    PAYMENT_KEY,
    PAYMENT_RECEIPT_KEY,
    V02Sale,
    merchant_offer,
    merchant_settle,
)
from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, UnavailableError, VerificationError
from mudrika.identity.methods.key import KeyDriver
from mudrika.identity.resolver import DIDResolver
from mudrika.payments.a2a import AP2_EXTENSION_URI, AP2_V02_EXTENSION_URI, CART_MANDATE_KEY, extract_mandates
from mudrika.payments.chain import KeyMaterial, verify_chain
from mudrika.payments.models import CartMandate, IntentMandate, PaymentMandate, Received
from mudrika.payments.signing import sign_cart
from mudrika.payments.trustroot import TrustRoot
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import REGISTERED_ALGORITHMS, HttpSignatureVerifier, ResolverKeyLookup
from mudrika.trust.keycloak.jwks import StaticKeySet
from mudrika.trust.keycloak.tokens import AccessTokenVerifier
from mudrika.trust.middleware import (
    A2AAuthMiddleware,
    A2ARoutes,
    BearerAuthenticator,
    DidSignatureAuthenticator,
)
from mudrika.trust.policy import Policy

__all__ = [
    "DEV_ISSUER",
    "ERROR_PROFILE",
    "KB_NONCE_KEY",
    "MERCHANT_NAME",
    "TOKEN_AUDIENCE",
    "Merchant",
    "Sale",
    "V01Chain",
    "serve_merchant",
]

DEV_ISSUER: Final = "http://127.0.0.1/mudrika-demo-dev-issuer"
"""The local development token issuer's identifier (the demo signs its tokens itself: no Keycloak)."""
TOKEN_AUDIENCE: Final = "demo-merchant-api"  # noqa: S105 - an audience, not a secret
ERROR_PROFILE: Final = "a2a"
"""Refusals in the A2A 1.0 error profile: HTTP 401/403, codes outside the JSON-RPC reserved range,
and a typed ``error.data`` naming the reason (the a2a-sdk 1.3 client speaks A2A 1.0)."""
KB_NONCE_KEY: Final = "mudrika.demo.kb_nonce"
"""DataPart key of the nonce the merchant issues with a cart, for the user's key-binding JWT."""
_CART_LIFETIME: Final = 600

#: What the merchant sells: SKU -> (label, price in USD as an exact decimal).
CATALOGUE: Final[dict[str, tuple[str, Decimal]]] = {
    "TR-GTX-42": ("Trail Runner GTX, EU 42", Decimal("120")),
    "SOCK-MER-2": ("Merino running socks, 2 pairs", Decimal("18.49")),
}


def _json_number(amount: Decimal) -> int | float:
    """An exact decimal as the JSON number a mandate carries (an integer when it is whole).

    Amounts are added as decimals, never as floats; the float here is only the JSON spelling of a
    value with two decimal places, which RFC 8785 writes back exactly as the decimal.
    """
    return int(amount) if amount == amount.to_integral_value() else float(amount)


@dataclass(frozen=True, slots=True)
class V01Chain:
    """An AP2 v0.1 chain as each end of one purchase holds it: the mandates exactly as exchanged, and
    the nonce the user's key-binding JWT answers.

    Why shared: the shopping agent's record and the merchant's must be the same chain, field for
    field, so that the demo can bundle what the merchant accepted and rerun what the agent sent.
    """

    intent: Received[IntentMandate]
    cart: Received[CartMandate]
    payment: Received[PaymentMandate]
    kb_nonce: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Sale(V01Chain):
    """A purchase the merchant accepted: the chain exactly as received, and the nonce it issued."""

    accepted_at: float


def cart_contents(intent: IntentMandate, *, now: float) -> dict[str, Any]:
    """The CartContents the merchant offers for an intent: the catalogue items it names."""
    skus = [sku for sku in (intent.skus or ()) if sku in CATALOGUE]
    if not skus:
        raise InvalidInput("the intent names nothing the merchant sells", code="nothing_to_sell")
    order = "order_" + secrets.token_hex(4)
    items = [
        {
            "label": CATALOGUE[sku][0],
            "amount": {"currency": "USD", "value": _json_number(CATALOGUE[sku][1])},
            "pending": None,
            "refund_period": 30,
            "sku": sku,
        }
        for sku in skus
    ]
    total = _json_number(sum((CATALOGUE[sku][1] for sku in skus), Decimal(0)))
    return {
        "id": "cart_" + secrets.token_hex(4),
        "user_cart_confirmation_required": True,
        "payment_request": {
            "method_data": [{"supported_methods": "CARD", "data": {"network": ["visa", "mastercard"]}}],
            "details": {
                "id": order,
                "display_items": items,
                "total": {
                    "label": "Total",
                    "amount": {"currency": "USD", "value": total},
                    "pending": None,
                    "refund_period": 30,
                },
            },
            "options": {"request_shipping": False},
        },
        "cart_expiry": iso(now + _CART_LIFETIME),
        "merchant_name": MERCHANT_NAME,
    }


@dataclass
class Merchant(AgentExecutor):
    """The merchant agent: intent in -> signed cart (+ a nonce) out; payment in -> verified or refused."""

    party: Party
    trust_root: TrustRoot
    merchant_audience: str
    kb_audience: str
    sales: list[Sale] = field(default_factory=list)
    v02_sales: list[V02Sale] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    _nonces: dict[str, str] = field(default_factory=dict)
    _offers: dict[str, tuple[str, str]] = field(default_factory=dict)
    _replay: MemoryReplayStore = field(default_factory=lambda: MemoryReplayStore(max_entries=1024))

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = MessageToDict(context.message) if context.message is not None else {}
        data = _data_parts(message)
        try:
            found = extract_mandates(message)
            if CHECKOUT_REQUEST_KEY in data:
                reply = self._offer_v02(context.context_id or "", data[CHECKOUT_REQUEST_KEY])
            elif CHECKOUT_KEY in data:
                reply = self._settle_v02(context.context_id or "", data)
            elif found.payments:
                reply = self._settle(found.intents, found.carts, found.payments)
            elif found.intents:
                reply = self._offer(found.intents[0])
            else:
                reply = [new_text_part("send an ap2.mandates.IntentMandate to start a purchase")]
        except (InvalidInput, VerificationError) as exc:
            self.refusals.append(exc.code)
            reply = [new_text_part(f"refused: {exc.code}")]
        await event_queue.enqueue_event(new_message(parts=reply, role=Role.ROLE_AGENT))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing runs in the background: every answer is immediate, so there is nothing to cancel."""

    def _offer(self, intent: Received[IntentMandate]) -> list[Any]:
        now = time.time()
        alg = self.party.key.public_key.default_algorithm
        cart = sign_cart(
            cart_contents(intent.model, now=now),
            self.party.key,
            merchant_did=self.party.did,
            kid=self.party.kid,
            aud=self.merchant_audience,
            now=now,
            ttl=_CART_LIFETIME,
            alg=alg,
        )
        nonce = secrets.token_urlsafe(16)
        self._nonces[cart.model.contents.id] = nonce
        return [new_data_part({CART_MANDATE_KEY: cart.plain()}), new_data_part({KB_NONCE_KEY: nonce})]

    def _offer_v02(self, context_id: str, request: Any) -> list[Any]:
        skus = request.get("skus") if isinstance(request, dict) else None
        if not context_id or not isinstance(skus, list) or not all(isinstance(sku, str) for sku in skus):
            raise InvalidInput(
                "a checkout request names the SKUs in one context", code="bad_checkout_request"
            )
        offer, checkout_nonce, payment_nonce = merchant_offer(self.party, skus)
        self._offers[context_id] = (checkout_nonce, payment_nonce)
        return [new_data_part({CHECKOUT_OFFER_KEY: offer})]

    def _settle_v02(self, context_id: str, data: dict[str, Any]) -> list[Any]:
        nonces = self._offers.pop(context_id, None)
        if nonces is None:
            raise InvalidInput("this merchant made no offer in this context", code="unknown_checkout")
        checkout_chain, payment_chain = data.get(CHECKOUT_KEY), data.get(PAYMENT_KEY)
        if not isinstance(checkout_chain, str) or not isinstance(payment_chain, str):
            raise InvalidInput("a v0.2 payment carries both mandate chains", code="incomplete_chain")
        sale = merchant_settle(
            self.party,
            checkout_chain,
            payment_chain,
            trust_root=self.trust_root,
            checkout_nonce=nonces[0],
            payment_nonce=nonces[1],
            replay_store=self._replay,
        )
        self.v02_sales.append(sale)
        amount = f"{sale.total_minor // 100}.{sale.total_minor % 100:02d}"
        return [
            new_text_part(f"payment accepted: {sale.currency} {amount}"),
            new_data_part(
                {
                    CHECKOUT_RECEIPT_KEY: sale.evidence.checkout_receipt,
                    PAYMENT_RECEIPT_KEY: sale.evidence.payment_receipt,
                }
            ),
        ]

    def _settle(self, intents: Any, carts: Any, payments: Any) -> list[Any]:
        if len(intents) != 1 or len(carts) != 1 or len(payments) != 1:
            raise InvalidInput(
                "a payment message carries one intent, cart and payment", code="incomplete_chain"
            )
        intent, cart, payment = intents[0], carts[0], payments[0]
        nonce = self._nonces.pop(cart.model.contents.id, None)
        if nonce is None:
            raise InvalidInput("this merchant issued no such cart", code="unknown_cart")
        now = time.time()
        verify_chain(
            intent,
            cart,
            payment,
            trust_root=self.trust_root,
            keys=KeyMaterial.offline_snapshot({self.party.did: self.party.document}),
            merchant_audience=self.merchant_audience,
            kb_audience=self.kb_audience,
            kb_nonce=nonce,
            now=now,
            replay_store=self._replay,
        )
        self.sales.append(Sale(intent, cart, payment, nonce, now))
        total = cart.model.contents.payment_request.details.total.amount
        return [new_text_part(f"payment accepted: {total.currency} {total.value}")]


def _data_parts(message: dict[str, Any]) -> dict[str, Any]:
    """Every member of every DataPart object in an A2A 1.0 message (JSON form), merged."""
    merged: dict[str, Any] = {}
    for part in message.get("parts", ()):
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict):
            merged.update(data)
    return merged


def agent_card(url: str) -> AgentCard:
    """The merchant's card: JSON-RPC on ``url``, the AP2 v0.1 extension declared."""
    return AgentCard(
        name=MERCHANT_NAME,
        description="mudrika demo merchant: sells running gear for AP2 mandates",
        version="1.0.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")],
        capabilities=AgentCapabilities(
            streaming=False,
            extensions=[
                AgentExtension(uri=AP2_EXTENSION_URI, required=False),
                AgentExtension(uri=AP2_V02_EXTENSION_URI, required=False),
            ],
        ),
        default_input_modes=["application/json"],
        default_output_modes=["application/json", "text/plain"],
        skills=[AgentSkill(id="shop", name="shop", description="AP2 v0.1 purchases", tags=["ap2"])],
    )


@dataclass(frozen=True, slots=True)
class Served:
    """The running merchant: where it listens, its card and the agent behind the middleware."""

    url: str
    card: AgentCard
    merchant: Merchant


@contextmanager
def serve_merchant(
    *,
    port: int,
    merchant: Merchant,
    policy_file: Path,
    token_key: KeyPair,
    token_kid: str,
) -> Iterator[Served]:
    """Run the merchant under uvicorn on ``127.0.0.1:port`` until the block ends.

    Trust is configuration: the policy file (roles, trust levels, ``did_roles``), the development
    issuer's public key as a static key set, and a did:key-only resolver for request signatures.
    """
    url = f"http://127.0.0.1:{port}/"
    origin = url.rstrip("/")
    card = agent_card(url)
    policy = Policy.from_file(policy_file)
    handler = DefaultRequestHandler(agent_executor=merchant, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    algorithm = token_key.public_key.default_algorithm
    jwk = {**token_key.public_key.to_jwk(), "kid": token_kid, "use": "sig", "alg": algorithm}
    tokens = AccessTokenVerifier(
        issuer=DEV_ISSUER,
        audience=TOKEN_AUDIENCE,
        azp_allowlist=None,
        jwks=StaticKeySet({"keys": [jwk]}, algorithms={algorithm}),
        algorithms={algorithm},
    )
    signatures = HttpSignatureVerifier(
        keys=ResolverKeyLookup(DIDResolver([KeyDriver()])),
        replay_store=MemoryReplayStore(max_entries=4096),
        origins=[origin],
        algorithms=REGISTERED_ALGORITHMS,
    )

    def roles_for(did: str) -> frozenset[str]:
        grant = policy.did_grant(did)
        return grant.roles if grant is not None else frozenset()

    app = A2AAuthMiddleware(
        Starlette(routes=routes),
        authenticators=[
            DidSignatureAuthenticator(signatures, public_origin=origin, roles_for=roles_for),
            BearerAuthenticator(tokens),
        ],
        policy=policy,
        realm="mudrika-demo",
        routes=A2ARoutes(error_profile=ERROR_PROFILE),
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, name="mudrika-demo-merchant", daemon=True)
    thread.start()
    try:
        _wait_started(server, thread)
        yield Served(url=url, card=card, merchant=merchant)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _wait_started(server: uvicorn.Server, thread: threading.Thread, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise UnavailableError("the demo merchant did not start", code="merchant_not_started")
        time.sleep(0.02)
