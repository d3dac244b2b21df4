"""Step-through mode (逐步): stops at every acceptance test and explains it; forward and back; replays from the seed.

The numbers shown are read straight from the StepTrace (guess, q, p, p/q, r, verdict, the residual
and the token drawn from it), so the panel cannot disagree with the run the table animates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui

from app import ui
from app.lesson.measured import fmt_prob
from app.modes.base import Panel
from models.drafters import COPY, HEADS, TREE, kind_of
from models.trace import medusa_number
from app.palette import u32

RESIDUAL_BARS = 6


@dataclass(frozen=True)
class Stop:
    """One stop of the step-through: acceptance test i of target pass k (a tree: its i-th check, in the bridge's
    order), the pass's bonus token, or a plain pass (lookup found nothing to copy: the target writes one token)."""
    step: int
    test: int            # index of the test (a chain: the guess; a tree: the check); == gamma for the bonus stop
    kind: str            # 'test' | 'bonus' | 'plain'


def stops(run) -> list[Stop]:
    """Every acceptance test the run made, in order, and each pass's bonus token when all its guesses passed."""
    out = []
    for k, tr in enumerate(run.traces):
        if tr.tree is not None:
            out.extend(Stop(k, j, "test") for j in range(len(tr.tree.checks)))
            if tr.final_kind == "bonus":
                out.append(Stop(k, len(tr.tree.checks), "bonus"))
            continue
        if not tr.guesses and tr.extra.get("sampler") != "target":   # a drafter that found nothing to propose
            out.append(Stop(k, 0, "plain"))
            continue
        out.extend(Stop(k, i, "test") for i in range(tr.tested))
        if tr.n_accepted == tr.gamma:
            out.append(Stop(k, tr.gamma, "bonus"))
    return out


def num(x: float) -> str:
    """A probability or ratio as the tour writes one (app.lesson.measured.fmt_prob)."""
    return fmt_prob(x)


def top_entries(pair, row, n: int = RESIDUAL_BARS) -> list:
    """[(token, share, id)] of a row's largest entries (ties by id), positive ones only."""
    row = np.asarray(row, dtype=np.float64)
    top = np.argsort(-row, kind="stable")[:n]
    return [(pair.display(int(j)), float(row[j]), int(j)) for j in top if row[j] > 0]


def explain(run, pair, stop: Stop) -> dict:
    """The numbers of one stop, as plain data read straight from the trace (the panel draws these; tests compare
    them to the trace). A rejection's residual is the trace's own final_row, the row its token was drawn from (a
    tree: the running target after that round, norm(max(0, p_i − q_i)), which the next candidate meets)."""
    tr = run.traces[stop.step]
    dk = kind_of(tr.drafter)
    out = {"step": stop.step, "test": stop.test, "kind": stop.kind, "drafter": tr.drafter, "look": dk.look,
           "words": {w: dk.word(w, f"step.{w}") for w in ("guess", "q", "residual")},
           "context": pair.decode(tr.context[-6:]).replace("\n", "↵")}
    if dk.look == COPY:
        out.update(_lookup_fields(pair, tr))
    if stop.kind in ("bonus", "plain"):
        out.update(token=pair.display(tr.final_token), token_id=int(tr.final_token),
                   p_token=float(tr.final_row[tr.final_token]), verdict=stop.kind)
        if tr.tree is not None:
            out.update(_tree_position(pair, tr, tr.tree.accepted_path[-1] if tr.tree.accepted_path else -1))
        return out
    if tr.tree is not None:
        out.update(_tree_check(pair, tr, stop.test))
        return out
    i = stop.test
    g = int(tr.guesses[i])
    out.update(guess=pair.display(g), guess_id=g, q=float(tr.q_rows[i][g]), p=float(tr.p_rows[i][g]),
               ratio=float(tr.ratios[i]), r=float(tr.r[i]),
               verdict="accepted" if tr.accepted[i] else "rejected",
               draft_backed_off=bool(tr.draft_backed_off[i]), target_backed_off=bool(tr.target_backed_off[i]))
    if tr.heads:
        # Extra head k (as Medusa numbers them) proposes the k-th token after the target's own last one.
        out.update(head=medusa_number(tr.heads[i]), features=pair.decode(tr.context[:-1][-2:]).replace("\n", "↵"))
    if not tr.accepted[i]:
        out.update(final_token=pair.display(tr.final_token), final_token_id=int(tr.final_token),
                   residual=top_entries(pair, tr.final_row), residual_fallback=bool(tr.residual_fallback))
    return out


