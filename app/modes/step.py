"""Step-through mode (逐步): stops at every acceptance test and explains it; forward and back; replays from the seed.

The numbers shown are read straight from the StepTrace (guess, q, p, p/q, r, verdict, the residual
and the token drawn from it), so the panel cannot disagree with the run the table animates.
"""
from __future__ import annotations

import numpy as np
from imgui_bundle import imgui

from app import ui
from app.modes.base import Panel

RESIDUAL_BARS = 8


def current_explanation(app) -> dict | None:
    """The numbers of the current stop, as plain data (the panel draws these; tests compare them to the trace)."""
    run = app.session.run
    if not run or not run.points:
        return None
    pos = max(0, min(len(run.points) - 1, app.step_pos))
    pt = run.points[pos]
    tr = run.traces[pt.step]
    pair = app.session.pair()
    out = {"position": pos, "of": len(run.points), "step": pt.step, "test": pt.test, "kind": pt.kind,
           "context": pair.decode(tr.context[-6:]).replace("\n", "↵")}
    if pt.kind == "bonus":
        out.update(token=pair.display(tr.final_token), token_id=int(tr.final_token),
                   p_token=float(tr.final_row[tr.final_token]), verdict="bonus")
        return out
    i = pt.test
    g = int(tr.guesses[i])
    out.update(guess=pair.display(g), guess_id=g, q=float(tr.q_rows[i][g]), p=float(tr.p_rows[i][g]),
               ratio=float(tr.ratios[i]), r=float(tr.r[i]),
               verdict="accepted" if tr.accepted[i] else "rejected",
               draft_backed_off=bool(tr.draft_backed_off[i]), target_backed_off=bool(tr.target_backed_off[i]))
    if not tr.accepted[i]:
        res = np.maximum(0.0, tr.p_rows[i] - tr.q_rows[i])
        top = np.argsort(-res)[:RESIDUAL_BARS]
        total = res.sum()
        out.update(final_token=pair.display(tr.final_token), final_token_id=int(tr.final_token),
                   residual=[(pair.display(int(j)), float(res[j] / total if total > 0 else 0.0), int(j))
                             for j in top if res[j] > 0],
                   residual_fallback=bool(tr.residual_fallback))
    return out


class StepPanel(Panel):
    view = "bridge"
    free_play = False

    def restage(self) -> None:
        self.app.loop_timeline = False
        self.seek()

    def seek(self) -> None:
        """Hold the table at the moment of the current stop: the meter of this test filled, r drawn."""
        st, run = self.app.stage, self.app.session.ensure()
        if st is None or not run or not run.points:
            return
        pt = run.points[max(0, min(len(run.points) - 1, self.app.step_pos))]
        tl = st.timeline
        try:
            timing = tl.steps[pt.step]
            t = timing.tests[pt.test][1] if pt.kind == "test" else timing.write[1]
        except (AttributeError, IndexError):
            t = tl.step_start(pt.step)
        self.app.hold(t)

    def on_key(self, action: str) -> None:
        run = self.app.session.ensure()
        if not run or not run.points:
            return
        d = 1 if action == "next" else -1
        self.app.step_pos = max(0, min(len(run.points) - 1, self.app.step_pos + d))
        self.seek()

    def draw(self) -> None:
        app, t = self.app, self.app.t
        c = app.colors
        ui.begin_panel("##step", ui.panel_rect(app))
        ex = current_explanation(app)
        if ex is None:
            ui.wrapped(app.session.error or t("step.no_run"))
            imgui.end()
            return
        if imgui.button(" ◀ "):
            self.on_key("prev")
        imgui.same_line()
        if imgui.button(" ▶ "):
            self.on_key("next")
        imgui.same_line()
        ui.heading(app, t("step.title", step=ex["step"] + 1, test=ex["test"] + 1, pos=ex["position"] + 1,
                          of=ex["of"]))
        imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.context", context=ex["context"]))
        imgui.separator()
        if ex["kind"] == "bonus":
            imgui.push_font(None, app.font_size * 1.2)
            ui.wrapped(t("step.bonus", token=ex["token"], p=f"{ex['p_token']:.4f}"))
            imgui.pop_font()
            imgui.end()
            return
        imgui.push_font(None, app.font_size * 1.6)
        imgui.text(t("step.guess"))
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*c["accent"]), ex["guess"])
        imgui.pop_font()
        ui.facts_table(app, [
            (t("step.q"), f"{ex['q']:.4f}" + (" *" if ex["draft_backed_off"] else "")),
            (t("step.p"), f"{ex['p']:.4f}" + (" *" if ex["target_backed_off"] else "")),
            (t("step.ratio"), f"{ex['ratio']:.4f}"),
            (t("step.r"), f"{ex['r']:.4f}"),
        ])
        if ex["draft_backed_off"] or ex["target_backed_off"]:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.backed_off"))
        # The meter: copper column p/q (full scale 1) and the red line at r.
        self.meter(ex["ratio"], ex["r"])
        ok = ex["verdict"] == "accepted"
        imgui.push_font(None, app.font_size * 1.3)
        imgui.text_colored(imgui.ImVec4(*(c["ok"] if ok else c["reject"])),
                           t("step.accepted" if ok else "step.rejected", r=f"{ex['r']:.3f}", ratio=f"{min(ex['ratio'], 1):.3f}"))
        imgui.pop_font()
        if ex["ratio"] >= 1.0:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.always"))
        if not ok:
            later = app.session.run.traces[ex["step"]].gamma - ex["test"] - 1
            if later > 0:
                ui.wrapped(t("step.discarded", n=later))
            ui.wrapped(t("step.residual", token=ex["final_token"]))
            w = imgui.get_content_region_avail().x
            ui.bars(app, ex["residual"], w, app.font_size * 1.35 * len(ex["residual"]),
                    highlight=ex["final_token_id"], color=c["target"])
            if ex.get("residual_fallback"):
                imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.fallback"))
        imgui.end()

    def meter(self, ratio: float, r: float) -> None:
        app = self.app
        dl = imgui.get_window_draw_list()
        x0, y0 = imgui.get_cursor_screen_pos()
        w = imgui.get_content_region_avail().x
        h = app.font_size * 1.6
        from app.palette import u32
        dl.add_rect_filled((x0, y0), (x0 + w, y0 + h), u32((0.2, 0.2, 0.2, 1)))
        dl.add_rect_filled((x0, y0), (x0 + w * min(ratio, 1.0), y0 + h), u32(app.colors["accent"]))
        xr = x0 + w * r
        dl.add_line((xr, y0 - 4), (xr, y0 + h + 4), u32(app.colors["reject"]), 4.0)
        dl.add_text((x0 + 4, y0 + h + 2), u32(app.colors["muted"]), "0")
        dl.add_text((x0 + w - app.font_size * 0.8, y0 + h + 2), u32(app.colors["muted"]), "1")
        imgui.dummy((w, h + app.font_size * 1.2))
