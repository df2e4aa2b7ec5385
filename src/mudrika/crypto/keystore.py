"""Key files on disk: private directories, no-clobber atomic writes, permission checks, key URIs.

Why each rule:

* Directories are 0700 and files 0600, set at creation (``O_CREAT|O_EXCL`` with the mode), so there is
  no window in which a key is readable by others.
* A write goes to a temporary file that is fsynced, then linked into place: ``link`` fails if the
  target exists, which makes "never clobber" atomic; ``--force`` uses ``rename`` instead.  A crash
  leaves either the old file or the new one, never half a key.
* Loading a private key that is group- or world-readable is refused, with the ``chmod`` that fixes it:
  OpenSSH does the same, and a key others could read must be assumed copied.
* Key URIs: ``file:PATH`` (or a bare path) and ``env:VAR`` (PEM in an environment variable, for
  containers that inject secrets that way).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path

from mudrika.crypto.keys import KeyPair
from mudrika.errors import InvalidInput, KeyStoreError

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "ensure_private_dir",
    "load_private_key",
    "read_key_uri",
    "write_file_atomic",
    "write_private_key",
]

DIR_MODE = 0o700
FILE_MODE = 0o600
_MAX_KEY_FILE = 64 * 1024

_log = logging.getLogger(__name__)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700; refuse an existing directory others can access."""
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise KeyStoreError(f"cannot create directory {path}: {exc.strerror}", code="mkdir_failed") from None
    if not stat.S_ISDIR(info.st_mode):
        raise KeyStoreError(f"{path} exists and is not a directory", code="not_a_directory")
    _refuse_shared(info, path, f"directory {path} is accessible by group or others", DIR_MODE)
    return path


def _refuse_shared(info: os.stat_result, path: Path, problem: str, private_mode: int) -> None:
    """KeyStoreError ``insecure_permissions`` when group or others have any bit of ``info``'s mode.

    One rule for the key directory and the key file alike: any access beyond the owner refuses,
    and the message names the mode found and the ``chmod`` that makes ``path`` private.
    """
    if info.st_mode & 0o077:
        raise KeyStoreError(
            f"{problem} (mode {stat.S_IMODE(info.st_mode):o}); fix with: chmod {private_mode:o} {path}",
            code="insecure_permissions",
        )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(
    path: Path, data: bytes, *, force: bool = False, mode: int = FILE_MODE, private_dir: bool = True
) -> Path:
    """Write ``data`` to ``path`` atomically with ``mode``; refuse to replace an existing file unless forced.

    ``private_dir=False`` is for public artefacts (a CSR, a DID document) written into a directory the
    user chose, such as the working directory: it is created 0700 when missing but not audited.
    """
    directory = path.parent
    if private_dir or not directory.is_dir():
        ensure_private_dir(directory)
    if not force and os.path.lexists(path):
        raise KeyStoreError(
            f"{path} already exists; refusing to overwrite (use --force to replace it)", code="exists"
        )
    temp = directory / f".{path.name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temp, flags, mode)
    except OSError as exc:
        raise KeyStoreError(f"cannot create {temp}: {exc.strerror}", code="write_failed") from None
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have narrowed it further; make it exact
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if force:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)  # fails with EEXIST if someone created it meanwhile: no clobber
            except FileExistsError:
                raise KeyStoreError(
                    f"{path} already exists; refusing to overwrite (use --force to replace it)", code="exists"
                ) from None
            os.unlink(temp)
        _fsync_dir(directory)
    except OSError as exc:
        raise KeyStoreError(f"cannot write {path}: {exc.strerror}", code="write_failed") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return path


def write_private_key(path: Path, pair: KeyPair, password: bytes, *, force: bool = False) -> Path:
    """Write ``pair`` as password-encrypted PKCS#8 PEM, mode 0600, in a 0700 directory."""
    return write_file_atomic(path, pair.private_pem(password), force=force)


def _read_private_file(path: Path) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise KeyStoreError(f"key file {path} does not exist", code="not_found") from None
    except OSError as exc:
        raise KeyStoreError(f"cannot open key file {path}: {exc.strerror}", code="read_failed") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyStoreError(f"{path} is not a regular file", code="not_a_file")
        _refuse_shared(info, path, f"private key {path} is readable by group or others", FILE_MODE)
        if info.st_size > _MAX_KEY_FILE:
            raise KeyStoreError(f"key file {path} is too large", code="too_large")
        return os.read(fd, _MAX_KEY_FILE + 1)
    finally:
        os.close(fd)


def read_key_uri(uri: str) -> bytes:
    """Return the PEM bytes a key URI points at: ``env:VAR``, ``file:PATH`` or a bare path."""
    if uri.startswith("env:"):
        name = uri[4:]
        if not name:
            raise InvalidInput("env: key URI needs a variable name", code="bad_key_uri")
        value = os.environ.get(name)
        if not value:
            raise KeyStoreError(f"environment variable {name} is not set or empty", code="not_found")
        return value.encode()
    path = Path(uri[5:] if uri.startswith("file:") else uri)
    if not str(path):
        raise InvalidInput("file: key URI needs a path", code="bad_key_uri")
    return _read_private_file(path)


def load_private_key(uri: str | Path, password: bytes | None) -> KeyPair:
    """Load a private key from a key URI, enforcing file permissions; the password never reaches a log."""
    data = read_key_uri(str(uri))
    pair = KeyPair.from_pem(data, password)
    _log.debug("loaded %r", pair)
    return pair
