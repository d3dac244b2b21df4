"""Step-through mode (逐步): stops at every acceptance test and explains it; forward and back; replays from the seed.

The numbers shown are read straight from the StepTrace (guess, q, p, p/q, r, verdict, the residual
and the token drawn from it), so the panel cannot disagree with the run the table animates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui

from app import ui
from app.modes.base import Panel

RESIDUAL_BARS = 6


@dataclass(frozen=True)
class Stop:
    """One stop of the step-through: acceptance test i of target pass k, or the pass's bonus token."""
    step: int
    test: int            # index of the guess tested; == gamma for the bonus stop
    kind: str            # 'test' | 'bonus'


def stops(run) -> list[Stop]:
    """Every acceptance test the run made, in order, and each pass's bonus token when all its guesses passed."""
    out = []
    for k, tr in enumerate(run.traces):
        out.extend(Stop(k, i, "test") for i in range(tr.tested))
        if tr.n_accepted == tr.gamma:
            out.append(Stop(k, tr.gamma, "bonus"))
    return out


def explain(run, pair, stop: Stop) -> dict:
    """The numbers of one stop, as plain data read straight from the trace (the panel draws these; tests compare
    them to the trace). A rejection's residual is the trace's own final_row, the row its token was drawn from."""
    tr = run.traces[stop.step]
    out = {"step": stop.step, "test": stop.test, "kind": stop.kind,
           "context": pair.decode(tr.context[-6:]).replace("\n", "↵")}
    if stop.kind == "bonus":
        out.update(token=pair.display(tr.final_token), token_id=int(tr.final_token),
                   p_token=float(tr.final_row[tr.final_token]), verdict="bonus")
        return out
    i = stop.test
    g = int(tr.guesses[i])
    out.update(guess=pair.display(g), guess_id=g, q=float(tr.q_rows[i][g]), p=float(tr.p_rows[i][g]),
               ratio=float(tr.ratios[i]), r=float(tr.r[i]),
               verdict="accepted" if tr.accepted[i] else "rejected",
               draft_backed_off=bool(tr.draft_backed_off[i]), target_backed_off=bool(tr.target_backed_off[i]))
    if not tr.accepted[i]:
        row = np.asarray(tr.final_row, dtype=np.float64)
        top = np.argsort(-row)[:RESIDUAL_BARS]
        out.update(final_token=pair.display(tr.final_token), final_token_id=int(tr.final_token),
                   residual=[(pair.display(int(j)), float(row[j]), int(j)) for j in top if row[j] > 0],
                   residual_fallback=bool(tr.residual_fallback))
    return out


