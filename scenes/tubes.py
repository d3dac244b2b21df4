"""The test tubes: the next character after a prefix drawn many times by the target alone (left rack) and by
speculative decoding (right rack); both converge to the target's p (SCIENCE.md section 6).

One tube per character (the most likely few, then "rest": every other character; 其他 in Chinese). Each round's draws fall in as beads (left:
steel, right: copper = accepted guess, red = the target's replacement); a black line marks p x draws, and a
brass ring marks the cumulative frequency so far, which settles on the black line. Counts come from
models.tubes.TubesResult; nothing here is random except the order in which a round's beads fall.
"""
from __future__ import annotations

import numpy as np

from scenes.geometry import box_matrix, boxes, compose, scale, translate
from scenes.layout import TUBES_CENTRE, EmitContext

N_CHARS = 4           # tubes per rack besides "rest"
TUBE_R = 0.23
TUBE_H = 2.9
TUBE_Y0 = 0.5         # tube feet stand on a base tall enough to carry the TV readout on its face
SPACING = 0.64         # room between the tubes for a readout of FREQ_SIZE (".28" is 0.54 wide) and a gap
BEAD_R = 0.088
LAYER = 0.16          # two beads side by side per layer
RACK_GAP = 0.55
FREQ_SIZE = 0.40      # cumulative-frequency numbers over the tubes: as big as a tube's spacing allows (".28" is 0.54 wide)
# The readout rows lean back towards the audience (the table camera looks down about 34 degrees).
LEAN = np.radians(20)
READ_UP = np.array([0.0, np.cos(LEAN), np.sin(LEAN)])


TITLE_SIZE = 0.36       # each rack's name (which rule fills it): read in the tour's smaller frames too
CAPTION_SIZE = 0.36     # the wrong rule's warning over both racks, at most


def freq_text(f: float) -> str:
    """A frequency with two decimals and no leading zero (".34"): it fits over its tube at a readable size."""
    s = f"{f:.2f}"
    return s[1:] if s.startswith("0.") else s


def chosen_characters(result, k: int = N_CHARS) -> list[int]:
    """The tubes: characters with the largest max(p, q), so the draft's over- and under-estimates both show;
    left to right in the order of p, as the panels list them."""
    score = np.maximum(result.target_p, result.draft_q)
    chosen = np.argsort(-score, kind="stable")[:k]
    return [int(i) for i in sorted(chosen, key=lambda i: -result.target_p[i])]


