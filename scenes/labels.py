"""Screen-space words: part names (zh + en) pinned above each part, and the step/phase line at the top.

They are drawn at a fixed pixel size relative to the frame height (about 1/34 of it for Chinese), so
they stay legible from the back of a classroom whatever the camera does.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from models.drafters import COPY, HEADS, TREE, kind_of
from scenes.camera import project
from scenes.layout import PARTS, EmitContext
from scenes.placement import _place, _readout_spot, _uncross_leaders, leader_foot

PHASES = {
    "idle": ("准备", "ready"),
    "draft": ("小滚筒转：小模型在猜", "the small drum turns: the draft guesses"),
    "verify": ("大滚筒转一圈，一起核对所有猜测", "one turn of the big drum checks every guess"),
    "check": ("逐个比较 p/q 和 r", "each guess: p/q against r"),
    "write": ("留下通过的，换掉被拒的", "keep the accepted, replace the rejected"),
    "scroll": ("纸带前进", "the tape moves on"),
    "done": ("写完了", "finished"),
}
# The write phase of a pass that kept every guess: no replacement, the bonus token instead.
WRITE_BONUS = ("全部通过，再多送一个词元", "all accepted, and a bonus token")
# A tree's kept branch: the other branches were struck, so "all accepted" would contradict the tape
WRITE_BONUS_TREE = ("这一枝全部通过，再多送一个词元", "this branch all accepted, and a bonus token")
# A pass of the target alone (TargetSampler, γ = 0): no guesses to check, one token per lane per turn.
TARGET_PHASES = dict(PHASES, **{
    "draft": ("只用大模型，不猜", "the target writes alone, no guesses"),
    "verify": ("大滚筒转一圈，每条路写一个词元", "one turn of the big drum: one token per lane"),
    "check": ("没有猜测，不用核对", "no guesses, nothing to test"),
    "write": ("打字头印下大模型的词元", "the typing head inks the target's token"),
})
# ("大模型单独写" beside "亮 64 条路" read as one text written alone: the mode is "no guessing", not "one lane";
# what a turn writes is the phase line's, "one turn of the big drum: one token per lane", and the line stays short)
TARGET_MODE = ("只用大模型，不猜", "target alone, no guesses")
# One lane lit (one text): the turn writes one token, no lanes to count
TARGET_VERIFY_ONE = ("大滚筒转一圈，写一个词元", "one turn of the big drum: one token")
TARGET_MODE_NO_LANES = ("只用大模型，不猜 · 一圈一个词元", "target alone · one token per turn")   # before lanes are taught
DRAWN_LANES = 9        # the read head has nine shafts (and the cabinet nine drawers): more are counted, not drawn
# How the drafter of the pass drafts (its look, models.drafters) changes what the draft and check phases do
# (scenes.timeline); a drafter drawn by the small drum (DRUM) does what PHASES says.
DRAFTER_PHASES = {
    COPY: {"draft": ("铅笔小车从前文抄猜测", "the pencil cart copies guesses from earlier text")},
    "copy_none": {"draft": ("前文里没有可抄的", "nothing earlier to copy"),
                    "verify": ("大滚筒转一圈，只写一个词元", "one turn of the big drum writes one token"),
                    "check": ("没有猜测，不用核对", "no guesses, nothing to test"),
                    "write": ("打字头印下大模型的词元", "the typing head inks the target's token")},
    HEADS: {"draft": ("预测头一起猜，不用第二个模型", "the heads propose: no second model")},
    TREE: {"draft": ("画出一棵猜测树", "the draft pencils a tree of guesses"),
             "verify": ("大滚筒转一圈，整棵树一起算", "one turn of the big drum computes the whole tree"),
             "check": ("每个位置依次试候选，被拒后换成残差", "each position tries its candidates; after a rejection, the residual"),
             "write": ("留下通过的那一枝", "keep the branch that passed")},
    "tree_heads": {"draft": ("预测头画出一棵猜测树", "the heads pencil a tree of guesses")},
    # EAGLE: the small drum is a layer fed the big drum's features, one step a guess
    "fed": {"draft": ("EAGLE 一格一格往前推大模型的特征", "EAGLE pushes the target's features forward, one guess at a time")},
}


# The check phase's words when the bridge is not in the picture (a beat framing the drums, the mill): the status
# line does not send the class to a part they cannot see.
CHECK_OFF_FRAME = ("大模型逐个核对猜测", "the target checks the guesses in turn")
# The target's write phase when the tape is not in the picture: no typing head to point at
TYPING_OFF_FRAME = ("写下大模型的词元", "the target's token is written")
# A table held still (a text page, a step-through stop) says what it holds, not a motion nobody sees: at a pass's
# start, or at the end of a phase of the target's and the small drum's (a drafter of its own keeps its words).
HELD_START = ("停在这一步的开头", "held at the start of a pass")
HELD = {"draft": ("小模型猜好了，等大模型核对", "the draft has guessed; the target checks next"),
        "verify": ("大滚筒转完一圈，等着逐个比较", "the big drum has turned; each guess is tested next"),
        "check": ("每个猜测都比较过了，等着写下", "every guess tested; the writing is next")}
TARGET_HELD = {"verify": ("大滚筒转完一圈，算出了下一个词元", "the big drum has turned: the next token is computed")}
HELD_EDGE = 0.02         # a phase's progress this near its start or end counts as held there


def phase_words(state, bridge: bool = True, tape: bool = True, held: bool = False) -> tuple[str, str]:
    """(zh, en) of what the table is doing now, for the drafter of this pass; `bridge`: whether the bridge of
    meters is in the picture (its words name p/q and r on its meters); `tape`: whether the tape and its typing
    head are; `held`: the table stands still (what it holds, where a phase starts or ends)."""
    if held:
        words = held_words(state)
        if words is not None:
            return words
    if not bridge and state.phase == "check" and not state.extra.get("target_only"):
        return CHECK_OFF_FRAME
    target_only = bool(state.extra.get("target_only"))
    if not tape and target_only and state.phase == "write":
        return TYPING_OFF_FRAME
    key = kind_of(state.drafter).look
    if kind_of(state.drafter).fed_by_target:
        key = "fed"
    if key == COPY and target_only:
        key = "copy_none"
    elif key == TREE and kind_of(state.extra.get("tree_base", "")).look == HEADS:
        words = dict(DRAFTER_PHASES[TREE], **DRAFTER_PHASES["tree_heads"])
        return words.get(state.phase) or PHASES.get(state.phase, ("", ""))
    own = DRAFTER_PHASES.get(key, {})
    if state.phase in own:
        return own[state.phase]
    if target_only and state.phase == "verify" and state.lanes_true <= 1:
        return TARGET_VERIFY_ONE
    return (TARGET_PHASES if target_only else PHASES).get(state.phase, ("", ""))


def held_words(state) -> tuple[str, str] | None:
    """What a still table holds at a pass's start or a phase's end (the target's or the small drum's pass), or None:
    a moment inside a phase, a drafter's own phase, the write (its words already say what was written)."""
    drafter_own = kind_of(state.drafter).look in (COPY, HEADS, TREE) or kind_of(state.drafter).fed_by_target
    target_only = bool(state.extra.get("target_only"))
    if drafter_own and not target_only or state.phase in ("write", "scroll", "done", "idle"):
        return None
    first = "verify" if target_only else "draft"
    if state.phase == first and state.phase_progress <= HELD_EDGE:
        return HELD_START
    if state.phase_progress >= 1.0 - HELD_EDGE:
        return (TARGET_HELD if target_only else HELD).get(state.phase)
    return None


