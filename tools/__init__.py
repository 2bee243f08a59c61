"""Tools for developers, not installed with the package: segmentation and retrieval
evaluations, the display-text check against Excel's exports, the corpus sweep, the benchmark
and the output comparison. Run from the repo root, e.g. ``python -m tools.evaluate``."""
