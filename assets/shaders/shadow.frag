#version 330
in vec2 v_local;
in float v_strength;
out vec4 f_color;
void main() {
    // Rounded-rectangle falloff: dense in the middle, soft to the edge.
    vec2 d = abs(v_local);
    float r = length(max(d - vec2(0.55), 0.0)) / 0.45;
    float a = v_strength * (1.0 - smoothstep(0.0, 1.0, r));
    f_color = vec4(0.0, 0.0, 0.0, a);
}
