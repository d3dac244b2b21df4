#version 330
uniform sampler2D u_atlas;
in vec2 v_uv;
in vec4 v_color;
in float v_reveal;
in vec2 v_corner;
out vec4 f_color;
void main() {
    if (v_corner.x > v_reveal) discard;
    float a = texture(u_atlas, v_uv).r;
    a = smoothstep(0.08, 0.72, a);   // sharpen the coverage a little: crisper strokes on a projector
    if (a < 0.02) discard;
    f_color = vec4(v_color.rgb, v_color.a * a);
}
