"""OCR of scanned pages and pictures with Tesseract (the ``tesseract`` program, through
pytesseract): words with their confidence and box, grouped into Tesseract's paragraphs.

**Configuration** (read from the environment when a file needs OCR):
``EXTRACTION_ASSETS_TESSERACT`` names the program (default: ``tesseract`` on ``PATH``; ``off``
never runs OCR); ``EXTRACTION_ASSETS_OCR_LANGUAGES`` the languages, ``+``-joined (default
``eng+jpn``: those of them whose language data are installed are used);
``EXTRACTION_ASSETS_OCR_TIMEOUT`` the seconds one image may take (default 60). Without the
program or any of the languages, :func:`find_tesseract` gives ``None`` and the readers say
``ocr_not_configured`` (``ocr_misconfigured``, a warning, when a setting names what is not
there: :func:`ocr_setup`).

**Why a program, not a library in the process**: pictures are untrusted; Tesseract runs in a
process of its own with a timeout (pytesseract kills it), so a picture that makes it hang or
crash costs that picture only. Pillow decodes the picture first, under
``limits.max_image_pixels``; what Tesseract sees is a grayscale PNG Pillow wrote.

**Rules**: ruling lines are whitened before Tesseract reads a picture (:func:`without_rules`):
with them, its page layout drops the cells of a ruled table.

**Text**: Tesseract's words (level 5 of its TSV output) in its own reading order, a line's
words joined by a space except between two CJK characters (Japanese is written without
spaces: ``川崎`` ``工場`` -> ``川崎工場``), a paragraph's lines by a newline the same way (a
table's rows stay a row a line; Japanese wrapped over two lines is one word again). Words whose
confidence is below :data:`MIN_CONFIDENCE` are kept in the text (search finds them) and listed
by the readers for review (``review_items`` reason ``ocr_low_confidence``).
"""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from extraction_assets.core.errors import ExtractionError, LimitExceededError, one_line
from extraction_assets.core.limits import Limits
from extraction_assets.core.model import Issue

#: Environment variable naming the Tesseract program (``off``: no OCR).
TESSERACT_ENV = "EXTRACTION_ASSETS_TESSERACT"
#: Environment variable of the OCR languages, ``+``-joined Tesseract language codes.
LANGUAGES_ENV = "EXTRACTION_ASSETS_OCR_LANGUAGES"
#: Environment variable of the seconds one image's OCR may take.
TIMEOUT_ENV = "EXTRACTION_ASSETS_OCR_TIMEOUT"
#: Languages used when :data:`LANGUAGES_ENV` is unset (English and Japanese).
DEFAULT_LANGUAGES = "eng+jpn"
#: Seconds one image's OCR may take when :data:`TIMEOUT_ENV` is unset.
DEFAULT_TIMEOUT = 60.0
#: Words Tesseract gives a confidence (0..100) below this are listed for review. Tesseract's
#: own scale, not tuned here: on clean rendered text its words score 85-96; blurred, faint or
#: noisy words fall under 60 (``extraction_assets_tests/core/test_ocr.py``).
MIN_CONFIDENCE = 60.0
#: A run of dark pixels along a row or column at least this share of a picture's longer side
#: is a ruling line (:func:`without_rules`): 149 pixels (0.5 inch) on an A4 page at 300 dpi.
RULE_SHARE = 0.06
#: Most doubtful words one paragraph or picture lists for review (noise read as words is
#: doubtful by the hundred).
MAX_DOUBTFUL_WORDS = 100
#: Pictures narrower or lower than this many pixels hold no text worth reading (icons, rules).
MIN_SIDE_PX = 16
#: Pictures whose shorter side is under this many pixels are enlarged 2x before OCR: Tesseract
#: reads letters 20-40 pixels high best, and screenshots of tables are often smaller.
SMALL_SIDE_PX = 600


#: The issue codes of a file that needed OCR (read, or not: not configured, misconfigured,
#: failed, skipped).
OCR_ISSUES = frozenset({"ocr_read", "ocr_not_configured", "ocr_misconfigured", "ocr_failed",
                        "ocr_skipped"})
#: The issue codes of pictures or scanned pages left unread (``ocr_misconfigured`` too when no
#: OCR could run).
OCR_UNREAD = frozenset({"ocr_not_configured", "ocr_failed", "ocr_skipped"})


