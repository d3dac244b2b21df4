"""`python -m app.cli` is the same as the `spectable` console script (and `python -m app`)."""
from app.cli import main

raise SystemExit(main())
