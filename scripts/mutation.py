"""Mutation check of mudrika's security core: does a test fail when the code is wrong?

Why: line coverage says a line ran, not that any test would notice the line being wrong.  The red
team's forged purchase went through code that was covered and still wrong (a kid looked up without
asking whose it was).  This tool makes one small change at a time to the modules that decide trust
(a flipped comparison, a dropped ``raise``, a removed set member …), runs the tests that execute the
changed line, and counts the changes ("mutants") no test noticed.  docs/security.md, "Mutation
check", says how to run it and lists the scores measured.

How it stays fast and safe:

* Per-test coverage is collected once (pytest-cov ``--cov-context=test``) over each module's test
  files, so a mutant runs only the tests whose execution reached its line, fastest first, stopping at
  the first failure.  A change at import time (a module constant, a class body, a default argument)
  runs the tests that reach the lines using that name or that function, or all of the module's tests.
* Mutants are written into a private copy of ``src/`` in a temporary directory (``PYTHONPATH`` points
  there), never into the working tree: an interrupted run leaves nothing behind.
* Mutants that cannot change behaviour are *stated*, with a reason, in
  ``scripts/mutation-equivalent.txt`` (``path:line operator: before → after — reason``); they are
  listed and left out of the score.  An entry that no longer matches a mutant is reported as stale.

The score of a module is (killed + timed out) / (mutants − equivalent); the run exits 1 when any
module scores below ``--min-score`` (95 by default).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

REPO: Final = Path(__file__).resolve().parents[1]
SCRIPTS: Final = REPO / "scripts"
EQUIVALENTS: Final = SCRIPTS / "mutation-equivalent.txt"
SEPARATOR: Final = " — "

#: Tests of the payment-side key core: everything that asks the trust root, the evidence key material
#: or the anchoring rule for a key (AP2 v0.1 and v0.2 chains, disputes, A2A cards and parts, DID-signed
#: requests).  Integration and interop suites are left out: they start servers or other runtimes, and
#: the unit and attack suites reach the same lines.
_ANCHOR_TESTS: Final = (
    "tests/unit/test_anchoring_rule.py",
    "tests/unit/test_trust_root.py",
    "tests/unit/test_trust_root_pins.py",
    "tests/unit/test_evidence_key_material.py",
    "tests/unit/test_cli_trust_root.py",
    "tests/unit/test_chain_verify.py",
    "tests/unit/test_chain_deferred.py",
    "tests/unit/test_chain_fast_paths.py",
    "tests/unit/test_chain_cold_paths.py",
    "tests/unit/test_bundle.py",
    "tests/unit/test_merchant.py",
    "tests/unit/test_user_authorization.py",
    "tests/unit/test_v02_bindings.py",
    "tests/unit/test_v02_receipts.py",
    "tests/unit/test_v02_verifier.py",
    "tests/unit/test_v02_bundle.py",
    "tests/unit/test_a2a_cards.py",
    "tests/unit/test_a2a_artifacts.py",
    "tests/unit/test_a2a_parts.py",
    "tests/unit/test_a2a_push.py",
    "tests/unit/test_httpsig.py",
    "tests/unit/test_cli_dispute.py",
    "tests/security/test_mandate_attacks.py",
    "tests/security/test_mandate_forged_bundle.py",
    "tests/security/test_mandate_tamper_matrix.py",
    "tests/security/test_v02_attacks.py",
    "tests/security/test_v02_sdk_gaps.py",
    "tests/security/test_v02_x5c.py",
    "tests/security/test_httpsig_attacks.py",
    "tests/security/test_a2a_trust_attacks.py",
    "tests/security/test_anchoring_matrix.py",
    "tests/security/test_key_window_matrix.py",
    "tests/unit/test_credential_status.py",
    "tests/unit/test_signing_time_judgement.py",
    "tests/unit/test_trust_root_windows.py",
    "tests/unit/test_cli_trust_root_windows.py",
    "tests/security/test_disputes_over_time.py",
    "tests/security/test_v02_disputes_over_time.py",
    "tests/security/test_webvh_trust_root.py",
)

#: Tests of the MCP side of the gate: the route-and-method table, the RFC 9728 metadata and the
#: challenges every refusal carries (A2A's challenges name the same metadata).
_MCP_TESTS: Final = (
    "tests/unit/test_mcp_middleware.py",
    "tests/unit/test_mcp_methods.py",
    "tests/security/test_refusal_challenges.py",
    "tests/security/test_mcp_mutants.py",
)

#: The modules under test, each with the test files whose coverage decides which tests a mutant runs.
#: Tests of the A2A half of the gate: how a request names its operation, tenant and extensions.
_A2A_GATE_TESTS: Final = (
    "tests/unit/test_a2a_methods.py",
    "tests/unit/test_middleware.py",
    "tests/unit/test_middleware_profiles.py",
    "tests/security/test_middleware_attacks.py",
    "tests/security/test_gate_mutants.py",
    "tests/security/test_gate_red_team.py",
    "tests/security/test_a2a_gate_mutants.py",
)

#: Tests of the JWS core every signed thing goes through (access tokens, mandates, SD-JWT, cards):
#: opening a compact JWS, its header rules, the algorithm allow-list, the signature and the claims' time
#: rule, and the strict base64url under all of them.
_JOSE_TESTS: Final = (
    "tests/unit/test_jose.py",
    "tests/unit/test_jose_opened.py",
    "tests/unit/test_time_rule.py",
    "tests/unit/test_keys.py",
    "tests/interop/test_wycheproof_jose.py",
    "tests/unit/test_tokens.py",
    "tests/security/test_token_attacks.py",
    "tests/unit/test_sdjwt.py",
    "tests/security/test_sdjwt_attacks.py",
    "tests/security/test_mandate_attacks.py",
    "tests/unit/test_a2a_cards.py",
    "tests/unit/test_a2a_artifacts.py",
    "tests/unit/test_statuslist.py",
    "tests/unit/test_cli_status_list.py",
    "tests/unit/test_cli_credential.py",
    "tests/unit/test_multibase.py",
    "tests/unit/test_b64url_limits.py",
    "tests/unit/test_jose_mutants.py",
)

#: Tests of SD-JWT verification (RFC 9901): the presentation, its Disclosures, the processing that
#: puts disclosed claims back, and the key-binding JWT -- how a user's payment authorisation is read.
_SDJWT_TESTS: Final = (
    "tests/unit/test_sdjwt.py",
    "tests/unit/test_sdjwt_fast_paths.py",
    "tests/unit/test_sdjwt_properties.py",
    "tests/unit/test_sdjwt_read_once.py",
    "tests/security/test_sdjwt_attacks.py",
    "tests/unit/test_user_authorization.py",
    "tests/security/test_mandate_attacks.py",
    "tests/unit/test_sdjwt_mutants.py",
)

#: Tests of the AP2 v0.1 chain verifier's stages (the JWS rules every mandate signature meets, the
#: cart, the intent, the payment and the links between them): the key core's tests, which verify
#: whole chains, plus the intent's own, the reports' and the fast-path equivalence tests.
_CHAIN_TESTS: Final = (
    *_ANCHOR_TESTS,
    "tests/unit/test_intent.py",
    "tests/unit/test_hot_path_equivalence.py",
    "tests/unit/test_report_analyst_findings.py",
    "tests/unit/test_report_meanings.py",
    "tests/security/test_report_anchoring_consistency.py",
    "tests/unit/test_chain_mutants.py",
)

#: Tests of RFC 8785 serialisation: every path to the canonical bytes a mandate hash covers.
_JCS_SERIALIZE_TESTS: Final = (
    "tests/unit/test_jcs.py",
    "tests/unit/test_jcs_properties.py",
    "tests/unit/test_jcs_ready.py",
    "tests/unit/test_jcs_orjson_ready.py",
    "tests/unit/test_jcs_paths.py",
    "tests/unit/test_jcs_error_paths.py",
)

#: Tests of key handling: the public keys every signature is verified with (from JWK, multikey, raw,
#: PEM and DER), which algorithms a key type may verify, signing, private-key files and did:key.
_KEY_TESTS: Final = (
    "tests/unit/test_keys.py",
    "tests/unit/test_keystore.py",
    "tests/unit/test_jwk_properties.py",
    "tests/unit/test_did_key_vectors.py",
    "tests/unit/test_did_key_fast_paths.py",
    "tests/unit/test_did_key_cold_path.py",
    "tests/unit/test_did_jwk.py",
    "tests/unit/test_jose.py",
    "tests/unit/test_jose_mutants.py",
    "tests/interop/test_wycheproof_jose.py",
    "tests/interop/test_pkcs8_openssl.py",
    "tests/security/test_key_material_never_leaks.py",
    "tests/unit/test_keys_mutants.py",
)

#: Tests of Token Status Lists: the compressed list and its bit packing, and the signed status list
#: token a dispute reads to judge whether a credential was revoked on the purchase day.
_STATUSLIST_TESTS: Final = (
    "tests/unit/test_statuslist.py",
    "tests/unit/test_cli_status_list.py",
    "tests/unit/test_credential_status.py",
    "tests/unit/test_credential_status_mutants.py",
    "tests/security/test_disputes_over_time.py",
    "tests/security/test_v02_disputes_over_time.py",
    "tests/interop/test_statuslist_node.py",
    "tests/unit/test_statuslist_mutants.py",
)

#: Tests of the open-web verifier (Web Bot Auth and Visa TAP over RFC 9421): the profiles' rules, the
#: draft's and Visa's examples, the directory a Web Bot Auth key comes from, and the npm oracle.
_WEB_SIGNATURE_TESTS: Final = (
    "tests/unit/test_webagent_profiles.py",
    "tests/unit/test_webbotauth_vectors.py",
    "tests/interop/test_webbotauth_interop.py",
    "tests/unit/test_web_signature_mutants.py",
)

#: Tests of did:webvh log verification: every rule a log entry must keep (shape, SCID, entry hash,
#: parameters, authorisation, pre-rotation, time, identity, deactivation, witnesses), the trust root's
#: webvh pins, and the independent implementations as oracles.
_WEBVH_TESTS: Final = (
    "tests/unit/test_webvh.py",
    "tests/security/test_webvh_trust_root.py",
    "tests/interop/test_webvh_oracles.py",
    "tests/unit/test_webvh_mutants.py",
)

TARGETS: Final[dict[str, tuple[str, ...]]] = {
    "src/mudrika/identity/anchoring.py": _ANCHOR_TESTS,
    "src/mudrika/payments/trustroot/_model.py": _ANCHOR_TESTS,
    "src/mudrika/payments/chain/_keys.py": _ANCHOR_TESTS,
    "src/mudrika/crypto/jcs/_parse.py": (
        "tests/unit/test_jcs.py",
        "tests/unit/test_jcs_error_paths.py",
        "tests/unit/test_jcs_properties.py",
        "tests/unit/test_jcs_ready.py",
        "tests/unit/test_jcs_plain_parse.py",
        "tests/unit/test_jcs_parse_mutants.py",
        "tests/unit/test_jcs_orjson_ready.py",
        "tests/unit/test_jose.py",
    ),
    "src/mudrika/crypto/jcs/_serialize.py": _JCS_SERIALIZE_TESTS,
    "src/mudrika/payments/chain/_jws.py": _CHAIN_TESTS,
    "src/mudrika/payments/chain/_cart.py": _CHAIN_TESTS,
    "src/mudrika/payments/chain/_links.py": _CHAIN_TESTS,
    "src/mudrika/payments/chain/_intent.py": _CHAIN_TESTS,
    "src/mudrika/payments/chain/_payment.py": _CHAIN_TESTS,
    "src/mudrika/crypto/jose.py": _JOSE_TESTS,
    "src/mudrika/crypto/keys.py": _KEY_TESTS,
    "src/mudrika/crypto/statuslist/_list.py": _STATUSLIST_TESTS,
    "src/mudrika/crypto/statuslist/_token.py": _STATUSLIST_TESTS,
    "src/mudrika/trust/httpsig/_web.py": _WEB_SIGNATURE_TESTS,
    "src/mudrika/trust/httpsig/_webprofile.py": _WEB_SIGNATURE_TESTS,
    "src/mudrika/identity/methods/webvh/_log.py": _WEBVH_TESTS,
    "src/mudrika/crypto/dataintegrity.py": (*_WEBVH_TESTS, "tests/unit/test_dataintegrity.py"),
    "src/mudrika/payments/v02/_x5c.py": (
        "tests/security/test_v02_x5c.py",
        "tests/security/test_v02_sdk_gaps.py",
        "tests/security/test_x5c_mutants.py",
    ),
    "src/mudrika/identity/methods/webvh/_history.py": (
        "tests/security/test_webvh_trust_root.py",
        "tests/unit/test_trust_root_windows.py",
        "tests/unit/test_webvh.py",
        "tests/unit/test_webvh_key_history.py",
    ),
    "src/mudrika/crypto/b64url.py": _JOSE_TESTS,
    "src/mudrika/crypto/sdjwt/_presentation.py": _SDJWT_TESTS,
    "src/mudrika/crypto/sdjwt/_process.py": _SDJWT_TESTS,
    "src/mudrika/crypto/sdjwt/_disclosure.py": _SDJWT_TESTS,
    "src/mudrika/crypto/sdjwt/_kb.py": _SDJWT_TESTS,
    "src/mudrika/payments/credential_status.py": (
        "tests/unit/test_credential_status.py",
        "tests/security/test_disputes_over_time.py",
        "tests/security/test_v02_disputes_over_time.py",
        "tests/security/test_key_window_matrix.py",
        "tests/unit/test_credential_status_mutants.py",
    ),
    "src/mudrika/net/egress.py": (
        "tests/unit/test_egress.py",
        "tests/unit/test_resolver_limits.py",
        "tests/unit/test_cli_did_egress.py",
        "tests/unit/test_jwks_cache.py",
        "tests/unit/test_a2a_push.py",
        "tests/security/test_ssrf_attacks.py",
        "tests/security/test_keycloak_egress.py",
        "tests/security/test_egress_mutants.py",
    ),
    "src/mudrika/trust/policy/_did_roles.py": (
        "tests/unit/test_policy_did_tenants.py",
        "tests/security/test_did_roles_host_binding.py",
        "tests/unit/test_policy.py",
        "tests/unit/test_middleware_profiles.py",
        "tests/security/test_a2a_trust_attacks.py",
        "tests/security/test_preauth_and_lockout.py",
        "tests/security/test_did_roles_mutants.py",
    ),
    "src/mudrika/trust/keycloak/tokens.py": (
        "tests/unit/test_tokens.py",
        "tests/unit/test_middleware.py",
        "tests/unit/test_time_rule.py",
        "tests/unit/test_dpop.py",
        "tests/security/test_token_attacks.py",
        "tests/security/test_middleware_attacks.py",
        "tests/security/test_sender_constrained.py",
        "tests/security/test_log_injection.py",
        "tests/security/test_token_mutants.py",
    ),
    "src/mudrika/trust/middleware/_mcp.py": _MCP_TESTS,
    "src/mudrika/trust/middleware/_resource.py": _MCP_TESTS,
    "src/mudrika/trust/mcp/methods.py": (
        "tests/unit/test_mcp_methods.py",
        "tests/unit/test_mcp_middleware.py",
        "tests/security/test_mcp_mutants.py",
    ),
    "src/mudrika/trust/httpsig/_verify.py": (
        "tests/unit/test_httpsig.py",
        "tests/unit/test_httpsig_precheck.py",
        "tests/unit/test_httpsig_sf_fast.py",
        "tests/unit/test_content_digest.py",
        "tests/unit/test_time_rule.py",
        "tests/interop/test_httpsig_rfc9421_examples.py",
        "tests/security/test_httpsig_attacks.py",
        "tests/security/test_preauth_and_lockout.py",
        "tests/security/test_anchoring_matrix.py",
        "tests/unit/test_httpsig_verify_mutants.py",
    ),
    "src/mudrika/trust/middleware/_a2a.py": _A2A_GATE_TESTS,
    "src/mudrika/trust/a2a/methods.py": _A2A_GATE_TESTS,
    "src/mudrika/trust/middleware/_gate.py": (
        "tests/unit/test_middleware.py",
        "tests/unit/test_middleware_profiles.py",
        "tests/unit/test_middleware_read_slots.py",
        "tests/unit/test_mcp_middleware.py",
        "tests/unit/test_httpsig.py",
        "tests/security/test_refusal_challenges.py",
        "tests/security/test_middleware_attacks.py",
        "tests/security/test_preauth_and_lockout.py",
        "tests/security/test_log_injection.py",
        "tests/security/test_absent_is_not_down.py",
        "tests/security/test_mcp_mutants.py",
        "tests/security/test_gate_mutants.py",
        "tests/security/test_gate_red_team.py",
    ),
}

_LOGGERS: Final = frozenset({"_log", "log", "logger", "_logger", "logging"})
_COMPARE_SWAP: Final[dict[type[ast.cmpop], type[ast.cmpop]]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAP: Final[dict[type[ast.operator], type[ast.operator]]] = {
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.Sub: ast.Add,
}

Outcome = Literal["killed", "survived", "timeout", "uncovered", "equivalent"]


# -- generating mutants ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One change to one module: where, what, the changed source, and which lines pick its tests."""

    path: str
    line: int
    description: str
    source: str
    select_lines: tuple[int, ...]
    import_time_names: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``path:line operator: before → after``, the form the equivalences file uses."""
        return f"{self.path}:{self.line} {self.description}"


@dataclass
class _Edit:
    node: ast.AST
    operator: str
    replacement: str
    is_statement: bool


def _condensed(text: str, limit: int = 70) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_log_call(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _LOGGERS


def _is_docstring(stmt: ast.stmt, body: Sequence[ast.stmt]) -> bool:
    return (
        bool(body)
        and stmt is body[0]
        and isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


class _Collector:
    """Walks one module's syntax tree and lists the edits worth making, with the scope that decides
    which tests run each one.

    What is never mutated, and why: docstrings, annotations and ``Literal[...]`` (types, not
    behaviour); decorators; ``__all__`` / ``__slots__``; the human message of a raised error and of a
    log call, and any string with white space in it (wording, not the decision; the error *code* and
    detail members are mutated); f-strings.
    """

    def __init__(self) -> None:
        self.edits: list[tuple[_Edit, tuple[int, ...], tuple[str, ...]]] = []
        self._select: tuple[int, ...] | None = None  # None: the node's own lines
        self._names: tuple[str, ...] = ()
        self._bool_function: list[bool | None] = []

    # -- scopes -------------------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self._top_level(stmt, tree.body)

    def _top_level(self, stmt: ast.stmt, body: Sequence[ast.stmt]) -> None:
        if _is_docstring(stmt, body):
            return
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(stmt)
        elif isinstance(stmt, ast.ClassDef):
            for inner in stmt.body:
                if _is_docstring(inner, stmt.body):
                    continue
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    self._function(inner)
                else:
                    # A class body (model fields, their constraints) acts wherever the class is
                    # used, often implicitly (validation): every test of the module runs it.
                    self._at_import(inner, ())
        else:
            names = tuple(
                target.id
                for node in ast.walk(stmt)
                if isinstance(node, ast.Assign | ast.AnnAssign)
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)
            )
            if {"__all__", "__slots__"} & set(names):
                return
            self._at_import(stmt, names)

    def _at_import(self, stmt: ast.stmt, names: tuple[str, ...]) -> None:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id in {"__all__", "__slots__"}
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        ):
            return
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            return
        saved = self._select, self._names
        self._select, self._names = (), names
        self._statement(stmt, [])
        self._select, self._names = saved

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body_lines = tuple(range(fn.body[0].lineno, (fn.end_lineno or fn.lineno) + 1))
        saved = self._select, self._names
        self._select, self._names = body_lines, ()
        for default in [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]:
            self._expression(default)
        self._select, self._names = None, ()
        returns = fn.returns
        self._bool_function.append(
            None
            if returns is None or (isinstance(returns, ast.Constant) and returns.value is None)
            # (with ``from __future__ import annotations`` the annotation is still parsed as an expression)
            else isinstance(returns, ast.Name) and returns.id == "bool"
        )
        for stmt in fn.body:
            if not _is_docstring(stmt, fn.body):
                self._statement(stmt, fn.body)
        self._bool_function.pop()
        self._select, self._names = saved

    # -- statements ---------------------------------------------------------------------------------
    def _add(self, node: ast.AST, operator: str, replacement: str, *, statement: bool = False) -> None:
        lines = self._select
        if lines is None:
            lines = tuple(range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]
        self.edits.append((_Edit(node, operator, replacement, statement), lines, self._names))

    def _statement(self, stmt: ast.stmt, body: Sequence[ast.stmt]) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(stmt)
            return
        if isinstance(
            stmt, ast.ClassDef | ast.Import | ast.ImportFrom | ast.Pass | ast.Global | ast.Nonlocal
        ):
            return
        if isinstance(stmt, ast.Raise):
            self._add(stmt, "raise", "pass", statement=True)
            if stmt.exc is not None:
                self._expression(stmt.exc)
            return
        if isinstance(stmt, ast.Return):
            self._return(stmt)
            return
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return
            self._add(stmt, "delete", "pass", statement=True)
            self._expression(stmt.value)
            return
        if isinstance(stmt, ast.AugAssign):
            self._add(stmt, "delete", "pass", statement=True)
            swapped = _BINOP_SWAP.get(type(stmt.op))
            if swapped is not None:
                new = copy.copy(stmt)
                new.op = swapped()
                self._add(stmt, "augassign", ast.unparse(new), statement=True)
            self._expression(stmt.value)
            return
        if isinstance(stmt, ast.If):
            self._condition(stmt.test)
            for inner in [*stmt.body, *stmt.orelse]:
                self._statement(inner, stmt.body)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._expression(stmt.value)
            return
        # Every other statement: mutate the expressions it holds and the statements nested in it.
        for name, value in ast.iter_fields(stmt):
            if name in {"targets", "target", "type_comment"}:
                continue
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, ast.stmt):
                    self._statement(item, items)
                elif isinstance(item, ast.expr):
                    self._expression(item)
                elif isinstance(item, ast.excepthandler | ast.withitem | ast.match_case):
                    for sub_name, sub in ast.iter_fields(item):
                        if sub_name in {"type", "optional_vars", "pattern", "name"}:
                            continue
                        for part in sub if isinstance(sub, list) else [sub]:
                            if isinstance(part, ast.stmt):
                                self._statement(part, sub if isinstance(sub, list) else [sub])
                            elif isinstance(part, ast.expr):
                                self._expression(part)

    def _return(self, stmt: ast.Return) -> None:
        kind = self._bool_function[-1] if self._bool_function else None
        value = stmt.value
        if kind is True:
            for flag in (True, False):
                if not (isinstance(value, ast.Constant) and value.value is flag):
                    self._add(stmt, "return", f"return {flag}", statement=True)
        elif kind is False and not (
            value is None or (isinstance(value, ast.Constant) and value.value is None)
        ):
            self._add(stmt, "return", "return None", statement=True)
        if value is not None:
            self._expression(value)

    def _condition(self, test: ast.expr) -> None:
        for flag in ("True", "False"):
            self._add(test, "if", flag)
        self._expression(test)

    # -- expressions --------------------------------------------------------------------------------
    def _expression(self, node: ast.expr) -> None:
        if isinstance(node, ast.JoinedStr | ast.Lambda):
            return
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        ):
            return
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                swap = _COMPARE_SWAP.get(type(op))
                if swap is not None:
                    new = copy.copy(node)
                    new.ops = [*node.ops[:index], swap(), *node.ops[index + 1 :]]
                    self._add(node, "compare", ast.unparse(new))
                if isinstance(op, ast.In | ast.NotIn):
                    self._members(node.comparators[index], characters=True)
        elif isinstance(node, ast.BoolOp):
            new_bool = copy.copy(node)
            new_bool.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self._add(node, "boolop", ast.unparse(new_bool))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._add(node, "not", ast.unparse(node.operand))
        elif isinstance(node, ast.BinOp):
            swapped = _BINOP_SWAP.get(type(node.op))
            if swapped is not None:
                new_bin = copy.copy(node)
                new_bin.op = swapped()
                self._add(node, "binop", ast.unparse(new_bin))
        elif isinstance(node, ast.IfExp):
            self._condition(node.test)
            self._expression(node.body)
            self._expression(node.orelse)
            return
        elif isinstance(node, ast.Constant):
            self._constant(node)
            return
        elif isinstance(node, ast.Set):
            self._members(node)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for bound in ("lower", "upper"):
                if getattr(node.slice, bound) is not None:
                    new_sub = copy.deepcopy(node)
                    assert isinstance(new_sub.slice, ast.Slice)
                    setattr(new_sub.slice, bound, None)
                    self._add(node, "slice", ast.unparse(new_sub))
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in node.generators:
                for condition in generator.ifs:
                    self._add(condition, "if", "True")
        elif isinstance(node, ast.Call):
            if _is_log_call(node):
                return
            name = _call_name(node)
            if name in {"startswith", "endswith", "removeprefix", "removesuffix"} and node.args:
                self._members(node.args[0])
            self._call(node)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expression(child)
            elif isinstance(child, ast.comprehension):
                self._expression(child.iter)
                for condition in child.ifs:
                    self._expression(condition)
            elif isinstance(child, ast.keyword):
                self._expression(child.value)

    def _call(self, node: ast.Call) -> None:
        """A raised error's positional message is wording; its code and detail members are not."""
        raising = bool(
            re.search(r"(Error|Input|Denied|Unavailable|Required|Token|Exception)$", _call_name(node))
        )
        self._expression(node.func)
        for arg in node.args:
            if raising and isinstance(arg, ast.Constant | ast.JoinedStr):
                continue
            self._expression(arg)
        for keyword in node.keywords:
            self._expression(keyword.value)

    def _members(self, node: ast.expr, *, characters: bool = False) -> None:
        """Remove one member of a set, tuple or list literal, or one character of a membership string."""
        if isinstance(node, ast.Set | ast.Tuple | ast.List) and (
            len(node.elts) > 1 or isinstance(node, ast.Set)
        ):
            for index in range(len(node.elts)):
                new = copy.copy(node)
                new.elts = [*node.elts[:index], *node.elts[index + 1 :]]
                self._add(node, "member", ast.unparse(new) if new.elts else "set()")
        elif (
            characters
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and len(node.value) > 1
        ):
            for index in range(len(node.value)):
                self._add(node, "member", repr(node.value[:index] + node.value[index + 1 :]))

    def _constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self._add(node, "const", repr(not value))
        elif isinstance(value, int | float):
            self._add(node, "const", repr(value + 1))
        elif isinstance(value, str) and not any(character.isspace() for character in value):
            # (text with a space is wording for people — a message — not a value any code compares)
            self._add(node, "const", repr(value + "_x" if value else "x"))


