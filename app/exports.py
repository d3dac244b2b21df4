"""Everything the program writes for a teacher: screenshots, plots (PNG/SVG), the run log (CSV), GIF/MP4 replays.

All files are written atomically (temp file in the same folder, then os.replace): each is complete under
its final name or absent. A failure raises OSError or InputError for the controller to turn into a
status-line message (describe_failure). The replay renders the table at a fixed frame rate from the
deterministic timeline, so the same run gives the same file.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
from PIL import Image

from corpus.atomic import atomic_path, write_bytes_atomic
from corpus.errors import InputError
from models.trace import medusa_number
from app.lesson import handout
from app.lesson.quiz import LETTERS
from app.lesson.tour import CHAPTERS, narration

GIF_FPS = 12
GIF_SECONDS = 6.0
GIF_SIZE = (640, 360)


def stamp(kind: str, ext: str) -> str:
    return f"spectable-{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{int(time.time() * 1000) % 1000:03d}.{ext}"


def _atomic_bytes(path: Path, data: bytes) -> Path:
    return write_bytes_atomic(path, data)


def describe_failure(exc: BaseException, folder: Path) -> str:
    """One line for a failed export that names the export folder and the reason, never the hidden temp file
    the failure may have happened on (an OSError's filename is often that temp file)."""
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
        return f"{folder}: {reason}"
    return str(exc)


def save_png(rgb: np.ndarray, path: Path) -> Path:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="PNG")
    return _atomic_bytes(path, buf.getvalue())


def export_plots(ctl, names=None) -> list[Path]:
    """Every panel plot for slides, PNG at 1920x1080 and SVG, in the screen's colours, and again in the light
    theme for print (names ending in -print)."""
    from app import figures, plots  # lazy: pulls in matplotlib
    out = []
    for name in names or figures.plot_names(ctl):
        for theme, suffix in (("screen", ""), ("print", "-print")):
            fig = figures.make(ctl, name, figures.SLIDE_PX, figures.SLIDE_TEXT_PX, theme=theme)
            try:
                for ext in ("png", "svg"):
                    out.append(plots.save_figure(fig, ctl.out_dir() / stamp(f"plot-{name}{suffix}", ext)))
            finally:
                plots.close(fig)
    return out


LOG_COLUMNS = ("step", "guess_index", "context_tail", "guess", "q", "p", "p_over_q", "r", "verdict",
               "final_token", "final_kind", "draft_backed_off", "target_backed_off", "drafter", "head", "node",
               "depth", "round")


def run_log_rows(ctl):
    """One row per guess of every target pass: the numbers of the acceptance test and its verdict. A tree's rows
    are its checks in the bridge's order (node, depth, round; p is the running target, the residual after a
    rejection); heads say which head proposed; lookup's q is 1 (a copied guess)."""
    run = ctl.session.ensure()
    pair = ctl.session.pair()
    rows = []
    for tr in run.traces if run else []:
        tail = pair.decode(tr.context[-2:])
        base = {"step": tr.step_index, "context_tail": tail.replace("\n", "↵"),
                "final_token": pair.display(tr.final_token), "final_kind": tr.final_kind, "drafter": tr.drafter}
        if tr.tree is not None:
            tree = tr.tree
            for j, c in enumerate(tree.checks):
                nd = tree.nodes[c.node]
                rows.append(dict(base, **{
                    "guess_index": j, "guess": pair.display(nd.token), "q": f"{c.q_x:.6g}", "p": f"{c.p_x:.6g}",
                    "p_over_q": f"{c.ratio:.6g}", "r": f"{c.r:.6g}", "verdict": "accepted" if c.accepted else "rejected",
                    "draft_backed_off": int(nd.backed_off),
                    "target_backed_off": int(tree.target_backed_off[0 if nd.parent < 0 else 1 + nd.parent]),
                    "head": "" if nd.head is None else medusa_number(nd.head), "node": c.node, "depth": nd.depth,
                    "round": c.round}))
            continue
        for i, g in enumerate(tr.guesses):
            tested = i < tr.tested
            verdict = ("accepted" if tr.accepted[i] else "rejected") if tested else "untested"
            rows.append(dict(base, **{
                "guess_index": i, "guess": pair.display(g), "q": f"{tr.q_rows[i][g]:.6g}", "p": f"{tr.p_rows[i][g]:.6g}",
                "p_over_q": f"{tr.ratios[i]:.6g}", "r": f"{tr.r[i]:.6g}", "verdict": verdict,
                "draft_backed_off": int(tr.draft_backed_off[i]), "target_backed_off": int(tr.target_backed_off[i]),
                "head": medusa_number(tr.heads[i]) if tr.heads else "", "node": "", "depth": i + 1, "round": 1}))
    return rows