class OcrError(ExtractionError):
    """Tesseract failed on one image (timeout, crash, unreadable picture)."""


@dataclass(frozen=True)
class OcrWord:
    """One word: its text, Tesseract's confidence (0..100) and box ``(left, top, right,
    bottom)`` in pixels of the image read (y down)."""

    text: str
    confidence: float
    box: tuple[int, int, int, int]


@dataclass(frozen=True)
class OcrParagraph:
    """One of Tesseract's paragraphs: its text (see the module docstring) and its words (at
    least one), with their box together (pixels, y down) and their mean confidence."""

    text: str
    words: tuple[OcrWord, ...]

    @property
    def box(self) -> tuple[int, int, int, int]:
        """The box around the words."""
        return _around([w.box for w in self.words])

    @property
    def confidence(self) -> float:
        """The words' mean confidence, to 0.1."""
        return round(sum(w.confidence for w in self.words) / len(self.words), 1)

    def doubtful(self) -> list[OcrWord]:
        """The words below :data:`MIN_CONFIDENCE`."""
        return [w for w in self.words if w.confidence < MIN_CONFIDENCE]


@dataclass(frozen=True)
class Tesseract:
    """The Tesseract program found (``command``), its ``version`` and the ``languages`` used
    (``+``-joined), with the seconds one image may take (``timeout``)."""

    command: str
    version: str
    languages: str
    timeout: float

    @property
    def label(self) -> str:
        """``tesseract 5.3.0 (eng+jpn)``: what the review items name as the reader."""
        return f"tesseract {self.version} ({self.languages})"

    def read(self, image, scale: float = 1.0) -> list[OcrParagraph]:
        """The paragraphs of a Pillow ``image`` (any mode; :func:`grayscale`), in
        Tesseract's reading order; boxes in pixels of ``image`` divided by ``scale`` (the
        factor the caller enlarged it by), so they are in the caller's units.

        Raises:
            OcrError: Tesseract failed or took more than :attr:`timeout` seconds.
        """
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = self.command
        try:
            data = pytesseract.image_to_data(
                without_rules(grayscale(image)), lang=self.languages, timeout=self.timeout,
                output_type=pytesseract.Output.DICT)
        except pytesseract.TesseractError as exc:  # a RuntimeError too: caught first
            status = exc.status if exc.status >= 0 else f"signal {-exc.status}"
            raise OcrError(f"Tesseract failed (exit {status}: "
                           f"{one_line(str(exc.message))[:200] or 'no message'})") from exc
        except RuntimeError as exc:  # pytesseract's timeout
            raise OcrError(f"Tesseract took more than {self.timeout:g} s (raise "
                           f"{TIMEOUT_ENV})") from exc
        except (OSError, ValueError) as exc:
            raise OcrError(f"Tesseract failed: {one_line(str(exc))[:200]}") from exc
        return _paragraphs(data, scale)


def without_rules(image):
    """A grayscale Pillow ``image`` with its ruling lines whitened: every run of dark pixels
    (under 128) along a row or a column at least :data:`RULE_SHARE` of the image's longer side
    long. Tesseract's page layout takes a ruled table's cells for pictures and drops their
    text (a quantity column read as nothing); without the rules it reads the table a row a
    line. Letters are far shorter than such runs at the sizes scans are read at."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(image)
    dark = pixels < 128
    if not dark.any():
        return image
    least = max(int(RULE_SHARE * max(image.size)), 2)
    rules = _long_runs(dark, least) | _long_runs(dark.T, least).T
    if not rules.any():
        return image
    pixels = pixels.copy()
    pixels[rules] = 255
    return Image.fromarray(pixels)


def _long_runs(dark, least: int):
    """The cells of ``dark`` (a 2-D boolean array) in a run along axis 1 of at least ``least``
    ``True`` cells."""
    import numpy as np

    out = np.zeros_like(dark)
    for i in np.flatnonzero(dark.sum(axis=1) >= least):
        edges = np.flatnonzero(np.diff(np.concatenate(([0], dark[i].view(np.int8), [0]))))
        for start, end in zip(edges[0::2], edges[1::2]):
            if end - start >= least:
                out[i, start:end] = True
    return out


def item_details(paragraphs: Sequence[OcrParagraph], reader: str) -> dict:
    """The details the item of OCR ``paragraphs`` (a PDF page's paragraph, a picture's
    paragraphs) keeps: ``ocr_reader`` (:attr:`Tesseract.label`), ``bbox`` ``[left, top, right,
    bottom]`` around them (the caller's units), ``ocr_confidence`` (mean of their words,
    0..100) and ``ocr_doubtful``: ``[text, confidence, left, top, right, bottom]`` of each
    word below :data:`MIN_CONFIDENCE` (at most :data:`MAX_DOUBTFUL_WORDS`)."""
    whole = OcrParagraph("", tuple(w for p in paragraphs for w in p.words))
    return {"ocr_reader": reader, "bbox": list(whole.box),
            "ocr_confidence": whole.confidence,
            "ocr_doubtful": [[w.text, w.confidence, *w.box]
                             for w in whole.doubtful()[:MAX_DOUBTFUL_WORDS]]}


def _around(boxes: Sequence[tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    """The box ``(left, top, right, bottom)`` around ``boxes``."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes))


