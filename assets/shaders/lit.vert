#version 330
// Instanced, lit geometry: one draw call per mesh shape; each instance carries its own matrix and material.
// The low-frequency light (sky/ground ambient, the studio reflection on metals, the rim) is computed here,
// per vertex; only the key light's diffuse and highlight are per pixel. On llvmpipe the fragment shader
// is the frame's cost, so it stays short.
uniform mat4 u_viewproj;
uniform vec3 u_eye;
uniform vec3 u_sky;
uniform vec3 u_ground;
uniform vec3 u_fill_dir;
uniform vec3 u_fill_color;
in vec3 in_pos;
in vec3 in_normal;
in mat4 i_model;
in vec4 i_color;      // rgb (linear), alpha
in vec4 i_material;   // metallic, roughness, emissive, unused
out vec3 v_world;
out vec3 v_normal;
out vec4 v_color;
out vec3 v_soft;      // everything but the key light
out vec2 v_mat;       // shininess, specular weight

vec3 env(vec3 r) {
    // Studio: dark floor, warm soft-box overhead, a bright strip towards the audience.
    float up = clamp(r.y * 0.5 + 0.5, 0.0, 1.0);
    vec3 c = mix(u_ground, u_sky, smoothstep(0.35, 0.8, up));
    c += vec3(1.0, 0.92, 0.8) * 1.4 * smoothstep(0.85, 0.99, r.y);
    c += vec3(0.9, 0.95, 1.0) * 0.6 * smoothstep(0.6, 0.95, r.z) * smoothstep(0.2, 0.6, up);
    return c;
}

void main() {
    vec4 world = i_model * vec4(in_pos, 1.0);
    // Cofactor matrix: the normal transform for any (non-uniformly scaled) model matrix, without a divide.
    mat3 m = mat3(i_model);
    mat3 cof = mat3(cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1]));
    vec3 n = normalize(cof * in_normal);
    vec3 v = normalize(u_eye - world.xyz);
    if (dot(n, v) < 0.0) n = -n;
    vec3 base = i_color.rgb;
    float metal = i_material.x;
    float rough = clamp(i_material.y, 0.05, 1.0);
    vec3 spec_col = mix(vec3(0.04), base, metal);
    vec3 diff_col = base * (1.0 - metal * 0.85);
    float hemi = n.y * 0.5 + 0.5;
    vec3 soft = diff_col * mix(u_ground, u_sky, hemi) * 0.55;
    soft += u_fill_color * diff_col * max(dot(n, normalize(u_fill_dir)), 0.0);
    vec3 r = reflect(-v, n);
    float ndv = max(dot(n, v), 0.0);
    float fres = pow(1.0 - ndv, 5.0);
    vec3 refl = env(normalize(mix(r, n, rough * 0.6)));
    soft += refl * mix(spec_col, vec3(1.0), fres * (1.0 - rough)) * mix(0.08, 0.9, metal) * (1.0 - rough * 0.7);
    soft += vec3(0.35, 0.38, 0.45) * pow(1.0 - ndv, 3.0) * 0.35;
    soft += base * i_material.z * 2.2;
    v_soft = soft;
    v_mat = vec2(mix(160.0, 6.0, rough), 1.0);
    v_world = world.xyz;
    v_normal = n;
    v_color = vec4(mix(diff_col, spec_col, 0.0), i_color.a);
    // Pack the specular colour's strength into v_mat.y (metals tint their highlight with base colour).
    v_mat.y = metal;
    gl_Position = u_viewproj * world;
}
