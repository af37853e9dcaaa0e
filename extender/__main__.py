"""`python -m extender` is the `gangplank` command."""

from extender.cli.main import main

raise SystemExit(main())
