"""The drafter comparison: its data (every drafter on the same prompts) and its plot (tokens per pass against lanes
per pass), drawn with matplotlib Agg in both languages."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def points():
    from models.drafter_analytics import compare_drafters
    from models.ngram import NGramPair
    from models.sampler import SamplerSettings
    pair = NGramPair.load()
    return compare_drafters(pair, SamplerSettings(gamma=3, seed=2), ["孔乙", "我"], 120)


def test_comparison_runs_every_drafter_on_the_same_prompts(points):
    names = [pt["drafter"] for pt in points]
    assert names == ["chain", "lookup", "heads", "tree", "tree", "tree"]
    chain, lookup, heads, tree2, tree3, tree_h = points
    assert chain["lanes_per_pass"] == heads["lanes_per_pass"] == 4
    assert 1 <= lookup["lanes_per_pass"] <= 4
    assert tree2["lanes_per_pass"] == 2 + 4 + 8 + 1 and tree3["lanes_per_pass"] == 3 + 9 + 27 + 1
    for pt in points:
        assert pt["tokens"] >= 240 and 1 <= pt["tokens_per_pass"] <= 4
        assert pt["tokens_per_pass"] == pytest.approx(pt["tokens"] / pt["passes"])
    # more candidates per position fill more positions (same prompts, same seed)
    assert tree3["alpha_per_position"] > chain["alpha_per_position"]


def test_drafters_plot_draws_the_data_in_both_languages(points, tmp_path):
    from app import plots
    from app.i18n import Strings
    from app.palette import colors
    from scenes.fonts import font_path
    plots.use_font(str(font_path()))
    for lang in ("zh", "en"):
        t = Strings(lang)
        fig = plots.drafters_plot(t, colors("default"), points, 3, "h100-sxm")
        ax = fig.axes[0]
        drawn = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in ax.get_lines()[1:1 + len(points)]]
        assert drawn == [(pt["lanes_per_pass"], pt["tokens_per_pass"]) for pt in points]
        labels = [tx.get_text() for tx in ax.get_legend().get_texts()]
        assert labels[0] == t("plot.target_alone") and len(labels) == len(points) + 2
        assert all(f"{pt['speedup_model']:.2f}" in lab for pt, lab in zip(points, labels[1:]))
        assert any(lab.startswith(t("drafter.tree", widths="3×3", base=t("drafter.chain"))) for lab in labels)
        out = plots.save_figure(fig, tmp_path / f"drafters-{lang}.png")
        rgba = plots.figure_rgba(fig)
        assert out.stat().st_size > 10_000 and rgba.shape[2] == 4
        assert len(np.unique(rgba[..., :3].reshape(-1, 3), axis=0)) > 50      # drawn, not blank
        plots.close(fig)
