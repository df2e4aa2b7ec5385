"""``mudrika.net``: the size-capped file reader every loader shares, and a package that loads its
HTTP stack only when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mudrika.errors import InvalidInput
from mudrika.net.limits import read_capped


def test_a_file_at_the_cap_is_read_whole(tmp_path: Path) -> None:
    file = tmp_path / "doc.json"
    file.write_bytes(b"x" * 16)
    assert read_capped(file, max_bytes=16, name="bundle") == b"x" * 16


def test_a_file_over_the_cap_is_refused_with_its_path_and_the_limit(tmp_path: Path) -> None:
    file = tmp_path / "doc.json"
    file.write_bytes(b"x" * 17)
    with pytest.raises(InvalidInput) as info:
        read_capped(file, max_bytes=16, name="policy file")
    assert info.value.code == "too_large"
    assert info.value.fields == {"path": str(file), "limit": 16}
    assert info.value.message == f"policy file {file} is larger than 16 bytes"


def test_an_unreadable_file_keeps_the_os_text_but_not_its_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(InvalidInput) as info:
        read_capped(missing, max_bytes=16, name="realm export")
    assert info.value.code == "unreadable"
    assert info.value.message == f"cannot read realm export {missing}: No such file or directory"
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_reading_a_capped_file_does_not_load_the_http_stack() -> None:
    probe = (
        "import sys, mudrika.net, mudrika.trust.policy\n"
        "assert 'mudrika.net.egress' not in sys.modules and 'httpx' not in sys.modules\n"
        "assert mudrika.net.EgressPolicy.__name__ == 'EgressPolicy'\n"
        "assert 'mudrika.net.egress' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