def _byte_offsets(source: bytes) -> list[int]:
    starts = [0]
    for index, byte in enumerate(source):
        if byte == ord("\n"):
            starts.append(index + 1)
    return starts


def generate(path: str, source: str) -> list[Mutant]:
    """Every mutant of ``source``: each edit applied alone, checked to parse and to change the tree."""
    tree = ast.parse(source)
    original_dump = ast.dump(tree)
    collector = _Collector()
    collector.module(tree)
    raw = source.encode("utf-8")
    starts = _byte_offsets(raw)
    mutants: list[Mutant] = []
    seen_sources: set[str] = set()
    seen_keys: dict[str, int] = {}
    for edit, lines, names in collector.edits:
        node = edit.node
        lineno: int = node.lineno  # type: ignore[attr-defined]
        begin = starts[lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        text = edit.replacement if edit.is_statement else f"({edit.replacement})"
        mutated = (raw[:begin] + text.encode("utf-8") + raw[end:]).decode("utf-8")
        try:
            changed = ast.dump(ast.parse(mutated)) != original_dump
        except SyntaxError as exc:
            raise SystemExit(
                f"mutation.py: {path}:{lineno}: {edit.operator} does not parse ({exc})"
            ) from None
        if not changed or mutated in seen_sources:
            continue
        seen_sources.add(mutated)
        before = raw[begin:end].decode("utf-8")
        description = f"{edit.operator}: {_condensed(before)} → {_condensed(edit.replacement)}"
        key = f"{path}:{lineno} {description}"
        seen_keys[key] = seen_keys.get(key, 0) + 1
        if seen_keys[key] > 1:
            description += f" #{seen_keys[key]}"
        mutants.append(Mutant(path, lineno, description, mutated, lines, names))
    return mutants


# -- equivalences ------------------------------------------------------------------------------------


def read_equivalents(path: Path) -> dict[str, str]:
    """``{mutant key: reason}`` from the equivalences file (``#`` comments and blank lines ignored)."""
    stated: dict[str, str] = {}
    if not path.exists():
        return stated
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        key, sep, reason = text.partition(SEPARATOR)
        if not sep or not reason.strip():
            raise SystemExit(f"{path}:{number}: expected 'path:line operator: before → after — reason'")
        stated[key.strip()] = reason.strip()
    return stated


# -- coverage and test selection ---------------------------------------------------------------------


@dataclass
class Coverage:
    """Which tests executed each line of each target, and how long each test took."""

    tests_by_line: dict[str, dict[int, set[str]]]
    durations: dict[str, float]
    all_tests: dict[str, list[str]]  # per target: every test id of its files, in run order
    modules: list[str]  # the libraries the tests loaded (the mutation server imports them once)


def collect_coverage(targets: Sequence[str], workdir: Path) -> Coverage:
    """One pytest run over the union of the targets' test files, with a coverage context per test."""
    files = sorted({test for target in targets for test in TARGETS[target] if (REPO / test).exists()})
    rc = workdir / "coveragerc"
    rc.write_text(
        "[run]\nbranch = False\ninclude =\n" + "".join(f"    {REPO / t}\n" for t in targets),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(SCRIPTS)]),
        "COVERAGE_FILE": str(workdir / "coverage.db"),
        "MUTATION_TIMING": str(workdir / "timing.json"),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-W",
        "error",
        "-p",
        "no:cacheprovider",
        *(
            "-p",
            "_mutation_timing",
            "--cov",
            f"--cov-config={rc}",
            "--cov-context=test",
            "--cov-report=",
            *files,
        ),
    ]
    print(f"coverage: running {len(files)} test files once with a context per test …", file=sys.stderr)
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit("mutation.py: the tests fail on the unmutated code; fix that first")
    print(f"coverage: done in {time.monotonic() - started:.0f} s", file=sys.stderr)

    from coverage import CoverageData  # the venv's coverage (pytest-cov depends on it)

    data = CoverageData(basename=str(workdir / "coverage.db"))
    data.read()
    tests_by_line: dict[str, dict[int, set[str]]] = {}
    for target in targets:
        absolute = str(REPO / target)
        by_line: dict[int, set[str]] = {}
        if absolute in data.measured_files():
            for line, contexts in data.contexts_by_lineno(absolute).items():
                ids = {context.rpartition("|")[0] for context in contexts if "|" in context}
                if ids:
                    by_line[line] = ids
        tests_by_line[target] = by_line
    timing = json.loads((workdir / "timing.json").read_text(encoding="utf-8"))
    durations: dict[str, float] = timing["durations"]
    all_tests = {
        target: [test for test in durations if test.split("::", 1)[0] in TARGETS[target]]
        for target in targets
    }
    return Coverage(tests_by_line, durations, all_tests, list(timing["modules"]))


