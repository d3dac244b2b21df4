#version 330
// Soft blob shadows: flat quads on the table and floor, darkening what is under each part.
uniform mat4 u_viewproj;
in vec3 in_pos;
in vec3 in_normal;
in mat4 i_model;
in vec4 i_color;
in vec4 i_material;
out vec2 v_local;
out float v_strength;
void main() {
    v_local = in_pos.xz * 2.0;
    v_strength = i_color.a;
    gl_Position = u_viewproj * (i_model * vec4(in_pos, 1.0));
}
