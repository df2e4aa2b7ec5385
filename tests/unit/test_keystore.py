"""Key files: modes 0600/0700 on every write path, no clobbering, permission checks on load, key URIs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mudrika.crypto.keys import KeyPair, KeyType
from mudrika.crypto.keystore import (
    ensure_private_dir,
    load_private_key,
    read_key_uri,
    write_file_atomic,
    write_private_key,
)
from mudrika.errors import InvalidInput, KeyStoreError

PASSWORD = b"test-password-1"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def pair() -> KeyPair:
    return KeyPair.generate(KeyType.ED25519)


def test_private_key_written_0600_in_0700_dir(tmp_path: Path, pair: KeyPair) -> None:
    target = tmp_path / "keys" / "nested" / "agent.pem"
    write_private_key(target, pair, PASSWORD)
    assert _mode(target) == 0o600
    assert _mode(target.parent) == 0o700
    assert load_private_key(target, PASSWORD) == pair


def test_modes_exact_even_with_permissive_umask(tmp_path: Path, pair: KeyPair) -> None:
    old = os.umask(0)
    try:
        target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
        public = write_file_atomic(tmp_path / "pub" / "doc.json", b"{}", private_dir=False)
    finally:
        os.umask(old)
    assert _mode(target) == 0o600
    assert _mode(public) == 0o600
    assert _mode(public.parent) == 0o700


def test_forced_overwrite_keeps_0600(tmp_path: Path, pair: KeyPair) -> None:
    target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
    other = KeyPair.generate(KeyType.P256)
    write_private_key(target, other, PASSWORD, force=True)
    assert _mode(target) == 0o600
    assert load_private_key(target, PASSWORD) == other


def test_refuses_to_overwrite_without_force(tmp_path: Path, pair: KeyPair) -> None:
    target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
    before = target.read_bytes()
    with pytest.raises(KeyStoreError) as info:
        write_private_key(target, KeyPair.generate(KeyType.ED25519), PASSWORD)
    assert info.value.code == "exists"
    assert target.read_bytes() == before
    assert [p.name for p in target.parent.iterdir()] == ["a.pem"], "no temp file left behind"


def test_refuses_world_readable_key_with_fix_in_message(tmp_path: Path, pair: KeyPair) -> None:
    target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
    target.chmod(0o644)
    with pytest.raises(KeyStoreError) as info:
        load_private_key(target, PASSWORD)
    assert info.value.code == "insecure_permissions"
    assert f"chmod 600 {target}" in info.value.message


def test_refuses_group_readable_key(tmp_path: Path, pair: KeyPair) -> None:
    target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
    target.chmod(0o640)
    with pytest.raises(KeyStoreError):
        load_private_key(f"file:{target}", PASSWORD)


def test_refuses_symlinked_key(tmp_path: Path, pair: KeyPair) -> None:
    target = write_private_key(tmp_path / "k" / "a.pem", pair, PASSWORD)
    link = tmp_path / "k" / "link.pem"
    link.symlink_to(target)
    with pytest.raises(KeyStoreError):
        load_private_key(link, PASSWORD)


def test_refuses_loose_existing_private_dir(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    with pytest.raises(KeyStoreError) as info:
        ensure_private_dir(loose)
    assert "chmod 700" in info.value.message


def test_env_key_uri(monkeypatch: pytest.MonkeyPatch, pair: KeyPair) -> None:
    monkeypatch.setenv("MUDRIKA_TEST_KEY", pair.private_pem(PASSWORD).decode())
    assert load_private_key("env:MUDRIKA_TEST_KEY", PASSWORD) == pair
    monkeypatch.delenv("MUDRIKA_TEST_KEY")
    with pytest.raises(KeyStoreError):
        read_key_uri("env:MUDRIKA_TEST_KEY")
    with pytest.raises(InvalidInput):
        read_key_uri("env:")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KeyStoreError) as info:
        load_private_key(tmp_path / "nope.pem", PASSWORD)
    assert info.value.code == "not_found"
