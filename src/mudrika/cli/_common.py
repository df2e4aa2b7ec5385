"""Shared CLI plumbing: the exit-code contract, error reports, JSON output, password sources.

Why here: every command must map errors to the same exit codes, report them the same way (the code
and the fields the exception carries, one JSON document with ``--json``, the cause chain with
``-v``), and read passwords the same safe way (an environment variable or file named by the user, a
prompt only on a terminal, never a literal).  An option that means the same in several commands
(``--json``, ``--force``, ``--trust-root``, ``--at``, …) is defined here once.  This module imports
nothing heavy: it is loaded for every ``mudrika`` invocation, ``--help`` included.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from mudrika.errors import InvalidInput, MudrikaError, VerificationError

if TYPE_CHECKING:
    from mudrika.crypto.keys import KeyPair
    from mudrika.crypto.statuslist import StatusReference
    from mudrika.payments.v02 import HopExpectation, MandateUsage

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: The exit-code table every command follows; shown at the end of ``mudrika --help``.
EXIT_CODE_HELP = (
    "\b\nExit codes (every command):\n"
    "  0  ok\n"
    "  1  verification or operation failed (also: refused to overwrite a file, service unavailable)\n"
    "  2  usage error or malformed input"
)

_F = TypeVar("_F", bound=Callable[..., Any])

#: Longest rendering of one field value in a human error line; the JSON document carries it whole.
_MAX_FIELD_TEXT = 200
#: Bound on the cause chain walked for ``--verbose`` (a chain is short; a loop must not hang us).
_MAX_CAUSES = 16


@dataclass
class Invocation:
    """What one run of the CLI learnt while parsing: how the user wants a failure reported.

    It travels as the root context's ``obj``; the ``--json`` and ``-v`` callbacks fill it in, so the
    error handler still knows after the command's context is gone.
    """

    json: bool = False
    verbose: bool = False


@dataclass(frozen=True)
class ErrorReport:
    """One failure, reduced to what may be shown: code, message, structured fields, exit code.

    ``causes`` is the secret-free cause chain (see :func:`cause_chain`); ``problems`` lists every
    validation problem (location: message) the error carried.
    """

    code: str
    message: str
    fields: Mapping[str, Any]
    exit_code: int
    label: str = "error"
    problems: tuple[str, ...] = ()
    causes: tuple[Mapping[str, Any], ...] = field(default=())

    def to_json(self, *, verbose: bool) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "fields": dict(self.fields)}
        if verbose:
            error["causes"] = [dict(cause) for cause in self.causes]
        return {"error": error}

    def human_lines(self, *, verbose: bool) -> list[str]:
        """``error: <message> (<code>; field=value, …)``, then every problem not already in the message."""
        fields = ", ".join(f"{key}={_field_text(value)}" for key, value in _plain_fields(self))
        details = f"{self.code}; {fields}" if fields else self.code
        lines = [f"{self.label}: {_escape(self.message)} ({_escape(details)})"]
        lines += [f"  - {_escape(problem)}" for problem in self.problems if problem not in self.message]
        if verbose:
            lines += [f"  caused by: {_cause_text(cause)}" for cause in self.causes]
        return lines


def run_cli(group: click.Group, argv: list[str]) -> int:
    """Invoke ``group`` with ``argv`` and translate every outcome into the documented exit code.

    Nothing escapes as a traceback: an unexpected exception exits 1 with its type name (the frames
    only with ``--verbose``).
    """
    invocation = Invocation()
    try:
        result = group.main(args=argv, prog_name="mudrika", standalone_mode=False, obj=invocation)
    except (click.Abort, KeyboardInterrupt, Exception) as exc:  # every failure ends in a report
        report = describe(exc)
        # A parse error can stop click before the --json callback ran; the flag is still in argv.
        if invocation.json or (isinstance(exc, click.UsageError) and "--json" in argv):
            emit_json(report.to_json(verbose=invocation.verbose))
        if isinstance(exc, click.ClickException):
            exc.show(file=sys.stderr)  # click's own text: the usage line and a pointer to --help
        else:
            for line in report.human_lines(verbose=invocation.verbose):
                err(line)
        if report.code == "internal_error":
            if invocation.verbose:
                _print_frames(exc)
            else:
                err("  (run with -v for the traceback)")
        return report.exit_code
    return int(result) if isinstance(result, int) else EXIT_OK


def describe(exc: BaseException) -> ErrorReport:
    """Classify ``exc`` under the exit-code table and keep only what is safe to show.

    MudrikaError messages, codes and fields are secret-free by contract; of any other exception only
    the type name is shown (its message may hold anything).
    """
    causes = tuple(cause_chain(exc))
    if isinstance(exc, click.UsageError):
        param = exc.param if isinstance(exc, click.BadParameter) else None
        fields = {"param": _param_hint(param)} if param is not None else {}
        return ErrorReport("usage", exc.format_message(), fields, EXIT_USAGE, causes=causes)
    if isinstance(exc, click.ClickException):
        return ErrorReport("invalid_input", exc.format_message(), {}, EXIT_USAGE, causes=causes)
    if isinstance(exc, (click.Abort, KeyboardInterrupt)):
        return ErrorReport("aborted", "aborted", {}, EXIT_FAILED, causes=causes)
    if isinstance(exc, MudrikaError):
        if isinstance(exc, InvalidInput):
            exit_code, label = EXIT_USAGE, "error"
        elif isinstance(exc, VerificationError):
            exit_code, label = EXIT_FAILED, "verification failed"
        else:
            exit_code, label = EXIT_FAILED, "error"
        return ErrorReport(
            exc.code,
            exc.message,
            dict(exc.fields),
            exit_code,
            label,
            problems=tuple(_problems(exc.fields.get("errors"))),
            causes=causes,
        )
    if _is_pydantic_validation_error(exc):
        # Models are validated behind InvalidInput at every boundary; this is the safety net.
        problems = _problems(exc.errors(include_input=False, include_url=False))  # type: ignore[attr-defined]
        errors = list(problems)
        return ErrorReport(
            "invalid_input",
            f"invalid input ({len(errors)} problem{'s' if len(errors) != 1 else ''})",
            {"errors": errors},
            EXIT_USAGE,
            problems=tuple(errors),
            causes=causes,
        )
    if isinstance(exc, OSError) and exc.strerror:
        fields = {"filename": str(exc.filename)} if exc.filename is not None else {}
        return ErrorReport("os_error", exc.strerror, fields, EXIT_FAILED, causes=causes)
    name = _type_name(exc)
    return ErrorReport(
        "internal_error", f"unexpected internal error: {name}", {"type": name}, EXIT_FAILED, causes=causes
    )


def cause_chain(exc: BaseException) -> Iterator[dict[str, Any]]:
    """The exceptions behind ``exc`` (``__cause__``, else ``__context__``), nearest first.

    Even a context suppressed with ``raise … from None`` is listed: ``--verbose`` is asked for to see
    what the short message hides.  A MudrikaError shows its code, message and fields; any other
    exception only its type name.
    """
    seen = {id(exc)}
    current = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen and len(seen) <= _MAX_CAUSES:
        seen.add(id(current))
        if isinstance(current, MudrikaError):
            yield {
                "type": _type_name(current),
                "code": current.code,
                "message": current.message,
                "fields": dict(current.fields),
            }
        else:
            yield {"type": _type_name(current)}
        current = current.__cause__ or current.__context__


def err(message: str) -> None:
    """Human text goes to stderr so stdout stays one JSON document."""
    click.echo(message, err=True)


def emit_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False, default=str))


def write_output(path: Path, data: bytes, *, force: bool) -> Path:
    """Write a file the user asked for (atomically, never over an existing one without ``force``).

    Why here: every command writes its outputs the same way (an ordinary directory, not the 0700 key
    directory) and says on stderr where each went, so a script can keep stdout for JSON.
    """
    from mudrika.crypto.keystore import write_file_atomic

    written = write_file_atomic(path, data, force=force, private_dir=False)
    err(f"wrote {path}")
    return written


def split_pairs(values: tuple[str, ...], *, option: str, form: str) -> list[tuple[str, str]]:
    """``NAME=VALUE`` option values as pairs, split at the last '=' (a name may hold one, a path not).

    Every value is checked before any is used, so a malformed one is a usage error naming ``form``
    before a file named by another is read.
    """
    pairs = []
    for value in values:
        left, sep, right = value.rpartition("=")
        if not sep or not left or not right:
            raise click.BadParameter(f"use {form}", param_hint=option)
        pairs.append((left, right))
    return pairs


def split_at_known_names(
    values: tuple[str, ...], names: Collection[str], *, option: str, form: str, what: str
) -> list[tuple[str, str]]:
    """``NAME=TEXT`` option values whose NAME must be one of ``names``, split at the '=' that ends one.

    Why not :func:`split_pairs`: here both sides may hold '=' (a status list URI's query, a fetch
    described as ``https GET https://…?v=2``), so no fixed '=' is right; the names already given
    decide.  A value naming none of them, or readable as two of them, is a usage error.
    """
    pairs = []
    for value in values:
        splits = [
            (value[:at], value[at + 1 :])
            for at, char in enumerate(value)
            if char == "=" and value[:at] in names
        ]
        if len(splits) != 1 or not splits[0][1]:
            if len(splits) > 1:
                problem = f"{value[:120]!r} could name more than one {what}"
            elif splits:
                problem = f"nothing follows {splits[0][0][:120]!r}"
            else:
                problem = f"{value[:120]!r} names no {what}"
            raise click.BadParameter(f"{problem} (use {form})", param_hint=option)
        pairs.append(splits[0])
    return pairs


# -- options that mean the same in every command ------------------------------------------------------------
#
# Why factories: an option that means one thing (print JSON, replace outputs, a DID document file, the
# evaluation time, …) is spelt, typed and named once, so no command can drift from the others; the
# factories take only what truly differs between commands: the words of the help text and, where a
# command needs it, whether the option is required.


def json_option(what: str = "the result", *, help_text: str | None = None) -> Callable[[_F], _F]:
    """``--json``: print ``what`` as one JSON document on stdout (``help_text`` says it differently).

    The destination is always ``as_json``: :func:`adopt_error_contract` finds the flag by that name
    to report a failure as a JSON document too, so a command that spelt it otherwise would fall back
    to text errors.
    """
    text = help_text if help_text is not None else f"Print {what} as one JSON document on stdout."
    return click.option("--json", "as_json", is_flag=True, help=text)


def force_option(what: str) -> Callable[[_F], _F]:
    """``--force``: replace ``what`` (every command refuses to overwrite a file without it)."""
    return click.option("--force", is_flag=True, help=f"Replace {what}.")


def emit_document(document: Any, out_path: Path | None, *, force: bool) -> None:
    """Print ``document`` on stdout, or write it to ``out_path`` (see :func:`output_file_options`)."""
    if out_path is None:
        emit_json(document)
        return
    text = json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False, default=str) + "\n"
    write_output(out_path, text.encode(), force=force)


def out_file_option(help_text: str) -> Callable[[_F], _F]:
    """``--out FILE``: write the command's output to this file (written with :func:`write_output`)."""
    return click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), help=help_text)


