"""The demo's shopping agent: a real a2a-sdk client, first without credentials, then with too low a
trust level, then buying with DID-signed requests and AP2 v0.1 mandates.

Why the refusals are read from the HTTP answer: the a2a-sdk client turns a 401/403 into an
``A2AClientError`` whose cause is the ``httpx`` error; the JSON-RPC error code the middleware chose
is in that response's body, and it is what the demo shows.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_data_part
from a2a.types.a2a_pb2 import AgentCard, Message, Part, Role, SendMessageRequest
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from mudrika.cli._demo._identities import MERCHANT_NAME, Party, iso
from mudrika.cli._demo._merchant import KB_NONCE_KEY, V01Chain
from mudrika.cli._demo._v02 import (
    CHECKOUT_KEY,
    CHECKOUT_OFFER_KEY,
    CHECKOUT_RECEIPT_KEY,
    CHECKOUT_REQUEST_KEY,
    ITEMS,
    PAYMENT_KEY,
    PAYMENT_RECEIPT_KEY,
    OpenMandates,
    close_mandates,
)
from mudrika.crypto import sdjwt
from mudrika.errors import InvalidInput, VerificationError
from mudrika.payments.a2a import CART_MANDATE_KEY, INTENT_MANDATE_KEY, PAYMENT_MANDATE_KEY, extract_mandates
from mudrika.payments.chain import KeyMaterial, verify_cart
from mudrika.payments.models import CartMandate, Received, receive_intent
from mudrika.payments.signing import sign_intent, sign_payment
from mudrika.payments.trustroot import TrustRoot
from mudrika.stores.replay import MemoryReplayStore
from mudrika.trust.httpsig import DidSignatureAuth, HttpMessageSigner
from mudrika.trust.jsonrpc import ERROR_INFO_TYPE

__all__ = [
    "Purchase",
    "Refusal",
    "V02Purchase",
    "attempt_with_token",
    "attempt_without_credentials",
    "buy",
    "buy_v02",
]

_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class Refusal:
    """How the merchant's middleware refused a call: HTTP status, the JSON-RPC error and, in the A2A
    1.0 error profile, the typed ``google.rpc.ErrorInfo`` that says what failed."""

    status: int
    code: int
    message: str
    reason: str | None
    scheme: str | None
    challenge: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "http_status": self.status,
            "jsonrpc_code": self.code,
            "message": self.message,
            "reason": self.reason,
            "scheme": self.scheme,
            "www_authenticate": self.challenge,
        }


def _error_info(error: dict[str, Any]) -> dict[str, Any]:
    """The first ``google.rpc.ErrorInfo`` of an error's typed ``data`` (A2A 1.0 §9.5), or ``{}``."""
    data = error.get("data")
    for item in data if isinstance(data, list) else ():
        if isinstance(item, dict) and item.get("@type") == ERROR_INFO_TYPE:
            return item
    return {}


@dataclass(frozen=True, slots=True)
class Purchase(V01Chain):
    """What the shopping agent sent and received: the chain, the merchant's answer."""

    answer: str


def _message(parts: list[Part], context_id: str | None = None) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=parts)
    if context_id is not None:
        message.context_id = context_id
    return SendMessageRequest(message=message)


async def _send(
    http: httpx.AsyncClient, card: AgentCard, parts: list[Part], context_id: str | None = None
) -> list[dict[str, Any]]:
    """Send one message through the a2a-sdk client; the agent's reply messages as JSON."""
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    replies: list[dict[str, Any]] = []
    async for event in client.send_message(_message(parts, context_id)):
        if event.HasField("message"):
            replies.append(MessageToDict(event.message))
    return replies


async def _refusal(http: httpx.AsyncClient, card: AgentCard) -> Refusal:
    """Send a harmless message and return how the middleware refused it (it must refuse)."""
    try:
        await _send(http, card, [Part(text="show me trail shoes")])
    except A2AClientError as exc:
        cause = exc.__cause__
        if not isinstance(cause, httpx.HTTPStatusError):
            raise
        error = cause.response.json().get("error", {})
        info = _error_info(error)
        found = info.get("metadata")
        metadata: dict[str, Any] = found if isinstance(found, dict) else {}
        return Refusal(
            status=cause.response.status_code,
            code=int(error.get("code", 0)),
            message=str(error.get("message", "")),
            reason=str(info["reason"]) if "reason" in info else None,
            scheme=str(metadata["scheme"]) if "scheme" in metadata else None,
            challenge=cause.response.headers.get("www-authenticate"),
        )
    raise VerificationError("the merchant answered a caller it should have refused", code="not_refused")


async def attempt_without_credentials(card: AgentCard) -> Refusal:
    async with httpx.AsyncClient(timeout=_TIMEOUT) as http:
        return await _refusal(http, card)


async def attempt_with_token(card: AgentCard, token: str) -> Refusal:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=_TIMEOUT) as http:
        return await _refusal(http, card)


def intent_for(now: float) -> dict[str, Any]:
    """The user's intent, as the shopping agent would draft it from a conversation."""
    return {
        "user_cart_confirmation_required": True,
        "natural_language_description": f"Trail running shoes in EU size 42 and merino socks from "
        f"{MERCHANT_NAME}, refundable, under 150 USD in total",
        "merchants": [MERCHANT_NAME],
        "skus": ["TR-GTX-42", "SOCK-MER-2"],
        "requires_refundability": True,
        "intent_expiry": iso(now + 3600),
    }


