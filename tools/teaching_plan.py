"""Rewrite docs/TEACHING.md's lesson-plan table from the shipped lesson file (its notes' numbers filled by the
screen's own code). tests/test_app_lesson.py fails when the two differ; run this after changing either.

    .venv/bin/python tools/teaching_plan.py
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from app.lesson import prepared as lesson
    from app.lesson.plan import plan_markdown
    doc = ROOT / "docs" / "TEACHING.md"
    text = doc.read_text(encoding="utf-8")
    plan = plan_markdown(lesson.load_lesson("45-minutes"), "en")
    new, n = re.subn(r"(<!-- lesson-plan: [^>]*-->\n)(.*?)(<!-- /lesson-plan -->)",
                     lambda m: m.group(1) + plan + m.group(3), text, flags=re.S)
    if n != 1:
        print("docs/TEACHING.md has no lesson-plan block", file=sys.stderr)
        return 1
    from corpus.atomic import write_text_atomic
    write_text_atomic(doc, new)
    print("docs/TEACHING.md: plan rewritten" if new != text else "docs/TEACHING.md: plan unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