def output_file_options(what: str) -> Callable[[_F], _F]:
    """``--out FILE`` (default: stdout) and ``--force``, for a command that prints ``what`` or writes it."""

    def decorate(func: _F) -> _F:
        func = force_option("an existing --out file")(func)
        return out_file_option(f"Write {what} here (default: stdout).")(func)

    return decorate


def did_web_options(*, host: str, path: str) -> Callable[[_F], _F]:
    """``--host``, ``--path`` and ``--port``: where a did:web document is served (``host`` and
    ``path`` are the help texts of the first two)."""

    def decorate(func: _F) -> _F:
        func = click.option("--port", type=click.IntRange(1, 65535), help="did:web: optional port.")(func)
        func = click.option("--path", "web_path", help=path)(func)
        return click.option("--host", help=host)(func)

    return decorate


def dns_names_option(help_text: str) -> Callable[[_F], _F]:
    """``--dns`` (repeatable): a DNS name for the CSR's subjectAltName, beside the DID."""
    return click.option("--dns", "dns_names", multiple=True, help=help_text)


def key_directory_option(help_text: str) -> Callable[[_F], _F]:
    """``--out DIRECTORY`` (required): where a command creates the private key directory (0700)."""
    return click.option(
        "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help=help_text
    )


def private_key_option(help_text: str) -> Callable[[_F], _F]:
    """``--key``: the signer's private key URI (its password comes from :func:`password_options`)."""
    return click.option("--key", "key_uri", required=True, help=help_text)