def select_tests(mutant: Mutant, coverage: Coverage, tree_names: dict[str, set[int]]) -> list[str]:
    """The tests that reach the mutant: its lines; for an import-time change, the lines using the names
    it binds; failing both, every test of its module.  A function that only runs while the module is
    imported (one building a module-level table) is an import-time change too.  Fastest first."""
    by_line = coverage.tests_by_line[mutant.path]
    chosen: set[str] = set()
    for line in mutant.select_lines:
        chosen |= by_line.get(line, set())
    if not chosen and mutant.select_lines:
        # Reached at import time, or by no test that coverage saw: per-test contexts miss lines that
        # run in a task another test's context started (an anyio task group, a cancelled scope), so
        # "no test reaches it" would be the tool's blind spot, not the tests'.  Every test decides.
        return sorted(
            coverage.all_tests[mutant.path], key=lambda test: (coverage.durations.get(test, 0.0), test)
        )
    if not mutant.select_lines:
        uses = [line for name in mutant.import_time_names for line in tree_names.get(name, set())]
        if uses and all(line in by_line for line in uses):
            for line in uses:
                chosen |= by_line[line]
        else:  # no use, or a use at import time (a class body, a default): every test of the module
            chosen = set(coverage.all_tests[mutant.path])
    return sorted(chosen, key=lambda test: (coverage.durations.get(test, 0.0), test))