def drafter_mode(state, ec: EmitContext) -> str | None:
    """The HUD's word on who drafted this pass (None: the chain, said by γ alone)."""
    x = state.extra
    look = kind_of(state.drafter).look
    if look == COPY:
        k = int(x.get("copied", 0))
        if not k:
            return ec.say("查找 · 没有可抄的", "lookup · nothing to copy")
        seen = "".join(ec.run.display(i) for i in x.get("matched", ())).replace("\n", "↵")
        return ec.say(f"查找 · “{seen}”前文出现过 · 抄 {k} 个", f"lookup · “{seen}” seen before · {k} copied")
    if look == HEADS:
        return ec.say(f"预测头 · γ = {state.gamma}", f"heads · γ = {state.gamma}")
    if kind_of(state.drafter).fed_by_target:
        return ec.say(f"EAGLE · 吃大模型的特征 · γ = {state.gamma}", f"EAGLE · fed the target's features · γ = {state.gamma}")
    if look == TREE and x.get("tree_widths"):
        w = x["tree_widths"]
        shape = f"{w[0]}×{len(w)}" if len(set(w)) == 1 else ",".join(map(str, w))
        n = int(x.get("tree_nodes", 0))
        return ec.say(f"猜测树 {shape} · {n} 个节点", f"tree {shape} · {n} nodes")
    return None