def did_documents_option(help_text: str) -> Callable[[_F], _F]:
    """``--did-document FILE`` (repeatable): DID documents given as files instead of resolving the DIDs."""
    return click.option("--did-document", "did_document_files", multiple=True, metavar="FILE", help=help_text)


def trust_root_option(help_text: str, *, required: bool = False) -> Callable[[_F], _F]:
    """``--trust-root FILE``: the analyst's trust root (mudrika.trust-root/v1) a verdict rests on."""
    return click.option(
        "--trust-root",
        "trust_root_path",
        type=click.Path(dir_okay=False, path_type=Path),
        required=required,
        help=help_text,
    )


def at_option(help_text: str) -> Callable[[_F], _F]:
    """``--at TIME``: when a chain is evaluated (read with ``dispute.parse_time_option``)."""
    return click.option("--at", "at_text", metavar="TIME", help=help_text)


def now_option(help_text: str) -> Callable[[_F], _F]:
    """``--now TIME``: the signing or issuance time (read with ``_mandates.signing_time``)."""
    return click.option("--now", "now_text", metavar="TIME", help=help_text)


def status_options(what: str) -> Callable[[_F], _F]:
    """``--status-uri`` and ``--status-index``: the issuer's Token Status List entry ``what`` is
    listed in (read with :func:`status_reference`)."""

    def decorate(func: _F) -> _F:
        func = click.option(
            "--status-index",
            type=click.IntRange(0, None),
            metavar="N",
            help=f"The index of {what} in --status-uri's list (required with --status-uri).",
        )(func)
        return click.option(
            "--status-uri",
            metavar="URI",
            help=f"The issuer's Token Status List {what} is listed in (adds status.status_list).",
        )(func)

    return decorate


