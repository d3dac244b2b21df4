#version 330
// Colours arrive in sRGB already: no per-pixel gamma.
uniform vec3 u_top;
uniform vec3 u_bottom;
uniform float u_aspect;
in vec2 v_uv;
out vec4 f_color;
void main() {
    vec3 c = mix(u_bottom, u_top, v_uv.y);
    vec2 q = (v_uv - vec2(0.5, 0.62)) * vec2(u_aspect, 1.0);
    c *= 1.0 - 0.4 * clamp(dot(q, q) - 0.1, 0.0, 1.0);   // vignette: the eye goes to the table
    f_color = vec4(c, 1.0);
}