def _lookup_fields(pair, tr) -> dict:
    """Where lookup copied from: the earlier occurrence of the text's last n tokens and what followed it."""
    span = tr.source_span
    if not span:
        return {"source_span": None}
    text = lambda a, b: pair.decode(tr.context[a:b]).replace("\n", "↵")  # noqa: E731
    return {"source_span": {"ngram": int(span["ngram"]), "match": list(span["match"]), "copy": list(span["copy"]),
                            "matched": text(*span["match"]), "copied": text(*span["copy"])}}


def _path_text(pair, tree, node: int) -> str:
    toks = []
    while node >= 0:
        toks.append(pair.display(tree.nodes[node].token))
        node = tree.nodes[node].parent
    return "".join(reversed(toks))


def _tree_position(pair, tr, parent: int) -> dict:
    """The candidates a tree offers after `parent` (-1: the context), in the order they were drawn."""
    tree = tr.tree
    verdicts = {c.node: ("accepted" if c.accepted else "rejected") for c in tree.checks}
    kids = tree.children(parent)
    return {"path": _path_text(pair, tree, parent),
            "candidates": [{"node": n, "token": pair.display(tree.nodes[n].token), "token_id": int(tree.nodes[n].token),
                            "verdict": verdicts.get(n, "untested")} for n in kids],
            "nodes": len(tree.nodes), "lanes_lit": int(tree.lanes_lit), "widths": list(tree.widths),
            "tree_from": tree.base, "sampling": tree.sampling}