def payment_contents(cart: Received[CartMandate], *, now: float) -> dict[str, Any]:
    """The PaymentMandateContents for a cart: its order id and total, a card token, the merchant."""
    raw = cart.plain()["contents"]["payment_request"]["details"]
    return {
        "payment_mandate_id": "pm_" + uuid.uuid4().hex[:8],
        "payment_details_id": raw["id"],
        "payment_details_total": raw["total"],
        "payment_response": {
            "request_id": raw["id"],
            "method_name": "CARD",
            "details": {"token": "tok_demo_" + uuid.uuid4().hex[:8]},
            "payer_email": "shopper@demo.example",
        },
        "merchant_agent": MERCHANT_NAME,
        "timestamp": iso(now),
    }


def _one_cart(replies: list[dict[str, Any]]) -> tuple[Received[CartMandate], str]:
    carts: list[Received[CartMandate]] = []
    nonces: list[str] = []
    for reply in replies:
        carts.extend(extract_mandates(reply).carts)
        for part in reply.get("parts", ()):
            data = part.get("data")
            if isinstance(data, dict) and isinstance(data.get(KB_NONCE_KEY), str):
                nonces.append(data[KB_NONCE_KEY])
    if len(carts) != 1 or len(nonces) != 1:
        raise InvalidInput("the merchant did not answer with one cart and one nonce", code="no_cart")
    return carts[0], nonces[0]


def _text_of(replies: list[dict[str, Any]]) -> str:
    return " ".join(
        str(part["text"]) for reply in replies for part in reply.get("parts", ()) if "text" in part
    )


async def buy(
    card: AgentCard,
    *,
    shopper: Party,
    credential: sdjwt.SdJwt,
    trust_root: TrustRoot,
    merchant: Party,
) -> Purchase:
    """Intent -> signed cart -> payment with key binding, every request signed with the shopper's did:key.

    The shopping agent checks the merchant's cart signature against its own trust root (the merchant's
    pinned DID document) before the user's key signs anything that binds to it.
    """
    signer = HttpMessageSigner(shopper.key, shopper.kid)
    async with httpx.AsyncClient(auth=DidSignatureAuth(signer), timeout=_TIMEOUT) as http:
        now = time.time()
        intent = sign_intent(receive_intent(intent_for(now)), shopper.key, kid=shopper.kid, now=now)
        replies = await _send(http, card, [new_data_part({INTENT_MANDATE_KEY: intent.plain()})])
        cart, nonce = _one_cart(replies)
        verify_cart(
            cart,
            trust_root=trust_root,
            keys=KeyMaterial.offline_snapshot({merchant.did: merchant.document}),
            audience=shopper.did,
            now=time.time(),
            replay_store=MemoryReplayStore(max_entries=16),
        )
        payment = sign_payment(
            payment_contents(cart, now=time.time()),
            credential=credential,
            user_key=shopper.key,
            cart=cart,
            intent=intent,
            aud=merchant.did,
            nonce=nonce,
            now=time.time(),
            disclose=["/email"],
        )
        parts = [
            new_data_part({INTENT_MANDATE_KEY: intent.plain()}),
            new_data_part({CART_MANDATE_KEY: cart.plain()}),
            new_data_part({PAYMENT_MANDATE_KEY: payment.plain()}),
        ]
        answer = _text_of(await _send(http, card, parts))
    return Purchase(intent=intent, cart=cart, payment=payment, kb_nonce=nonce, answer=answer)


@dataclass(frozen=True, slots=True)
class V02Purchase:
    """The v0.2 purchase as the shopping agent saw it: the merchant's answer and its receipts."""

    answer: str
    receipts: dict[str, str] = field(repr=False)


def _data_values(replies: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for reply in replies:
        for part in reply.get("parts", ()):
            if isinstance(part.get("data"), dict):
                merged.update(part["data"])
    return merged


async def buy_v02(card: AgentCard, *, shopper: Party, merchant: Party, roots: OpenMandates) -> V02Purchase:
    """Ask for a signed checkout, close both open mandates with hops to the merchant, send the chains.

    Both messages share one A2A context: that is how the merchant finds the nonces it handed out.
    """
    signer = HttpMessageSigner(shopper.key, shopper.kid)
    context_id = str(uuid.uuid4())
    async with httpx.AsyncClient(auth=DidSignatureAuth(signer), timeout=_TIMEOUT) as http:
        request = {CHECKOUT_REQUEST_KEY: {"skus": list(ITEMS)}}
        offer = _data_values(await _send(http, card, [new_data_part(request)], context_id)).get(
            CHECKOUT_OFFER_KEY
        )
        if not isinstance(offer, dict):
            raise InvalidInput("the merchant did not answer with a checkout offer", code="no_checkout")
        checkout_chain, payment_chain = close_mandates(
            roots, offer, shopper=shopper, merchant=merchant, now=time.time()
        )
        parts = [new_data_part({CHECKOUT_KEY: checkout_chain}), new_data_part({PAYMENT_KEY: payment_chain})]
        replies = await _send(http, card, parts, context_id)
    values = _data_values(replies)
    receipts: dict[str, str] = {
        key: str(values[key]) for key in (CHECKOUT_RECEIPT_KEY, PAYMENT_RECEIPT_KEY) if key in values
    }
    return V02Purchase(answer=_text_of(replies), receipts=receipts)
