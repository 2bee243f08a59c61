"""Decryption of password-protected workbooks with the passwords a user configured.

Uses msoffcrypto-tool, which implements [MS-OFFCRYPTO]: ECMA-376 Agile and Standard encryption
of OOXML packages (an OLE2 container holding ``EncryptionInfo`` and ``EncryptedPackage``) and the
RC4 / CryptoAPI / XOR obfuscation of BIFF8 ``.xls`` files. Nothing is decrypted without a
configured password, and passwords are never logged or stored.
"""

from __future__ import annotations

import io
from typing import Sequence

import msoffcrypto
from msoffcrypto.exceptions import DecryptionError, InvalidKeyError, ParseError

from extraction_assets.core.errors import EncryptedWorkbookError


def decrypt(data: bytes, passwords: Sequence[str]) -> bytes:
    """The decrypted bytes of an encrypted workbook, with the first password that opens it.

    Raises:
        EncryptedWorkbookError: no password is configured ("password required"), none of them
            opens the file, or the encryption cannot be read.
    """
    if not passwords:
        raise EncryptedWorkbookError("the workbook is password-protected: password required")
    for password in passwords:
        try:
            office = msoffcrypto.OfficeFile(io.BytesIO(data))
            office.load_key(password=password)
            out = io.BytesIO()
            office.decrypt(out)
            return out.getvalue()
        except (InvalidKeyError, DecryptionError):
            continue
        except (ParseError, ValueError, AssertionError, KeyError, IndexError, OSError) as exc:
            raise EncryptedWorkbookError(
                f"the workbook is encrypted in a way that cannot be read: {exc}") from exc
    raise EncryptedWorkbookError(
        f"the workbook is password-protected: none of the {len(passwords)} configured "
        "passwords opens it")
