#!/usr/bin/env python3
"""Train the 《呐喊》 neural pair (the code is models/llm/train.py, beside the model it trains):

    python tools/train_pair.py --corpus ../shared/corpus/nahan --out assets/models
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # run as a script: the checkout, not installed

from models.llm.train import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