def label_sizes(ec: EmitContext, height: float) -> tuple[float, float]:
    """(name, subtitle) em heights of the part plates: 1/34 and 1/50 of the picture the text is sized for,
    never below the legibility minimum (scenes.legibility)."""
    ref = ec.text_ref or height
    return max(ref / 34.0, 1.3 * ec.min_px), max(ref / 50.0, ec.min_px)


def _plate_size(fb, lines) -> tuple[float, float]:
    return plate_size(fb.atlas, lines)


def plate_size(atlas, lines) -> tuple[float, float]:
    """(width, height) in pixels of a plate of text lines [(text, size_px, colour)]."""
    widths = [atlas.advance(t) * sz for t, sz, _ in lines]
    return max(widths) + 0.9 * lines[0][1], sum(sz * 1.22 for _, sz, _ in lines) + 0.45 * lines[0][1]


def _plate(fb, x, y, lines, pal, anchor="center", name: str = "plate") -> tuple[float, float]:
    """Text lines [(text, size_px, colour)] on a dark plate; (x, y) the plate's top centre / top-left.
    Returns the plate's (width, height)."""
    widths = [fb.atlas.advance(t) * s for t, s, _ in lines]
    w, h = _plate_size(fb, lines)
    x0 = x - w / 2 if anchor == "center" else x
    centred = anchor in ("center", "left_centred")
    fb.rect_screen(x0, y, w, h, pal.plate, frame=name)
    yy = y + 0.22 * lines[0][1]
    for (t, s, col), tw in zip(lines, widths):
        yy += s * 1.0
        fb.text(t, (x0 + (w - tw) / 2 if centred else x0 + 0.45 * lines[0][1], yy, 0), (1, 0, 0),
                (0, -1, 0), s, col, screen=True)
        yy += s * 0.22
    return w, h


def _leader(fb, point, rect, height, pal, under=()) -> None:
    """A dotted leader from the plate to its part, ending in a dot on the part: which part a name belongs to is
    drawn, not left to where the plate happens to sit. It passes under `under` (x, y, w, h: the readouts and
    the words on the parts): no dot is drawn over a word, except the last few, by the anchor."""
    fx, fy = leader_foot(point, rect)
    dx, dy = point[0] - fx, point[1] - fy
    dist = float(np.hypot(dx, dy))
    s = max(2.0, height / 300.0)
    if dist > 3 * s:
        n = int(dist / (2.2 * s))
        t = np.arange(1, n) / n
        xs, ys = fx + dx * t, fy + dy * t
        show = (1 - t) * dist < 8 * s
        if len(under):
            u = np.asarray(under, dtype=np.float64)[:, :4]
            ux, uy, uw, uh = (u[:, m:m + 1] for m in range(4))
            covered = np.any((ux - s <= xs) & (xs <= ux + uw + s) & (uy - s <= ys) & (ys <= uy + uh + s), axis=0)
            show |= ~covered
        else:
            show[:] = True
        # each dot on a dark rim, as the end dot is: a light dot alone vanishes over the paper tape or the table
        fb.rects_screen(xs[show] - s, ys[show] - s, 2 * s, 2 * s, pal.plate)
        fb.rects_screen(xs[show] - s / 2, ys[show] - s / 2, s, s, pal.label)
    d = 2.6 * s
    fb.rect_screen(point[0] - d / 2 - s / 2, point[1] - d / 2 - s / 2, d + s, d + s, pal.plate)   # a dark rim
    fb.rect_screen(point[0] - d / 2, point[1] - d / 2, d, d, pal.label)