def _tree_check(pair, tr, j: int) -> dict:
    """One round of the multi-candidate rule: the candidate, the running target it meets (p at the first round,
    the residual after each rejection), p(x), q(x), ratio, r, the verdict and, on a rejection, the residual the
    next candidate meets (or, when none is left, the row the replacement is drawn from)."""
    tree = tr.tree
    c = tree.checks[j]
    nd = tree.nodes[c.node]
    out = _tree_position(pair, tr, nd.parent)
    out.update(node=int(c.node), depth=int(nd.depth), round=int(c.round), rounds=len(out["candidates"]),
               guess=pair.display(nd.token), guess_id=int(nd.token), q=float(c.q_x), p=float(c.p_x),
               ratio=float(c.ratio), r=float(c.r), verdict="accepted" if c.accepted else "rejected",
               draft_backed_off=bool(nd.backed_off),
               target_backed_off=bool(tree.target_backed_off[0 if nd.parent < 0 else 1 + nd.parent]),
               target=top_entries(pair, tree.target_rows[c.target_row]), target_is_residual=c.round > 1)
    if nd.head is not None:
        out["head"] = medusa_number(nd.head)
    # i.i.d. siblings can repeat a token already rejected here: the residual holds 0 for it, a sure rejection
    earlier = [k + 1 for k, cand in enumerate(out["candidates"][:c.round - 1]) if cand["token_id"] == nd.token]
    if earlier:
        out["repeat_of"] = earlier[0]
    if not c.accepted:
        last = c.round == out["rounds"]
        out.update(residual=top_entries(pair, tree.target_rows[c.residual_row]), residual_fallback=bool(c.fallback),
                   position_exhausted=last)
        if last:
            out.update(final_token=pair.display(tr.final_token), final_token_id=int(tr.final_token))
    else:
        out["next_candidates"] = len(tree.children(c.node))
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
        tree = ex["look"] == TREE
        if tree and ex["kind"] == "test":
            ui.heading(scr, t("step.tree_title", step=ex["step"] + 1, depth=ex["depth"], round=ex["round"],
                              rounds=ex["rounds"], pos=ex["position"] + 1, of=ex["of"]))
        else:
            ui.heading(scr, t("step.title", step=ex["step"] + 1, test=ex["test"] + 1, pos=ex["position"] + 1,
                              of=ex["of"]))
        imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.context", context=ex["context"]))
        self.drafter_lines(scr, ex)
        imgui.separator()
        if ex["kind"] in ("bonus", "plain"):
            ui.push_font(scr, 1.2)
            key = "step.plain" if ex["kind"] == "plain" else ("step.tree_bonus" if tree else "step.bonus")
            ui.wrapped(t(key, token=ex["token"], p=f"{ex['p_token']:.4f}"))
            ui.pop_font()
            imgui.end()
            return
        if tree:
            self.candidates(scr, ex)
        ui.push_font(scr, 1.35)
        words = ex["words"]
        if "head" in ex and ex["look"] == HEADS:
            imgui.text(t(words["guess"], head=ex["head"]))
        else:        # a drafter's own words may name the guess's place in its run ({k}: EAGLE's step)
            imgui.text(t(words["guess"] if ex["look"] != HEADS else "step.guess", k=ex["test"] + 1))
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*c["accent"]), ex["guess"])
        ui.pop_font()
        ui.facts_table(scr, [
            (t(words["q"]),
             num(ex["q"]) + (" *" if ex["draft_backed_off"] else "")),
            (t("step.p_running" if ex.get("target_is_residual") else "step.p"),
             num(ex["p"]) + (" *" if ex["target_backed_off"] else "")),
            (t("step.ratio"), num(ex["ratio"])),
            (t("step.r"), num(ex["r"])),
        ])
        if ex["draft_backed_off"] or ex["target_backed_off"]:
            ui.wrapped(t("step.backed_off"), c["muted"])     # a panel-wide footnote: never cut off
        # The meter: copper column p/q (full scale 1) and the red line at r.
        self.meter(scr, ex["ratio"], ex["r"])
        ok = ex["verdict"] == "accepted"
        ui.push_font(scr, 1.3)
        imgui.text_colored(imgui.ImVec4(*(c["ok"] if ok else c["reject"])),
                           t("step.accepted" if ok else "step.rejected", r=num(ex["r"]), ratio=num(min(ex["ratio"], 1))))
        ui.pop_font()
        if ex["ratio"] >= 1.0:
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.always"))
        w = imgui.get_content_region_avail().x
        if tree:
            self.tree_verdict(scr, ex, w)
        elif not ok:
            later = ctl.session.run.traces[ex["step"]].gamma - ex["test"] - 1
            if later > 0:
                ui.wrapped(t("step.discarded", n=later))
            ui.wrapped(t(words["residual"],
                         token=ex["final_token"], guess=ex["guess"]))
            ui.bars(scr, ex["residual"], w, scr.font_size * 1.35 * len(ex["residual"]),
                    highlight=ex["final_token_id"], color=c["target"])
            if ex.get("residual_fallback"):
                imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.fallback"))
        imgui.end()

    def drafter_lines(self, scr, ex) -> None:
        """Who proposed this guess and what that means for the rule (lookup's one-hot q, the head, the tree)."""
        t, c = self.ctl.t, self.ctl.colors
        look = ex["look"]
        if look == COPY:
            span = ex.get("source_span")
            if span:
                a, b = span["match"][0] + 1, span["match"][1]
                ui.wrapped(t("step.lookup_source", n=span["ngram"], matched=span["matched"],
                             where=f"{a}" if a == b else f"{a}–{b}", copied=span["copied"]), c["muted"])
                if ex["kind"] == "test":
                    ui.wrapped(t("step.lookup_rule"), c["muted"])
        elif look == HEADS and "head" in ex:
            ui.wrapped(t("step.head", head=ex["head"], features=ex.get("features", "")), c["muted"])
        elif look == TREE and "nodes" in ex:
            ui.wrapped(t("step.tree_lanes", nodes=ex["nodes"], lanes=ex["lanes_lit"],
                         base=t(f"lab.tree_from_{ex['tree_from']}"), sampling=t(f"lab.sampling_{ex['sampling']}")),
                       c["muted"])
            if "head" in ex:
                ui.wrapped(t("step.tree_head", head=ex["head"]), c["muted"])

    def candidates(self, scr, ex) -> None:
        """The candidates at this position in the order they are tried, each with its verdict so far."""
        t, c = self.ctl.t, self.ctl.colors
        ui.wrapped(t("step.tree_path", path=ex["path"] or "…"), c["muted"])
        ui.push_font(scr, 1.3)
        for k, cand in enumerate(ex["candidates"]):
            if k:
                imgui.same_line()
            shown = cand["verdict"] if k + 1 < ex["round"] else ("now" if k + 1 == ex["round"] else "untested")
            col = {"rejected": c["reject"], "accepted": c["ok"], "now": c["accent"]}.get(shown, c["muted"])
            mark = {"rejected": "✗", "accepted": "✓", "now": "?"}.get(shown, "·")
            imgui.text_colored(imgui.ImVec4(*col), f"{k + 1}. {cand['token']} {mark}")
        ui.pop_font()

    def tree_verdict(self, scr, ex, w) -> None:
        """What the round's verdict does next: the residual the next candidate meets, the replacement, or the
        kept candidate's children; and the running target this round met."""
        t, c = self.ctl.t, self.ctl.colors
        if "repeat_of" in ex:
            ui.wrapped(t("step.tree_repeat", k=ex["repeat_of"], guess=ex["guess"]), c["muted"])
        if ex["verdict"] == "accepted":
            n = ex.get("next_candidates", 0)
            ui.wrapped(t("step.tree_kept", n=n) if n else t("step.tree_leaf"))
        elif ex.get("position_exhausted"):
            ui.wrapped(t("step.tree_exhausted", token=ex["final_token"]))
            ui.bars(scr, ex["residual"], w, scr.font_size * 1.2 * len(ex["residual"]),
                    highlight=ex["final_token_id"], color=c["target"])
        else:
            ui.wrapped(t("step.tree_next", guess=ex["guess"]))
            ui.bars(scr, ex["residual"], w, scr.font_size * 1.2 * len(ex["residual"]), color=c["target"])
        if ex.get("residual_fallback"):
            imgui.text_colored(imgui.ImVec4(*c["muted"]), t("step.fallback"))

    def meter(self, scr, ratio: float, r: float) -> None:
        c = self.ctl.colors
        dl = imgui.get_window_draw_list()
        x0, y0 = imgui.get_cursor_screen_pos()
        w = imgui.get_content_region_avail().x
        h = scr.font_size * 1.6
        dl.add_rect_filled((x0, y0), (x0 + w, y0 + h), u32((0.2, 0.2, 0.2, 1)))
        dl.add_rect_filled((x0, y0), (x0 + w * min(ratio, 1.0), y0 + h), u32(c["accent"]))
        xr = x0 + w * r
        dl.add_line((xr, y0 - 4), (xr, y0 + h + 4), u32(c["reject"]), 4.0)
        dl.add_text((x0 + 4, y0 + h + 2), u32(c["muted"]), "0")
        dl.add_text((x0 + w - scr.font_size * 0.8, y0 + h + 2), u32(c["muted"]), "1")
        imgui.dummy((w, h + scr.font_size * 1.2))
