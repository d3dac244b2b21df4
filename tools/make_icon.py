"""Make the window's icon (assets/icon.png) from the table itself: the big drum, rendered headless.

    python tools/make_icon.py          # writes assets/icon.png (64 x 64) and assets/icon-256.png

The icon is rendered by the same scene code the program draws (scenes.stage.Stage, EGL), with the labels and
the HUD off, on a transparent-free dark square; rerun it if the drum's look changes.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from PIL import Image

    from models.ngram import NGramPair
    from models.sampler import SamplerSettings, SpeculativeSampler
    from scenes.camera import VIEWS, CameraPose
    from scenes.offscreen import Offscreen, headless_context
    from scenes.stage import Stage

    pair = NGramPair.load()
    sampler = SpeculativeSampler(pair, SamplerSettings(seed=0))
    sampler.reset(pair.encode("孔乙己"))
    ctx = headless_context()
    stage = Stage(ctx)
    stage.set_run(pair, [sampler.step()])
    stage.show_labels = stage.show_hud = False
    stage.samples = 4
    from scenes.layout import PARTS
    stage.hidden = set(PARTS) - {"bigdrum"}
    # The drum from the front and a little from above: the brass rims and the pins read at 64 px.
    VIEWS["icon"] = CameraPose((0.9, 4.6, 3.2), (-1.75, 2.15, -2.4), 25.0)
    stage.set_view("icon")
    size = 512
    off = Offscreen(ctx, size, size)
    stage.timeline.seek(0.0)
    stage.render(off.fbo, size, size)
    img = Image.fromarray(off.read()).convert("RGB")
    off.release()
    stage.release()
    big = img.resize((256, 256), Image.LANCZOS)
    big.save(ROOT / "assets" / "icon-256.png", optimize=True)
    big.resize((64, 64), Image.LANCZOS).save(ROOT / "assets" / "icon.png", optimize=True)
    print("wrote assets/icon.png and assets/icon-256.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
