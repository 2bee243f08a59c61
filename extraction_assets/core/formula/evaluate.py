"""Values of the formulas a file stores without a cached value (files written by scripts, such
as openpyxl's, carry none), computed by the ``formulas`` library (vinci1it2000/formulas: a
parser and Excel function set that evaluates without running any code of the file's). It was
chosen over ``pycel`` by measurement on the shared corpus (``python -m tools.formula_eval``,
docs/formulas.md): it agreed with Excel's cached values as often and never ``eval``s text.

A value Excel cached is never replaced: only cells whose ``<v>`` is absent are computed, in the
order of their dependencies (a formula reading another uncached formula waits for it), with the
cached values of every other cell as inputs. What cannot be computed keeps its formula text and
gives an ``info`` issue ``formula_not_computed`` naming the reason: a function the library does
not have, a volatile function (``NOW``, ``RAND``...: the same bytes must give the same output),
a defined name, a table or another workbook read, a circular reference, an array formula (its
values spill over a range), a whole column read by a function whose result depends on the
column's length, and the bounds below (inputs are hostile: every size and count is bounded,
each by a deterministic count, never by a clock).
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extraction_assets.core.a1 import cell_ref, range_ref
from extraction_assets.core.formula.refs import (
    Reference,
    formula_functions,
    formula_references,
    literals,
    parse_reference,
    relative_reference,
    relative_shape,
    token_count,
    whole_line_uses,
)
from extraction_assets.core.grid import cell_keys, cells_in_range
from extraction_assets.core.model import Issue

#: Most formulas without a cached value computed in one workbook; the rest keep their text.
MAX_COMPUTED_FORMULAS = 100_000
#: Most formulas of distinct shapes compiled for one workbook (~0.6 ms each).
MAX_COMPILED_FORMULAS = 20_000
#: Most tokens of one formula computed (the library's parser grows faster than the length).
MAX_FORMULA_TOKENS = 1_000
#: Most cells one formula may read (a whole column is read down to the sheet's last row).
MAX_INPUT_CELLS = 1_000_000
#: Most cells the matrix functions may read (their results grow with the square of it).
MAX_MATRIX_INPUT_CELLS = 2_000
MATRIX_FUNCTIONS = frozenset({"MMULT", "MINVERSE", "MDETERM"})
#: Functions building an array of a size their arguments give: never computed.
SIZED_FUNCTIONS = frozenset({"MUNIT", "MAKEARRAY", "SEQUENCE"})
#: Most characters ``REPT`` may be asked for (longest text or literal x largest number read).
MAX_REPEATED_CHARS = 1_000_000
#: Excel's most characters in a cell: a longer text result is ``#VALUE!``, as in Excel.
MAX_TEXT_CHARS = 32_767
#: Functions whose result over a whole column (``A:A``) is the same over the column down to
#: its last cell: a whole column or row is read only as their direct argument, with no
#: comparison beside it (``ROWS(A:A)``, ``COUNTBLANK(A:A)``, ``SUM((A:A="")*1)`` are not).
WHOLE_COLUMN_FUNCTIONS = frozenset({
    "SUM", "SUMIF", "SUMIFS", "AVERAGE", "AVERAGEIF", "AVERAGEIFS", "MIN", "MAX", "MINIFS",
    "MAXIFS", "COUNT", "COUNTA", "VLOOKUP", "HLOOKUP", "MATCH", "XLOOKUP", "XMATCH", "LARGE",
    "SMALL", "MEDIAN"})
#: Functions whose value depends on the moment or on chance: never computed.
VOLATILE_FUNCTIONS = frozenset({"NOW", "TODAY", "RAND", "RANDBETWEEN", "RANDARRAY",
                                "_XLFN.RANDARRAY", "INFO", "CELL"})
#: Functions that turn serial numbers into dates or back: the library counts from 1900, so in a
#: workbook of the 1904 date system (ECMA-376 Part 1 §18.17.4.1) they are not computed.
DATE_FUNCTIONS = frozenset({
    "TEXT", "DATE", "DATEVALUE", "DAY", "DAYS", "DAYS360", "EDATE", "EOMONTH", "MONTH",
    "YEAR", "WEEKDAY", "WEEKNUM", "ISOWEEKNUM", "WORKDAY", "WORKDAY.INTL", "NETWORKDAYS",
    "NETWORKDAYS.INTL", "YEARFRAC", "DATEDIF"})
#: Functions that read the address of their own cell (``ROW()``): compiled once per cell.
_CELL_FUNCTIONS = frozenset({"ROW", "COLUMN", "SINGLE", "_XLFN.SINGLE"})
#: The library whose functions compute the values (named in provenance and issues).
EVALUATOR = "formulas"


@dataclass
class SheetComputed:
    """The computed cells of one sheet: ``positions`` (rows of the sheet's parsed cells table,
    ascending), their ``values`` as the file would store them (text of a number, ``1``/``0``,
    an error code, a string) and ``data_types`` (``n``, ``b``, ``e``, ``str``)."""

    positions: np.ndarray
    values: pa.Array
    data_types: pa.Array


@dataclass
class Computed:
    """What :func:`compute_uncached` found: the computed cells by sheet name and the issues."""

    sheets: dict[str, SheetComputed] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)


class NotComputed(Exception):
    """A formula that cannot or must not be computed; the message is the reason shown to the
    user."""


class SheetCells:
    """The parsed cells of one sheet (``name``, a cells table as
    :data:`~extraction_assets.core.ooxml.worksheet.CELL_SCHEMA`), found by key."""

    def __init__(self, name: str, cells: pa.Table):
        self.name = name
        self.rows = cells.column("row").to_numpy()
        self.cols = cells.column("col").to_numpy()
        self.keys = cell_keys(self.rows, self.cols)
        self.order = np.argsort(self.keys, kind="stable")
        self.keys = self.keys[self.order]
        self.sorted_cols = self.cols[self.order]
        self.values = cells.column("value").combine_chunks()
        self.types = cells.column("data_type").combine_chunks()
        self._inputs: list | None = None
        self.last_row = int(self.rows.max()) if len(self.rows) else 1
        self.last_col = int(self.cols.max()) if len(self.cols) else 1

    def input_value(self, position: int):
        """The cached value of the cell at ``position`` as the library takes it."""
        if self._inputs is None:  # converted once, for the sheets a formula reads
            self._inputs = [_input_value(t, v) for t, v in zip(self.types.to_pylist(),
                                                                self.values.to_pylist())]
        return self._inputs[position]

    def positions(self, r1: int, c1: int, r2: int, c2: int) -> np.ndarray:
        """Rows of the cells table inside the bounds (ascending keys' order)."""
        return self.order[cells_in_range(self.keys, self.sorted_cols, r1, c1, r2, c2)]


def cached_value(data_type: str | None, value: str | None):
    """A cell's cached value as Python: ``None`` when empty, a float for a number (``n``, the
    default type), a bool (``b``), else the text (an error's code, a string)."""
    if value is None:
        return None
    if data_type in (None, "n"):
        try:
            return float(value)
        except ValueError:
            return value
    if data_type == "b":
        return value in ("1", "true", "TRUE")
    return value


def _input_value(data_type: str | None, value: str | None):
    """A cached cell value as the library takes it (:func:`cached_value`, with the library's
    empty cell and error values)."""
    import schedula
    from formulas.tokens.operand import Error

    if value is None:
        return schedula.EMPTY
    if data_type == "e":
        return Error.errors.get(value, value)
    return cached_value(data_type, value)


def _stored(result) -> tuple[str, str]:
    """(data_type, value text) of a library result, as a file would store it."""
    import schedula
    from formulas.tokens.operand import XlError

    value = np.asarray(result, dtype=object)
    value = value.flat[0] if value.ndim else value.item()
    if isinstance(value, np.ndarray):
        value = value.flat[0]
    if value is schedula.EMPTY or value is None:
        return "n", "0"
    if isinstance(value, XlError):
        return "e", str(value)
    if isinstance(value, (bool, np.bool_)):
        return "b", "1" if value else "0"
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return "e", "#NUM!"
        number = float(f"{number:.15g}")  # Excel keeps 15 significant digits: 0.1+0.2 is 0.3
        if number.is_integer() and abs(number) < 2 ** 53:
            return "n", str(int(number))
        return "n", repr(number)
    if isinstance(value, str):
        return ("e", "#VALUE!") if len(value) > MAX_TEXT_CHARS else ("str", value)
    raise NotComputed(f"the result is a {type(value).__name__}")


class FormulaEvaluator:
    """Evaluates formulas of a workbook (``sheets`` by name; ``date1904``: its date system,
    ECMA-376 Part 1 §18.2.28) with the ``formulas`` library,
    each compiled once per text; a cell's inputs are the cached values of the cells it reads,
    or the values computed for them already (:attr:`computed`, by (sheet, cells-table row)).
    """

    def __init__(self, sheets: dict[str, SheetCells], date1904: bool = False,
                 max_formula_chars: int | None = None):
        import formulas  # 0.7 s to load its function set: only for files that need it

        self._parser = formulas.Parser
        self._known = frozenset(formulas.get_functions())
        self.sheets = sheets
        self.date1904 = date1904
        self.max_formula_chars = max_formula_chars
        self.compilations = 0
        self.by_upper = {name.upper(): name for name in sheets}
        self.computed: dict[tuple[str, int], tuple[str, str]] = {}
        self._compiled: dict[tuple, tuple[object, list[int] | None]] = {}

    def check(self, formula: str) -> None:
        """Raise :class:`NotComputed` for a formula the library must not or cannot compute."""
        functions = formula_functions(formula)
        if functions is None:
            raise NotComputed("the formula cannot be parsed")
        if self.max_formula_chars is not None and len(formula) >= self.max_formula_chars:
            raise NotComputed(f"its text was cut at {self.max_formula_chars:,} characters")
        if token_count(formula) > MAX_FORMULA_TOKENS:
            raise NotComputed(f"it has more than {MAX_FORMULA_TOKENS:,} tokens")
        self._bound(formula, [])  # the library folds literals as it compiles
        for name in functions:
            bare = name.removeprefix("_XLFN.").removeprefix("_XLWS.")
            if bare in SIZED_FUNCTIONS:
                raise NotComputed(f"function {bare} builds an array of the size its arguments "
                                  f"give")
            if name in VOLATILE_FUNCTIONS or bare in VOLATILE_FUNCTIONS:
                raise NotComputed(f"volatile function {bare} (its value depends on when it "
                                   f"runs)")
            if name not in self._known and bare not in self._known:
                raise NotComputed(f"function {bare} is not supported")
            if self.date1904 and bare in DATE_FUNCTIONS:
                raise NotComputed(f"date function {bare} in a workbook of the 1904 date "
                                  f"system (the evaluator counts from 1900)")

    def references(self, formula: str, sheet: str) -> list[Reference]:
        """The formula's references, each to a sheet of the workbook, else raise."""
        refs = formula_references(formula, sheet)
        for ref in refs:
            if ref.kind == "external":
                raise NotComputed("it reads another workbook (never opened)")
            if ref.kind in ("name", "sheets"):
                raise NotComputed(f"it reads {ref.text} (a defined name, table or 3-D "
                                   f"reference)")
            if ref.sheet.upper() not in self.by_upper:
                raise NotComputed(f"it reads sheet {ref.sheet!r}, which the workbook lacks")
        for text, function, compared in whole_line_uses(formula):
            bare = (function or "").removeprefix("_XLFN.")
            if compared or bare not in WHOLE_COLUMN_FUNCTIONS:
                raise NotComputed(f"it reads the whole column or row {text} in "
                                  f"{bare + '()' if bare else 'an expression'}"
                                  f"{' with a comparison' if compared else ''}, whose result "
                                  f"depends on its length")
        return refs

    def _compile(self, formula: str, sheet: str, row: int, col: int
                 ) -> tuple[object, list[int] | None]:
        """(the compiled formula, for each of its inputs the index of the formula's reference
        it reads, or ``None`` when they could not be paired). Formulas of one shape
        (:func:`~.refs.relative_shape`: ``B2*2`` in C2, ``B3*2`` in C3) share one compilation
        (its inputs read at the cell's own references); a formula asking for its own cell
        (``ROW()``) is compiled for each cell."""
        from formulas.cell import CELL
        from formulas.ranges import Ranges

        own = set(formula_functions(formula) or ()) & _CELL_FUNCTIONS
        shape = None if own else relative_shape(formula, row, col)
        key = (shape, sheet) if shape is not None else (formula, sheet, row, col)
        found = self._compiled.get(key)
        if found is None:
            if self.compilations >= MAX_COMPILED_FORMULAS:
                raise NotComputed(f"the workbook has more than {MAX_COMPILED_FORMULAS:,} "
                                  f"formulas of distinct shapes to compile")
            self.compilations += 1
            context = {"sheet": sheet.upper(), "cr": row, "cc": col}
            at = Ranges().push(f"{_quoted(sheet.upper())}!{cell_ref(row, col)}")
            fn = self._parser().ast("=" + formula, context=context)[1].compile(
                context=context, **{CELL: at})
            refs = formula_references(formula, sheet)
            written = [_place(ref) for ref in refs]
            places = [_place(parse_reference(k, sheet)) for k in fn.inputs]
            pairs = ([written.index(p) for p in places]
                     if all(p in written for p in places) else None)
            found = (fn, pairs)
            # shared only if two references reading the same cells here always do (B2 and
            # $B$2 in C2 are one input of the compiled formula, and two cells in C3)
            forms: dict[tuple, set[str]] = defaultdict(set)
            for ref in refs:
                forms[_place(ref)].add(relative_reference(ref.text, row, col))
            if pairs is not None and all(len(f) == 1 for f in forms.values()):
                self._compiled[key] = found
            elif shape is None:
                self._compiled[key] = (fn, None)
        return found

    def _read(self, ref: Reference):
        """The cells ``ref`` reads as the library's range of their values (a whole column or
        row read down to the sheet's last cell, which :meth:`references` allows only where
        that changes no result; a range as written)."""
        import schedula
        from formulas.ranges import Ranges

        if ref.first_row is None or ref.sheet.upper() not in self.by_upper:
            raise NotComputed(f"it reads {ref.text}, which cannot be resolved")
        target = self.sheets[self.by_upper[ref.sheet.upper()]]
        r1, c1, r2, c2 = ref.first_row, ref.first_col, ref.last_row, ref.last_col
        if ref.kind == "columns":
            r2 = max(min(r2, target.last_row), r1)
        elif ref.kind == "rows":
            c2 = max(min(c2, target.last_col), c1)
        if (r2 - r1 + 1) * (c2 - c1 + 1) > MAX_INPUT_CELLS:
            raise NotComputed(f"it reads {ref.text}, more than {MAX_INPUT_CELLS:,} cells")
        grid = np.empty((r2 - r1 + 1, c2 - c1 + 1), dtype=object)
        grid.fill(schedula.EMPTY)  # np.full would store a copy: the library tests identity
        for p in target.positions(r1, c1, r2, c2).tolist():
            grid[target.rows[p] - r1, target.cols[p] - c1] = self._value(target, p)
        bounds = range_ref(r1, c1, r2, c2)
        return Ranges().push(f"{_quoted(ref.sheet.upper())}!{bounds}", value=grid)

    def _value(self, sheet: SheetCells, position: int):
        done = self.computed.get((sheet.name, position))
        if done is not None:
            return _input_value(*done)
        return sheet.input_value(position)

    def evaluate(self, formula: str, sheet: str, row: int, col: int) -> tuple[str, str]:
        """(data_type, value) of ``formula`` in cell (``row``, ``col``, 1-based) of ``sheet``,
        its inputs read from the cells.

        Raises:
            NotComputed: the library fails on it (the reason names the exception's type).
        """
        try:
            fn, pairs = self._compile(formula, sheet, row, col)
            if pairs is None:
                refs = [parse_reference(key, sheet) for key in fn.inputs]
            else:
                written = formula_references(formula, sheet)
                refs = [written[i] for i in pairs]
            inputs = [self._read(ref) for ref in refs]
            self._bound(formula, inputs)
            return _stored(fn(*inputs))
        except NotComputed:
            raise
        except Exception as exc:  # the library's own failure on this formula
            raise NotComputed(f"the evaluator failed ({type(exc).__name__})") from None


    @staticmethod
    def _bound(formula: str, inputs: list) -> None:
        """Refuse, before it runs (or compiles: literals are folded then), a formula whose
        result could be far larger than its inputs (``inputs``: the ranges it reads, if known):
        ``REPT`` asked for more than :data:`MAX_REPEATED_CHARS` characters, a matrix function
        reading more than :data:`MAX_MATRIX_INPUT_CELLS` cells."""
        functions = {f.removeprefix("_XLFN.") for f in formula_functions(formula) or ()}
        if functions & MATRIX_FUNCTIONS:
            cells = sum(int(np.size(r.value)) for r in inputs)
            if cells > MAX_MATRIX_INPUT_CELLS:
                raise NotComputed(f"a matrix function reads {cells:,} cells (more than "
                                  f"{MAX_MATRIX_INPUT_CELLS:,})")
        if "REPT" in functions:
            values = [v for r in inputs for v in np.ravel(r.value)] + list(literals(formula))
            longest = max((len(v) for v in values if isinstance(v, str)), default=0)
            largest = max((abs(v) for v in values if isinstance(v, (int, float))
                           and not isinstance(v, bool)), default=0)
            if max(longest, 1) * largest > MAX_REPEATED_CHARS:
                raise NotComputed(f"REPT could build more than {MAX_REPEATED_CHARS:,} "
                                  f"characters")


def _place(ref: Reference) -> tuple:
    """What a reference reads: its sheet (any case) and bounds."""
    return ((ref.sheet or "").upper(), ref.first_row, ref.first_col, ref.last_row,
            ref.last_col)


def _quoted(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'"


#: One reason for every formula reading one that was not computed (a chain of them is one
#: issue; which cell it reads is in ``formula_refs``).
_READS_NOT_COMPUTED = "it reads a formula cell that was not computed"


def compute_uncached(sheets: list[tuple[str, pa.Table]], date1904: bool = False,
                     max_formula_chars: int | None = None,
                     stage: str = "normalized_grids") -> Computed:
    """Compute the formulas of ``sheets`` (``(sheet name, parsed cells)``, the cells as
    :data:`~extraction_assets.core.ooxml.worksheet.CELL_SCHEMA`: 1-based ``row``/``col``,
    ``data_type``, ``value``, ``formula`` without ``=``) that have no cached value;
    ``date1904``: the workbook's date system (date functions are not computed in 1904 books);
    ``max_formula_chars``: the reader's cut of a cell's text (``Limits.max_cell_chars``): a
    formula that long may have been cut and is not computed. Array formulas (``formula_kind``
    ``array``) are not computed: their values spill over a range of cells the file does not
    hold.

    Returns the computed values by sheet and ``info`` issues of ``stage``: one
    ``formulas_computed`` per sheet with computed cells, one ``formula_not_computed`` per
    (sheet, reason) naming the first cell and how many share the reason. A workbook without
    uncached formulas costs one null count per sheet.
    """
    result = Computed()
    pending: list[tuple[str, int, str]] = []
    arrays: list[tuple[str, int]] = []
    for name, cells in sheets:
        if cells.num_rows == 0:
            continue
        uncached = pc.and_(pc.is_null(cells.column("value")), pc.is_valid(cells.column("formula")))
        found = np.flatnonzero(uncached.to_numpy(zero_copy_only=False))
        if len(found):
            taken = pa.array(found)
            kinds = cells.column("formula_kind").take(taken).to_pylist()
            for p, f, kind in zip(found.tolist(), cells.column("formula").take(taken).to_pylist(),
                                  kinds):
                if kind == "array":
                    arrays.append((name, p))
                else:
                    pending.append((name, p, f))
    if not pending and not arrays:
        return result
    index = {name: SheetCells(name, cells) for name, cells in sheets}
    evaluator = FormulaEvaluator(index, date1904, max_formula_chars)
    failed: dict[tuple[str, str], list[str]] = defaultdict(list)

    def fail(sheet: str, position: int, reason: str) -> None:
        s = index[sheet]
        failed[(sheet, reason)].append(cell_ref(int(s.rows[position]), int(s.cols[position])))

    for sheet, position in arrays:
        fail(sheet, position, "array formula (its values spill over a range)")
    uncached = {(sheet, position) for sheet, position, _ in pending} | set(arrays)
    if len(pending) > MAX_COMPUTED_FORMULAS:
        for sheet, position, _ in pending[MAX_COMPUTED_FORMULAS:]:
            fail(sheet, position, f"the workbook has more than {MAX_COMPUTED_FORMULAS:,} "
                                  f"formulas without a cached value")
        pending = pending[:MAX_COMPUTED_FORMULAS]
    # dependencies among the uncached cells: a cell waits for every uncached cell it reads;
    # one reading an uncached cell that will not be computed (an array formula, one past the
    # count) is not computed either: it would read an empty cell
    node = {(sheet, position): k for k, (sheet, position, _) in enumerate(pending)}
    by_sheet: dict[str, list[int]] = defaultdict(list)
    for sheet, position in uncached:
        by_sheet[sheet].append(position)
    uncached_keys: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for sheet, positions in by_sheet.items():
        s = index[sheet]
        mine = np.array(sorted(positions), dtype=np.int64)
        keys = cell_keys(s.rows[mine], s.cols[mine])
        order = np.argsort(keys, kind="stable")
        uncached_keys[sheet] = (keys[order], s.cols[mine][order], mine[order])
    waits_for = [0] * len(pending)
    dependents: dict[int, list[int]] = defaultdict(list)
    blocked: dict[int, str] = {}
    for k, (sheet, position, formula) in enumerate(pending):
        try:
            evaluator.check(formula)
            refs = evaluator.references(formula, sheet)
        except NotComputed as reason:
            blocked[k] = str(reason)
            continue
        for ref in refs:
            target = evaluator.by_upper[ref.sheet.upper()]
            if target not in uncached_keys:
                continue
            keys, cols, positions = uncached_keys[target]
            for j in cells_in_range(keys, cols, ref.first_row, ref.first_col, ref.last_row,
                                    ref.last_col).tolist():
                source = node.get((target, int(positions[j])))
                if source is None:
                    blocked.setdefault(k, _READS_NOT_COMPUTED)
                    continue
                dependents[source].append(k)
                waits_for[k] += 1
    ready = deque(k for k in range(len(pending)) if waits_for[k] == 0)
    done: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    while ready:
        k = ready.popleft()
        sheet, position, formula = pending[k]
        if k not in blocked:
            try:
                s = index[sheet]
                data_type, value = evaluator.evaluate(formula, sheet, int(s.rows[position]),
                                                      int(s.cols[position]))
                evaluator.computed[(sheet, position)] = (data_type, value)
                done[sheet].append((position, value, data_type))
            except NotComputed as reason:
                blocked[k] = str(reason)
        for d in dependents.get(k, ()):
            if k in blocked and d not in blocked:
                blocked[d] = _READS_NOT_COMPUTED
            waits_for[d] -= 1
            if waits_for[d] == 0:
                ready.append(d)
    for k, (sheet, position, _) in enumerate(pending):
        if k in blocked:
            fail(sheet, position, blocked[k])
        elif (sheet, position) not in evaluator.computed:
            fail(sheet, position, "circular reference")
    for sheet, cells in sorted(done.items()):
        cells.sort()
        result.sheets[sheet] = SheetComputed(
            np.array([c[0] for c in cells], dtype=np.int64),
            pa.array([c[1] for c in cells], pa.string()),
            pa.array([c[2] for c in cells], pa.string()))
        result.issues.append(Issue(
            stage, sheet, None, "info", "formulas_computed",
            f"{len(cells):,} formula(s) without a cached value computed by the {EVALUATOR} "
            f"library (value_status 'computed')"))
    for (sheet, reason), refs in sorted(failed.items()):
        result.issues.append(Issue(
            stage, sheet, refs[0], "info", "formula_not_computed",
            f"{len(refs):,} formula(s) without a cached value not computed: {reason}; the "
            f"formula text is kept (first {refs[0]})"))
    return result