def bead_slot(n: int) -> tuple[float, float]:
    """(dx, y) of the n-th bead from the bottom of a tube."""
    return ((-1) ** n * BEAD_R * 1.05, TUBE_Y0 + 0.08 + BEAD_R + (n // 2) * LAYER)


def count_height(count: float) -> float:
    """Height in a tube of `count` beads (the same scale for the p line and the cumulative ring)."""
    return TUBE_Y0 + 0.08 + count / 2 * LAYER


class TestTubes:
    __test__ = False        # not a pytest class
    name = "tubes"
    # The state emit() reads: Stage.render replays the last emission while these hold.
    reads = ('tube_round', 'tube_progress', 'extra')

    def __init__(self):
        self.result = None
        self.chars: list[int] = []

    def set_result(self, result) -> None:
        self.result = result
        self.chars = chosen_characters(result) if result is not None else []

    def tube_x(self, rack: int, j: int) -> float:
        n = N_CHARS + 1
        width = n * SPACING
        x0 = TUBES_CENTRE[0] - RACK_GAP / 2 - width if rack == 0 else TUBES_CENTRE[0] + RACK_GAP / 2
        return x0 + (j + 0.5) * SPACING

    def counts(self, rack: int, rnd: int):
        """Per tube (chosen characters, then other): this round's count, and for the right rack the copper
        (accepted) part; plus the cumulative frequency up to and including this round."""
        r = self.result
        per = r.left_round[rnd] if rack == 0 else r.right_round[rnd]
        cum = (r.left_round[:rnd + 1] if rack == 0 else r.right_round[:rnd + 1]).sum(axis=0)
        acc = r.right_accepted_round[rnd] if rack == 1 else per
        idx = self.chars
        now = [int(per[i]) for i in idx] + [int(per.sum() - per[idx].sum())]
        copper = [int(acc[i]) for i in idx] + [int(acc.sum() - acc[idx].sum())]
        total = max(int(cum.sum()), 1)
        freq = [float(cum[i]) / total for i in idx] + [float(cum.sum() - cum[idx].sum()) / total]
        return now, copper, freq

    def emit(self, fb, state, ec: EmitContext) -> None:
        pal = ec.palette
        z = TUBES_CENTRE[2]
        right, up = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
        # Racks: a base plate and a top rail each.
        for rack in (0, 1):
            xs = [self.tube_x(rack, j) for j in range(N_CHARS + 1)]
            xm, w = (xs[0] + xs[-1]) / 2, xs[-1] - xs[0] + SPACING
            base_h = TUBE_Y0 - 0.07
            fb.add("box", np.stack([box_matrix(xm, base_h / 2, z, w + 0.2, base_h, 0.8),
                                    box_matrix(xm, TUBE_Y0 + TUBE_H - 0.2, z - 0.3, w + 0.2, 0.1, 0.12),
                                    box_matrix(xs[0] - SPACING / 2 - 0.05, (TUBE_H + 0.3) / 2, z - 0.3, 0.1,
                                               TUBE_H + 0.3, 0.12),
                                    box_matrix(xs[-1] + SPACING / 2 + 0.05, (TUBE_H + 0.3) / 2, z - 0.3, 0.1,
                                               TUBE_H + 0.3, 0.12)]), pal.iron)
            # A paper chart behind the glass, so the black p lines and the beads read against it.
            fb.add("box", box_matrix(xm, TUBE_Y0 + TUBE_H / 2 - 0.05, z - 0.36, w + 0.05, TUBE_H - 0.3, 0.04),
                   pal.paper)
            fb.add("cyl", np.stack([compose(translate(x, TUBE_Y0 - 0.03, z), scale(TUBE_R + 0.04, 0.08, TUBE_R + 0.04))
                                    for x in xs]), pal.brass)
            fb.add("tube", np.stack([compose(translate(x, TUBE_Y0 + TUBE_H / 2, z), scale(TUBE_R, TUBE_H, TUBE_R))
                                     for x in xs]), pal.glass)
            fb.shadow(xm, 0.012, z, w + 0.8, 1.3, 0.5)
            title = ec.say("大模型单独写", "target alone") if rack == 0 else ec.say("推测解码", "speculative")
            fb.text(title, (xm, TUBE_Y0 + TUBE_H + 1.22, z), right, READ_UP, TITLE_SIZE, pal.label, anchor="center")
        r = self.result
        if r is None:
            return
        display = ec.run.display
        rnd = state.tube_round
        prog = state.tube_progress
        beads = {"steel": [], "copper": [], "red": []}
        lines, rings, q_rings = [], [], []
        rng = np.random.default_rng(1000 + rnd)
        # A lesson asking where the beads will settle keeps its racks empty until it has asked: p's lines only.
        empty = "tube_counts" in state.extra.get("kept_back", frozenset())
        # Beads drop in from the tube's mouth, below the numbers over it, so they never cover a readout.
        top = TUBE_Y0 + TUBE_H - 0.12
        for rack in (0, 1):
            now, copper, freq = self.counts(rack, rnd)
            if empty:
                now, copper = [0] * len(now), [0] * len(copper)
            total = sum(now)
            # The order this round's beads fall in is for show only; where each one lands is the count.
            start = rng.permutation(total) / max(total, 1) * 0.75
            s = np.clip((prog - start) / 0.25, 0.0, 1.0)
            k = 0
            for j, (n, c) in enumerate(zip(now, copper)):
                x = self.tube_x(rack, j)
                if n:
                    b = np.arange(n)
                    sj = s[k:k + n]
                    k += n
                    fallen = sj > 0
                    dx = np.where(b % 2 == 0, 1.0, -1.0) * BEAD_R * 1.05
                    y = TUBE_Y0 + 0.08 + BEAD_R + (b // 2) * LAYER
                    yy = top + (y - top) * sj * sj
                    centres = np.stack([x + dx, yy, np.full(n, z)], 1)
                    kinds = np.where(b < c, "copper", "red") if rack == 1 else np.full(n, "steel")
                    for kind in ("steel", "copper", "red"):
                        sel = fallen & (kinds == kind)
                        if sel.any():
                            beads[kind].append(centres[sel])
                # The black line at p (expected count per round) and the ring at the cumulative frequency.
                p = float(r.target_p[self.chars[j]]) if j < N_CHARS else float(1 - r.target_p[self.chars].sum())
                lines.append(compose(translate(x, count_height(p * r.draws), z),
                                     scale(TUBE_R + 0.012, 0.045, TUBE_R + 0.012)))
                if rack == 1:
                    # The draft's q on the speculative rack, a green ring wider than p's: the guesses come from q,
                    # and the class asked whether the beads settle there or on p.
                    q = float(r.draft_q[self.chars[j]]) if j < N_CHARS else float(1 - r.draft_q[self.chars].sum())
                    q_rings.append(compose(translate(x, count_height(q * r.draws), z),
                                           scale(TUBE_R + 0.07, 0.035, TUBE_R + 0.07)))
                if not empty:
                    rings.append(compose(translate(x, count_height(freq[j] * r.draws), z),
                                         scale(TUBE_R + 0.045, 0.07, TUBE_R + 0.045)))
                # Character under the tube, cumulative frequency over it.
                label = display(self.chars[j]) if j < N_CHARS else ("rest" if ec.language == "en" else "其他")
                size, xl = 0.42, x
                if j == N_CHARS:
                    # The last tube of its rack: its word reaches into the space right of the rack, so it can be
                    # as large as the characters' (a smaller one is left out from afar: a tube with no name).
                    room = SPACING * 0.95 + RACK_GAP * 0.45
                    size = min(0.42, room / max(fb.atlas.advance(label), 1e-6))
                    half = fb.atlas.advance(label) * size / 2
                    xl = x - SPACING * 0.47 + half
                fb.text(label, (xl, TUBE_Y0 + TUBE_H + 0.66, z), right, READ_UP, size, pal.label, anchor="center")
                fb.text("?" if empty else freq_text(freq[j]), (x, TUBE_Y0 + TUBE_H + 0.2, z), right, READ_UP,
                        FREQ_SIZE, pal.label, anchor="center")
        for kind, mat in (("steel", pal.steel), ("copper", pal.bead_copper), ("red", pal.bead_red)):
            if beads[kind]:
                fb.add("bead", boxes(np.concatenate(beads[kind]), (BEAD_R, BEAD_R, BEAD_R)), mat)
        fb.add("tube", np.stack(lines), pal.iron.with_color(pal.p_line))
        if q_rings:
            fb.add("tube", np.stack(q_rings), pal.iron.with_color(pal.q_line))
        if rings:
            fb.add("tube", np.stack(rings), pal.brass)
        # Distance of each rack's cumulative counts from p (total variation), and a warning for a wrong rule.
        kept = state.extra.get("kept_back", frozenset())    # a lesson asking first: '?' as its panel says
        for rack, series, fact in ((0, r.tv_left_series, "tv_left"), (1, r.tv_right_series, "tv_right")):
            if series is not None and len(series) > rnd:
                xs = [self.tube_x(rack, j) for j in range(N_CHARS + 1)]
                fb.text("TV ?" if fact in kept else f"TV {float(series[rnd]):.3f}", ((xs[0] + xs[-1]) / 2, (TUBE_Y0 - 0.07) / 2, z + 0.41),
                        right, up, 0.40, pal.label, anchor="center", valign="middle")
        if r.rule != "exact" and ec.view != "table":
            # (A tour beat framing the tubes on the table says it on the HUD, under the round: over the racks it
            # would make the frame taller and every readout too small to read; Stage.hud_activity.)
            # Over both racks (the words are longer than one rack is wide), fitted to their span, just above the
            # racks' titles: higher, the tubes' own view cuts it off under the mode bar.
            # A caption too long to be read on one line over both racks (English) takes two, split after its
            # "not exact:", the second line where the one line stood.
            xa, xb = self.tube_x(0, 0), self.tube_x(1, N_CHARS)
            span = (xb - xa + 2 * TUBE_R) * 1.1
            txt = wrong_rule_text(r.rule, ec)
            lines = [txt]
            if span / max(fb.atlas.advance(txt), 1e-6) < CAPTION_SIZE:
                head, sep, tail = txt.partition(": ")
                lines = [head + sep.strip(), tail] if sep else lines
            size = min(CAPTION_SIZE, *(span / max(fb.atlas.advance(t), 1e-6) for t in lines))
            for k, line in enumerate(lines):            # top line first (the order it is read in)
                y = TUBE_Y0 + TUBE_H + 1.68 + (len(lines) - 1 - k) * 1.2 * size
                fb.text(line, ((xa + xb) / 2, y, z), right, READ_UP, size, pal.fail_mark, anchor="center")
        # The round counter is the HUD's first line in the tube view (tube_round_words): in the wide views it
        # would be too small to read.


# What each rule of models.tubes does, in words (README.md, "Test tubes"), for the wrong-rule warning.
RULE_LABELS = {
    "exact": ("精确规则", "the exact rule"),
    "resample_from_p": ("用 p 重抽", "resample from p"),
    "exact_match_only": ("只留大模型首选", "keep only the target's top token"),
    "draft_only": ("只让小模型写", "draft only, target never writes"),
    "typical": ("典型接受（Medusa）", "typical acceptance (Medusa)"),
}
RULE_LABELS["no_bonus"] = RULE_LABELS["draft_only"]     # the old name of draft_only (models.tubes.LEGACY_RULES)


def tube_round_words(result, rnd: int, speed: float = 1.0) -> tuple[str, str]:
    """(zh, en) of the experiment's progress for the HUD: the round shown, of how many, and the speed."""
    fast = "" if abs(speed - 1.0) < 1e-9 else f"  ·  ×{speed:g}"
    return (f"第 {rnd + 1}/{result.rounds} 轮 · 每轮两管各抽 {result.draws} 次{fast}",
            f"round {rnd + 1} of {result.rounds} · {result.draws} draws a tube{fast}")


def rule_label(rule: str) -> tuple[str, str]:
    """(zh, en) words for a tube rule id; an unknown id is shown as it is."""
    return RULE_LABELS.get(rule, (rule, rule))


# Rules another method uses on purpose: not a mistake, but not exact either (the tube drifts from p all the same).
NOT_EXACT_RULES = ("typical",)


def wrong_rule_words(rule: str) -> tuple[str, str]:
    """(zh, en) of the warning a rule other than the exact one carries (the HUD's line under the round)."""
    zh, en = rule_label(rule)
    if rule in NOT_EXACT_RULES:
        return f"不精确的规则：{zh}", f"not exact: {en}"
    return f"错误规则：{zh}", f"wrong rule: {en}"


def wrong_rule_text(rule: str, ec: EmitContext) -> str:
    return ec.say(*wrong_rule_words(rule))
