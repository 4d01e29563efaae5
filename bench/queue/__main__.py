"""``python -m bench.queue``: citerun's queue against pgqueuer and procrastinate."""

import sys

from bench.queue.compare import main

sys.exit(main())
