"""The readers of the spreadsheet formats other than OOXML: ``.xls`` (BIFF2–8), ``.xlsb``,
``.ods``, ``.fods``, ``.csv`` (their rows of the format table are in
:mod:`~extraction_assets.core.formats`).

Two routes lead to the same :class:`~extraction_assets.core.model.Workbook` /
:class:`~extraction_assets.core.model.ParsedSheet` shapes, so everything downstream
(normalizer, segmenter, renderer) is unchanged:

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

:func:`check_before_reading` refuses what no route may read; the by-value readers are
:func:`.xls.open_xls`, :func:`.calamine.open_calamine` and :func:`.csv.open_csv`, the
LibreOffice route :mod:`.libreoffice`; :func:`extraction_assets.core.open.open_workbook` takes
the route the format table gives and reads the converted bytes with the OOXML reader.
"""

from __future__ import annotations

from extraction_assets.core.errors import EncryptedWorkbookError
from extraction_assets.core.limits import Limits
from extraction_assets.core.package import PackageReader
from extraction_assets.core.readers.ods import check_xml_prolog, ods_encrypted
from extraction_assets.core.sniff import Sniffed


def check_before_reading(data: bytes, sniffed: Sniffed, limits: Limits) -> None:
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