def _paragraphs(data: dict, scale: float) -> list[OcrParagraph]:
    """Tesseract's TSV rows (pytesseract's dict of columns) as paragraphs."""
    lines: dict[tuple[int, int, int], dict[int, list[OcrWord]]] = {}  # paragraph -> lines
    for i, text in enumerate(data["text"]):
        text = (text or "").strip()
        if data["level"][i] != 5 or not text:
            continue
        left, top = data["left"][i] / scale, data["top"][i] / scale
        box = (round(left), round(top), round(left + data["width"][i] / scale),
               round(top + data["height"][i] / scale))
        par = (data["page_num"][i], data["block_num"][i], data["par_num"][i])
        lines.setdefault(par, {}).setdefault(data["line_num"][i], []).append(
            OcrWord(text, float(data["conf"][i]), box))
    return [OcrParagraph(_joined([_joined([w.text for w in line]) for line in par.values()],
                                 "\n"),
                         tuple(w for line in par.values() for w in line))
            for par in lines.values()]


def _joined(texts: Sequence[str], between: str = " ") -> str:
    """A line's words (or, ``between`` a newline, a paragraph's lines), ``between`` two unless
    both sides are CJK characters."""
    out = texts[0]
    for text in texts[1:]:
        out += ("" if _wide(out[-1]) and _wide(text[0]) else between) + text
    return out


def _wide(char: str) -> bool:
    """A character of a script written without spaces (East Asian wide or full-width)."""
    return unicodedata.east_asian_width(char) in ("W", "F")


@dataclass(frozen=True)
class OcrSetup:
    """What the environment configures (see the module docstring): the ``tesseract`` to use,
    or ``None``, and the ``problem`` of a setting that does not work as given (a program or
    language named but missing, a timeout that is no number of seconds)."""

    tesseract: Tesseract | None
    problem: str | None = None

    @property
    def label(self) -> str:
        """``tesseract 5.3.0 (eng+jpn), 60 s`` or ``none``: what a file needing OCR was read
        with (kept in the ``parsed_sheets`` materialization; a file read with another setup
        is read again by ``ingest``)."""
        return (f"{self.tesseract.label}, {self.tesseract.timeout:g} s" if self.tesseract
                else "none")


