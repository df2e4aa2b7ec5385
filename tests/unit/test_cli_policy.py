"""`mudrika policy check`: decisions and exit codes (0 allowed, 1 denied, 2 malformed/usage), in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mudrika.cli import main
from tests._support.paths import FIXTURES

POLICY = str(FIXTURES / "policy" / "agent-policy.yaml")
REALM_POLICY = str(FIXTURES / "policy" / "realm-policy.yaml")


def test_allowed_exits_zero_with_human_text_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["policy", "check", "--config", POLICY, "--roles", "agent-operator", "--operation", "message/send"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out == ""
    assert "ALLOWED message/send" in err
    assert "reason=allowed" in err


def test_denied_exits_one(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["policy", "check", "--config", POLICY, "--roles", "agent-operator", "--operation", "tasks/cancel"]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert "DENIED tasks/cancel" in err
    assert "reason=insufficient_trust" in err
    assert "required=manager" in err


def test_json_output_is_one_document_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "check",
            "--config",
            POLICY,
            "--roles",
            "agent-viewer",
            "--operation",
            "message/send",
            "--json",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 1
    assert json.loads(out) == {
        "allowed": False,
        "operation": "message/send",
        "required_level": "operator",
        "caller_level": "viewer",
        "missing_permissions": [],
        "reason": "insufficient_trust",
    }


def test_unknown_operation_and_missing_permission(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            ["policy", "check", "--config", POLICY, "--roles", "agent-admin", "--operation", "x/y", "--json"]
        )
        == 1
    )
    assert json.loads(capsys.readouterr().out)["reason"] == "unknown_operation"
    code = main(
        [
            "policy",
            "check",
            "--config",
            POLICY,
            "--roles",
            "agent-manager",
            "--operation",
            "payments/refund",
            "--json",
        ]
    )
    assert code == 1
    assert json.loads(capsys.readouterr().out)["reason"] == "insufficient_trust"
    code = main(
        ["policy", "check", "--config", POLICY, "--roles", "agent-manager", "--operation", "tasks/get"]
    )
    assert code == 0


def test_no_roles_is_denied(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check", "--config", POLICY, "--operation", "tasks/get", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["reason"] == "no_role"


def test_roles_repeated_or_comma_separated(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["policy", "check", "--config", POLICY, "--operation", "tasks/cancel", "--json"]
    for roles in (
        ["--roles", "agent-viewer", "--roles", "agent-manager"],
        ["--roles", "agent-viewer, agent-manager"],
    ):
        assert main([*base, *roles]) == 0
        decision = json.loads(capsys.readouterr().out)
        assert decision["allowed"] is True
        assert decision["caller_level"] == "manager"


def test_groups_with_provider(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["policy", "check", "--config", POLICY, "--operation", "payments/refund"]
    assert main([*base, "--provider", "azure_ad", "--groups", "7c9e6679-7425-40de-944b-e07fc1f90ae7"]) == 0
    assert main([*base, "--provider", "okta", "--groups", "agent-admins"]) == 0
    assert main([*base, "--provider", "keycloak", "--groups", "agent-admins"]) == 1
    capsys.readouterr()


def test_missing_permission_reported_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "check",
            "--config",
            REALM_POLICY,
            "--groups",
            "/operations",
            "--operation",
            "payments/refund",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert "reason=missing_permission" in err
    assert "missing=payments:refund" in err
    code = main(
        [
            "policy",
            "check",
            "--config",
            REALM_POLICY,
            "--groups",
            "/operations",
            "--permissions",
            "payments:refund",
            "--operation",
            "payments/refund",
        ]
    )
    assert code == 0


def test_malformed_config_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\noperations:\n  op: {min_level: boss}\n")
    assert main(["policy", "check", "--config", str(bad), "--roles", "x", "--operation", "op"]) == 2
    _, err = capsys.readouterr()
    assert "operations.op.min_level" in err


def test_missing_config_file_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check", "--config", str(tmp_path / "nope.yaml"), "--operation", "op"]) == 2
    assert "cannot read policy file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["policy", "check", "--config", POLICY],
        ["policy", "check", "--operation", "op"],
        ["policy", "check", "--config", POLICY, "--operation", "op", "--provider", "google"],
        ["policy", "check", "--config", POLICY, "--operation", "op", "--bogus"],
    ],
)
def test_usage_errors_exit_two(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    capsys.readouterr()


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check", "--help"]) == 0
    assert "--operation" in capsys.readouterr().out
