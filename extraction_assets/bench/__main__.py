"""``python -m extraction_assets.bench``: see :mod:`extraction_assets.bench.main`."""

from extraction_assets.bench.main import app

if __name__ == "__main__":  # not when a measuring process is spawned
    app(prog_name="python -m extraction_assets.bench")
