"""``python -m tools.bench``: see :mod:`tools.bench.main`."""

from tools.bench.main import app

if __name__ == "__main__":  # not when a measuring process is spawned
    app(prog_name="python -m tools.bench")
