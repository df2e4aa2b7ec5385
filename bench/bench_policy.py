"""Operation-policy decisions per second: mudrika's compiled Policy beside Cedar (cedarpy) and Casbin.

Run: .venv/bin/python bench/bench_policy.py [--repetitions 7]

All three engines get the same roles, operations and callers, and the same decision mix (allowed and
denied, including an operation nobody may call).  Before timing, the script checks that the three
agree on every request of the mix and on every caller x operation combination the fresh-principal
batches cycle through, so the numbers compare equal work.

Cold (the headline): what a server does -- every request brings a principal nobody has asked about.
Distinct principals (their own subject and their own newly built role set, so no hash is cached) are
generated before timing, and each timed decision consumes a new one:

* mudrika: ``Policy.decide(principal, operation)`` on a new ``Principal``; its per-principal memo is
  empty, and the policy's role/group-set memo (consulted only for callers with IdP groups, which
  these are not) is cleared before every batch.
* Cedar: ``cedarpy.is_authorized`` with the pre-parsed ``PolicySet``; the request's principal is a new
  ``User`` whose parents are its role entities, so its entities (the role entities and this user, a
  JSON string generated before timing) are passed with the request.
* Casbin: the caller's roles are what the request carries, so ``Enforcer.enforce(role, operation)``
  for each of them until one allows (the RBAC model's ``g(r.sub, p.sub)`` holds for a role itself).

Warm rows, labelled so: mudrika with long-lived ``Principal`` objects (the per-principal memo answers);
mudrika building the ``Principal`` inside the timed loop; Cedar and Casbin with every user registered
in advance (a pre-parsed ``Entities`` handle; grouping policies).

Prints a markdown table on stdout: decisions/s per core (one thread) and µs/decision as the median
(min–max) of interleaved repetitions (bench/_timing.py), and each engine's time ÷ mudrika's cold time,
formed per repetition.  No signature is verified here, so no OpenSSL ceiling applies.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import casbin
import cedarpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import Spread, fmt, measure, ratio, verdict
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


def build_casbin(*, with_users: bool = True) -> casbin.Enforcer:
    """Casbin with the role permissions, and (``with_users``) every known caller's role assignments."""
    model = casbin.Model()
    model.load_model_from_text(CASBIN_MODEL)
    enforcer = casbin.Enforcer(model)
    for role in ROLES:
        for op in OPERATIONS:
            if role_allows(role, op):
                enforcer.add_policy(role, op)
    if with_users:
        for user, roles in CALLERS.items():
            for role in roles:
                enforcer.add_grouping_policy(user, role)
    return enforcer


COLD_BATCH = 20_000
"""Decisions per cold batch: each consumes a principal generated before timing."""