def ocr_setup() -> OcrSetup:
    """The :class:`OcrSetup` of the environment now: ``off``, no ``tesseract`` on ``PATH``, a
    program that does not answer as Tesseract, or none of the languages installed give no
    Tesseract (with the problem when the setting named them); languages asked for but not
    installed are left out and a timeout that is no number above 0 is the default, each a
    problem."""
    override = os.environ.get(TESSERACT_ENV)
    if override is not None and override.strip().lower() in ("", "0", "off", "false", "no"):
        return OcrSetup(None)
    command = shutil.which(override or "tesseract")
    if command is None:
        return OcrSetup(None, f"{TESSERACT_ENV}={override!r} names no program that can run"
                        if override else None)
    facts = _program(command, Path(command).stat().st_mtime_ns)
    if facts is None:
        return OcrSetup(None, f"{command} does not answer as Tesseract does "
                              "(tesseract --version, --list-langs)")
    version, installed = facts
    asked = os.environ.get(LANGUAGES_ENV)
    wanted = [w.strip() for w in (asked or DEFAULT_LANGUAGES).split("+") if w.strip()]
    languages = [lang for lang in wanted if lang in installed]
    have = "+".join(sorted(installed - {"osd"})) or "none"
    if not languages:
        return OcrSetup(None, f"none of the OCR languages {'+'.join(wanted)!r} is installed "
                              f"(installed: {have}; {LANGUAGES_ENV})")
    problems = []
    if asked and len(languages) < len(wanted):
        problems.append(f"OCR languages {'+'.join(w for w in wanted if w not in languages)!r}"
                        f" are not installed (installed: {have}): read with "
                        f"{'+'.join(languages)}")
    raw = os.environ.get(TIMEOUT_ENV)
    try:
        timeout = float(raw) if raw is not None else DEFAULT_TIMEOUT
    except ValueError:
        timeout = -1.0
    if not timeout > 0 or timeout == float("inf"):
        problems.append(f"{TIMEOUT_ENV}={raw!r} is no number of seconds above 0: "
                        f"{DEFAULT_TIMEOUT:g} s used")
        timeout = DEFAULT_TIMEOUT
    return OcrSetup(Tesseract(command, version, "+".join(languages), timeout),
                    "; ".join(problems) or None)


def find_tesseract() -> Tesseract | None:
    """The Tesseract of :func:`ocr_setup`, or ``None``."""
    return ocr_setup().tesseract


@lru_cache(maxsize=4)
def _program(command: str, mtime: int) -> tuple[str, frozenset[str]] | None:
    """Version and installed languages of the program at ``command`` (as of ``mtime``), or
    ``None`` when it does not run."""
    import pytesseract

    pytesseract.pytesseract.tesseract_cmd = command
    try:
        return (str(pytesseract.get_tesseract_version()),
                frozenset(pytesseract.get_languages(config="")))
    except (pytesseract.TesseractError, pytesseract.TesseractNotFoundError, OSError,
            ValueError, SystemExit):
        return None


def open_picture(data: bytes, max_pixels: int):
    """A picture's bytes (PNG, JPEG, GIF, BMP, TIFF, WebP) decoded by Pillow, first frame, or
    ``None`` when Pillow does not take it for a picture, it is a Windows metafile (vector
    drawing: no OCR) or it is smaller than :data:`MIN_SIDE_PX`.

    Raises:
        LimitExceededError: it declares more than ``max_pixels`` pixels (checked from the
            header, before decoding).
        OcrError: a picture Pillow recognises but cannot decode (damaged, truncated).
    """
    import io

    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:  # over twice Pillow's own threshold
            declared = re.search(r"\((\d+) pixels\)", str(exc))
            raise LimitExceededError(
                f"a picture of {declared[1] if declared else 'too many'} pixels; the limit is "
                f"{max_pixels} (max_image_pixels)") from exc
        except (UnidentifiedImageError, OSError, ValueError, EOFError, SyntaxError):
            return None  # no picture Pillow reads
        width, height = image.size
        if width * height > max_pixels:
            raise LimitExceededError(f"a picture of {width} x {height} pixels; the limit "
                                     f"is {max_pixels} (max_image_pixels)")
        if image.format in ("WMF", "EMF") or min(width, height) < MIN_SIDE_PX:
            return None
        try:
            image.load()
        except (OSError, ValueError, EOFError, SyntaxError) as exc:
            raise OcrError(f"the {image.format} picture cannot be decoded "
                           f"({one_line(str(exc))[:120]}): not read by OCR") from exc
    return image


def enlarged(image, max_pixels: int):
    """``(image, scale)``: a small picture (shorter side under :data:`SMALL_SIDE_PX`) enlarged
    2x when it stays under ``max_pixels``, else the picture as it is (scale 1)."""
    from PIL import Image

    width, height = image.size
    if min(width, height) < SMALL_SIDE_PX and 4 * width * height <= max_pixels:
        return grayscale(image).resize((2 * width, 2 * height), Image.Resampling.LANCZOS), 2.0
    return image, 1.0


