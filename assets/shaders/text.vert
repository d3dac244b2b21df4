#version 330
// Glyph quads from the atlas, instanced; the same program draws world text (tape, meters) and screen text.
uniform mat4 u_viewproj;
in vec2 in_corner;          // (0,0)..(1,1)
in vec3 i_origin;           // lower-left corner of the quad
in vec3 i_axis_u;           // full width vector
in vec3 i_axis_v;           // full height vector
in vec4 i_uv;               // u0, v0, u1, v1 in the atlas
in vec4 i_color;
in vec2 i_extra;            // x: reveal fraction (pencil stroke, left to right); y: shape (0 glyph, 1 mark, 2 solid)
out vec2 v_uv;
out vec4 v_color;
out float v_reveal;
out vec2 v_corner;
flat out float v_solid;     // 1: a plain rectangle, no atlas lookup
void main() {
    vec3 p = i_origin + i_axis_u * in_corner.x + i_axis_v * in_corner.y;
    v_uv = mix(i_uv.xy, i_uv.zw, in_corner);
    v_color = i_color;
    v_reveal = i_extra.x;
    v_corner = in_corner;
    v_solid = i_extra.y > 1.5 ? 1.0 : 0.0;
    gl_Position = u_viewproj * vec4(p, 1.0);
}