def emit_part_labels(fb, viewproj, width, height, ec: EmitContext, offsets: dict, hidden: set,
                     exploded: bool = False, readouts: dict | None = None, keep_out=(),
                     anchors: dict | None = None, shorter: dict | None = None, targets: dict | None = None,
                     leaders_out: list | None = None, words=(), names: dict | None = None) -> list[tuple]:
    """Name plates over the parts; `readouts` {part: [(text, 'main'|'sub')]} adds lines to a part's plate
    (the mill's busy fraction in the wide views); `shorter` {part: lines} is the readout to fall back to
    when the full one finds no free spot; `anchors` {part: world point} moves a plate's anchor (a framed beat
    puts it over the part of the part it shows). Plates never overlap each other or `keep_out` where there is
    room.
    `targets` {part: ((ax, ay), (x0, y0, x1, y1))}: each labelled part's anchor point on its body and its screen
    box, both in pixels. With them a plate covers no other labelled part, its leader (drawn from the plate to
    the anchor) crosses no plate, and a plate that finds no such spot is left out (a closer view names it);
    `leaders_out` receives (part, plate rect, anchor, part box) for each plate drawn; a leader passes under
    `words` (x, y, w, h: the HUD and the words on the parts), never over them. `names` {part: (zh, en)} names a
    part otherwise for this run (the small drum, when EAGLE's layer turns it).
    Returns the plates drawn as (part, x, y, w, h) in pixels."""
    readouts = dict(readouts or {})
    drawn = _part_labels(fb, viewproj, width, height, ec, offsets, hidden, exploded, readouts, keep_out,
                         anchors, targets=targets, renamed=names)
    failed = [d[0] for d in drawn if not d[5] and d[0] in (shorter or {})]
    # A name with a second half ("读头 · 九条路") that finds no spot is tried once more with its first half
    # alone: a crowded frame of the whole table still names every part.
    short = {d[0] for d in drawn if not d[5] and " · " in "".join(_name(d[0], names))}
    if failed or short:          # placed again only when a plate found no spot and has a shorter form
        readouts.update({name: shorter[name] for name in failed})
        drawn = _part_labels(fb, viewproj, width, height, ec, offsets, hidden, exploded, readouts, keep_out,
                             anchors, targets=targets, short=short, renamed=names)
    if targets is not None:
        drawn = _uncross_leaders(drawn, targets)
    _draw_plates(fb, drawn, targets, words, height, ec.palette)
    if targets is not None:
        drawn = [d for d in drawn if d[5]]
        if leaders_out is not None:
            leaders_out.extend((d[0], d[1:5], targets[d[0]][0], targets[d[0]][1]) for d in drawn)
    return [d[:5] for d in drawn]


def emit_callouts(fb, items, width, height, ec: EmitContext, keep_out=(), plates_before=(), leaders_before=(),
                  gap: float = 0.0) -> list[tuple]:
    """Name plates for the pieces of one part seen up close (the cut-away's teeth, push rods, lane axles and
    counters): items [(key, zh, en, (ax, ay), (x0, y0, x1, y1))] are each piece's anchor on its body and its
    screen box, in pixels. Each plate is wanted above its anchor, covers no other piece and no `keep_out`
    rectangle, its leader crosses no other plate (nor any of `plates_before`, laid before them) and it covers
    no leader (nor any of `leaders_before`, those plates' leaders: ((x0, y0), (x1, y1))); one that finds no
    such spot is left out; `gap`: the room kept between these plates besides the usual. Returns
    (key, (x, y, w, h), (ax, ay), box) for each plate drawn."""
    pal = ec.palette
    big, small = label_sizes(ec, height)
    wanted, lines_of = [], []
    for key, zh, en, (ax, ay), _ in items:
        lines = []
        if ec.language in ("zh", "both"):
            lines.append((zh, big, pal.label))
        if ec.language in ("en", "both"):
            lines.append((en, small if ec.language == "both" else big * 0.8, pal.label_sub))
        w, h = _plate_size(fb, lines)
        wanted.append((ax - w / 2, ay - h - 1.6 * big, w, h))
        lines_of.append(lines)
    boxes = [(b[0], b[1], b[2] - b[0], b[3] - b[1]) for *_, b in items]
    avoid = [[b for j, b in enumerate(boxes) if j != i] for i in range(len(items))]
    placed, ok = _place(wanted, width, height, keep_out, avoid=avoid, leaders=[it[3] for it in items],
                        plates=plates_before, lines=leaders_before, gap=gap)
    out = []
    for (key, _, _, point, box), (x0, y0), (_, _, w, h), lines, good in zip(items, placed, wanted, lines_of, ok):
        if not good:
            continue
        _leader(fb, point, (x0, y0, w, h), height, pal)
        _plate(fb, x0, y0, lines, pal, anchor="left_centred", name=f"plate:{key}")
        out.append((key, (x0, y0, w, h), tuple(point), tuple(box)))
    return out