def grayscale(image):
    """``image`` in 8-bit grayscale, transparent parts white: a logo or screenshot with a
    transparent background (a palette PNG's ``transparency``, an alpha channel) would turn
    black under its text, and Tesseract would read nothing."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("L")
    return image.convert("L")


class OcrSession:
    """The OCR of one file: Tesseract looked up once (:func:`find_tesseract`), at most
    ``limits.max_ocr_images`` images read, and what could not be read said once as an issue
    (``ocr_not_configured`` ``info``; ``ocr_skipped`` and, per image, ``ocr_failed``
    ``warning``)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.images = 0
        self._setup: OcrSetup | None = None
        self._said: set[str] = set()

    @property
    def setup(self) -> OcrSetup:
        """The :class:`OcrSetup` of this file's OCR (looked up once)."""
        if self._setup is None:
            self._setup = ocr_setup()
        return self._setup

    @property
    def tesseract(self) -> Tesseract | None:
        """The Tesseract of this file's OCR, or ``None`` (not configured)."""
        return self.setup.tesseract

    def available(self, what: str, issues: list[Issue], sheet_name: str | None = None,
                  ref: str | None = None) -> bool:
        """Whether one more image may be read; else (OCR not configured or misconfigured,
        the file's image count used up) said once in ``issues``, ``what`` naming the image.
        A setting that does not work as given is a ``warning`` ``ocr_misconfigured`` (once a
        file) either way."""
        if self.setup.problem:
            self._once(issues, Issue("parsed_sheets", sheet_name, ref, "warning",
                                     "ocr_misconfigured", f"{self.setup.problem}" + (
                "" if self.tesseract else f": no OCR, {what} and any other picture or "
                                          "scanned page not read")))
        if self.tesseract is None:
            if not self.setup.problem:
                self._once(issues, Issue("parsed_sheets", sheet_name, ref, "info",
                                         "ocr_not_configured", (
                    f"{what}: OCR is not configured (install Tesseract: see the README's "
                    "set-up; ingest reads the file again once it is), no text read from "
                    "pictures")))
            return False
        if self.images >= self.limits.max_ocr_images:
            self._once(issues, Issue("parsed_sheets", sheet_name, ref, "warning", "ocr_skipped", (
                f"{what} and later images not read: {self.limits.max_ocr_images} images were "
                "read by OCR (max_ocr_images)")))
            return False
        return True

    def read(self, image, what: str, issues: list[Issue], sheet_name: str | None = None,
             ref: str | None = None, scale: float = 1.0) -> list[OcrParagraph] | None:
        """The paragraphs of ``image`` (see :meth:`Tesseract.read`), or ``None`` when it may
        not be read (:meth:`available`) or Tesseract failed (an ``ocr_failed`` warning in
        ``issues``); ``what`` names the image in the issues (``picture 'Picture 1'``)."""
        if not self.claim(what, issues, sheet_name, ref):
            return None
        try:
            return self.tesseract.read(image, scale)
        except OcrError as exc:
            issues.append(failed(exc, what, sheet_name, ref))
            return None

    def picture_details(self, image, what: str, issues: list[Issue],
                        sheet_name: str | None = None, ref: str | None = None) -> dict:
        """What OCR reads in a decoded picture (:func:`enlarged` first): ``ocr_text``, its
        paragraphs one a line, and the facts of :func:`item_details` (boxes in pixels of the
        picture); nothing when it may not be read, fails (said in ``issues``) or holds no
        text."""
        image, scale = enlarged(image, self.limits.max_ocr_pixels)
        found = self.read(image, what, issues, sheet_name, ref, scale)
        if not found:
            return {}
        return {"ocr_text": "\n".join(p.text for p in found),
                **item_details(found, self.tesseract.label)}

    def claim(self, what: str, issues: list[Issue], sheet_name: str | None = None,
              ref: str | None = None) -> bool:
        """:meth:`available`, counting the image as read when it is."""
        if not self.available(what, issues, sheet_name, ref):
            return False
        self.images += 1
        return True

    def _once(self, issues: list[Issue], issue: Issue) -> None:
        if issue.code not in self._said:
            self._said.add(issue.code)
            issues.append(issue)


def failed(exc: OcrError, what: str, sheet_name: str | None = None,
           ref: str | None = None) -> Issue:
    """The ``warning`` ``ocr_failed`` of image ``what``."""
    return Issue("parsed_sheets", sheet_name, ref, "warning", "ocr_failed",
                 f"{what}: {exc.message}")