def status_reference(uri: str | None, index: int | None) -> StatusReference | None:
    """The ``status`` reference the two options give, ``None`` without them; both or neither."""
    from mudrika.crypto.statuslist import StatusReference

    if (uri is None) != (index is None):
        raise click.UsageError("give --status-uri and --status-index together")
    return StatusReference(index, uri) if uri is not None and index is not None else None


def status_token_text(path: str) -> str:
    """A status list token file (``statuslist+jwt``) as compact ASCII text; only its signature,
    checked by the verifier under the issuer's anchored key, makes it count."""
    from mudrika.crypto.statuslist import DEFAULT_MAX_TOKEN_BYTES

    try:
        return read_file(path, max_bytes=DEFAULT_MAX_TOKEN_BYTES).decode("ascii").strip()
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not an ASCII token", code="malformed_token") from None


def html_option(help_text: str) -> Callable[[_F], _F]:
    """``--html FILE``: also write the verification report as a self-contained HTML page."""
    return click.option(
        "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help=help_text
    )


def audience_options(*, merchant: str, kb: str, required: bool = False) -> Callable[[_F], _F]:
    """``--merchant-aud`` and ``--kb-aud``: the audiences the merchant's cart JWT and the user's
    key-binding JWT must carry (``merchant`` and ``kb`` are their help texts)."""

    def decorate(func: _F) -> _F:
        func = click.option("--kb-aud", required=required, help=kb)(func)
        return click.option("--merchant-aud", required=required, help=merchant)(func)

    return decorate