def _draw_plates(fb, drawn, targets, words, height, pal) -> None:
    """The plates found a spot (all of them without `targets`), each with its leader when it has a target."""
    for name, x0, y0, w, h, ok, lines in drawn:
        if not ok and targets is not None:
            continue
        if targets is not None:
            # under the words only: under the other parts' readout regions too (whole racks, the bridge) a leader
            # vanished for most of its length and a plate seemed to name nothing (its dots are on dark rims)
            ax, ay = targets[name][0]
            _leader(fb, (ax, ay), (x0, y0, w, h), height, pal, under=list(words))
        _plate(fb, x0, y0, lines, pal, anchor="left_centred", name=f"plate:{name}")


def _name(part: str, names: dict | None) -> tuple[str, str]:
    return (names or {}).get(part) or (PARTS[part].zh, PARTS[part].en)


def _part_labels(fb, viewproj, width, height, ec, offsets, hidden, exploded, readouts, keep_out, anchors=None,
                 targets=None, short=frozenset(), renamed=None):
    pal = ec.palette
    big, small = label_sizes(ec, height)
    wanted, names, all_lines, ghost = [], [], [], []
    for name, info in PARTS.items():
        # A part the user hid is not named, but with `targets` its plate is still laid out of sight (a ghost):
        # where the others go must not depend on it, or a plate would move when a part is hidden.
        if name in hidden and (targets is None or name not in targets):
            continue
        off = offsets.get(name, (0, 0, 0))
        base = info.exploded_anchor if exploded and info.exploded_anchor else info.anchor
        if anchors and name in anchors:
            base, off = anchors[name], (0, 0, 0)
        a = tuple(base[i] + off[i] for i in range(3))
        x, y, depth = project(viewproj, a, width, height)
        if not (-1 < depth < 1) or not (0 <= x <= width and 0 <= y <= height):
            continue
        if targets is not None and name not in targets:
            continue                     # no anchor on the part in view: no name
        lines = []
        zh, en = _name(name, renamed)
        zh, en = (zh.split(" · ")[0], en.split(" · ")[0]) if name in short else (zh, en)
        if ec.language in ("zh", "both"):
            lines.append((zh, big, pal.label))
        if ec.language in ("en", "both"):
            lines.append((en, small if ec.language == "both" else big * 0.8, pal.label_sub))
        n_name = len(lines)
        for text, kind in readouts.get(name, ()):
            lines.append((text, big if kind == "main" else small, tuple(pal.lane_on.color) if kind == "main" else pal.label))
        w, h = _plate_size(fb, lines)
        top = y - (big + small) * 1.3
        if len(lines) > n_name:
            # Extra lines grow the plate upwards: its foot stays where the name plate's foot would be,
            # clear of the part under it.
            top -= h - _plate_size(fb, lines[:n_name])[1]
        wanted.append((x - w / 2, top, w, h))
        names.append(name)
        all_lines.append(lines)
        ghost.append(name in hidden)
    # Plates that carry a readout are placed first: what they show must not move when another part is
    # hidden or shown (the mill's readout stays put whether the bridge is there or not).
    order = sorted(range(len(names)), key=lambda k: names[k] not in readouts)
    wanted_o = [wanted[k] for k in order]
    avoid = leaders = None
    if targets is not None:
        # A plate covers no other labelled part; its leader runs to the anchor on its own.
        # (every part in `targets`, named or hidden by the user: a plate does not move when a part is hidden)
        boxes = {n: t[1] for n, t in targets.items()}
        avoid = [[(b[0], b[1], b[2] - b[0], b[3] - b[1]) for m, b in boxes.items() if m != names[k]] for k in order]
        leaders = [targets[names[k]][0] for k in order]
    laid = None
    if targets is not None and len(order) > 1 and names[order[0]] in readouts:
        wanted_o[0], *laid = _readout_spot(wanted_o, width, height, keep_out, avoid, leaders)
    real = [j for j, k in enumerate(order) if not ghost[k]]
    if laid is not None and len(real) == len(order):
        placed, free = laid                       # no part hidden: the placement the readout's spot was chosen by
    else:
        pick = lambda items: None if items is None else [items[j] for j in real]  # noqa: E731
        placed, free = _place(pick(wanted_o), width, height, keep_out, avoid=pick(avoid), leaders=pick(leaders))
    spots, oks = {}, {}
    for j, spot, ok in zip(real, placed, free):
        spots[order[j]], oks[order[j]] = spot, ok
    drawn = []
    for k, (name, lines, (_, _, w, h)) in enumerate(zip(names, all_lines, wanted)):
        if k in spots:
            drawn.append((name, spots[k][0], spots[k][1], w, h, oks[k], lines))
    return drawn


