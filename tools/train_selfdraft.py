#!/usr/bin/env python3
"""Train Medusa's heads and EAGLE's drafter on the shipped neural target (the code is models/llm/train_selfdraft.py):

    python tools/train_selfdraft.py --corpus ../shared/corpus/nahan --out assets/models/nahan-selfdraft
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # run as a script: the checkout, not installed

from models.llm.train_selfdraft import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
