"""Reading the neighbours of OOXML: ``.xls`` (BIFF2–8), ``.xlsb``, ``.ods``, ``.fods``, ``.csv``.

Two routes lead to the same :class:`~extraction_assets.core.model.Workbook` / :class:`~extraction_assets.core.model.ParsedSheet`
shapes, so everything downstream (normalizer, segmenter, renderer) is unchanged:

* **LibreOffice** (``soffice``) on the machine: the file is converted to ``.xlsx`` headless —
  one throw-away user profile per conversion (``-env:UserInstallation``), a file lock so
  conversions never run concurrently, a timeout (the process group is killed), macros disabled
  in the profile (security level "very high", macro execution off), update checks and untrusted
  links off — and the converted bytes go through the full style-aware OOXML reader. The
  conversion (tool, version, seconds) is recorded as an ``info`` issue ``converted``.
* **Without LibreOffice** (or when the conversion fails): values are read by value.
  ``.xls`` through ``xlrd`` with ``formatting_info=True`` (cell types, number formats, merges,
  fonts, fills, borders, alignment, hidden rows/columns, frozen panes; BIFF2–BIFF8, with
  ``python-calamine`` as fallback when ``xlrd`` refuses a file); ``.xlsb``/``.ods``/``.fods``
  through ``python-calamine`` (values and types; ODS merges and hidden rows/columns from
  ``content.xml``); ``.csv``/``.tsv`` with the sniffed encoding and delimiter. An ``info`` issue
  ``styles_unavailable`` says which style features were not read.

Cells are typed like the OOXML reader's: numbers ``n`` with the value text, strings ``s``,
booleans ``b`` (``1``/``0``), errors ``e`` (``#DIV/0!``), and dates as ``n`` serials (1900
system) with a date number format, so display text and ISO typing work downstream. Formulas are
not available on the by-value route (cached values only).

:func:`check_legacy` refuses what no route may read; :func:`read_by_value` is the by-value
route; the LibreOffice route (:mod:`.libreoffice`) is taken by
:func:`extraction_assets.core.open.open_workbook`, which reads the converted bytes with the
OOXML reader.
"""

from __future__ import annotations

from extraction_assets.core.errors import EncryptedWorkbookError, UnsupportedFormatError
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Workbook
from extraction_assets.core.package import PackageReader
from extraction_assets.core.readers.calamine import open_calamine
from extraction_assets.core.readers.csv import open_csv
from extraction_assets.core.readers.ods import check_xml_prolog, ods_encrypted
from extraction_assets.core.readers.xls import open_xls
from extraction_assets.core.sniff import Sniffed


def check_legacy(data: bytes, sniffed: Sniffed, limits: Limits) -> None:
    """Refuse a non-OOXML workbook that no route may read, before any reader sees it.

    Raises:
        EncryptedWorkbookError: an encrypted ``xls`` or ODS (password required).
        LimitExceededError: an ``xlsb``/``ods`` package beyond its package limits (parts,
            sizes, compression; see :class:`~extraction_assets.core.package.PackageReader`,
            which also refuses duplicate part names).
        HostileContentError: a flat ODS declaring a DTD.
    """
    if sniffed.encrypted:
        raise EncryptedWorkbookError(
            f"the {sniffed.format} workbook ({sniffed.label}) is encrypted: password required")
    if sniffed.container == "zip":  # xlsb, ods: the package limits before any reader sees it
        PackageReader(data, limits).close()
    if sniffed.format == "ods" and ods_encrypted(data):
        raise EncryptedWorkbookError("the ods workbook is encrypted: password required")
    if sniffed.format == "fods":
        check_xml_prolog(data)


def read_by_value(data: bytes, sniffed: Sniffed, limits: Limits,
                  filename: str | None = None) -> Workbook:
    """Read a non-OOXML workbook (``sniffed.format`` in ``xls``, ``xlsb``, ``ods``, ``fods``,
    ``csv``) by value as a :class:`~extraction_assets.core.model.Workbook` (checked first by :func:`check_legacy`).
    ``filename`` only names the single sheet of a CSV (its stem).

    Raises:
        CorruptWorkbookError: the readers cannot make sense of the file.
        LimitExceededError: more cells, sheets or merged ranges than ``limits`` allow.
        UnsupportedFormatError: a format no by-value reader reads.
    """
    if sniffed.format == "csv":
        return open_csv(data, sniffed, limits, filename)
    if sniffed.format == "xls":
        return open_xls(data, sniffed, limits)
    if sniffed.format in ("xlsb", "ods", "fods"):
        return open_calamine(data, sniffed, limits)
    raise UnsupportedFormatError(f"{sniffed.format} workbooks are not read")
