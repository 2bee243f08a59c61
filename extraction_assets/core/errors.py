"""Typed errors raised while reading an untrusted workbook.

Every error carries a stable ``code`` (stored in ``extraction_issues.code``) and a one-line
message a user understands. A failure of one workbook never affects another.
"""

from __future__ import annotations


def one_line(value: object, limit: int | None = 300) -> str:
    """``str(value)`` on one line (runs of white space, line breaks included, become one space),
    cut to ``limit`` characters with a final ``…`` when longer (``None``: never cut): how a
    library's message is quoted inside ours."""
    text = " ".join(str(value).split())
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


class ExtractionError(Exception):
    """Base class of every error the extraction core raises on a bad input file.

    Attributes:
        code: short machine-readable identifier, e.g. ``not_a_spreadsheet``.
        message: one-line human-readable explanation.
    """

    code = "extraction_error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotASpreadsheetError(ExtractionError):
    """The bytes are not a spreadsheet container (text, PDF, image, empty file...)."""

    code = "not_a_spreadsheet"


class UnsupportedFormatError(ExtractionError):
    """A spreadsheet container this version cannot read yet (e.g. BIFF ``.xls``, ``.xlsb``)."""

    code = "unsupported_format"


class EncryptedWorkbookError(ExtractionError):
    """A password-protected workbook (OLE2 container holding ``EncryptionInfo``)."""

    code = "encrypted"


class CorruptWorkbookError(ExtractionError):
    """A damaged container: truncated zip, bad CRC, missing required part, malformed XML."""

    code = "corrupt_workbook"


class LimitExceededError(ExtractionError):
    """A configured safety limit was hit (zip bomb, absurd number of cells or parts)."""

    code = "limit_exceeded"


class HostileContentError(ExtractionError):
    """Content that is refused on principle, such as a DTD or entity declaration in an XML part."""

    code = "hostile_content"


class SourceUnavailableError(ExtractionError):
    """The file a partition was registered from cannot be read any more, or holds other bytes
    now, and its bytes were never stored (a registration made before they were copied at once):
    the partition's content is gone."""

    code = "source_unavailable"
