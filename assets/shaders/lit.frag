#version 330
// Per pixel: the warm key light (diffuse + Blinn-Phong highlight), then a filmic curve and gamma 2.
uniform vec3 u_eye;
uniform vec3 u_key_dir;
uniform vec3 u_key_color;
uniform float u_exposure;
in vec3 v_world;
in vec3 v_normal;
in vec4 v_color;
in vec3 v_soft;
in vec2 v_mat;
out vec4 f_color;
void main() {
    vec3 n = normalize(v_normal);
    vec3 v = normalize(u_eye - v_world);
    vec3 l = u_key_dir;                 // normalised on the CPU
    float nl = max(dot(n, l), 0.0);
    vec3 h = normalize(l + v);
    float shin = v_mat.x;
    float sp = pow(max(dot(n, h), 0.0), shin) * (shin + 8.0) * 0.04;
    vec3 spec_col = mix(vec3(0.04), v_color.rgb / max(1.0 - v_mat.y * 0.85, 0.15), v_mat.y);
    vec3 col = v_soft + u_key_color * nl * (v_color.rgb + spec_col * sp);
    col *= u_exposure;
    col = clamp((col * (2.51 * col + 0.03)) / (col * (2.43 * col + 0.59) + 0.14), 0.0, 1.0);
    f_color = vec4(sqrt(col), v_color.a);
}
