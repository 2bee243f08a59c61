"""``python -m extraction_assets.bench``: see :mod:`extraction_assets.bench.main`."""

from .main import app

app(prog_name="python -m extraction_assets.bench")
