"""`python -m app` is the same as the `spectable` console script."""
from app.cli import main

raise SystemExit(main())
