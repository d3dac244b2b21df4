"""The renderer: collects a frame's instances by shape, draws each shape once, and counts what it drew.

Parts never touch OpenGL: they append instances (matrices + materials), shadow blobs and text quads to a
FrameBuilder (scenes.frame); the Renderer uploads each group into one instance buffer and issues one draw call
per group. That keeps the full table at a couple of dozen draw calls however many pins, teeth and beads it shows.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from corpus.resources import ASSETS
from scenes.frame import INST_FLOATS, TEXT_FLOATS, FrameBuilder
from scenes.geometry import build_meshes, quad_mesh
from scenes.palette import Palette

SHADER_DIR = ASSETS / "shaders"


@dataclass
class RenderStats:
    draw_calls: int
    triangles: int
    frame_ms: float
    instances: int = 0
    still: bool = False          # the frame started from the still layer (Renderer.begin_still) ...
    still_drawn: bool = False    # ... and drew it anew (what it shows changed)


def load_shader(name: str) -> str:
    return (SHADER_DIR / name).read_text(encoding="utf-8")


# Closed shapes: their back faces are always hidden behind their front faces, so the opaque pass culls them
# (half the triangles rasterised, and no back face shaded and then painted over). Open shapes (the tube
# walls: rings, p lines, glass; the gears' bores) show their inside and stay two-sided.
CLOSED_MESHES = frozenset({"box", "cyl", "cyl_lo", "bead", "pin"})


def _outward(mesh: np.ndarray) -> np.ndarray:
    """The same triangles, each wound counter-clockwise seen from outside (the side its normals point to)."""
    tri = mesh.reshape(-1, 3, 6).copy()
    p = tri[:, :, :3].astype(np.float64)
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    flip = np.einsum("ij,ij->i", face, tri[:, :, 3:].astype(np.float64).sum(axis=1)) < 0
    tri[flip] = tri[flip][:, ::-1]
    return tri.reshape(-1, 6)


BACKDROPS = 2      # cached backdrops: the window's table and an export's (GIF) frames
SIZE_STEP = 128    # render targets grow in steps of this many pixels and never shrink


def grown(have: tuple[int, int] | None, need: tuple[int, int]) -> tuple[int, int]:
    """The size of a render target that holds `need`: `have` when it does, else grown to hold it (in whole
    SIZE_STEPs, never smaller than before). A target drawn at several sizes (panels resized, a window dragged
    wider frame by frame) is then allocated a few times instead of once per size; it is drawn into the
    lower-left need[0] x need[1] pixels (viewport) and read from there."""
    hw, hh = have or (0, 0)
    if need[0] <= hw and need[1] <= hh:
        return hw, hh
    step = lambda v: -(-v // SIZE_STEP) * SIZE_STEP  # noqa: E731
    return max(hw, step(need[0])), max(hh, step(need[1]))


class Renderer:
    """GPU resources made once (programs, meshes, instance buffers); draw(frame) issues the draw calls."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.lit = ctx.program(vertex_shader=load_shader("lit.vert"), fragment_shader=load_shader("lit.frag"))
        self.shadow_prog = ctx.program(vertex_shader=load_shader("shadow.vert"),
                                       fragment_shader=load_shader("shadow.frag"))
        self.text_prog = ctx.program(vertex_shader=load_shader("text.vert"), fragment_shader=load_shader("text.frag"))
        self.bg_prog = ctx.program(vertex_shader=load_shader("background.vert"),
                                   fragment_shader=load_shader("background.frag"))
        self.bg_vao = ctx.vertex_array(self.bg_prog, [])
        # Stretches a frame rendered at a reduced internal scale over the target (same full-screen triangle).
        self.upscale_prog = ctx.program(vertex_shader=load_shader("background.vert"),
                                        fragment_shader=load_shader("upscale.frag"))
        self.upscale_vao = ctx.vertex_array(self.upscale_prog, [])
        self.meshes = {k: (_outward(v) if k in CLOSED_MESHES else v) for k, v in build_meshes().items()}
        # Indexed: corners shared by neighbouring triangles (same position and normal) are shaded once.
        # On llvmpipe the vertex shader is a good part of the frame, so this saves a third or more.
        self.mesh_vbos, self.mesh_ibos, self.mesh_tris = {}, {}, {}
        for k, v in self.meshes.items():
            verts, idx = np.unique(np.round(v, 5), axis=0, return_inverse=True)
            self.mesh_vbos[k] = ctx.buffer(verts.astype(np.float32).tobytes())
            self.mesh_ibos[k] = ctx.buffer(idx.astype(np.uint32).ravel().tobytes())
            self.mesh_tris[k] = len(v) // 3
        self._inst: dict[str, tuple] = {}     # key -> (buffer, vao, capacity_rows)
        # Set to a dict to time each pass (ms, GL finished after each: slower, for benchmarks/bench_render.py).
        self.profile: dict | None = None
        # key (size, palette) -> (framebuffer, renderbuffer, its size): the last BACKDROPS backdrops, so a GIF
        # export rendering at its own size between the window's frames copies both instead of redrawing each;
        # a new key redraws into the least recently used one (grown if it is too small).
        self._backdrops: dict[tuple, tuple] = {}
        # The still layer (begin_still): [key of what it shows, size, framebuffer, colour, depth], or None.
        self._still: list | None = None
        self._t = 0.0
        self.corner_vbo = ctx.buffer(np.array([0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1], dtype=np.float32).tobytes())

    # ---------------------------------------------------------------- buffers
    def _vao(self, key: str, prog, mesh: str | None, rows: int, floats: int):
        buf, vao, cap = self._inst.get(key, (None, None, 0))
        if rows > cap:
            if vao is not None:
                vao.release()
                buf.release()
            cap = max(rows, int(cap * 1.5), 64)
            buf = self.ctx.buffer(reserve=cap * floats * 4, dynamic=True)
            if mesh is None:
                content = [(self.corner_vbo, "2f", "in_corner"),
                           (buf, "3f 3f 3f 4f 4f 2f/i", "i_origin", "i_axis_u", "i_axis_v", "i_uv", "i_color",
                            "i_extra")]
            else:
                content = [(self.mesh_vbos[mesh], "3f 3f", "in_pos", "in_normal"),
                           (buf, "16f 4f 4f/i", "i_model", "i_color", "i_material")]
            if mesh is None:
                vao = self.ctx.vertex_array(prog, content, skip_errors=True)
            else:
                vao = self.ctx.vertex_array(prog, content, index_buffer=self.mesh_ibos[mesh], index_element_size=4,
                                            skip_errors=True)
            self._inst[key] = (buf, vao, cap)
        return buf, vao

    # ---------------------------------------------------------------- drawing
    def begin(self, fbo, width: int, height: int, palette: Palette, multisampled: bool) -> bool:
        """Clear `fbo` for a frame. Single-sampled: copy in the backdrop (gradient + vignette), rendered once per
        size and palette into a cached framebuffer: a copy costs a fraction of a millisecond where a
        full-screen backdrop pass costs several on llvmpipe. Returns True when the backdrop is in place
        (draw() then skips its backdrop pass); a multisampled target cannot take the copy."""
        fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        if multisampled:
            return False
        key = (width, height, tuple(palette.background_top), tuple(palette.background_bottom))
        cache = self._backdrops.pop(key, None)
        if cache is None:
            # The least recently used one is redrawn, or a new one made while there are fewer than BACKDROPS.
            cfbo, color, size = self._backdrops.pop(next(iter(self._backdrops))) if len(self._backdrops) >= \
                BACKDROPS else (None, None, None)
            need = grown(size, (width, height))
            if need != size:
                if cfbo is not None:
                    cfbo.release()
                    color.release()
                color = self.ctx.renderbuffer(need, 4)
                cfbo = self.ctx.framebuffer([color])
            cfbo.use()
            self.ctx.viewport = (0, 0, width, height)
            self.ctx.disable(self.ctx.DEPTH_TEST | self.ctx.BLEND | self.ctx.CULL_FACE)
            self._draw_backdrop(palette, width, height)
            cache = (cfbo, color, need)
            fbo.use()
        self._backdrops[key] = cache                             # now the most recently used
        # The lower-left corner both share: the backdrop's width x height, the rest of the larger one unused.
        self.ctx.copy_framebuffer(fbo, cache[0])
        return True

    def drop_still(self) -> None:
        """Free the still layer (the next begin_still draws it anew)."""
        if self._still is not None:
            for obj in self._still[2:]:
                obj.release()
            self._still = None

    def _release_backdrop(self) -> None:
        for fbo, color, _ in self._backdrops.values():
            fbo.release()
            color.release()
        self._backdrops.clear()

    def _draw_backdrop(self, palette: Palette, width: int, height: int) -> None:
        self.bg_prog["u_top"].value = tuple(c ** (1 / 2.2) for c in palette.background_top)
        self.bg_prog["u_bottom"].value = tuple(c ** (1 / 2.2) for c in palette.background_bottom)
        self.bg_prog["u_aspect"].value = width / max(height, 1)
        self.bg_vao.render(vertices=3)

    def begin_still(self, fbo, width: int, height: int, palette: Palette, still: FrameBuilder, key,
                    viewproj: np.ndarray, eye, stats: RenderStats) -> bool:
        """Start a frame from the still layer: the backdrop and the opaque parts that did not change, drawn once
        into a framebuffer of their own (colour and depth) and copied into `fbo`, so the frame then draws only
        what moves (and the shadows, glass and text, always drawn over what moves too). The
        layer is drawn again when `key` (what it shows: the parts' emissions, the camera, the size, the palette)
        changes. Single-sampled targets only. Returns True (the backdrop is in place)."""
        need = (width, height)
        layer = self._still
        if layer is None or layer[1] != grown(layer[1], need):
            size = grown(layer[1] if layer is not None else None, need)
            self.drop_still()
            color, depth = self.ctx.renderbuffer(size, 4), self.ctx.depth_renderbuffer(size)
            layer = self._still = [None, size, self.ctx.framebuffer([color], depth), color, depth]
        if layer[0] != key:
            self.begin(layer[2], width, height, palette, multisampled=False)
            layer[2].use()
            self.ctx.viewport = (0, 0, width, height)
            vp = np.asarray(viewproj, dtype=np.float32).T.tobytes()
            self._lights(vp, eye, palette)
            self._opaque(still, eye, stats, ":still")
            self.ctx.depth_mask = True
            self.ctx.disable(self.ctx.DEPTH_TEST | self.ctx.BLEND | self.ctx.CULL_FACE)
            layer[0] = key
            stats.still_drawn = True
        fbo.use()
        self.ctx.viewport = (0, 0, width, height)
        self.ctx.copy_framebuffer(fbo, layer[2])           # colour and depth: what moves is tested against it
        return True

    def _lights(self, vp: bytes, eye, palette: Palette) -> None:
        lit = self.lit
        lit["u_viewproj"].write(vp)
        lit["u_eye"].value = tuple(float(x) for x in eye)
        key = np.array([-0.45, 0.85, 0.55])
        lit["u_key_dir"].value = tuple(float(x) for x in key / np.linalg.norm(key))
        lit["u_key_color"].value = tuple(palette.key_color)
        lit["u_fill_dir"].value = (0.7, 0.35, 0.35)
        lit["u_fill_color"].value = tuple(palette.fill_color)
        lit["u_sky"].value = tuple(palette.sky)
        lit["u_ground"].value = tuple(palette.ground)
        lit["u_exposure"].value = palette.exposure

    def _opaque(self, frame: FrameBuilder, eye, stats: RenderStats, suffix: str = "") -> None:
        ctx = self.ctx
        ctx.enable(ctx.DEPTH_TEST)
        ctx.depth_func = "<="
        ctx.depth_mask = True
        for key, parts in sorted(frame.groups.items(), key=lambda kv: kv[0][2]):
            mesh, transparent, late = key
            if transparent:
                continue
            self._draw_group(mesh, parts, stats, key_suffix=(":late" if late else "") + suffix, eye=eye,
                             cull=mesh in CLOSED_MESHES)
        ctx.disable(ctx.CULL_FACE)

    def _shadows(self, frame: FrameBuilder, vp: bytes, stats: RenderStats) -> None:
        # After the opaque surfaces they fall on; no depth writes, so they never hide anything.
        if not frame.shadows:
            return
        ctx = self.ctx
        ctx.enable(ctx.BLEND)
        ctx.blend_func = ctx.SRC_ALPHA, ctx.ONE_MINUS_SRC_ALPHA
        ctx.depth_mask = False
        data = np.concatenate(frame.shadows)
        buf, vao = self._shadow_vao(len(data))
        buf.write(data.tobytes())
        self.shadow_prog["u_viewproj"].write(vp)
        vao.render(instances=len(data))
        stats.draw_calls += 1
        stats.triangles += 2 * len(data)
        stats.instances += len(data)

    def draw(self, frame: FrameBuilder, viewproj: np.ndarray, eye, palette: Palette, width: int, height: int,
             stats: RenderStats, backdrop_done: bool = False) -> None:
        ctx = self.ctx
        vp = np.asarray(viewproj, dtype=np.float32).T.tobytes()
        self._mark(None)
        ctx.disable(ctx.DEPTH_TEST | ctx.BLEND | ctx.CULL_FACE)
        self._lights(vp, eye, palette)
        self._opaque(frame, eye, stats)
        self._mark("solids")

        # The backdrop after the solids, at the far plane: early depth rejection skips every pixel the
        # table covers (on llvmpipe the fragment work is most of the frame).
        ctx.depth_mask = False
        if not backdrop_done:
            self._draw_backdrop(palette, width, height)
            stats.draw_calls += 1
            stats.triangles += 1
        self._mark("backdrop")

        self._shadows(frame, vp, stats)
        self._mark("shadows")

        # Glass last among the solids: blended over what is behind it.
        ctx.enable(ctx.BLEND)
        ctx.blend_func = ctx.SRC_ALPHA, ctx.ONE_MINUS_SRC_ALPHA
        ctx.depth_mask = False
        # One face of each glass shape is enough to read as glass, at half the blending cost.
        ctx.enable(ctx.CULL_FACE)
        for (mesh, transparent, _), parts in frame.groups.items():
            if transparent:
                self._draw_group(mesh, parts, stats, key_suffix=":t")
        ctx.disable(ctx.CULL_FACE)
        self._mark("glass")

        tex = frame.atlas.texture_for(ctx)
        tex.use(0)
        self.text_prog["u_atlas"].value = 0
        if frame.world_text:
            self.text_prog["u_viewproj"].write(vp)
            self._draw_text("text_world", frame.world_text, stats)
        if frame.screen_text:
            ctx.disable(ctx.DEPTH_TEST)
            ortho = np.array([[2 / width, 0, 0, -1], [0, -2 / height, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]],
                             dtype=np.float32)
            self.text_prog["u_viewproj"].write(ortho.T.tobytes())
            self._draw_text("text_screen", frame.screen_text, stats)
        self._mark("text")
        # Leave GL as found by the app's own renderer (ImGui): no depth test, blending or culling.
        ctx.depth_mask = True
        ctx.disable(ctx.DEPTH_TEST | ctx.BLEND | ctx.CULL_FACE)

    def upscale(self, texture, stats: RenderStats | None = None) -> None:
        """Draw `texture` (the scaled frame) over the whole bound framebuffer, linearly filtered."""
        ctx = self.ctx
        ctx.disable(ctx.DEPTH_TEST | ctx.BLEND | ctx.CULL_FACE)
        texture.use(0)
        self.upscale_prog["u_frame"].value = 0
        self.upscale_vao.render(vertices=3)
        if stats is not None:
            stats.draw_calls += 1
            stats.triangles += 1
        self._mark("upscale")

    def _mark(self, name) -> None:
        if self.profile is None:
            return
        self.ctx.finish()
        now = time.perf_counter()
        if name is not None:
            self.profile[name] = self.profile.get(name, 0.0) + (now - self._t) * 1000.0
        self._t = now

    def _shadow_vao(self, rows: int):
        key = "shadow_quad"
        buf, vao, cap = self._inst.get(key, (None, None, 0))
        if rows > cap:
            if vao is not None:
                vao.release()
                buf.release()
            cap = max(rows, 64)
            if "quad" not in self.mesh_vbos:
                self.mesh_vbos["quad"] = self.ctx.buffer(quad_mesh().tobytes())
            buf = self.ctx.buffer(reserve=cap * INST_FLOATS * 4, dynamic=True)
            vao = self.ctx.vertex_array(self.shadow_prog, [(self.mesh_vbos["quad"], "3f 3f", "in_pos", "in_normal"),
                                                           (buf, "16f 4f 4f/i", "i_model", "i_color", "i_material")],
                                        skip_errors=True)
            self._inst[key] = (buf, vao, cap)
        return buf, vao

    def _draw_group(self, mesh: str, parts: list[np.ndarray], stats: RenderStats, key_suffix: str = "",
                    eye=None, cull: bool | None = None) -> None:
        data = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if cull:
            # Back faces culled, unless a copy is mirrored (negative determinant: wound the other way round).
            c0, c1, c2 = data[:, 0:3], data[:, 4:7], data[:, 8:11]
            mirrored = (np.einsum("ij,ij->i", c0, np.cross(c1, c2)) < 0).any()
            if mirrored:
                self.ctx.disable(self.ctx.CULL_FACE)
            else:
                self.ctx.enable(self.ctx.CULL_FACE)
        elif cull is False:
            self.ctx.disable(self.ctx.CULL_FACE)
        if eye is not None and len(data) > 1:
            # Opaque copies nearest first: what lies behind them then fails the depth test before it is
            # shaded (on llvmpipe each shaded pixel counts).
            d = data[:, 12:15] - np.asarray(eye, dtype=np.float32)
            data = data[np.argsort(np.einsum("ij,ij->i", d, d), kind="stable")]
        n = len(data)
        buf, vao = self._vao(mesh + key_suffix, self.lit, mesh, n, INST_FLOATS)
        buf.write(data.tobytes())
        vao.render(instances=n)
        stats.draw_calls += 1
        stats.triangles += self.mesh_tris[mesh] * n
        stats.instances += n

    def _draw_text(self, key: str, parts: list[np.ndarray], stats: RenderStats) -> None:
        data = np.concatenate(parts)
        n = len(data)
        if n == 0:          # every line of this pass left out (too small to read)
            return
        buf, vao = self._vao(key, self.text_prog, None, n, TEXT_FLOATS)
        buf.write(data.tobytes())
        vao.render(vertices=6, instances=n)
        stats.draw_calls += 1
        stats.triangles += 2 * n
        stats.instances += n

    def release(self) -> None:
        for buf, vao, _ in self._inst.values():
            vao.release()
            buf.release()
        self._inst.clear()
        self._release_backdrop()
        self.drop_still()
        for b in list(self.mesh_vbos.values()) + list(self.mesh_ibos.values()):
            b.release()
        self.corner_vbo.release()
        self.bg_vao.release()
        self.upscale_vao.release()
        for p in (self.lit, self.shadow_prog, self.text_prog, self.bg_prog, self.upscale_prog):
            p.release()

