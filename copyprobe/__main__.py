"""``python -m copyprobe``: the same command line as the ``copyprobe`` script."""

from copyprobe.cli import main

raise SystemExit(main())
