"""``mudrika jcs`` and ``mudrika hash`` run in-process through ``mudrika.cli.main``."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import pytest

from mudrika.cli import main
from mudrika.crypto.b64url import b64url_encode

DOC = '{"b": [1, 2.0, "é"], "a": {"\U0001f600": true, "\ufb33": null}}'.encode()
CANONICAL = '{"a":{"\U0001f600":true,"\ufb33":null},"b":[1,2,"é"]}'.encode()


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


@pytest.fixture
def doc_file(tmp_path: Path) -> Path:
    path = tmp_path / "cart.json"
    path.write_bytes(DOC)
    return path


def test_jcs_writes_exact_canonical_bytes_from_file(
    doc_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["jcs", str(doc_file)]) == 0
    out, err = capsysbinary.readouterr()
    assert out == CANONICAL
    assert err == b""


@pytest.mark.parametrize("argv", [["jcs"], ["jcs", "-"]])
def test_jcs_reads_stdin(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _stdin(monkeypatch, DOC)
    assert main(argv) == 0
    assert capsysbinary.readouterr().out == CANONICAL


def test_hash_prints_the_mandate_hash(doc_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hash", str(doc_file)]) == 0
    out = capsys.readouterr().out
    assert out == b64url_encode(hashlib.sha256(CANONICAL).digest()) + "\n"


def test_hash_json_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _stdin(monkeypatch, DOC)
    assert main(["hash", "--json", "-"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "hash": b64url_encode(hashlib.sha256(CANONICAL).digest()),
        "algorithm": "sha-256",
        "canonicalization": "RFC 8785",
    }


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"a": 1, "a": 2}', "duplicate object key"),
        (b'["\\ud800"]', "unpaired"),
        (b"[NaN]", "NaN"),
        (b"[9007199254740993]", "I-JSON"),
        (b"{", "malformed JSON"),
        (b"\xef\xbb\xbf{}", "byte order mark"),
    ],
)
@pytest.mark.parametrize("command", ["jcs", "hash"])
def test_malformed_input_exits_2_with_a_clear_message(
    command: str,
    data: bytes,
    needle: str,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    _stdin(monkeypatch, data)
    assert main([command]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b""
    assert needle in err.decode()
    assert err.decode().startswith("error: ")


def test_size_cap(doc_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hash", "--max-bytes", "10", str(doc_file)]) == 2
    assert "larger than 10 bytes" in capsys.readouterr().err
    assert main(["hash", "--max-bytes", str(len(DOC)), str(doc_file)]) == 0


def test_depth_cap(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _stdin(monkeypatch, b"[[[1]]]")
    assert main(["jcs", "--max-depth", "2"]) == 2
    assert "nesting deeper than 2" in capsys.readouterr().err


def test_oversized_stdin_is_not_read_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.BytesIO(b"[" + b"1," * 1000 + b"1]")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream, encoding="utf-8"))
    assert main(["jcs", "--max-bytes", "100"]) == 2
    assert "larger than 100 bytes" in capsys.readouterr().err
    assert stream.tell() <= 101 + io.DEFAULT_BUFFER_SIZE


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jcs", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["jcs", "hash"])
def test_help_explains_itself(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "RFC 8785" in text
    assert "[FILE|-]" in text
    assert "--max-bytes" in text


def test_bad_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jcs", "--max-bytes", "0"]) == 2
    assert "max-bytes" in capsys.readouterr().err
