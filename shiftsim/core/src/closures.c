/* Loop closure: residual g(q) and Jacobian G. Closure c welds frame offset_a[c] on node closure_a[c] (the
 * parent-side end of the loop joint's virtual chain) to offset_b[c] on node closure_b[c]; its six rows, world
 * frame: p_b - p_a (m) and rotvec(R_b R_a^T) (rad). */
#include <math.h>
#include <string.h>

#include "core.h"

static void side(const State *s, int64_t node, const double *o, double *r, double *p) {
    const double *rn = s->rotation + 9 * node, *pn = s->position + 3 * node;
    for (int i = 0; i < 3; i++) {
        if (r)
            for (int j = 0; j < 3; j++)
                r[3 * i + j] = rn[3 * i] * o[j] + rn[3 * i + 1] * o[4 + j] + rn[3 * i + 2] * o[8 + j];
        p[i] = rn[3 * i] * o[3] + rn[3 * i + 1] * o[7] + rn[3 * i + 2] * o[11] + pn[i];
    }
}

/* Rotation vector (3) of a rotation matrix (3, 3), angle in [0, pi]: a unit quaternion from the largest of
 * the trace and the diagonal (w >= 0), then 2 atan2(|v|, w) along v (scipy's Rotation.as_rotvec). */
void rotation_vector(const double *m, double *out) {
    double trace = m[0] + m[4] + m[8], largest = trace, quaternion[4];
    int choice = 3;
    for (int i = 0; i < 3; i++)
        if (m[4 * i] > largest) choice = i, largest = m[4 * i];
    if (choice == 3) {
        quaternion[0] = m[7] - m[5];
        quaternion[1] = m[2] - m[6];
        quaternion[2] = m[3] - m[1];
        quaternion[3] = 1.0 + trace;
    } else {
        int i = choice, j = (i + 1) % 3, k = (i + 2) % 3;
        quaternion[i] = 1.0 - trace + 2.0 * m[4 * i];
        quaternion[j] = m[3 * j + i] + m[3 * i + j];
        quaternion[k] = m[3 * k + i] + m[3 * i + k];
        quaternion[3] = m[3 * k + j] - m[3 * j + k];
    }
    double norm = sqrt(quaternion[0] * quaternion[0] + quaternion[1] * quaternion[1]
                       + quaternion[2] * quaternion[2] + quaternion[3] * quaternion[3]);
    if (quaternion[3] < 0.0) norm = -norm;
    for (int c = 0; c < 4; c++) quaternion[c] /= norm;
    double vector_norm = sqrt(quaternion[0] * quaternion[0] + quaternion[1] * quaternion[1]
                              + quaternion[2] * quaternion[2]);
    double angle = 2.0 * atan2(vector_norm, quaternion[3]);
    double scale = angle <= 1e-3 ? 2.0 + angle * angle / 12.0 + 7.0 * pow(angle, 4) / 2880.0
                                 : angle / sin(angle / 2.0);
    for (int c = 0; c < 3; c++) out[c] = scale * quaternion[c];
}

void closure_points(const Model *model, const State *s, double *p_a, double *p_b) {
    for (int64_t c = 0; c < model->n_closures; c++) {
        side(s, model->closure_a[c], model->closure_offset_a + 16 * c, NULL, p_a + 3 * c);
        side(s, model->closure_b[c], model->closure_offset_b + 16 * c, NULL, p_b + 3 * c);
    }
}

void closure_residual(const Model *model, const State *s, double *g) {
    for (int64_t c = 0; c < model->n_closures; c++) {
        double r_a[9], p_a[3], r_b[9], p_b[3], relative[9];
        side(s, model->closure_a[c], model->closure_offset_a + 16 * c, r_a, p_a);
        side(s, model->closure_b[c], model->closure_offset_b + 16 * c, r_b, p_b);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                relative[3 * i + j] = r_b[3 * i] * r_a[3 * j] + r_b[3 * i + 1] * r_a[3 * j + 1]
                                      + r_b[3 * i + 2] * r_a[3 * j + 2];
        for (int i = 0; i < 3; i++) g[6 * c + i] = p_b[i] - p_a[i];
        rotation_vector(relative, g + 6 * c + 3);
    }
}

/* Column k of closure c's six rows of G (nq columns) at the closure points p_a, p_b: see closure_jacobian. */
static void closure_column(const State *s, int64_t nq, int64_t c, int64_t k, int on_a, int on_b, const double *p_a,
                           const double *p_b, double *jac) {
    const double *om = s->omega + 3 * k, *v = s->v + 3 * k;
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, l = (i + 2) % 3;
        double linear = 0.0;
        if (on_b) linear += om[j] * p_b[l] - om[l] * p_b[j] + v[i];
        if (on_a) linear -= om[j] * p_a[l] - om[l] * p_a[j] + v[i];
        jac[(6 * c + i) * nq + k] = linear;
        jac[(6 * c + 3 + i) * nq + k] = om[i] * ((double)on_b - (double)on_a);
    }
}

/* G (6 K, nq): d(p_b - p_a)/dq_k = (omega_k x p_b + v_k)[k moves b] - (omega_k x p_a + v_k)[k moves a], and
 * omega_k ([k moves b] - [k moves a]) for the rotation rows (exact where the loop is closed). Only the coordinates on
 * the two sides' paths to the root have a column that is not zero: b's path is walked to the root (the coordinates
 * from the two sides' common ancestor up move both), then a's up to that ancestor. */
void closure_jacobian(const Model *model, const State *s, double *jac) {
    int64_t nq = model->nq;
    memset(jac, 0, sizeof(double) * (size_t)(6 * model->n_closures * nq));
    for (int64_t c = 0; c < model->n_closures; c++) {
        int64_t a = model->closure_a[c], b = model->closure_b[c];
        double p_a[3], p_b[3];
        side(s, a, model->closure_offset_a + 16 * c, NULL, p_a);
        side(s, b, model->closure_offset_b + 16 * c, NULL, p_b);
        int64_t both = common_ancestor(model, a, b);
        bool moves_a = false;
        for (int64_t node = b; node > 0; node = model->parent[node]) {
            int64_t k = model->coordinate[node];
            moves_a = moves_a || node == both;
            if (k >= 0) closure_column(s, nq, c, k, moves_a, 1, p_a, p_b, jac);
        }
        for (int64_t node = a; node > 0 && node != both; node = model->parent[node]) {
            int64_t k = model->coordinate[node];
            if (k >= 0) closure_column(s, nq, c, k, 1, 0, p_a, p_b, jac);
        }
    }
}
