"""Draws Dear ImGui's draw data with moderngl (imgui-bundle 1.93, renderer_has_textures protocol).

imgui-bundle's own OpenGL backend needs PyOpenGL and moderngl-window's integration predates the 1.92
texture protocol, so this is a small renderer of our own: one program, one VAO, streamed buffers,
and a table from ImTextureID (plain ints we hand out) to moderngl textures.
"""
from __future__ import annotations

import ctypes

import moderngl
import numpy as np
from imgui_bundle import imgui

from scenes.renderer import grown

_VERTEX = """
#version 330
uniform mat4 proj;
in vec2 in_pos;
in vec2 in_uv;
in vec4 in_col;
out vec2 uv;
out vec4 col;
void main() {
    uv = in_uv;
    col = in_col;
    gl_Position = proj * vec4(in_pos, 0.0, 1.0);
}
"""

_FRAGMENT = """
#version 330
uniform sampler2D tex;
in vec2 uv;
in vec4 col;
out vec4 out_col;
void main() { out_col = col * texture(tex, uv); }
"""


class ImGuiRenderer:
    """Uploads ImGui's textures on request and draws its triangle lists into the bound framebuffer."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=_VERTEX, fragment_shader=_FRAGMENT)
        self.prog["tex"].value = 0
        self.vbo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self.ibo = ctx.buffer(reserve=1 << 16, dynamic=True)
        # ImDrawVert: pos (2 f4), uv (2 f4), col (4 u1 normalised) = 20 bytes.
        self.vao = ctx.vertex_array(self.prog, [(self.vbo, "2f 2f 4f1", "in_pos", "in_uv", "in_col")],
                                    index_buffer=self.ibo, index_element_size=imgui.INDEX_SIZE)
        self.textures: dict[int, moderngl.Texture] = {}
        self._next_id = 1
        io = imgui.get_io()
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        limit = int(ctx.info.get("GL_MAX_TEXTURE_SIZE", 8192))
        pio = imgui.get_platform_io()
        pio.renderer_texture_max_width = limit
        pio.renderer_texture_max_height = limit

    # --- textures -------------------------------------------------------------------------------
    def register_rgba(self, rgba: np.ndarray, tex_id: int | None = None) -> int:
        """Upload an (h, w, 4) uint8 image (a plot) as a texture; returns its ImTextureID. The texture only grows
        (scenes.renderer.grown) and the image goes in its top-left corner, so a plot redrawn at another size (a
        text-size change, a mode whose panel is wider) writes into the texture it has instead of making one;
        uv1() is the corner of the texture the image ends at."""
        h, w = rgba.shape[:2]
        old = self.textures.get(tex_id) if tex_id is not None else None
        size = grown(old.size if old is not None else None, (w, h))
        if old is None or old.size != size:
            if tex_id is not None:
                self.release_texture(tex_id)
            tex = self.ctx.texture(size, 4)
            tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
            tex.repeat_x = tex.repeat_y = False
            tex_id = tex_id if tex_id is not None else self._new_id()
            self.textures[tex_id] = tex
        # One row and column of the image's own edge past it, where the texture is larger: linear filtering at
        # the image's border then blends with the image, not with what an earlier, larger plot left there.
        pad_y, pad_x = min(1, size[1] - h), min(1, size[0] - w)
        data = np.pad(np.asarray(rgba, dtype=np.uint8), ((0, pad_y), (0, pad_x), (0, 0)), mode="edge")
        self.textures[tex_id].write(np.ascontiguousarray(data).tobytes(), viewport=(0, 0, w + pad_x, h + pad_y))
        return tex_id

    def uv1(self, tex_id: int, w: int, h: int) -> tuple[float, float]:
        """Where a w x h image written by register_rgba ends in its texture (uv0 is (0, 0))."""
        tw, th = self.textures[tex_id].size
        return w / tw, h / th

    def release_texture(self, tex_id: int) -> None:
        tex = self.textures.pop(tex_id, None)
        if tex is not None:
            tex.release()

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _update_textures(self) -> None:
        S = imgui.ImTextureStatus
        for tex in imgui.get_platform_io().textures:
            status = tex.status
            if status == S.ok or status == S.destroyed:
                continue
            if status == S.want_create:
                pixels = tex.get_pixels_array()
                bpp = tex.bytes_per_pixel
                gl_tex = self.ctx.texture((tex.width, tex.height), bpp, pixels.tobytes())
                if bpp == 1:
                    gl_tex.swizzle = "111R"      # an alpha8 atlas: white glyphs, coverage in alpha, as RGBA32 has
                gl_tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
                gl_tex.repeat_x = gl_tex.repeat_y = False
                tid = self._new_id()
                self.textures[tid] = gl_tex
                tex.set_tex_id(tid)
                tex.status = S.ok
            elif status == S.want_updates:
                gl_tex = self.textures[tex.tex_id]
                full = tex.get_pixels_array().reshape(tex.height, tex.width, tex.bytes_per_pixel)
                for r in tex.updates:
                    block = np.ascontiguousarray(full[r.y:r.y + r.h, r.x:r.x + r.w])
                    gl_tex.write(block.tobytes(), viewport=(r.x, r.y, r.w, r.h))
                tex.status = S.ok
            elif status == S.want_destroy:
                self.release_texture(tex.tex_id)
                tex.set_tex_id(0)
                tex.status = S.destroyed

    # --- drawing --------------------------------------------------------------------------------
    def render(self, draw_data, fb_width: int, fb_height: int) -> None:
        self._update_textures()
        if fb_width <= 0 or fb_height <= 0:
            return
        ctx = self.ctx
        dw, dh = draw_data.display_size
        sx, sy = fb_width / max(dw, 1), fb_height / max(dh, 1)
        ox, oy = draw_data.display_pos
        # Orthographic projection: ImGui's top-left pixel space to clip space (column-major).
        proj = np.array([[2.0 / dw, 0, 0, 0], [0, -2.0 / dh, 0, 0], [0, 0, -1, 0],
                         [-(2 * ox + dw) / dw, (2 * oy + dh) / dh, 0, 1]], dtype="f4")
        self.prog["proj"].write(proj.tobytes())
        ctx.enable_only(moderngl.BLEND)
        ctx.blend_func = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA, moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA)
        ctx.blend_equation = moderngl.FUNC_ADD
        ctx.viewport = (0, 0, fb_width, fb_height)
        for dl in draw_data.cmd_lists:
            vbytes = ctypes.string_at(dl.vtx_buffer.data_address(), dl.vtx_buffer.size() * imgui.VERTEX_SIZE)
            ibytes = ctypes.string_at(dl.idx_buffer.data_address(), dl.idx_buffer.size() * imgui.INDEX_SIZE)
            if len(vbytes) > self.vbo.size:
                self.vbo.orphan(len(vbytes) * 2)
            if len(ibytes) > self.ibo.size:
                self.ibo.orphan(len(ibytes) * 2)
            self.vbo.write(vbytes)
            self.ibo.write(ibytes)
            for cmd in dl.cmd_buffer:
                x0, y0, x1, y1 = cmd.clip_rect
                x0, y0, x1, y1 = (x0 - ox) * sx, (y0 - oy) * sy, (x1 - ox) * sx, (y1 - oy) * sy
                if x1 <= x0 or y1 <= y0:
                    continue
                tex = self.textures.get(cmd.get_tex_id())
                if tex is None:
                    continue
                tex.use(0)
                ctx.scissor = (int(x0), int(fb_height - y1), int(x1 - x0), int(y1 - y0))
                # 32-bit indices: ImGui never splits a list with vtx_offset, so idx_offset is all we need.
                self.vao.render(moderngl.TRIANGLES, vertices=cmd.elem_count, first=cmd.idx_offset)
        ctx.scissor = None
        ctx.disable(moderngl.BLEND)

    def release(self) -> None:
        for tid in list(self.textures):
            self.release_texture(tid)
        self.vao.release()
        self.vbo.release()
        self.ibo.release()
        self.prog.release()


def imgui_key_map(imgui, pg) -> dict:
    """pygame key codes -> ImGui keys, for the keys text fields and tables use."""
    K = imgui.Key
    return {pg.K_LEFT: K.left_arrow, pg.K_RIGHT: K.right_arrow, pg.K_UP: K.up_arrow, pg.K_DOWN: K.down_arrow,
            pg.K_HOME: K.home, pg.K_END: K.end, pg.K_DELETE: K.delete, pg.K_BACKSPACE: K.backspace,
            pg.K_RETURN: K.enter, pg.K_KP_ENTER: K.keypad_enter, pg.K_ESCAPE: K.escape, pg.K_TAB: K.tab,
            pg.K_a: K.a, pg.K_c: K.c, pg.K_v: K.v, pg.K_x: K.x, pg.K_z: K.z, pg.K_y: K.y}


def feed_imgui(imgui, pg, ev, key_map: dict) -> bool:
    """Hand one pygame event to ImGui's input queue. Returns True when ImGui wants the keyboard for text (a key
    press then types into the field instead of being a classroom key)."""
    io = imgui.get_io()
    if ev.type == pg.MOUSEMOTION:
        io.add_mouse_pos_event(float(ev.pos[0]), float(ev.pos[1]))
    elif ev.type in (pg.MOUSEBUTTONDOWN, pg.MOUSEBUTTONUP) and ev.button in (1, 2, 3):
        io.add_mouse_pos_event(float(ev.pos[0]), float(ev.pos[1]))
        io.add_mouse_button_event({1: 0, 2: 2, 3: 1}[ev.button], ev.type == pg.MOUSEBUTTONDOWN)
    elif ev.type == pg.MOUSEWHEEL:
        io.add_mouse_wheel_event(float(ev.x), float(ev.y))
    elif ev.type == pg.TEXTINPUT and io.want_text_input:
        io.add_input_characters_utf8(ev.text)
    elif ev.type in (pg.KEYDOWN, pg.KEYUP):
        down = ev.type == pg.KEYDOWN
        k = key_map.get(ev.key)
        if k is not None:
            io.add_key_event(k, down)
        mods = pg.key.get_mods() | getattr(ev, "mod", 0)
        io.add_key_event(imgui.Key.mod_ctrl, bool(mods & pg.KMOD_CTRL))
        io.add_key_event(imgui.Key.mod_shift, bool(mods & pg.KMOD_SHIFT))
        if down and getattr(ev, "scripted", False) and io.want_text_input and ev.unicode:
            io.add_input_characters_utf8(ev.unicode)   # scripted keys carry their character (no TEXTINPUT)
    return bool(io.want_text_input)
