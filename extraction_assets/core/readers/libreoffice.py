"""LibreOffice (``soffice``) headless: a file converted to ``.xlsx`` (a ``.doc`` to ``.docx``, a
``.ppt`` to ``.pptx``) with a throw-away profile,
macros off, a file lock, a timeout, and a bound on the bytes of every file it writes (a few
bytes of ODS can repeat a cell over a whole sheet: ``table:number-columns-repeated``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from extraction_assets.core.errors import (
    CorruptWorkbookError,
    ExtractionError,
    LimitExceededError,
    UnsupportedFormatError,
    one_line,
)
from extraction_assets.core.formats import FORMATS

#: LibreOffice's ``--convert-to`` argument (extension and export filter) of each format a
#: file is converted to.
FILTERS = {"xlsx": "xlsx:Calc MS Excel 2007 XML", "docx": "docx:MS Word 2007 XML",
           "pptx": "pptx:Impress MS PowerPoint 2007 XML"}
#: Seconds a LibreOffice conversion may take before its process group is killed.
SOFFICE_TIMEOUT = float(os.environ.get("EXTRACTION_ASSETS_SOFFICE_TIMEOUT", "120"))


def find_soffice() -> str | None:
    """The LibreOffice executable, or ``None``. ``EXTRACTION_ASSETS_SOFFICE`` overrides the
    search (a path, or ``0``/``off`` to never convert)."""
    override = os.environ.get("EXTRACTION_ASSETS_SOFFICE")
    if override is not None:
        if override.strip().lower() in ("", "0", "off", "false", "no"):
            return None
        return override if Path(override).exists() or shutil.which(override) else None
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    mac = "/Applications/LibreOffice.app/Contents/MacOS/soffice"
    return mac if Path(mac).exists() else None


_PROFILE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" \
xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting">\
<prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Jobs/Jobs/org.openoffice.Office.Jobs:Job['UpdateCheck']/Arguments">\
<prop oor:name="AutoCheckEnabled" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc">\
<prop oor:name="UseLocking" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


def _profile(root: Path) -> str:
    """A fresh LibreOffice user profile under ``root`` with macros and update checks off."""
    user = root / "profile" / "user"
    user.mkdir(parents=True)
    (user / "registrymodifications.xcu").write_text(_PROFILE_XCU, encoding="utf-8")
    return (root / "profile").as_uri()


def _run(cmd: list[str], timeout: float, cwd: str,
         max_file_bytes: int | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` in its own session, killed with its process group after ``timeout``
    seconds; no file it writes grows past ``max_file_bytes`` (``RLIMIT_FSIZE``: a write
    beyond fails, or ``SIGXFSZ`` ends the process)."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(SAL_USE_VCLPLUGIN="svp", HOME=cwd, no_proxy="*", NO_PROXY="*")

    def bound_files() -> None:  # in the child, before soffice starts
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                            preexec_fn=bound_files if max_file_bytes is not None else None)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.communicate()
        raise CorruptWorkbookError(f"LibreOffice took more than {timeout:.0f} s") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@lru_cache(maxsize=4)
def soffice_version(soffice: str) -> str:
    """``LibreOffice 24.2.1.2 ...`` -> ``24.2.1.2`` (``unknown`` when it cannot be asked)."""
    with tempfile.TemporaryDirectory(prefix="ea-soffice-") as tmp:
        try:
            done = _run([soffice, f"-env:UserInstallation={_profile(Path(tmp))}", "--headless",
                         "--version"], 60, tmp)
        except (OSError, ExtractionError):
            return "unknown"
    match = re.search(rb"(\d+(?:\.\d+)+)", done.stdout or b"")
    return match.group(1).decode() if match else "unknown"


def _lock_path() -> str:
    return os.path.join(tempfile.gettempdir(), "extraction-assets-soffice.lock")


def convert(data: bytes, fmt: str, soffice: str | None = None, timeout: float | None = None,
            keep_in: Path | None = None, max_bytes: int | None = None
            ) -> tuple[bytes, str, float]:
    """Convert ``data`` (format ``fmt``, one the format table marks ``converts``) to the
    format it converts to (``.xlsx``; ``.docx`` for ``doc``, ``.pptx`` for ``ppt``) with
    headless LibreOffice; returns ``(converted bytes, LibreOffice version, seconds)``.
    ``max_bytes`` bounds every file LibreOffice writes, the converted file included (the
    caller passes ``max_total_bytes``): its output is never larger, on disk or in memory.

    One conversion at a time on the machine (a ``filelock`` in the temp dir), each with its
    own throw-away user profile (macros disabled, no update check), a timeout after which the
    process group is killed. With ``keep_in`` (a folder, e.g. the data dir's ``converted/``)
    the result is kept there under the sha256 of ``data`` and the format, and a later call
    for the same bytes, in any process, returns it (with the version and seconds of the
    conversion that made it) instead of converting again.

    Raises:
        UnsupportedFormatError: no ``soffice`` found.
        CorruptWorkbookError: LibreOffice failed, timed out or wrote nothing.
        LimitExceededError: LibreOffice's output would pass ``max_bytes``.
    """
    kept = _kept(keep_in, data, fmt)
    if kept is not None and kept[0].exists() and kept[1].exists():
        facts = json.loads(kept[1].read_text(encoding="utf-8"))
        return kept[0].read_bytes(), facts["version"], facts["seconds"]
    converted = _convert(data, fmt, soffice, timeout, max_bytes)
    if kept is not None:
        _write_atomically(kept[0], converted[0])
        _write_atomically(kept[1], json.dumps(
            {"version": converted[1], "seconds": converted[2]}).encode())
    return converted


def _kept(folder: Path | None, data: bytes, fmt: str) -> tuple[Path, Path] | None:
    """Where a conversion of ``data`` is kept in ``folder``: the converted file and its
    facts."""
    if folder is None:
        return None
    stem = f"{hashlib.sha256(data).hexdigest()}.{fmt}"
    target = FORMATS[fmt].converts_to
    return Path(folder) / f"{stem}.{target}", Path(folder) / f"{stem}.json"


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and a rename, so a
    reader in another process sees the whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _convert(data: bytes, fmt: str, soffice: str | None, timeout: float | None,
             max_bytes: int | None) -> tuple[bytes, str, float]:
    from filelock import FileLock, Timeout

    soffice = soffice or find_soffice()
    if soffice is None:
        raise UnsupportedFormatError("LibreOffice (soffice) is not installed")
    timeout = SOFFICE_TIMEOUT if timeout is None else timeout
    version = soffice_version(soffice)
    with tempfile.TemporaryDirectory(prefix="ea-soffice-") as tmp:
        root = Path(tmp)
        src = root / ("input" + FORMATS[fmt].suffixes[0])
        src.write_bytes(data)
        out = root / "out"
        out.mkdir()
        cmd = [soffice, f"-env:UserInstallation={_profile(root)}", "--headless", "--invisible",
               "--nologo", "--nodefault", "--norestore", "--nolockcheck",
               "--convert-to", FILTERS[FORMATS[fmt].converts_to], "--outdir", str(out),
               str(src)]
        try:
            with FileLock(_lock_path(), timeout=timeout * 4):
                start = time.perf_counter()
                done = _run(cmd, timeout, tmp,
                            None if max_bytes is None else max_bytes + 1)
                seconds = time.perf_counter() - start
        except Timeout:
            raise CorruptWorkbookError("waited too long for another LibreOffice conversion") \
                from None
        except OSError as exc:
            raise CorruptWorkbookError(f"LibreOffice could not be started: {exc}") from None
        result = out / f"input.{FORMATS[fmt].converts_to}"
        if max_bytes is not None and (done.returncode == -signal.SIGXFSZ or (
                result.exists() and result.stat().st_size > max_bytes)):
            raise LimitExceededError(f"LibreOffice's output passed {max_bytes} bytes "
                                     "(max_total_bytes); conversion stopped")
        if done.returncode != 0 or not result.exists() or result.stat().st_size == 0:
            message = one_line((done.stderr or b"").decode("utf-8", "replace")) or "no output"
            raise CorruptWorkbookError(
                f"LibreOffice did not convert the file (exit {done.returncode}: {message})")
        return result.read_bytes(), version, seconds