class StepPanel(Panel):
    view = "bridge"
    free_play = False

    def __init__(self, ctl, driver):
        super().__init__(ctl, driver)
        self._stops: tuple = (None, [])      # (run, its stops): rebuilt when the run is replaced

    def stops(self) -> list[Stop]:
        run = self.ctl.session.ensure()
        if run is None:
            return []
        if self._stops[0] is not run:
            self._stops = (run, stops(run))
        return self._stops[1]

    def current(self) -> Stop | None:
        st = self.stops()
        return st[max(0, min(len(st) - 1, self.ctl.step_pos))] if st else None

    def explanation(self) -> dict | None:
        """The current stop's numbers with its position ('position', 'of'), or None without a run."""
        st = self.stops()
        if not st:
            return None
        pos = max(0, min(len(st) - 1, self.ctl.step_pos))
        out = {"position": pos, "of": len(st)}
        out.update(explain(self.ctl.session.run, self.ctl.session.pair(), st[pos]))
        return out

    def restage(self) -> None:
        self.driver.loop = False
        self.seek()

    def seek(self) -> None:
        """Hold the table at the moment of the current stop: the meter of this test filled, r drawn."""
        tl, stop = self.driver.timeline, self.current()
        if tl is None or stop is None:
            return
        if not self.driver.shows_current_run():     # the table has the previous run: sync's restage places it
            self.driver.hold(0.0)
            return
        timing = tl.steps[stop.step]
        self.driver.hold(timing.tests[stop.test][1] if stop.kind == "test" else timing.write[1])

    def on_key(self, action: str) -> None:
        st = self.stops()
        if not st:
            return
        d = 1 if action == "next" else -1
        self.ctl.step_pos = max(0, min(len(st) - 1, self.ctl.step_pos + d))
        self.seek()

    def draw(self, scr) -> None:
        ctl, t = self.ctl, self.ctl.t
        c = ctl.colors
        ui.begin_panel("##step", ui.panel_rect(scr))
        ex = self.explanation()
        if ex is None:
            ui.wrapped(ctl.session.error or t("step.no_run"))
            imgui.end()
            return
        if imgui.button(" ◀ "):
            self.on_key("prev")
        imgui.same_line()
        if imgui.button(" ▶ "):
            self.on_key("next")
        imgui.same_line()
        ui.heading(scr, t("step.title", step=ex["step"] + 1, test=ex["test"] + 1, pos=ex["position"] + 1,
                          of=ex["of"]))
        imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.context", context=ex["context"]))
        imgui.separator()
        if ex["kind"] == "bonus":
            ui.push_font(scr, 1.2)
            ui.wrapped(t("step.bonus", token=ex["token"], p=f"{ex['p_token']:.4f}"))
            ui.pop_font()
            imgui.end()
            return
        ui.push_font(scr, 1.35)
        imgui.text(t("step.guess"))
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*c["accent"]), ex["guess"])
        ui.pop_font()
        ui.facts_table(scr, [
            (t("step.q"), f"{ex['q']:.4f}" + (" *" if ex["draft_backed_off"] else "")),
            (t("step.p"), f"{ex['p']:.4f}" + (" *" if ex["target_backed_off"] else "")),
            (t("step.ratio"), f"{ex['ratio']:.4f}"),
            (t("step.r"), f"{ex['r']:.4f}"),
        ])
        if ex["draft_backed_off"] or ex["target_backed_off"]:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.backed_off"))
        # The meter: copper column p/q (full scale 1) and the red line at r.
        self.meter(scr, ex["ratio"], ex["r"])
        ok = ex["verdict"] == "accepted"
        ui.push_font(scr, 1.3)
        imgui.text_colored(imgui.ImVec4(*(c["ok"] if ok else c["reject"])),
                           t("step.accepted" if ok else "step.rejected", r=f"{ex['r']:.3f}", ratio=f"{min(ex['ratio'], 1):.3f}"))
        ui.pop_font()
        if ex["ratio"] >= 1.0:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.always"))
        if not ok:
            later = ctl.session.run.traces[ex["step"]].gamma - ex["test"] - 1
            if later > 0:
                ui.wrapped(t("step.discarded", n=later))
            ui.wrapped(t("step.residual", token=ex["final_token"]))
            w = imgui.get_content_region_avail().x
            ui.bars(scr, ex["residual"], w, scr.font_size * 1.35 * len(ex["residual"]),
                    highlight=ex["final_token_id"], color=c["target"])
            if ex.get("residual_fallback"):
                imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.fallback"))
        imgui.end()

    def meter(self, scr, ratio: float, r: float) -> None:
        c = self.ctl.colors
        dl = imgui.get_window_draw_list()
        x0, y0 = imgui.get_cursor_screen_pos()
        w = imgui.get_content_region_avail().x
        h = scr.font_size * 1.6
        from app.palette import u32
        dl.add_rect_filled((x0, y0), (x0 + w, y0 + h), u32((0.2, 0.2, 0.2, 1)))
        dl.add_rect_filled((x0, y0), (x0 + w * min(ratio, 1.0), y0 + h), u32(c["accent"]))
        xr = x0 + w * r
        dl.add_line((xr, y0 - 4), (xr, y0 + h + 4), u32(c["reject"]), 4.0)
        dl.add_text((x0 + 4, y0 + h + 2), u32(c["muted"]), "0")
        dl.add_text((x0 + w - scr.font_size * 0.8, y0 + h + 2), u32(c["muted"]), "1")
        imgui.dummy((w, h + scr.font_size * 1.2))
