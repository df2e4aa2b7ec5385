"""Operation-policy decisions per second: mudrika's compiled Policy beside Cedar (cedarpy) and Casbin.

Run: .venv/bin/python bench/bench_policy.py [--seconds 0.5] [--repeats 5]

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

Prints a markdown table on stdout: decisions/s (best of the repeats) and the ratio to mudrika's warm path.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import casbin
import cedarpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

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


def measure(run_mix: Callable[[], None], mix_size: int, seconds: float, repeats: int) -> float:
    """Decisions per second: best of ``repeats`` runs of about ``seconds`` each."""
    loops = 1
    while True:  # calibrate
        start = time.perf_counter()
        for _ in range(loops):
            run_mix()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 4:
            break
        loops *= 2
    loops = max(1, int(loops * seconds / elapsed))
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            run_mix()
        elapsed = time.perf_counter() - start
        best = max(best, loops * mix_size / elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=5)
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
    results = [(name, measure(fn, len(mix), args.seconds, args.repeats)) for name, fn in rows]
    baseline = results[0][1]

    print(
        f"Decision mix: {len(mix)} requests ({allowed} allowed, {len(mix) - allowed} denied; "
        f"{len(CALLERS)} callers x {len(MIX_OPERATIONS)} operations incl. 1 unknown). "
        f"Python {sys.version.split()[0]}, cedarpy {version('cedarpy')}, pycasbin {version('pycasbin')}, "
        f"best of {args.repeats}.\n"
    )
    print("| engine | decisions/s | µs/decision | mudrika warm ÷ engine |")
    print("|---|---:|---:|---:|")
    for name, rate in results:
        print(f"| {name} | {rate:,.0f} | {1e6 / rate:.3f} | {baseline / rate:,.1f}x |")


if __name__ == "__main__":
    main()
