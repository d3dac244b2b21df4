"""Where a time t falls in one pass's named spans, part by part: the test tubes, the phase, the drums, the tape's
cells and view, lookup's source, the heads' lamps, a guess tree, the meters, the pencil cart, the typing head and
the KV cabinet. PartMotion is a mixin of scenes.timeline.Timeline: it reads the timeline's steps, traces,
timing, tube_rounds, steps_end and reduced_motion."""
from __future__ import annotations

import math

from models.drafters import HEADS, kind_of
from models.trace import medusa_number
from scenes.layout import TAPE_X, tree_margin, window
from scenes.scene_state import MeterState, StepTiming, TapeCell, TreeNodeState, TreeState

TAPE_HISTORY = 40      # tokens behind the writing window kept in the state (more than the tape shows)
GLIDE = 0.3           # seconds the typing head takes from its rest to below the first cell it strikes
STRIKE_SHARE = 0.6    # of the last token's time, the strike's; the rest the head's way back to its rest


def _ramp(t: float, a: float, b: float) -> float:
    if b <= a:
        return 1.0 if t >= a else 0.0
    return min(max((t - a) / (b - a), 0.0), 1.0)


def _smooth(x: float) -> float:
    return x * x * (3 - 2 * x)


class PartMotion:
    """One small function per part of the table: where t falls in the pass's named spans (Timeline.state_at
    asks each)."""

    def _progress(self, t: float, span: tuple[float, float]) -> float:
        """How far t is through a time span, 0..1 (reduced motion: it jumps from 0 to 1 halfway)."""
        x = _ramp(t, *span)
        if self.reduced_motion:
            return 1.0 if x >= 0.5 else 0.0
        return x

    def _tubes(self, t: float) -> tuple[int, float]:
        """Test tubes: the round being dropped and how far its beads have fallen."""
        T = self.timing
        if not self.tube_rounds:
            return 0, 0
        tube_round = min(int(t / T.tube_round), self.tube_rounds - 1)
        tube_progress = min(1.0, (t - tube_round * T.tube_round) / (0.8 * T.tube_round))
        return tube_round, 1.0 if self.reduced_motion else tube_progress

    def _phase(self, t: float, k: int, st: StepTiming) -> tuple[str, float]:
        if t >= self.steps_end:
            return "done", 1.0
        for name in ("draft", "verify", "check", "write", "scroll"):
            a, b = getattr(st, name)
            if t < b or (name == "scroll" and t <= b and k < len(self.steps) - 1):
                return name, _ramp(t, a, b)
        return "done", 1.0

    def _drums(self, t: float, k: int, st: StepTiming) -> tuple[float, float]:
        """(big, small) drum angles: whole turns completed so far plus the current partial turn."""
        if self.reduced_motion:
            return 0.0, 0.0
        # The small drum turns only where a draft model runs (chain; a tree from the chain: once a depth).
        small_turns = sum(len(s.strokes) for s in self.steps[:k] if s.drum_turns) + \
            (sum(_ramp(t, *s) for s in st.strokes) if st.drum_turns else 0.0)
        big_turns = k + _ramp(t, *st.verify)
        return 2 * math.pi * big_turns, 2 * math.pi * small_turns

    def _tape(self, t: float, k: int, st: StepTiming, tr) -> list[TapeCell]:
        """Earlier passes' tokens inked; this pass's guesses in pencil, then struck / erased / inked. A tree's
        candidates are in `tree` until the pass is decided; then its kept branch and final token are typed."""
        n = tr.n_accepted
        tape: list[TapeCell] = []
        # Only the steps whose tokens can still be on the visible stretch of tape (long runs stay cheap); a lookup
        # pass also needs the text it copies from, however far back.
        lo = st.position - TAPE_HISTORY
        if tr.source_span:
            lo = min(lo, tr.source_span["match"][0] - TAPE_HISTORY // 2)
        first = k
        while first > 0 and self.steps[first - 1].position > lo:
            first -= 1
        first = max(first - 1, 0)
        for s_idx in range(first, k):
            tr_s, st_s = self.traces[s_idx], self.steps[s_idx]
            for i, tok in enumerate(tr_s.tokens_written):
                mark = "dot" if i < tr_s.n_accepted else "diamond"
                tape.append(TapeCell(st_s.position + i, tok, 1.0, 1.0, 0.0, 0.0, mark, s_idx))
        if tr.tree is not None:
            if t < st.erase[1]:
                return tape
            # The kept branch came down onto the line already inked; the typing head marks each and adds the last.
            for i, tok in enumerate(tr.tokens_written):
                typed = self._progress(t, st.inks[i])
                ink = 1.0 if i < n else typed
                tape.append(TapeCell(st.position + i, tok, 1.0, ink, 0.0, 0.0,
                                     ("dot" if i < n else "diamond") if typed > 0 else "", k))
            return tape
        for i, tok in enumerate(tr.guesses):
            pencil = self._progress(t, st.strokes[i])
            ink = self._progress(t, st.inks[i]) if i < n else 0.0
            struck = self._progress(t, st.strike) if i >= n else 0.0
            erased = self._progress(t, st.erase) if i >= n else 0.0
            tape.append(TapeCell(st.position + i, tok, pencil, ink, struck, erased, "dot" if ink > 0 else "", k))
        fin = self._progress(t, st.inks[n])
        if fin > 0:
            tape.append(TapeCell(st.position + n, tr.final_token, 1.0, fin, 0.0, 0.0, "diamond", k))
        return tape

    def _tape_view(self, t: float, st: StepTiming, tr) -> float:
        """Tape position under the writing window: it scrolls on by the tokens the pass wrote (a lookup pass first
        glides back to the text it copies from, and forward again)."""
        view = st.position + (len(tr.tokens_written) * _smooth(self._progress(t, st.scroll)))
        if st.look is not None and st.view_back > 0:
            a, b = st.look
            glide = 0.3 * (b - a)
            back = _smooth(self._progress(t, (a, a + glide))) - _smooth(self._progress(t, (b - glide, b)))
            view -= st.view_back * back
        return view

    def _source(self, t: float, st: StepTiming, tr) -> dict | None:
        """Lookup: the earlier occurrence, the text's last n tokens and the copied span, lit from when the tape
        has glided back until the big drum's turn is under way."""
        span = tr.source_span
        if st.look is None or not span:
            return None
        a, b = st.look
        lit = self._progress(t, (a + 0.3 * (b - a), a + 0.4 * (b - a))) * \
            (1.0 - self._progress(t, (st.verify[0], st.verify[0] + 0.4 * (st.verify[1] - st.verify[0]))))
        if lit <= 0:
            return None
        L = len(tr.context)
        glide = 0.3 * (b - a)
        back = _smooth(self._progress(t, (a, a + glide))) - _smooth(self._progress(t, (b - glide, b)))
        return {"match": tuple(span["match"]), "tail": (L - span["ngram"], L), "copy": tuple(span["copy"]),
                "lit": lit, "back": back if st.view_back > 0 else 0.0}

    def _heads(self, t: float, st: StepTiming, tr):
        """The heads on the big drum, numbered as Medusa numbers them (1..γ, a tree of heads: 1..depth), and their
        lamps: bright while a head's guesses are pencilled, dim once it has proposed, dark after the big drum's turn."""
        tree = tr.tree
        if tree is not None and kind_of(tree.base).look == HEADS:
            heads = list(range(1, len(tree.widths) + 1))
        elif tr.heads:
            heads = [medusa_number(h) for h in tr.heads]
        else:
            return None, None
        lit = []
        for i in range(len(heads)):
            a, b = st.strokes[i] if i < len(st.strokes) else (st.draft[1], st.draft[1])
            if a <= t < b:
                lit.append(1.0)
            elif b <= t < st.verify[1]:
                lit.append(0.35)
            else:
                lit.append(0.0)
        return heads, lit

    def _tree(self, t: float, st: StepTiming, tr) -> TreeState | None:
        """Every node of a tree pass: pencilled a depth a stroke, tested in the bridge's order, struck (rejected)
        or inked (kept), then the kept branch comes down onto the line. A tree in the margin (layout.tree_margin)
        stays there as the pass's record until the tape scrolls on: the struck candidates, the ringed ones that
        met the residual, the kept branch inked, the untested faded; a tree over the writing window is erased
        but for the kept branch, which the line then holds."""
        tree = tr.tree
        if tree is None:
            return None
        margin = tree_margin(len(tree.widths), len(tree.widths)) is not None
        scroll_half = (st.scroll[0], st.scroll[0] + 0.4 * (st.scroll[1] - st.scroll[0]))   # gone as it moves
        if t >= (scroll_half[1] if margin else st.erase[1]):
            return None
        by_node = {c.node: i for i, c in enumerate(tree.checks)}
        erase = self._progress(t, st.erase)
        leave = self._progress(t, scroll_half) if margin else 0.0
        kept = set(tree.accepted_path)
        nodes = []
        for nd in tree.nodes:
            pencil = self._progress(t, st.strokes[nd.depth - 1])
            checking, verdict, struck, ink, rnd = 0.0, "", 0.0, 0.0, 0
            j = by_node.get(nd.id)
            if j is not None:
                a, b = st.tests[j]
                checking = 1.0 if a <= t < b else 0.0
                rnd = tree.checks[j].round if t >= a else 0
                if t >= b - 1e-9:
                    ok = tree.checks[j].accepted
                    verdict = "pass" if ok else "fail"
                    after = self._progress(t, (b, b + 0.3))
                    ink, struck = (after, 0.0) if ok else (0.0, after)
            on_branch = nd.id in kept
            if margin:      # the record stays: only the candidates never tested fade (to a ghost), then all go
                gone = max(leave, 0.0 if (on_branch or j is not None) else 0.65 * erase)
            else:
                gone = 0.0 if on_branch else erase
            nodes.append(TreeNodeState(nd.id, nd.parent, nd.depth, nd.token, pencil, checking, verdict, struck, ink,
                                       gone, erase if on_branch else 0.0, rnd))
        return TreeState(list(tree.widths), nodes, tree.lanes_lit, margin)

    def _meters(self, t: float, k: int, st: StepTiming, tr) -> list[MeterState]:
        """One meter per guess: its column rises over its test span; the verdict shows at the span's end."""
        if tr.tree is not None:
            return self._tree_meters(t, k, st, tr)
        meters = []
        for i in range(len(tr.guesses)):
            x = tr.guesses[i]
            p = float(tr.p_rows[i, x])
            q = float(tr.q_rows[i, x])
            if i < len(st.tests):
                fill = self._progress(t, st.tests[i])
                verdict = ("pass" if tr.accepted[i] else "fail") if t >= st.tests[i][1] - 1e-9 else ""
            else:
                fill = 0.0
                # Untested from the moment the first rejection is found (the last test run).
                verdict = "untested" if t >= (st.tests[-1][1] if st.tests else st.check[0]) else ""
            if t >= st.scroll[0] + self.timing.scroll * 0.5 and k < len(self.steps) - 1 or t < st.verify[1]:
                fill, verdict = 0.0, ""
            meters.append(MeterState(i, float(tr.ratios[i]), float(tr.r[i]), p, q, fill, verdict))
        return meters

    def _tree_meters(self, t: float, k: int, st: StepTiming, tr) -> list[MeterState]:
        """A tree: one meter per position (depth). It shows the candidate being tested there now, against the
        running target (p, then the residual after each rejection); `results` keeps the rounds already decided."""
        tree = tr.tree
        depth_of = {nd.id: nd.depth for nd in tree.nodes}
        path = tree.accepted_path
        last_end = st.tests[-1][1] if st.tests else st.check[0]
        meters = []
        for i, width in enumerate(tree.widths):
            js = [j for j, c in enumerate(tree.checks) if depth_of[c.node] == i + 1]
            parent = -1 if i == 0 else (path[i - 1] if i - 1 < len(path) else None)
            rounds = len(tree.children(parent)) if parent is not None else width
            started = [j for j in js if t >= st.tests[j][0]]
            if not started:
                verdict = "untested" if t >= last_end else ""
                meters.append(MeterState(i, 0.0, 0.0, 0.0, 0.0, 0.0, verdict, rounds, ()))
                continue
            j = started[-1]
            c = tree.checks[j]
            a, b = st.tests[j]
            fill = self._progress(t, (a, b))
            results = tuple("pass" if tree.checks[x].accepted else "fail" for x in js if t >= st.tests[x][1] - 1e-9)
            verdict = ("pass" if c.accepted else "fail") if t >= b - 1e-9 else ""
            if t >= st.scroll[0] + self.timing.scroll * 0.5 and k < len(self.steps) - 1 or t < st.verify[1]:
                fill, verdict, results = 0.0, "", ()
            meters.append(MeterState(i, float(c.ratio), float(c.r), float(c.p_x), float(c.q_x), fill, verdict,
                                     rounds, results))
        return meters

    def _pencil(self, t: float, st: StepTiming, g: int, tr=None, view: float | None = None) -> tuple[float, float]:
        """(cell, pressure) of the pencil cart: one stroke per guess (a tree: per depth), then parked to the right.
        A lookup pass first rides over the text it copies (pencil up), then writes the copies in the window."""
        pencil_cell, pencil_down = 0.0, 0.0
        read_cell = None
        depth = len(tr.tree.widths) if tr is not None and tr.tree is not None else 0
        margin = tree_margin(depth, depth) if depth else None
        x0, cell = window(depth)
        if st.look is not None and tr is not None and tr.source_span:
            a, b = st.look
            c0, c1 = tr.source_span["copy"]
            pos = view if view is not None else float(st.position)
            # cells are counted from the writing window at the tape's position now
            read_cell = c0 + _ramp(t, a + 0.35 * (b - a), b - 0.3 * (b - a)) * max(c1 - c0 - 1, 0) - pos
            if t >= a:
                pencil_cell = read_cell
        for i, span in enumerate(st.strokes):
            if t >= span[0]:
                x = _ramp(t, *span)
                if i == 0 and read_cell is not None:
                    # from the copied text to the first cell, then down onto it
                    pencil_cell = read_cell + (0.0 - read_cell) * _smooth(min(1.0, 2 * x)) + max(0.0, x - 0.5) * 1.6
                    pencil_down = math.sin(math.pi * max(0.0, 2 * x - 1))
                    continue
                pencil_cell = i + x * 0.8
                if margin is not None:      # a tree in the margin: its depth's column, right of the cells
                    pencil_cell = (margin[0] + (i + 0.1 + 0.8 * x) * margin[1] - x0) / cell - 0.5
                pencil_down = math.sin(math.pi * x)
        if t >= st.draft[1]:
            # Parked to the right, clear of the cells (and a margin tree) the class is reading.
            park = g - 0.2 + 2.2 * _ramp(t, st.draft[1], st.draft[1] + 0.5)
            if margin is not None:
                last = (margin[0] + (depth - 0.1) * margin[1] - x0) / cell - 0.5
                park = last + ((TAPE_X[1] + 0.2 - x0) / cell - 0.5 - last) * _ramp(t, st.draft[1], st.draft[1] + 0.5)
            pencil_cell = park
            pencil_down = 0.0
        return pencil_cell, pencil_down

    def _typing(self, t: float, st: StepTiming) -> tuple[float, float, float]:
        """(cell, pressure, share of the way to its rest) of the typing head: from its rest right of the writing
        window to the first cell, one strike per written token, and back to rest within the last token's time
        (a pass held at its end shows the head at rest, not over the last mark)."""
        if not st.inks or t >= st.inks[-1][1]:
            return 0.0, 0.0, 1.0
        if t < st.inks[0][0]:
            return 0.0, 0.0, 1.0 - _ramp(t, st.inks[0][0] - GLIDE, st.inks[0][0])
        last = len(st.inks) - 1
        for i, (a, b) in enumerate(st.inks):
            if t < b:
                if i < last:
                    return float(i), math.sin(math.pi * _ramp(t, a, b)), 0.0
                mid = a + STRIKE_SHARE * (b - a)         # the last strike, then the way back
                return float(i), math.sin(math.pi * _ramp(t, a, mid)), _ramp(t, mid, b)
        return 0.0, 0.0, 1.0

    def _kv(self, t: float, st: StepTiming, tr, phase: str) -> tuple[float, float, float]:
        """(entries, tentative entries, drawer pull) of the KV cabinet: γ tentative entries read in during
        the pass, the rejected ones rolled back while the drawers are out again."""
        g, n = len(tr.guesses), tr.n_accepted
        if tr.tree is not None:
            g = len(tr.tree.nodes)          # every node's keys and values are written in the pass, then rolled back
        pull = math.sin(math.pi * self._progress(t, st.verify)) if st.verify[0] <= t < st.verify[1] else 0.0
        if n < g and st.erase[0] <= t < st.erase[1]:
            pull = math.sin(math.pi * self._progress(t, st.erase))
        tentative = g * self._progress(t, (st.verify[0], st.verify[0] + 0.6 * self.timing.big_turn))
        if st.erase[0] <= t:
            tentative -= (g - n) * self._progress(t, st.erase) if n < g else 0.0
        if t >= st.inks[-1][1]:
            tentative += 1
        kv = float(st.position)
        if phase == "done" or (t >= st.scroll[1]):
            kv, tentative = float(st.position + len(tr.tokens_written)), 0.0
        return kv, tentative, pull