def csv_bytes(columns, rows) -> bytes:
    """A CSV file's bytes: UTF-8 with a byte-order mark (Excel reads the file as UTF-8 only with it; every
    other reader skips it) and CRLF line ends, as RFC 4180 writes them."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\r\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode("utf-8-sig")


def export_run_log(ctl, path: Path | None = None) -> Path:
    return _atomic_bytes(path or ctl.out_dir() / stamp("runlog", "csv"), csv_bytes(LOG_COLUMNS, run_log_rows(ctl)))


class GifJob:
    """Renders the replay a few frames per UI frame so the window can show a progress bar meanwhile. It renders
    the table into its own framebuffer at fixed timeline steps (the window's own picture, through
    driver.read_screen, when there is no table) and puts the timeline back where it was when done."""

    def __init__(self, driver, folder: Path, seconds: float | None = None, fps: int = GIF_FPS, size=GIF_SIZE,
                 path: Path | None = None):
        self.driver = driver
        self.stage = driver.stage
        if self.stage is None and driver.read_screen is None:
            raise InputError("no picture to record: neither the table nor a window is open")
        tl = self.stage.timeline if self.stage is not None else None
        if seconds is None:
            # Default: the first two target passes of the run (one full draft-verify-write cycle and the next).
            seconds = min(30.0, tl.step_end(min(1, len(tl.steps) - 1))) if tl is not None and tl.steps else GIF_SECONDS
        self.fps = fps
        self.size = size
        self.total = max(1, int(round(seconds * fps)))
        self.frames: list[Image.Image] = []
        self.count = 0
        self.path = Path(path) if path else Path(folder) / stamp("replay", "gif")
        self.done = False
        self.fbo = None
        if self.stage is not None:
            ctx = self.stage.ctx
            self.color = ctx.texture(size, 4)
            self.depth = ctx.depth_renderbuffer(size)
            self.fbo = ctx.framebuffer(color_attachments=[self.color], depth_attachment=self.depth)
            self.t0 = tl.t
            self.start = tl.step_start(0)

    @property
    def progress(self) -> float:
        return self.count / self.total

    def advance(self, batch: int = 3) -> None:
        if self.done:
            return
        for _ in range(batch):
            if len(self.frames) >= self.total:
                break
            self.frames.append(self._frame(len(self.frames)))
            self.count = len(self.frames)
        if len(self.frames) >= self.total:
            self._finish()

    def _frame(self, i: int) -> Image.Image:
        if self.fbo is None:
            rgb = self.driver.read_screen()
            img = Image.fromarray(np.ascontiguousarray(rgb))
            return img.resize(self.size, Image.LANCZOS)
        tl = self.stage.timeline
        tl.seek(self.start + i / self.fps)
        self.fbo.use()
        self.stage.ctx.clear(*self.driver.ctl.colors["clear"])
        self.stage.render(self.fbo, *self.size)
        data = self.fbo.read(components=3)
        arr = np.frombuffer(data, dtype=np.uint8).reshape(self.size[1], self.size[0], 3)[::-1]
        return Image.fromarray(np.ascontiguousarray(arr))

    def _release(self) -> None:
        if self.fbo is not None:
            self.stage.timeline.seek(self.t0)
            for obj in (self.fbo, self.color, self.depth):
                obj.release()
            self.fbo = None

    def abandon(self) -> None:
        """Stop (a failed write): free the framebuffer, put the table's clock back, keep nothing."""
        self._release()
        self.frames = []
        self.done = True

    def _finish(self) -> None:
        self._release()
        buf = io.BytesIO()
        self.frames[0].save(buf, format="GIF", save_all=True, append_images=self.frames[1:],
                            duration=int(1000 / self.fps), loop=0, optimize=False)
        _atomic_bytes(self.path, buf.getvalue())
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg:     # MP4 only where an encoder is already installed; we never download one
            mp4 = self.path.with_suffix(".mp4")
            raw = b"".join(f.convert("RGB").tobytes() for f in self.frames)
            try:
                with atomic_path(mp4) as tmp:     # ffmpeg picks the container from the .mp4 suffix
                    subprocess.run([ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
                                    "-s", f"{self.size[0]}x{self.size[1]}", "-r", str(self.fps), "-i", "-",
                                    "-pix_fmt", "yuv420p", str(tmp)], input=raw, check=True)
            except (OSError, subprocess.CalledProcessError):
                pass    # the GIF is written; a failing encoder costs only the optional MP4
        self.frames = []
        self.done = True


QUIZ_COLUMNS = ("number", "question_id", "chapter", "chapter_title", "computed", "question", "choice",
                "choice_text", "right", "right_text", "correct", "language")


def quiz_rows(panel) -> list[dict]:
    """One row per question of the quiz, answered or not, in the language shown."""
    lang = panel.ctl.settings.language
    rows = []
    for n, q in enumerate(panel.questions(), 1):
        k = panel.choices.get(q.id)
        rows.append({"number": n, "question_id": q.id, "chapter": q.chapter + 1,
                     "chapter_title": narration(CHAPTERS[q.chapter].slug).title[lang],
                     "computed": "yes" if q.computed else "no", "question": q.prompt,
                     "choice": LETTERS[k] if k is not None else "", "choice_text": q.options[k] if k is not None else "",
                     "right": LETTERS[q.right], "right_text": q.options[q.right],
                     "correct": "" if k is None else int(k == q.right), "language": lang})
    return rows


def export_quiz(panel, path: Path | None = None) -> Path:
    """The quiz's answers as CSV (UTF-8 with a BOM), written atomically."""
    return _atomic_bytes(path or panel.ctl.out_dir() / stamp("quiz", "csv"), csv_bytes(QUIZ_COLUMNS, quiz_rows(panel)))


def export_handout(ctl) -> list[Path]:
    """The one-page student handout (app/lesson/handout.py) as PNG and PDF, in the language shown."""
    return handout.write(ctl, ctl.out_dir(), stamp("handout", "png").rsplit(".", 1)[0])
