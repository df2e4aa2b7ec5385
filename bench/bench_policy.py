"""Operation-policy decisions per second: mudrika's compiled Policy beside Cedar (cedarpy) and Casbin.

Run: .venv/bin/python bench/bench_policy.py [--repetitions 7]

All three engines get the same roles, operations and callers, and the same decision mix (allowed and
denied, including an operation nobody may call).  Before timing, the script checks that the three
agree on every request of the mix, so the numbers compare equal work.

* mudrika: ``Policy.decide(principal, operation)``, once with long-lived Principal objects (the warm
  path: a memo on the principal) and once building a new ``Principal`` per request, as middleware does
  from each token (the memo keyed by role sets answers).
* Cedar: ``cedarpy.is_authorized`` with a pre-parsed ``PolicySet`` and ``Entities`` handle (callers
  are users whose parents are role entities; one ``permit`` per role and operation).
* Casbin: ``casbin.Enforcer.enforce`` with an RBAC model (``g = _, _``) and one ``p`` line per role
  and operation.

Prints a markdown table on stdout: decisions/s and µs/decision as the median (min–max) of interleaved
repetitions (bench/_timing.py), and each engine's time ÷ mudrika's warm path, formed per repetition.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path

import casbin
import cedarpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import Spread, fmt, measure, ratio
from mudrika.trust.levels import TrustLevel
from mudrika.trust.models import KeycloakRole
from mudrika.trust.policy import OperationRule, Policy, Principal

L = TrustLevel

ROLES = {
    "admin": (L.ADMIN, ["a2a:message.send", "a2a:tasks.read", "payments:refund"]),
    "manager": (L.MANAGER, ["a2a:message.send", "a2a:tasks.read"]),
    "operator": (L.OPERATOR, ["a2a:message.send", "a2a:tasks.read"]),
    "viewer": (L.VIEWER, ["a2a:tasks.read"]),
    "auditor": (L.AUDITOR, ["audit:read"]),
}
OPERATIONS = {
    "message/send": (L.OPERATOR, ["a2a:message.send"]),
    "tasks/get": (L.VIEWER, ["a2a:tasks.read"]),
    "tasks/cancel": (L.MANAGER, []),
    "payments/refund": (L.ADMIN, ["payments:refund"]),
    "audit/export": (L.AUDITOR, ["audit:read"]),
}
CALLERS = {
    "u-admin": ["admin"],
    "u-manager": ["manager"],
    "u-operator": ["operator"],
    "u-viewer": ["viewer"],
    "u-auditor": ["auditor"],
    "u-ops-viewer": ["operator", "viewer"],
    "u-unmapped": ["offline_access"],
    "u-none": [],
}
MIX_OPERATIONS = [*OPERATIONS, "tasks/delete"]  # the last one is unknown: denied everywhere


def role_allows(role: str, operation: str) -> bool:
    """The per-role meaning every engine encodes: level high enough and permissions granted."""
    level, permissions = ROLES[role]
    minimum, required = OPERATIONS[operation]
    return level >= minimum and set(required) <= set(permissions)


def build_mudrika() -> Policy:
    roles = [
        KeycloakRole(role_id=name, role_name=name, trust_level=level, realm_name="bench", permissions=perms)
        for name, (level, perms) in ROLES.items()
    ]
    operations = {
        op: OperationRule(min_level=lvl, permissions=perms) for op, (lvl, perms) in OPERATIONS.items()
    }
    return Policy(roles=roles, operations=operations)


def build_cedar() -> tuple[cedarpy.PolicySet, cedarpy.Entities]:
    lines = [
        f'permit(principal in Role::"{role}", action == Action::"{op}", resource);'
        for role in ROLES
        for op in OPERATIONS
        if role_allows(role, op)
    ]
    entities = [{"uid": {"type": "Role", "id": role}, "attrs": {}, "parents": []} for role in ROLES]
    entities += [
        {
            "uid": {"type": "User", "id": user},
            "attrs": {},
            "parents": [{"type": "Role", "id": r} for r in roles if r in ROLES],
        }
        for user, roles in CALLERS.items()
    ]
    entities.append({"uid": {"type": "Agent", "id": "shop"}, "attrs": {}, "parents": []})
    return cedarpy.PolicySet.from_str("\n".join(lines)), cedarpy.Entities.from_json_str(json.dumps(entities))


CASBIN_MODEL = """
[request_definition]
r = sub, act

