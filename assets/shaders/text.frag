#version 330
uniform sampler2D u_atlas;
in vec2 v_uv;
in vec4 v_color;
in float v_reveal;
in vec2 v_corner;
flat in float v_solid;
out vec4 f_color;
void main() {
    if (v_corner.x > v_reveal) discard;
    // Plates and bars are most of the text pass's pixels: they skip the (trilinear, costly on llvmpipe)
    // atlas lookup.
    float a = 1.0;
    if (v_solid < 0.5) {
        a = smoothstep(0.08, 0.72, texture(u_atlas, v_uv).r);   // sharpened a little: crisper on a projector
        if (a < 0.02) discard;
    }
    f_color = vec4(v_color.rgb, v_color.a * a);
}