def kb_nonce_option(help_text: str, *, required: bool = False) -> Callable[[_F], _F]:
    """``--kb-nonce``: the nonce the verifier issued for one payment (its key-binding JWT must carry it)."""
    return click.option("--kb-nonce", required=required, help=help_text)


def v02_anchor_options(func: _F) -> _F:
    """The analyst's records that anchor one AP2 v0.2 transaction: each hop's ``aud`` and ``nonce``, in
    hop order, and the usage record of the open payment mandate.

    Why shared: ``mandate v02 verify`` and ``dispute verify`` anchor a v0.2 bundle with the same
    flags, so an analyst who learned one can use the other (see :func:`v02_anchors`).
    """
    options = (
        click.option("--checkout-aud", multiple=True, help="Expected 'aud' of each checkout hop, in order."),
        click.option(
            "--checkout-nonce", multiple=True, help="Expected 'nonce' of each checkout hop, in order."
        ),
        click.option("--payment-aud", multiple=True, help="Expected 'aud' of each payment hop, in order."),
        click.option(
            "--payment-nonce", multiple=True, help="Expected 'nonce' of each payment hop, in order."
        ),
        click.option(
            "--usage",
            "usage_path",
            metavar="FILE",
            help='Your record of earlier payments under the open payment mandate: {"occurrences": N, '
            '"spent_minor": N, "currency": "USD", "last_used_at": UNIX|null} (payment.budget / '
            "agent_recurrence).",
        ),
    )
    for option in reversed(options):
        func = option(func)
    return func


def v02_anchors(
    *,
    checkout_aud: tuple[str, ...],
    checkout_nonce: tuple[str, ...],
    payment_aud: tuple[str, ...],
    payment_nonce: tuple[str, ...],
    usage_path: str | None,
) -> tuple[list[HopExpectation], list[HopExpectation], MandateUsage | None]:
    """The :func:`v02_anchor_options` as the verifier takes them: (checkout hops, payment hops, usage).

    An ``aud`` without its ``nonce`` (or the reverse) is a usage error: a hop half given would leave
    the other half to the bundle's word.
    """
    from mudrika.payments.v02 import HopExpectation, usage_from_value

    def hops(audiences: tuple[str, ...], nonces: tuple[str, ...], option: str) -> list[HopExpectation]:
        if len(audiences) != len(nonces):
            raise click.UsageError(f"give one {option}-nonce for each {option}-aud, in hop order")
        return [
            HopExpectation(aud, nonce, source="analyst") for aud, nonce in zip(audiences, nonces, strict=True)
        ]

    usage = None
    if usage_path is not None:
        from mudrika.crypto.jcs import DEFAULT_MAX_BYTES, loads_strict

        usage = usage_from_value(loads_strict(read_input(usage_path, max_bytes=DEFAULT_MAX_BYTES)))
    return (
        hops(checkout_aud, checkout_nonce, "--checkout"),
        hops(payment_aud, payment_nonce, "--payment"),
        usage,
    )


def report_verbose_option(help_text: str) -> Callable[[_F], _F]:
    """``-v/--verbose`` of a verify command: more of the report, and (as everywhere) an error's causes.

    Unlike :func:`verbose_option` the command receives the flag; the callback still records it for
    the error contract.
    """
    return click.option("-v", "--verbose", is_flag=True, callback=remember_verbose, help=help_text)


# -- the error contract, attached to every command ---------------------------------------------------------


def _invocation(ctx: click.Context) -> Invocation | None:
    return ctx.find_object(Invocation)


