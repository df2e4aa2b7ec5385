"""Policy decisions mapped to A2A 1.0 task states, with the seed's state in the metadata."""

from __future__ import annotations

from typing import Any

import pytest

from mudrika.trust.a2a.task_states import REASON_KEY, SEED_STATE_KEY, report_decision, task_state_for
from mudrika.trust.levels import TrustLevel
from mudrika.trust.policy import Decision


def _decision(reason: str, *, allowed: bool = False) -> Decision:
    return Decision(allowed, "message/send", TrustLevel.OPERATOR, None, frozenset(), reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "seed", "a2a"),
    [
        ("no_role", "auth-required", "TASK_STATE_AUTH_REQUIRED"),
        ("insufficient_trust", "trust-verification-required", "TASK_STATE_AUTH_REQUIRED"),
        ("missing_permission", "trust-verification-required", "TASK_STATE_AUTH_REQUIRED"),
        ("executor_mismatch", "trust-verification-required", "TASK_STATE_AUTH_REQUIRED"),
        ("payment_required", "payment-required", "TASK_STATE_INPUT_REQUIRED"),
        ("unknown_operation", "rejected", "TASK_STATE_REJECTED"),
        ("wrong_tenant", "rejected", "TASK_STATE_REJECTED"),
        ("wrong_agent", "rejected", "TASK_STATE_REJECTED"),
        ("a_reason_from_the_future", "rejected", "TASK_STATE_REJECTED"),
    ],
)
def test_mapping(reason: str, seed: str, a2a: str) -> None:
    advice = task_state_for(_decision(reason))
    assert advice is not None
    assert (advice.seed_state, advice.a2a_state) == (seed, a2a)
    assert advice.metadata() == {SEED_STATE_KEY: seed, REASON_KEY: reason}
    assert advice.terminal is (a2a == "TASK_STATE_REJECTED")
    assert "operator" not in advice.text  # generic: no levels or identities go to the caller


def test_allowed_needs_no_state() -> None:
    assert task_state_for(_decision("allowed", allowed=True)) is None


class RecordingUpdater:
    def __init__(self) -> None:
        self.updates: list[tuple[Any, Any, dict[str, Any] | None]] = []

    async def update_status(
        self,
        state: Any,
        message: Any = None,
        timestamp: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.updates.append((state, message, metadata))

    def new_agent_message(self, parts: list[Any], metadata: dict[str, Any] | None = None) -> Any:
        return {"parts": parts, "metadata": metadata}


@pytest.mark.anyio
async def test_report_decision_publishes_the_a2a_state() -> None:
    from a2a.types.a2a_pb2 import TaskState

    updater = RecordingUpdater()
    assert await report_decision(_decision("payment_required"), updater)
    [(state, message, metadata)] = updater.updates
    assert state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert message["parts"][0].text
    assert metadata == {SEED_STATE_KEY: "payment-required", REASON_KEY: "payment_required"}
    assert not await report_decision(_decision("allowed", allowed=True), updater)
    assert len(updater.updates) == 1
