#version 330
// The frame rendered at a reduced internal scale (Stage.render_scale), stretched to the window, filtered.
uniform sampler2D u_frame;
in vec2 v_uv;
out vec4 f_color;
void main() {
    f_color = vec4(texture(u_frame, v_uv).rgb, 1.0);
}