def name_uses(source: str) -> dict[str, set[int]]:
    """``{name: lines where it is read}`` (names and attributes), for import-time mutants."""
    uses: dict[str, set[int]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            uses.setdefault(node.id, set()).add(node.lineno)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            uses.setdefault(node.attr, set()).add(node.lineno)
    return uses


# -- running -----------------------------------------------------------------------------------------


@dataclass
class Result:
    mutant: Mutant
    outcome: Outcome
    tests: int = 0
    seconds: float = 0.0
    reason: str = ""


@dataclass
class Sandbox:
    """A private copy of ``src/`` that mutants are written into (the working tree is never touched)."""

    root: Path
    originals: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, workdir: Path) -> Sandbox:
        root = workdir / "src"
        shutil.copytree(REPO / "src", root, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        return cls(root)

    def write(self, path: str, source: str) -> None:
        target = self.root / Path(path).relative_to("src")
        self.originals.setdefault(path, target.read_text(encoding="utf-8"))
        target.write_text(source, encoding="utf-8")
        # A same-sized edit within the same second would leave a stale .pyc in use: drop it.
        for cached in (target.parent / "__pycache__").glob(f"{target.stem}.*.pyc"):
            cached.unlink()

    def restore(self, path: str) -> None:
        original = self.originals.pop(path, None)
        if original is not None:
            self.write(path, original)
            self.originals.pop(path, None)


class Runner:
    """The fork server (scripts/_mutation_server.py) over the sandbox: one pytest per mutant."""

    def __init__(self, sandbox: Sandbox, modules: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(sandbox.root)}
        env.pop("COVERAGE_PROCESS_START", None)
        self._process = subprocess.Popen(  # noqa: S603
            [sys.executable, str(SCRIPTS / "_mutation_server.py")],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._send(modules)
        self._receive()

    def _send(self, value: object) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(value) + "\n")
        self._process.stdin.flush()

    def _receive(self) -> dict[str, int | None]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise SystemExit("mutation.py: the mutation server stopped")
        answer: dict[str, int | None] = json.loads(line)
        return answer

    def run(self, tests: list[str], timeout: float) -> int | None:
        self._send({"tests": tests, "timeout": timeout})
        return self._receive()["code"]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


def baseline(runner: Runner, coverage: Coverage, targets: Sequence[str]) -> None:
    """The unmutated code must pass every selected test *through the fork server*: a test that fails
    there for any other reason would count every mutant it covers as killed."""
    tests = sorted({test for target in targets for test in coverage.all_tests[target]})
    budget = 60.0 + 4.0 * sum(coverage.durations.get(test, 0.0) for test in tests)
    code = runner.run(tests, budget)
    if code != 0:
        raise SystemExit(
            f"mutation.py: the unmutated code fails its tests under the mutation server (exit {code})"
        )
    print(f"baseline: {len(tests)} tests pass unmutated under the mutation server", file=sys.stderr)


def run_mutant(
    mutant: Mutant, tests: list[str], coverage: Coverage, sandbox: Sandbox, runner: Runner
) -> Result:
    """Write the mutant into the sandbox and run ``tests`` against it (stopping at the first failure)."""
    if not tests:
        return Result(mutant, "uncovered")
    sandbox.write(mutant.path, mutant.source)
    budget = 30.0 + 4.0 * sum(coverage.durations.get(test, 0.0) for test in tests)
    started = time.monotonic()
    code = runner.run(tests, budget)
    seconds = time.monotonic() - started
    if code is None:
        return Result(mutant, "timeout", len(tests), seconds)
    if code == 0:
        return Result(mutant, "survived", len(tests), seconds)
    # 1: a test failed; 2: collection failed; 3: pytest broke; 4: a conftest or plugin failed to
    # import.  (Exit 4 also means "no such test id", but the baseline ran every selected id.)
    if code in {1, 2, 3, 4}:
        return Result(mutant, "killed", len(tests), seconds)
    raise SystemExit(f"mutation.py: pytest exited {code} for {mutant.key} (tests {tests[:3]} …)")


# -- reporting ---------------------------------------------------------------------------------------


@dataclass
class Summary:
    path: str
    results: list[Result]

    def count(self, *outcomes: Outcome) -> int:
        return sum(result.outcome in outcomes for result in self.results)

    @property
    def meaningful(self) -> int:
        return len(self.results) - self.count("equivalent")

    @property
    def score(self) -> float:
        return 100.0 * self.count("killed", "timeout") / self.meaningful if self.meaningful else 100.0


def report(summaries: Sequence[Summary], stale: Sequence[str], seconds: float) -> str:
    lines: list[str] = []
    for summary in summaries:
        lines.append(
            f"{summary.path}: {len(summary.results)} mutants, {summary.count('killed')} killed, "
            f"{summary.count('timeout')} timed out, {summary.count('equivalent')} equivalent, "
            f"{summary.count('survived', 'uncovered')} survived — score {summary.score:.1f} %"
        )
        for result in summary.results:
            if result.outcome == "survived":
                lines.append(f"  SURVIVED   {result.mutant.key}  ({result.tests} tests)")
            elif result.outcome == "uncovered":
                lines.append(f"  SURVIVED   {result.mutant.key}  (no test reaches it)")
            elif result.outcome == "timeout":
                lines.append(f"  timed out  {result.mutant.key}")
            elif result.outcome == "equivalent":
                lines.append(f"  equivalent {result.mutant.key} — {result.reason}")
    total = [result for summary in summaries for result in summary.results]
    overall = Summary("total", total)
    lines.append(
        f"total: {len(total)} mutants, {overall.count('killed')} killed, {overall.count('timeout')} timed out, "
        f"{overall.count('equivalent')} equivalent, {overall.count('survived', 'uncovered')} survived — "
        f"score {overall.score:.1f} % ({seconds:.0f} s)"
    )
    lines.extend(f"stale equivalence (matches no mutant): {key}" for key in stale)
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--module",
        action="append",
        metavar="PATH",
        help="a target module (repeatable; a path relative to the repository or to src/mudrika)",
    )
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS, help="the stated equivalences")
    parser.add_argument("--min-score", type=float, default=95.0, help="exit 1 when a module scores below")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit (nothing is run)")
    return parser.parse_args(argv)


