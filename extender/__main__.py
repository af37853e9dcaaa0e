"""`python -m extender` is the `gangplank` command."""

from extender.cli import main

raise SystemExit(main())