[policy_definition]
p = sub, act

[role_definition]
g = _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, p.sub) && r.act == p.act
"""


def build_casbin() -> casbin.Enforcer:
    model = casbin.Model()
    model.load_model_from_text(CASBIN_MODEL)
    enforcer = casbin.Enforcer(model)
    for role in ROLES:
        for op in OPERATIONS:
            if role_allows(role, op):
                enforcer.add_policy(role, op)
    for user, roles in CALLERS.items():
        for role in roles:
            enforcer.add_grouping_policy(user, role)
    return enforcer


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()

    policy = build_mudrika()
    principals = {u: Principal(subject=u, roles=frozenset(r)) for u, r in CALLERS.items()}
    mix = [(user, op) for user in CALLERS for op in MIX_OPERATIONS]
    ours_mix = [(principals[user], op) for user, op in mix]
    role_sets = [(user, frozenset(CALLERS[user]), op) for user, op in mix]
    cedar_policies, cedar_entities = build_cedar()
    cedar_requests = [
        {
            "principal": f'User::"{user}"',
            "action": f'Action::"{op}"',
            "resource": 'Agent::"shop"',
            "context": {},
        }
        for user, op in mix
    ]
    enforcer = build_casbin()

    # Equal work: every engine must reach the same verdict on every request of the mix.
    ours = [policy.decide(p, op).allowed for p, op in ours_mix]
    cedar = [
        cedarpy.is_authorized(r, cedar_policies, cedar_entities).decision == cedarpy.Decision.Allow
        for r in cedar_requests
    ]
    cas = [bool(enforcer.enforce(user, op)) for user, op in mix]
    if not ours == cedar == cas:
        raise SystemExit(f"engines disagree: ours={ours} cedar={cedar} casbin={cas}")
    allowed = sum(ours)

    decide = policy.decide

    def run_ours_warm() -> None:
        for principal, op in ours_mix:
            decide(principal, op)

    def run_ours_new_principal() -> None:
        for user, roles, op in role_sets:
            decide(Principal(subject=user, roles=roles), op)

    def run_cedar() -> None:
        for request in cedar_requests:
            cedarpy.is_authorized(request, cedar_policies, cedar_entities)

    def run_cedar_batch() -> None:
        cedarpy.is_authorized_batch(cedar_requests, cedar_policies, cedar_entities)

    def run_casbin() -> None:
        for user, op in mix:
            enforcer.enforce(user, op)

    rows = [
        ("mudrika Policy.decide (long-lived Principal)", run_ours_warm),
        ("mudrika Principal(...) + decide (new principal per request)", run_ours_new_principal),
        ("cedarpy is_authorized (pre-parsed PolicySet + Entities)", run_cedar),
        ("cedarpy is_authorized_batch (whole mix per call)", run_cedar_batch),
        ("pycasbin Enforcer.enforce (RBAC model)", run_casbin),
    ]
    # Batches of whole mixes, sized so that each batch takes roughly the same few tens of ms.
    loops = {name: 4000 if name.startswith("mudrika") else 40 for name, _ in rows}
    per_mix = measure(dict(rows), repetitions=args.repetitions, number=loops)
    per_decision = {
        name: Spread.of([us / len(mix) for us in spread.samples]) for name, spread in per_mix.items()
    }
    baseline = per_decision[rows[0][0]]

    print("## Operation policy decisions (bench/bench_policy.py)\n")
    print(
        f"Decision mix: {len(mix)} requests ({allowed} allowed, {len(mix) - allowed} denied; "
        f"{len(CALLERS)} callers x {len(MIX_OPERATIONS)} operations incl. 1 unknown). "
        f"Python {sys.version.split()[0]}, cedarpy {version('cedarpy')}, pycasbin {version('pycasbin')}; "
        f"median (min–max) of {args.repetitions} interleaved repetitions.\n"
    )
    print("| engine | decisions/s | µs/decision | engine time ÷ mudrika warm time |")
    print("|---|---:|---:|---:|")
    for name, spread in per_decision.items():
        rate = Spread.of([1e6 / us for us in spread.samples])
        print(f"| {name} | {fmt(rate, 0)} | {fmt(spread, 3)} | {fmt(ratio(spread, baseline), 1)} |")


if __name__ == "__main__":
    main()
