"""The file formats read, in one table (:data:`FORMATS`): each format's name, the file-name
suffixes the inbox sensor accepts for it, its family and the reader that opens it.

A format's name is what :func:`~extraction_assets.core.sniff.sniff` calls a file from its
magic bytes (never from its name); the suffixes only choose which files of the inbox are
read. The families (:class:`Family`) decide the route of
:func:`~extraction_assets.core.open.open_workbook`:

* ``ooxml`` (``xlsx``, ``xlsm``): the OOXML package reader (:mod:`.ooxml`);
* ``converted`` (``xls``, ``xlsb``, ``ods``, ``fods``): converted to xlsx by LibreOffice when
  it is installed, then read as OOXML; else, or when the conversion fails, read by value by
  the format's reader in :mod:`.readers`;
* ``by value`` (``csv``, which covers TSV): read by value by its reader in :mod:`.readers`;
* ``document`` (``docx``, ``pptx``, ``pdf``, ``html``, ``md``): read by :mod:`.documents`,
  sections, slides or pages as sheets;
* ``converted document`` (``doc``, ``ppt``): converted to docx or pptx by LibreOffice, then
  read as that document; without LibreOffice they are refused (``unsupported_format``).

A new format is a row here, its magic bytes in :func:`~extraction_assets.core.sniff.sniff`
and its reader.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable


class Family(StrEnum):
    """How a format is read (see the module docstring)."""

    OOXML = "ooxml"
    CONVERTED = "converted"
    BY_VALUE = "by value"
    DOCUMENT = "document"
    CONVERTED_DOCUMENT = "converted document"


@dataclass(frozen=True)
class FileFormat:
    """One format read.

    Attributes:
        name: the format as :func:`~extraction_assets.core.sniff.sniff` names it (``xlsx``).
        suffixes: the file-name suffixes of the format, lower case with the dot, the usual one
            first (``(".xlsx", ".xltx")``; a template reads as its workbook).
        family: how it is read (:class:`Family`).
        reader: ``module:function`` of the function that reads its bytes, imported on first use
            (:meth:`load_reader`). Every reader takes ``(data, sniffed, limits, *, filename,
            passwords)`` and returns a :class:`~extraction_assets.core.model.Workbook`.
        converts_to: the format LibreOffice converts it to before it is read (``xlsx`` for
            the ``converted`` family, ``docx`` or ``pptx`` for a converted document), else
            ``None``.
    """

    name: str
    suffixes: tuple[str, ...]
    family: Family
    reader: str
    converts_to: str | None = None

    @property
    def converts(self) -> bool:
        """LibreOffice converts it before it is read (see :attr:`converts_to`)."""
        return self.converts_to is not None

    def load_reader(self) -> Callable:
        """The function :attr:`reader` names (its module imported here: the readers load xlrd,
        python-calamine, Docling or PDFium, which most files never need)."""
        module, _, function = self.reader.partition(":")
        return getattr(importlib.import_module(module), function)


_OOXML_READER = "extraction_assets.core.ooxml.workbook:open_ooxml"
_CALAMINE_READER = "extraction_assets.core.readers.calamine:open_calamine"
_DOCUMENT_READER = "extraction_assets.core.documents:open_document"

#: Every format read, by name.
FORMATS: dict[str, FileFormat] = {f.name: f for f in (
    FileFormat("xlsx", (".xlsx", ".xltx"), Family.OOXML, _OOXML_READER),
    FileFormat("xlsm", (".xlsm", ".xltm"), Family.OOXML, _OOXML_READER),
    FileFormat("xls", (".xls",), Family.CONVERTED, "extraction_assets.core.readers.xls:open_xls",
               "xlsx"),
    FileFormat("xlsb", (".xlsb",), Family.CONVERTED, _CALAMINE_READER, "xlsx"),
    FileFormat("ods", (".ods",), Family.CONVERTED, _CALAMINE_READER, "xlsx"),
    FileFormat("fods", (".fods",), Family.CONVERTED, _CALAMINE_READER, "xlsx"),
    FileFormat("csv", (".csv", ".tsv"), Family.BY_VALUE,
               "extraction_assets.core.readers.csv:open_csv"),
    FileFormat("docx", (".docx", ".docm"), Family.DOCUMENT, _DOCUMENT_READER),
    FileFormat("pptx", (".pptx", ".pptm"), Family.DOCUMENT, _DOCUMENT_READER),
    FileFormat("pdf", (".pdf",), Family.DOCUMENT, _DOCUMENT_READER),
    FileFormat("html", (".html", ".htm"), Family.DOCUMENT, _DOCUMENT_READER),
    FileFormat("md", (".md", ".markdown"), Family.DOCUMENT, _DOCUMENT_READER),
    FileFormat("doc", (".doc",), Family.CONVERTED_DOCUMENT, _DOCUMENT_READER, "docx"),
    FileFormat("ppt", (".ppt",), Family.CONVERTED_DOCUMENT, _DOCUMENT_READER, "pptx"),
)}


def _names(*families: Family) -> frozenset[str]:
    """The names of the formats of ``families``."""
    return frozenset(f.name for f in FORMATS.values() if f.family in families)


#: OOXML workbooks, read by the package reader.
OOXML_FORMATS = _names(Family.OOXML)
#: The other spreadsheet formats, read through :mod:`.readers` (converted or read by value).
OTHER_SPREADSHEET_FORMATS = _names(Family.CONVERTED, Family.BY_VALUE)
#: Documents, read by :mod:`.documents` (sections, slides or pages as sheets), the ones
#: LibreOffice converts first included.
DOCUMENT_FORMATS = _names(Family.DOCUMENT, Family.CONVERTED_DOCUMENT)
#: Every suffix of the table: the files of the inbox that are read.
SUFFIXES = frozenset(s for f in FORMATS.values() for s in f.suffixes)