def hud_lines(ec: EmitContext, height: int, n_steps: int, title, step: int, gamma: int, lanes_true: int,
              target_only: bool, phase: tuple[str, str], activity: list[tuple[str, str]] | None = None,
              mode: str | None = None) -> list[tuple]:
    """The HUD's text lines [(text, size_px, colour)]: the part's title, where we are in the run, the phase;
    `activity` [(zh, en)] replaces the pass and its phase with a mode's own (the tube experiment's round);
    `mode`: who drafted the pass (drafter_mode), said instead of γ."""
    pal = ec.palette
    # Sized for the picture the text is sized for (the window, in the app), with a floor: the table gets only
    # part of the window, and the HUD must still read from the back of a classroom.
    ref = ec.text_ref or height
    big = max(ref / 30.0, 1.5 * ec.min_px)
    small = max(ref / 46.0, 1.125 * ec.min_px)
    zh, en = phase
    lines = []
    if title:
        lines.append((ec.say(*title), big, pal.label))
    if activity is not None:
        for k, (lz, le) in enumerate(activity):
            if ec.language in ("zh", "both"):
                lines.append((lz, big if k == 0 and not title else small, pal.label_sub if title else pal.label))
            if ec.language in ("en", "both"):
                lines.append((le, small, pal.label_sub))
    elif step >= 0:
        # "第 1/12 步" alone read as chapter 1 of 12 (and "这段第" as a page's), "运行第 1/12 步" as unexplained:
        # it counts the passes of the run on the table.
        step_words = ec.say(f"第 {step + 1} 步（共 {n_steps} 步）", f"pass {step + 1} of {n_steps}")
        n = lanes_true
        lanes = ec.say(f"亮 {n} 条路", f"{n} lane{'' if n == 1 else 's'} lit") if n else ""
        if n > DRAWN_LANES:       # the figures count them all; the read head draws nine
            lanes += ec.say(f"（台上画 {DRAWN_LANES} 条）", f" ({DRAWN_LANES} drawn)")
        # The target alone has no γ: say what it does instead (one token per lane per turn of the drum);
        # with both languages the line keeps to "target alone" and the phase line says the rest.
        if mode:
            pass
        elif target_only:
            mode = ec.say(*TARGET_MODE) if ec.language != "both" else "只用大模型  target alone"
        else:
            mode = f"γ = {gamma}"
        lines.append(("  ·  ".join(s for s in (step_words, mode, lanes) if s), small, pal.label_sub))
        if ec.language in ("zh", "both"):
            lines.append((zh, big, pal.label))
        if ec.language in ("en", "both"):
            lines.append((en, small if ec.language == "both" else big * 0.8, pal.label_sub))
    return lines


def hud_origin(height: int) -> tuple[float, float]:
    return height * 0.025, height * 0.025


