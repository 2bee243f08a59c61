"""``python -m tools.evaluate``: see :func:`tools.evaluate.runs.main`."""

import sys

from tools.evaluate.runs import main

sys.exit(main())
