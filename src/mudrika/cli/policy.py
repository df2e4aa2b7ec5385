"""``mudrika policy check``: ask an operation policy one question from the command line.

Why a CLI for it: operators change policy files and realm exports; they must be able to see, before
deploying, what the middleware will answer for a given set of roles and groups — with the same
compiled :class:`~mudrika.trust.policy.Policy` the server uses, and the same machine-readable reason.

Exit codes: 0 allowed, 1 denied, 2 malformed policy file or usage.  The trust models (pydantic,
PyYAML) are imported inside the command, so that ``mudrika policy --help`` starts without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from mudrika.cli._choices import IDENTITY_PROVIDERS
from mudrika.cli._common import EXIT_FAILED, EXIT_OK, emit_json, err, json_option

if TYPE_CHECKING:
    from mudrika.trust.models import IdentityProvider

__all__ = ["policy_group"]


def _split(values: tuple[str, ...]) -> frozenset[str]:
    """``--roles a --roles b,c`` and ``--roles a,b`` both mean {a, b, c}; blanks are dropped."""
    return frozenset(item.strip() for value in values for item in value.split(",") if item.strip())


@click.group(name="policy")
def policy_group() -> None:
    """Inspect operation policies (trust levels, roles, IdP groups)."""


@policy_group.command(name="check")
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Policy file (YAML or JSON; see docs/trust.md).",
)
@click.option("--roles", multiple=True, metavar="ROLE[,ROLE...]", help="Roles the caller holds (repeatable).")
@click.option("--operation", required=True, metavar="OP", help="Operation to check, e.g. message/send.")
@click.option(
    "--groups", multiple=True, metavar="GROUP[,GROUP...]", help="IdP groups of the caller (repeatable)."
)
@click.option(
    "--permissions",
    multiple=True,
    metavar="PERM[,PERM...]",
    help="Permissions granted directly, e.g. token scopes (repeatable).",
)
@click.option(
    "--provider",
    type=click.Choice(IDENTITY_PROVIDERS),
    default="keycloak",
    show_default=True,
    help="Identity provider the groups come from.",
)
@click.option("--subject", default="cli", show_default=True, help="Subject shown in the output.")
@json_option("the decision")
def check(
    config: Path,
    roles: tuple[str, ...],
    operation: str,
    groups: tuple[str, ...],
    permissions: tuple[str, ...],
    provider: IdentityProvider,
    subject: str,
    as_json: bool,
) -> int:
    """Print the policy decision for a caller; exit 0 if allowed, 1 if denied, 2 if the config is bad."""
    from mudrika.trust.policy import Policy, Principal

    policy = Policy.from_file(config)
    principal = Principal(
        subject=subject,
        roles=_split(roles),
        groups=_split(groups),
        permissions=_split(permissions),
        identity_provider=provider,
    )
    decision = policy.decide(principal, operation)
    if as_json:
        emit_json(decision.to_dict())
    else:
        required = decision.required_level.value if decision.required_level else "-"
        caller = decision.caller_level.value if decision.caller_level else "none"
        verdict = "ALLOWED" if decision.allowed else "DENIED"
        line = f"{verdict} {operation}: reason={decision.reason} required={required} caller={caller}"
        if decision.missing_permissions:
            line += " missing=" + ",".join(sorted(decision.missing_permissions))
        err(line)
    return EXIT_OK if decision.allowed else EXIT_FAILED
