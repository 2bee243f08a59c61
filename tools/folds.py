"""Folds of the labelled sets: which files rules may be tuned on, and which measure generalisation.

Each labelled set's files (DECO, Tasi, HiTab, see :mod:`tools.labelled`) are split into
:data:`N_FOLDS` folds by a hash of the file's base name (:func:`fold_of`), so the split is fixed,
needs no list to keep in step with the files, and a new file lands in a fold without moving the
others.

The protocol:

* folds :data:`LOOK_FOLDS` (0 and 1) are the **look** folds: while tuning a rule, read their
  failures, fix the kind of fault they show, and watch their scores;
* folds :data:`HELD_APART_FOLDS` (2 and 3) are **held apart**: their scores are printed, but
  nobody reads their failures while tuning (``python -m tools.evaluate`` lists them only with
  ``--show-held-apart``). A change that lifts the look folds and not the held-apart ones fits
  the files looked at and does not generalise.

The whole set's scores stay the headline; the per-fold scores show how much of it is fit.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePath

#: Number of folds each labelled set is split into.
N_FOLDS = 4
#: The folds whose failures may be read while tuning rules.
LOOK_FOLDS = (0, 1)
#: The folds whose failures nobody reads while tuning: the measure of generalisation.
HELD_APART_FOLDS = (2, 3)
#: The fold groups reported besides each single fold, in report order.
FOLD_GROUPS = {"look": LOOK_FOLDS, "held_apart": HELD_APART_FOLDS}


def fold_of(file_name: str) -> int:
    """The fold (``0 … N_FOLDS-1``) of a labelled file: its base name's SHA-256 as an integer,
    modulo :data:`N_FOLDS` (``"14.xlsx"`` and ``"hitab/files/14.xlsx"`` share a fold)."""
    name = PurePath(file_name).name
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % N_FOLDS


def fold_subsets() -> dict[str, tuple[int, ...]]:
    """The subsets of folds a report scores, by name, in report order: ``look``,
    ``held_apart``, then each fold alone (``"0"`` … ``"3"``)."""
    return {**FOLD_GROUPS, **{str(f): (f,) for f in range(N_FOLDS)}}
