"""Turn a policy decision into the task state an A2A client understands.

Why a mapping and not the seed's states verbatim: the seed's agent protocol declares
``auth-required``, ``trust-verification-required`` and ``payment-required``, but A2A 1.0
(``a2a.proto`` ``TaskState``) defines only ``TASK_STATE_AUTH_REQUIRED``, ``TASK_STATE_INPUT_REQUIRED``
and ``TASK_STATE_REJECTED`` among the states that fit; an a2a-sdk 1.x client cannot parse any other.
So each denial maps to the closest A2A 1.0 state, and the seed's state travels beside it in the
status update's ``metadata`` under :data:`SEED_STATE_KEY` (with the machine reason under
:data:`REASON_KEY`), where a seed-aware client finds it and every other client ignores it:

=========================  =============================  ==============================
policy reason              seed state                     A2A 1.0 state
=========================  =============================  ==============================
``no_role``                ``auth-required``              ``TASK_STATE_AUTH_REQUIRED``
``insufficient_trust``,    ``trust-verification-         ``TASK_STATE_AUTH_REQUIRED``
``missing_permission``,    required``
``executor_mismatch``
``payment_required``       ``payment-required``           ``TASK_STATE_INPUT_REQUIRED``
``unknown_operation``,     ``rejected``                   ``TASK_STATE_REJECTED``
``wrong_tenant``,
``wrong_agent``
=========================  =============================  ==============================

A2A §7.6.1 requires a status message explaining an ``auth-required`` state; the message is generic
(the reason code, never levels, roles or identities) because it goes to the caller.
:func:`report_decision` applies the mapping through an a2a-sdk ``TaskUpdater``; a2a-sdk is imported
only when it is called (it is the executor's dependency, not mudrika's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from mudrika.trust.policy import Decision

__all__ = [
    "REASON_KEY",
    "SEED_STATE_KEY",
    "TaskStateAdvice",
    "TaskUpdaterLike",
    "report_decision",
    "task_state_for",
]

#: Status-update metadata key carrying the seed's task state name.
SEED_STATE_KEY: Final = "mudrika/seedTaskState"
#: Status-update metadata key carrying the policy's machine-readable reason.
REASON_KEY: Final = "mudrika/reason"

_AUTH: Final = ("auth-required", "TASK_STATE_AUTH_REQUIRED", "Authentication is required for this task.")
_TRUST: Final = (
    "trust-verification-required",
    "TASK_STATE_AUTH_REQUIRED",
    "This task needs a caller with more trust than the presented credentials carry.",
)
_PAYMENT: Final = (
    "payment-required",
    "TASK_STATE_INPUT_REQUIRED",
    "Payment is required before this task runs.",
)
_REJECT: Final = ("rejected", "TASK_STATE_REJECTED", "The task was rejected.")

_BY_REASON: Final[dict[str, tuple[str, str, str]]] = {
    "no_role": _AUTH,
    "insufficient_trust": _TRUST,
    "missing_permission": _TRUST,
    "executor_mismatch": _TRUST,
    "payment_required": _PAYMENT,
    "unknown_operation": _REJECT,
    "wrong_tenant": _REJECT,
    "wrong_agent": _REJECT,
}


@dataclass(frozen=True, slots=True)
class TaskStateAdvice:
    """The state a denied task moves to: the A2A 1.0 enum name, the seed's name, and why."""

    a2a_state: str
    seed_state: str
    reason: str
    text: str

    @property
    def terminal(self) -> bool:
        """Whether the state ends the task (only ``TASK_STATE_REJECTED`` among these)."""
        return self.a2a_state == "TASK_STATE_REJECTED"

    def metadata(self) -> dict[str, Any]:
        return {SEED_STATE_KEY: self.seed_state, REASON_KEY: self.reason}


def task_state_for(decision: Decision) -> TaskStateAdvice | None:
    """None for an allowed decision; otherwise the state the task must move to (unknown reasons reject)."""
    if decision.allowed:
        return None
    seed, a2a, text = _BY_REASON.get(decision.reason, _REJECT)
    return TaskStateAdvice(a2a_state=a2a, seed_state=seed, reason=decision.reason, text=text)


class TaskUpdaterLike(Protocol):
    """The part of a2a-sdk's ``TaskUpdater`` that :func:`report_decision` uses."""

    async def update_status(
        self,
        state: Any,
        message: Any = None,
        timestamp: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...

    def new_agent_message(self, parts: list[Any], metadata: dict[str, Any] | None = None) -> Any: ...


async def report_decision(decision: Decision, updater: TaskUpdaterLike) -> bool:
    """In an a2a-sdk executor: publish the state a denied decision calls for; True when denied.

    Typical use at the top of ``AgentExecutor.execute``::

        if await report_decision(policy.decide_execution(principal, request=req, cost=cost), updater):
            return  # the task now waits for auth / trust / payment, or is rejected
    """
    advice = task_state_for(decision)
    if advice is None:
        return False
    from a2a.types.a2a_pb2 import Part, TaskState

    metadata = advice.metadata()
    message = updater.new_agent_message(parts=[Part(text=advice.text)], metadata=metadata)
    await updater.update_status(TaskState.Value(advice.a2a_state), message=message, metadata=metadata)
    return True