def remember_verbose(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """Option callback: a ``-v`` seen anywhere also makes a failure report show its causes."""
    invocation = _invocation(ctx)
    if value and invocation is not None:
        invocation.verbose = True
    return value


def _remember_json(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    invocation = _invocation(ctx)
    if value and invocation is not None:
        invocation.json = True
    return value


def verbose_option(func: _F) -> _F:
    """``-v/--verbose``: add the cause chain to an error (and an unexpected error's traceback)."""
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=remember_verbose,
        help="On failure, also show the cause chain (and the traceback of an unexpected error).",
    )(func)


def adopt_error_contract(command: click.Command) -> click.Command:
    """Make ``command`` (and every subcommand) report failures by the CLI's contract.

    Its ``--json`` flag, when it has one, also asks for a JSON error document (the flag is made eager
    so a bad value of another option is reported in JSON too), and it accepts ``-v/--verbose``.
    Idempotent: a command is adopted when first loaded and may be loaded again.
    """
    for each in _walk(command):
        for param in each.params:
            if param.name == "as_json" and param.callback is None:
                param.callback = _remember_json
                param.is_eager = True
        if not any("--verbose" in param.opts for param in each.params):
            verbose_option(each)
        if each is not command and each.short_help is None and each.help:
            # A group lists its commands by their first sentence, whole: click would cut it at the
            # terminal's width with "...", and a cut sentence says less than none.
            each.short_help = first_sentence(each.help)
    return command


_SENTENCE_END: Final = re.compile(r"(?<!\.)\.\s")


def first_sentence(text: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line (the paragraph if it has no
    sentence end)."""
    paragraph = " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
    end = _SENTENCE_END.search(paragraph)  # a full stop, not the last dot of "FILE..."
    return paragraph if end is None else paragraph[: end.start() + 1]


def _walk(command: click.Command) -> Iterator[click.Command]:
    yield command
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _walk(sub)


# -- rendering ---------------------------------------------------------------------------------------------


def _escape(text: str) -> str:
    """Control characters (an ANSI escape in a DID, a newline in a path) are shown, never obeyed."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _field_text(value: Any) -> str:
    if isinstance(value, str) and value and all(ch.isprintable() and ch not in " ,;=()'\"" for ch in value):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    text = _escape(text)
    return text if len(text) <= _MAX_FIELD_TEXT else text[: _MAX_FIELD_TEXT - 1] + "…"


def _plain_fields(report: ErrorReport) -> Iterator[tuple[str, Any]]:
    """The fields shown inline: everything but the problem list (shown one problem per line)."""
    for key, value in report.fields.items():
        if key != "errors" or not report.problems:
            yield key, value


def _problems(errors: Any) -> Iterator[str]:
    """``loc: msg`` for each validation problem (dicts from pydantic, or already-formatted strings)."""
    if not isinstance(errors, (list, tuple)):
        return
    for item in errors:
        if isinstance(item, Mapping):
            loc = item.get("loc")
            where = ".".join(str(part) for part in loc) if isinstance(loc, (list, tuple)) else str(loc or "")
            yield f"{where or '(top level)'}: {item.get('msg', '')}"
        else:
            yield str(item)


def _cause_text(cause: Mapping[str, Any]) -> str:
    if "code" not in cause:
        return str(cause["type"])
    fields = ", ".join(f"{key}={_field_text(value)}" for key, value in cause["fields"].items())
    details = f"{cause['code']}; {fields}" if fields else cause["code"]
    return _escape(f"{cause['type']}: {cause['message']} ({details})")


def _param_hint(param: click.Parameter) -> str:
    """The name the user typed: ``--out`` for an option, ``BUNDLE...`` for an argument."""
    return param.opts[0] if isinstance(param, click.Option) and param.opts else param.human_readable_name


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _is_pydantic_validation_error(exc: BaseException) -> bool:
    kind = type(exc)
    return kind.__name__ == "ValidationError" and kind.__module__.startswith("pydantic")


def _print_frames(exc: BaseException) -> None:
    """The traceback's frames and the exception type, without the exception's message."""
    import traceback

    err("Traceback (most recent call last):")
    for line in traceback.format_list(traceback.extract_tb(exc.__traceback__)):
        err(line.rstrip("\n"))
    err(_type_name(exc))


# -- passwords ---------------------------------------------------------------------------------------------


def read_prefix(source: str, max_bytes: int) -> bytes:
    """FILE or '-' (stdin): at most ``max_bytes + 1`` bytes, so an oversized input is never read whole.

    The caller's parser, given ``max_bytes``, refuses the extra byte; an unreadable file is
    :class:`~mudrika.errors.InvalidInput` with the OS's reason, not a traceback.
    """
    if source == "-":
        return sys.stdin.buffer.read(max_bytes + 1)
    return _read_file_prefix(source, max_bytes)


def read_input(source: str, *, max_bytes: int) -> bytes:
    """FILE or '-' (stdin), refused (not truncated) when larger than ``max_bytes``."""
    return _refuse_oversized(source, read_prefix(source, max_bytes), max_bytes)


def read_file(path: str | Path, *, max_bytes: int) -> bytes:
    """A named file only (a file called '-' is that file, never stdin), refused when over ``max_bytes``."""
    return _refuse_oversized(path, _read_file_prefix(path, max_bytes), max_bytes)


def read_json_file(path: str | Path, *, max_bytes: int | None = None) -> Any:
    """A named JSON file (never stdin), capped, then parsed by the strict parser the verifiers use.

    ``max_bytes`` defaults to the strict parser's own limit.
    """
    from mudrika.crypto.jcs import DEFAULT_MAX_BYTES, loads_strict

    return loads_strict(read_file(path, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes))


def _read_file_prefix(path: str | Path, max_bytes: int) -> bytes:
    try:
        with Path(path).open("rb") as handle:
            return handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", code="unreadable") from None
    except ValueError:
        # A NUL in the name (a case file may name any path): no file can have it, and open() says so
        # with ValueError rather than OSError.
        raise InvalidInput("cannot read a file whose name holds a NUL character", code="unreadable") from None


def _refuse_oversized(source: str | Path, data: bytes, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        what = "stdin" if source == "-" else source
        raise InvalidInput(f"{what} is larger than {max_bytes} bytes", code="too_large", limit=max_bytes)
    return data


def load_signing_key(key_uri: str, password_env: str | None, password_file: Path | None) -> KeyPair:
    """The private key at ``key_uri``, its password read the one safe way (:func:`read_password`)."""
    from mudrika.crypto.keystore import load_private_key

    return load_private_key(key_uri, read_password(password_env, password_file))


def read_password(password_env: str | None, password_file: Path | None, *, confirm: bool = False) -> bytes:
    """Read a key password from an environment variable or file the user *names*; never a literal.

    Falls back to an interactive prompt only when stdin is a terminal, so scripts never hang.
    """
    if password_env and password_file:
        raise click.UsageError("give --password-env or --password-file, not both")
    if password_env:
        value = os.environ.get(password_env)
        if not value:
            raise InvalidInput(
                f"environment variable {password_env} is not set or empty",
                code="no_password",
                option="--password-env",
            )
        return value.encode()
    if password_file:
        try:
            data = password_file.read_bytes()
        except OSError as exc:
            raise InvalidInput(
                f"cannot read password file {password_file}: {exc.strerror}",
                code="unreadable",
                option="--password-file",
            ) from None
        value_bytes = data.rstrip(b"\r\n")
        if not value_bytes:
            raise InvalidInput(
                f"password file {password_file} is empty", code="no_password", option="--password-file"
            )
        return value_bytes
    if not sys.stdin.isatty():
        raise InvalidInput(
            "no password source: pass --password-env VAR or --password-file FILE "
            "(mudrika never prompts when stdin is not a terminal)",
            code="no_password",
        )
    value = click.prompt("Key password", hide_input=True, confirmation_prompt=confirm)
    return str(value).encode()


def password_options(func: Any) -> Any:
    """Decorate a command with the two sanctioned password sources."""
    func = click.option(
        "--password-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read the key password from this file (first line).",
    )(func)
    func = click.option(
        "--password-env",
        metavar="VAR",
        help="Read the key password from the environment variable VAR (never pass the password itself).",
    )(func)
    return func