def fresh_requests(batch: int, count: int) -> list[tuple[str, list[str], str]]:
    """``count`` requests (distinct user, its roles, operation) cycling through the callers' role sets
    and the mix's operations; ``batch`` makes every batch's users distinct from every other's."""
    callers = list(CALLERS.values())
    return [
        (
            f"user-{batch}-{index}",
            callers[index % len(callers)],
            MIX_OPERATIONS[(index // len(callers)) % len(MIX_OPERATIONS)],
        )
        for index in range(count)
    ]


def role_entities() -> list[dict[str, Any]]:
    return [{"uid": {"type": "Role", "id": role}, "attrs": {}, "parents": []} for role in ROLES] + [
        {"uid": {"type": "Agent", "id": "shop"}, "attrs": {}, "parents": []}
    ]


def cedar_fresh(user: str, roles: list[str], operation: str) -> tuple[dict[str, Any], str]:
    """The request for a user Cedar has not seen, and the entities that go with it (as JSON)."""
    entities = [
        *role_entities(),
        {
            "uid": {"type": "User", "id": user},
            "attrs": {},
            "parents": [{"type": "Role", "id": r} for r in roles if r in ROLES],
        },
    ]
    request = {
        "principal": f'User::"{user}"',
        "action": f'Action::"{operation}"',
        "resource": 'Agent::"shop"',
        "context": {},
    }
    return request, json.dumps(entities)


def casbin_fresh(enforcer: casbin.Enforcer, roles: list[str], operation: str) -> bool:
    return any(enforcer.enforce(role, operation) for role in roles)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()
    reps = args.repetitions

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
    bare_enforcer = build_casbin(with_users=False)

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

    # Cold inputs: one batch per repetition and engine, generated (and agreed on) before timing.
    cold_ours = [
        [(Principal(subject=u, roles=frozenset(list(r))), op) for u, r, op in fresh_requests(rep, COLD_BATCH)]
        for rep in range(reps)
    ]
    cold_cedar = [
        [cedar_fresh(u, r, op) for u, r, op in fresh_requests(rep, COLD_BATCH)] for rep in range(reps)
    ]
    cold_casbin = [[(r, op) for _, r, op in fresh_requests(rep, COLD_BATCH)] for rep in range(reps)]
    sample = fresh_requests(reps, 96)
    agreed = [policy.decide(Principal(subject=u, roles=frozenset(r)), op).allowed for u, r, op in sample]
    agreed_cedar = []
    for u, r, op in sample:
        request, entities = cedar_fresh(u, r, op)
        result = cedarpy.is_authorized(request, cedar_policies, entities)
        agreed_cedar.append(result.decision == cedarpy.Decision.Allow)
    agreed_casbin = [casbin_fresh(bare_enforcer, r, op) for _, r, op in sample]
    if not agreed == agreed_cedar == agreed_casbin:
        raise SystemExit("engines disagree on fresh principals")

    decide = policy.decide
    ours_batches, cedar_batches, casbin_batches = iter(cold_ours), iter(cold_cedar), iter(cold_casbin)

    def run_ours_cold() -> None:
        policy._memo.clear()
        for principal, op in next(ours_batches):
            decide(principal, op)

    def run_cedar_cold() -> None:
        for request, entities in next(cedar_batches):
            cedarpy.is_authorized(request, cedar_policies, entities)

    def run_casbin_cold() -> None:
        enforce = bare_enforcer.enforce
        for roles, op in next(casbin_batches):
            any(enforce(role, op) for role in roles)

    cold_rows = [
        ("mudrika `decide`, new `Principal` per decision (cold)", run_ours_cold, COLD_BATCH),
        ("cedarpy `is_authorized`, new principal entity per request (cold)", run_cedar_cold, COLD_BATCH),
        ("pycasbin `enforce` per role the request carries (cold)", run_casbin_cold, COLD_BATCH),
    ]
    cold = measure({name: run for name, run, _ in cold_rows}, repetitions=reps, number=1)
    cold_per = {name: Spread.of([us / size for us in cold[name].samples]) for name, _, size in cold_rows}

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

    warm_rows = [
        ("mudrika `decide`, long-lived `Principal` (warm: per-principal memo)", run_ours_warm),
        (
            "mudrika `Principal(...)` built in the loop + `decide` (construction timed)",
            run_ours_new_principal,
        ),
        ("cedarpy `is_authorized`, users registered in advance (warm: pre-parsed `Entities`)", run_cedar),
        ("cedarpy `is_authorized_batch` (whole mix per call; warm)", run_cedar_batch),
        ("pycasbin `enforce`, users registered in advance (warm: grouping policies)", run_casbin),
    ]
    # Batches of whole mixes, sized so that each batch takes roughly the same few tens of ms.
    loops = {name: 4000 if name.startswith("mudrika") else 40 for name, _ in warm_rows}
    per_mix = measure(dict(warm_rows), repetitions=reps, number=loops)
    warm_per = {name: Spread.of([us / len(mix) for us in spread.samples]) for name, spread in per_mix.items()}
    baseline = cold_per[cold_rows[0][0]]

    print("## Operation policy decisions (bench/bench_policy.py)\n")
    print(
        f"Cold (headline): {reps} batches of {COLD_BATCH:,} decisions, each on a principal generated before "
        "timing and never asked about before (own subject, newly built role set); mudrika's role/group-set "
        "memo, which only callers with IdP groups consult, is cleared before every batch.  Cedar gets each "
        "new principal as an entity passed with its request, Casbin as the roles the request carries.  "
        f"Warm: the mix of {len(mix)} requests ({allowed} allowed, {len(mix) - allowed} denied; "
        f"{len(CALLERS)} callers x {len(MIX_OPERATIONS)} operations incl. 1 unknown) with callers known in "
        f"advance.  Python {sys.version.split()[0]}, cedarpy {version('cedarpy')}, pycasbin "
        f"{version('pycasbin')}; median (min–max) of {reps} interleaved repetitions; one thread, so "
        "decisions/s is per core.  No signature is verified: no OpenSSL ceiling applies.\n"
    )
    print("| engine | µs/decision | engine time ÷ mudrika cold | decisions/s per core | target | verdict |")
    print("|---|---:|---:|---:|---|---|")
    for name, spread in {**cold_per, **warm_per}.items():
        rate = Spread.of([1e6 / us for us in spread.samples])
        headline = name == cold_rows[0][0]
        target = "≥ 1,000,000/s" if headline else ""
        met = verdict(rate, 1_000_000) if headline else ""
        print(
            f"| {name} | {fmt(spread, 3)} | {fmt(ratio(spread, baseline), 1)} | {fmt(rate, 0)} | "
            f"{target} | {met} |"
        )


if __name__ == "__main__":
    main()