def _targets(requested: Sequence[str] | None) -> list[str]:
    if not requested:
        return list(TARGETS)
    chosen: list[str] = []
    for text in requested:
        candidates = [t for t in TARGETS if t == text or t.endswith("/" + text.lstrip("./"))]
        if len(candidates) != 1:
            raise SystemExit(f"mutation.py: --module {text!r} is not one of: {', '.join(TARGETS)}")
        chosen.append(candidates[0])
    return chosen


def _mutants_of(target: str) -> Iterator[Mutant]:
    yield from generate(target, (REPO / target).read_text(encoding="utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    targets = _targets(args.module)
    stated = read_equivalents(args.equivalents)
    mutants = {target: list(_mutants_of(target)) for target in targets}
    if args.list:
        for target in targets:
            for mutant in mutants[target]:
                print(mutant.key)
        return 0
    started = time.monotonic()
    matched: set[str] = set()
    summaries: list[Summary] = []
    with tempfile.TemporaryDirectory(prefix="mudrika-mutation-") as tmp:
        workdir = Path(tmp)
        coverage = collect_coverage(targets, workdir)
        sandbox = Sandbox.create(workdir)
        runner = Runner(sandbox, coverage.modules)
        baseline(runner, coverage, targets)
        for target in targets:
            uses = name_uses((REPO / target).read_text(encoding="utf-8"))
            results: list[Result] = []
            todo = mutants[target]
            for index, mutant in enumerate(todo, start=1):
                if mutant.key in stated:
                    matched.add(mutant.key)
                    results.append(Result(mutant, "equivalent", reason=stated[mutant.key]))
                    continue
                result = run_mutant(mutant, select_tests(mutant, coverage, uses), coverage, sandbox, runner)
                results.append(result)
                print(
                    f"[{index}/{len(todo)}] {result.outcome:<9} {mutant.key} "
                    f"({result.tests} tests, {result.seconds:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            sandbox.restore(target)
            summaries.append(Summary(target, results))
        runner.close()
    checked_paths = set(targets)
    stale = [key for key in stated if key not in matched and key.split(":", 1)[0] in checked_paths]
    print(report(summaries, stale, time.monotonic() - started))
    failing = [summary.path for summary in summaries if summary.score < args.min_score]
    if failing:
        print(f"below {args.min_score:.0f} %: {', '.join(failing)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
