"""Where the shared material of the workplace is: the corpus, the labelled sets, the cases.

Each folder is found, in order, by an explicit path, by its environment variable, or next to
the checkout (``<repo>/../shared/<name>``)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The environment variable of each shared folder.
ENV = {"corpus": "EXTRACTION_ASSETS_CORPUS", "labelled": "EXTRACTION_ASSETS_LABELLED",
       "cases": "EXTRACTION_ASSETS_CASES"}


def shared_dir(name: str | None = None, path: str | os.PathLike | None = None) -> Path:
    """The shared folder ``name`` (``corpus``, ``labelled``, ``cases``; ``None``: the folder
    holding them, ``$EXTRACTION_ASSETS_SHARED`` or ``<repo>/../shared``): ``path`` when given,
    else the folder's environment variable (:data:`ENV`), else ``<shared>/<name>``.

    Raises:
        KeyError: ``name`` is not one of :data:`ENV`.
    """
    if path:
        return Path(path)
    root = Path(os.environ.get("EXTRACTION_ASSETS_SHARED") or REPO.parent / "shared")
    if name is None:
        return root
    return Path(os.environ.get(ENV[name]) or root / name)