def emit_hud(fb, state, width, height, ec: EmitContext, n_steps: int, title: tuple[str, str] | None = None,
             timing=None, passes: bool = True, activity: list[tuple[str, str]] | None = None,
             lanes: bool = True, bridge: bool = True, tape: bool = True, held: bool = False) -> tuple | None:
    """Top-left: where we are in the run and what is happening now, and a strip of the pass's phases
    (`passes` False: no pass counter, for a view of the test tubes, which run rounds of their own;
    `activity` [(zh, en)]: what the mode is doing instead, the tubes' round; `bridge`, `tape`: whether the bridge,
    the tape are in the picture; `held`: the table stands still)."""
    pal = ec.palette
    target_only = bool(state.extra.get("target_only"))
    phase = phase_words(state, bridge, tape, held)
    if state.phase == "write" and not target_only and kept_all(state):
        phase = WRITE_BONUS_TREE if state.tree is not None else WRITE_BONUS
    step = state.step if passes else -1
    timing = timing if passes and activity is None else None
    # `lanes` False (the lesson has not taught lanes yet): no lane count, and the target's words without lanes
    mode = drafter_mode(state, ec) or (None if lanes or not target_only else ec.say(*TARGET_MODE_NO_LANES))
    lines = hud_lines(ec, height, n_steps, title, step, state.gamma, state.lanes_true if lanes else 0, target_only,
                      phase, activity, mode)
    fb.hud_text = [text for text, _, _ in lines]
    if lines:
        x0, y0 = hud_origin(height)
        w, h = _plate(fb, x0, y0, lines, pal, anchor="left", name="hud")
        if timing is not None:
            _phase_strip(fb, state, timing, x0, y0 + h + height * 0.006, w, height * 0.012, pal)
            h += height * 0.024
        return (x0, y0, w, h)           # the HUD's rectangle: part labels keep out of it
    return None


def hud_extent(atlas, height: int, ec: EmitContext, n_steps: int, title, gamma: int, lanes_true: int,
               target_only: bool, passes: bool = True,
               activity: list[tuple[str, str]] | None = None, drafted=()) -> tuple[float, float, float, float]:
    """The largest HUD rectangle (x, y, w, h) any moment of this run can show (every phase's words, the phase
    strip): the camera frames the parts it names clear of it, and keeps that frame while the pass plays.
    drafted: (drafter, extra) of the run's passes by other drafters than the chain (their own words)."""
    trees = any(kind_of(d).look == TREE for d, _ in drafted)
    phases = list((TARGET_PHASES if target_only else PHASES).values()) + [HELD_START] + \
        list((TARGET_HELD if target_only else HELD).values()) + \
        ([] if target_only else [WRITE_BONUS] + ([WRITE_BONUS_TREE] if trees else []))
    modes = [None]
    for drafter, extra in drafted:
        probe = SimpleNamespace(drafter=drafter, extra=extra, gamma=gamma)
        modes.append(drafter_mode(probe, ec))
        for key in (drafter, drafter + "_none", drafter + "_heads"):
            phases += list(DRAFTER_PHASES.get(key, {}).values())
    step = max(n_steps - 1, 0) if passes else -1
    w = h = 0.0
    for phase, mode in ((p, m) for p in phases for m in dict.fromkeys(modes)):
        lines = hud_lines(ec, height, n_steps, title, step, gamma, lanes_true, target_only, phase, activity, mode)
        if lines:
            pw, ph = plate_size(atlas, lines)
            w, h = max(w, pw), max(h, ph + (height * 0.024 if passes else 0.0))
    x0, y0 = hud_origin(height)
    return (x0, y0, w, h)


def kept_all(state) -> bool:
    """The current pass kept all γ guesses (every meter passed), so its last token is the bonus."""
    return bool(state.meters) and len(state.meters) == state.gamma and all(m.verdict == "pass" for m in state.meters)


def _phase_strip(fb, state, st, x, y, w, h, pal) -> None:
    """The current step as a bar: one segment per phase (draft, verify, check, write), length = its time;
    the part already played is bright, a marker shows now."""
    spans = [st.draft, st.verify, st.check, st.write]
    total = max(spans[-1][1] - spans[0][0], 1e-9)
    colours = [pal.pencil, pal.lane_on.color, pal.copper.color, pal.label]
    fb.rect_screen(x, y, w, h, pal.plate)
    for (a, b), col in zip(spans, colours):
        if b <= a:
            continue
        sx = x + (a - spans[0][0]) / total * w
        sw = (b - a) / total * w
        fb.rect_screen(sx + 1, y + h * 0.2, max(sw - 2, 1), h * 0.6, (col[0], col[1], col[2], 0.35))
        done = min(max(state.t - a, 0.0), b - a) / (b - a)
        if done > 0:
            fb.rect_screen(sx + 1, y + h * 0.2, max((sw - 2) * done, 1), h * 0.6, (col[0], col[1], col[2], 1.0))
    now = x + min(max(state.t - spans[0][0], 0.0), total) / total * w
    fb.rect_screen(now - 1.5, y - h * 0.3, 3, h * 1.6, pal.label)
