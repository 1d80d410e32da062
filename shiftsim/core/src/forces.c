/* Generalized forces, tangent stiffness and potential energy for one configuration.
 *
 * Each term adds into q_force (nq) and stiffness (nq, nq), stiffness[k][j] = dQ_k/dq_j, and returns its
 * energy (J; 0 for terms without a potential). Two facts give every stiffness: a point p moved by
 * coordinate k has dp/dq_k = omega_k x p + v_k, and for coordinates j, k both moving it, j nearer the root
 * than (or equal to) k, d2p/dq_j dq_k = omega_j x (omega_k x p + v_k).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* Gravity on every centre of mass plus ``count`` world-fixed forces force[i] (N) at world points point[i] on
 * nodes point_node[i]. Forces are aggregated per node as F = sum f and P = sum p f^T and summed over subtrees;
 * coordinate k's force is omega_k . axial(P) + v_k . F, and the stiffness between s and a coordinate d it
 * carries is omega_s . (P_d omega_d + v_d x F_d - omega_d tr P_d). Returns -sum(p . f). columns (nq, 3), unless
 * NULL, receives each coordinate d's vector in parentheses (tree.c factorizes with them); stiffness NULL: not
 * assembled. */
double gravity_and_world_forces(Workspace *w, const Model *model, const State *s, const double *gravity,
                                int64_t count, const int64_t *point_node, const double *point, const double *force,
                                double *q_force, double *stiffness, double *columns) {
    int64_t n = model->n_nodes, nq = model->nq;
    size_t mark = ws_mark(w);
    double *f_node = ws_doubles(w, 12 * n + 3 * nq); /* F, P, per_d */
    double *p_node = f_node + 3 * n, *per_d = p_node + 9 * n;
    int64_t *chain = ws_indices(w, nq);
    for (int64_t i = 0; i < n; i++) {
        double m = model->mass[i];
        if (m == 0.0) continue;
        const double *r = s->rotation + 9 * i, *com = model->com + 3 * i;
        double p[3];
        for (int row = 0; row < 3; row++)
            p[row] = r[3 * row] * com[0] + r[3 * row + 1] * com[1] + r[3 * row + 2] * com[2] + s->position[3 * i + row];
        for (int row = 0; row < 3; row++) f_node[3 * i + row] = m * gravity[row];
        for (int row = 0; row < 3; row++)
            for (int col = 0; col < 3; col++) p_node[9 * i + 3 * row + col] = p[row] * f_node[3 * i + col];
    }
    for (int64_t j = 0; j < count; j++) {
        int64_t node = point_node[j];
        for (int row = 0; row < 3; row++) {
            f_node[3 * node + row] += force[3 * j + row];
            for (int col = 0; col < 3; col++) p_node[9 * node + 3 * row + col] += point[3 * j + row] * force[3 * j + col];
        }
    }
    double energy = 0.0;
    for (int64_t i = 0; i < n; i++) energy -= p_node[9 * i] + p_node[9 * i + 4] + p_node[9 * i + 8];
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t up = model->parent[i];
        for (int c = 0; c < 3; c++) f_node[3 * up + c] += f_node[3 * i + c];
        for (int c = 0; c < 9; c++) p_node[9 * up + c] += p_node[9 * i + c];
    }
    for (int64_t k = 0; k < nq; k++) {
        int64_t c = model->coordinate_node[k];
        const double *pk = p_node + 9 * c, *fk = f_node + 3 * c, *om = s->omega + 3 * k, *v = s->v + 3 * k;
        double moment[3] = {pk[5] - pk[7], pk[6] - pk[2], pk[1] - pk[3]};
        q_force[k] += dot3(om, moment) + dot3(v, fk);
        double trace = pk[0] + pk[4] + pk[8], turn[3];
        cross3(v, fk, turn);
        for (int r = 0; r < 3; r++)
            per_d[3 * k + r] = pk[3 * r] * om[0] + pk[3 * r + 1] * om[1] + pk[3 * r + 2] * om[2] + turn[r] - om[r] * trace;
    }
    if (columns) memcpy(columns, per_d, sizeof(double) * (size_t)(3 * nq));
    for (int64_t d = 0; stiffness && d < nq; d++) {
        int64_t chained = moving_coordinates(model, model->coordinate_node[d], chain);
        for (int64_t c = 0; c < chained; c++) {
            int64_t up = chain[c];
            double value = dot3(s->omega + 3 * up, per_d + 3 * d);
            stiffness[up * nq + d] += value;
            if (up != d) stiffness[d * nq + up] += value;
        }
    }
    ws_release(w, mark);
    return energy;
}

/* Joint springs and piecewise joint laws: Q_k = -f(q_k); their stiffness df/dq_k goes to the diagonal of stiffness
 * (subtracted) or, unless NULL, into diagonal (nq, added). */
double joint_springs(const Model *model, const double *q, double *q_force, double *stiffness, double *diagonal) {
    double energy = 0.0, f, df, e;
    for (int64_t i = 0; i < model->n_springs; i++) {
        int64_t k = model->spring_coordinate[i];
        polynomial_law(model->spring_coefficients + i * model->spring_degree, model->spring_degree, q[k], &f, &df, &e);
        q_force[k] -= f, energy += e;
        if (stiffness) stiffness[k * model->nq + k] -= df;
        if (diagonal) diagonal[k] += df;
    }
    for (int64_t i = 0; i < model->n_joint_laws; i++) {
        int64_t k = model->law_coordinate[i];
        piecewise_law(model, model->law_index[i], q[k], &f, &df, &e);
        q_force[k] -= f, energy += e;
        if (stiffness) stiffness[k * model->nq + k] -= df;
        if (diagonal) diagonal[k] += df;
    }
    return energy;
}

/* out += scale * direction . d2p/dq_j dq_k for a point on ``node`` with Jacobian jv (nq, 3): for j nearer the
 * root than (or equal to) k, omega_j x Jv_k (kept where the point lies on j's own axis: Jv_j = 0 there, yet j
 * turns k's motion). */
void add_point_hessian(Workspace *w, const Model *model, const State *s, int64_t node, const double *jv,
                       const double *direction, double scale, double *out) {
    size_t mark = ws_mark(w);
    int64_t nq = model->nq, *chain = ws_indices(w, nq);
    int64_t count = moving_coordinates(model, node, chain);
    for (int64_t lower = 0; lower < count; lower++) {
        int64_t k = chain[lower];
        double turn[3];
        cross3(jv + 3 * k, direction, turn);
        for (int64_t upper = lower; upper < count; upper++) {
            int64_t j = chain[upper];
            double value = scale * dot3(s->omega + 3 * j, turn);
            out[j * nq + k] += value;
            if (j != k) out[k * nq + j] += value;
        }
    }
    ws_release(w, mark);
}

/* Distance x (m) between the origins of two frames, dx/dq (nq) and d2x/dq2 (nq, nq) into grad and hess
 * (overwritten): euclidean, or along axis distance - 1 of frame a. */
double pair_distance(Workspace *w, const Model *model, const State *s, int64_t frame_a, int64_t frame_c,
                     int64_t distance, double *grad, double *hess) {
    size_t mark = ws_mark(w);
    int64_t nq = model->nq, node_a = model->frame_node[frame_a], node_c = model->frame_node[frame_c];
    double r_a[9], p_a[3], p_c[3], d[3];
    frame_pose(model, s, frame_a, r_a, p_a);
    frame_pose(model, s, frame_c, NULL, p_c);
    double *jv_a = ws_doubles(w, 3 * nq), *jv_c = ws_doubles(w, 3 * nq), *jd = ws_doubles(w, 3 * nq);
    point_jacobian(model, s, node_a, p_a, jv_a);
    point_jacobian(model, s, node_c, p_c, jv_c);
    for (int i = 0; i < 3; i++) d[i] = p_c[i] - p_a[i];
    for (int64_t i = 0; i < 3 * nq; i++) jd[i] = jv_c[i] - jv_a[i];
    memset(hess, 0, sizeof(double) * (size_t)(nq * nq));
    double x;
    if (distance == EUCLIDEAN) {
        x = sqrt(dot3(d, d));
        double guarded = x > 1e-300 ? x : 1e-300, u[3] = {d[0] / guarded, d[1] / guarded, d[2] / guarded};
        double *projected = ws_doubles(w, 3 * nq);
        for (int64_t k = 0; k < nq; k++) {
            grad[k] = dot3(jd + 3 * k, u);
            for (int i = 0; i < 3; i++) projected[3 * k + i] = jd[3 * k + i] - grad[k] * u[i];
        }
        for (int64_t j = 0; j < nq; j++)
            for (int64_t k = 0; k < nq; k++) hess[j * nq + k] = dot3(projected + 3 * j, projected + 3 * k) / guarded;
        add_point_hessian(w, model, s, node_c, jv_c, u, 1.0, hess);
        add_point_hessian(w, model, s, node_a, jv_a, u, -1.0, hess);
    } else {
        int axis = (int)distance - 1;
        double e[3] = {r_a[axis], r_a[3 + axis], r_a[6 + axis]};
        x = dot3(e, d);
        double *de = ws_doubles(w, 3 * nq); /* d e / dq_j for coordinates turning frame a */
        int64_t *chain = ws_indices(w, nq);
        int64_t count = moving_coordinates(model, node_a, chain);
        for (int64_t c = 0; c < count; c++) cross3(s->omega + 3 * chain[c], e, de + 3 * chain[c]);
        for (int64_t k = 0; k < nq; k++) grad[k] = dot3(jd + 3 * k, e) + dot3(de + 3 * k, d);
        for (int64_t j = 0; j < nq; j++)
            for (int64_t k = 0; k < nq; k++) hess[j * nq + k] = dot3(de + 3 * j, jd + 3 * k) + dot3(de + 3 * k, jd + 3 * j);
        add_point_hessian(w, model, s, node_c, jv_c, e, 1.0, hess);
        add_point_hessian(w, model, s, node_a, jv_a, e, -1.0, hess);
        for (int64_t lower = 0; lower < count; lower++) { /* d . d2e/dq_j dq_k = (d x omega_j) . (omega_k x e) */
            int64_t k = chain[lower];
            for (int64_t upper = lower; upper < count; upper++) {
                int64_t j = chain[upper];
                double turned[3];
                cross3(d, s->omega + 3 * j, turned);
                double value = dot3(turned, de + 3 * k);
                hess[j * nq + k] += value;
                if (j != k) hess[k * nq + j] += value;
            }
        }
    }
    ws_release(w, mark);
    return x;
}

/* Springs between frame pairs: Q = -f(x) dx/dq (the child frame pulled toward the parent frame when f > 0). */
double pair_springs(Workspace *w, const Model *model, const State *s, double *q_force, double *stiffness) {
    if (model->n_pairs == 0) return 0.0;
    int64_t nq = model->nq;
    size_t mark = ws_mark(w);
    double energy = 0.0, f, df, e, *grad = ws_doubles(w, nq), *hess = ws_doubles(w, nq * nq);
    for (int64_t i = 0; i < model->n_pairs; i++) {
        double x = pair_distance(w, model, s, model->pair_frame_a[i], model->pair_frame_c[i], model->pair_distance[i],
                                 grad, hess);
        piecewise_law(model, model->pair_law[i], x, &f, &df, &e);
        for (int64_t j = 0; j < nq; j++) {
            q_force[j] -= f * grad[j];
            for (int64_t k = 0; k < nq; k++) stiffness[j * nq + k] -= df * grad[j] * grad[k] + f * hess[j * nq + k];
        }
        energy += e;
    }
    ws_release(w, mark);
    return energy;
}

/* d(omega_k . tau)/dq_j as [k][j]: (omega_j x omega_k) . tau for j strictly nearer the root than k, both moving
 * the node. */
static void add_torque_stiffness(const Model *model, const State *s, const int64_t *chain, int64_t count,
                                 const double *torque, double *stiffness) {
    for (int64_t lower = 0; lower < count; lower++) {
        int64_t k = chain[lower];
        for (int64_t upper = lower + 1; upper < count; upper++) {
            int64_t j = chain[upper];
            double turned[3];
            cross3(s->omega + 3 * j, s->omega + 3 * k, turned);
            stiffness[k * model->nq + j] += dot3(turned, torque);
        }
    }
}

/* Loads at frames: forces, torques (L, 3) in world axes (world-fixed) or frame axes (follow). World-fixed
 * forces are written to point_node, point, force for gravity_and_world_forces (their count returned);
 * torques and following loads add their generalized force and stiffness here (no potential). */
int64_t applied_loads(Workspace *w, const Model *model, const State *s, int64_t n_loads, const int64_t *frames,
                      const double *forces, const double *torques, const int64_t *follow, int64_t *point_node,
                      double *point, double *force, double *q_force, double *stiffness) {
    if (n_loads == 0) return 0;
    size_t mark = ws_mark(w);
    int64_t nq = model->nq, count = 0, *chain = ws_indices(w, nq);
    double *jv = ws_doubles(w, 3 * nq);
    for (int64_t i = 0; i < n_loads; i++) {
        int64_t node = model->frame_node[frames[i]];
        double r[9], p[3];
        frame_pose(model, s, frames[i], r, p);
        int64_t moving = moving_coordinates(model, node, chain);
        const double *f_in = forces + 3 * i, *t_in = torques + 3 * i;
        if (!follow[i]) {
            if (f_in[0] != 0.0 || f_in[1] != 0.0 || f_in[2] != 0.0) {
                point_node[count] = node;
                memcpy(point + 3 * count, p, sizeof(p));
                memcpy(force + 3 * count, f_in, 3 * sizeof(double));
                count++;
            }
            if (t_in[0] != 0.0 || t_in[1] != 0.0 || t_in[2] != 0.0) {
                for (int64_t c = 0; c < moving; c++) q_force[chain[c]] += dot3(s->omega + 3 * chain[c], t_in);
                add_torque_stiffness(model, s, chain, moving, t_in, stiffness);
            }
            continue;
        }
        double f[3], t[3];
        for (int row = 0; row < 3; row++) {
            f[row] = r[3 * row] * f_in[0] + r[3 * row + 1] * f_in[1] + r[3 * row + 2] * f_in[2];
            t[row] = r[3 * row] * t_in[0] + r[3 * row + 1] * t_in[1] + r[3 * row + 2] * t_in[2];
        }
        point_jacobian(model, s, node, p, jv);
        for (int64_t c = 0; c < moving; c++) {
            int64_t k = chain[c];
            q_force[k] += dot3(jv + 3 * k, f) + dot3(s->omega + 3 * k, t);
        }
        add_point_hessian(w, model, s, node, jv, f, 1.0, stiffness);
        add_torque_stiffness(model, s, chain, moving, t, stiffness);
        for (int64_t cj = 0; cj < moving; cj++) { /* the load turns with the frame: d f / dq_j = omega_j x f */
            int64_t j = chain[cj];
            double turning_force[3], turning_torque[3];
            cross3(s->omega + 3 * j, f, turning_force);
            cross3(s->omega + 3 * j, t, turning_torque);
            for (int64_t ck = 0; ck < moving; ck++) {
                int64_t k = chain[ck];
                stiffness[k * nq + j] += dot3(turning_force, jv + 3 * k) + dot3(turning_torque, s->omega + 3 * k);
            }
        }
    }
    ws_release(w, mark);
    return count;
}

/* x_k += (Jv_b,k - Jv_a,k) x lambda_p and t_k += ([k moves b] - [k moves a]) lambda_r for one closure (points p_a, p_b,
 * multipliers lambda (6)) and a coordinate k moving its a side, its b side or both (closure_force_stiffness). */
static void add_closure_lever(const State *s, int64_t k, int on_a, int on_b, const double *p_a, const double *p_b,
                              const double *lambda, double *x, double *t) {
    double jv[3] = {0.0, 0.0, 0.0}, lever[3], turned[3];
    if (on_b) {
        cross3(s->omega + 3 * k, p_b, lever);
        for (int i = 0; i < 3; i++) jv[i] += lever[i] + s->v[3 * k + i];
    }
    if (on_a) {
        cross3(s->omega + 3 * k, p_a, lever);
        for (int i = 0; i < 3; i++) jv[i] -= lever[i] + s->v[3 * k + i];
    }
    cross3(jv, lambda, turned);
    double side = (double)on_b - (double)on_a;
    for (int i = 0; i < 3; i++) x[3 * k + i] += turned[i], t[3 * k + i] += side * lambda[3 + i];
}

/* stiffness += d(G^T lambda)/dq as [k][j] for fixed multipliers (6 K): the closure wrenches (force lambda_p at
 * the child-side origin, torque lambda_r on the child side, the opposite on the parent-side chain)
 * differentiated with the points and axes they act through. The force terms add up to omega_j . X_k with
 * X_k = sum over closures of (Jv_b,k - Jv_a,k) x lambda_p, the torque terms to (omega_j x omega_k) . T_k with
 * T_k the net closure torque on what k moves. */
void closure_force_columns(Workspace *w, const Model *model, const State *s, const double *multipliers, double *x,
                           double *t) {
    int64_t nq = model->nq, k_count = model->n_closures;
    memset(x, 0, sizeof(double) * (size_t)(3 * nq));
    memset(t, 0, sizeof(double) * (size_t)(3 * nq));
    if (k_count == 0) return;
    size_t mark = ws_mark(w);
    double *p_a = ws_doubles(w, 3 * k_count), *p_b = ws_doubles(w, 3 * k_count);
    closure_points(model, s, p_a, p_b);
    for (int64_t c = 0; c < k_count; c++) { /* the coordinates on b's path to the root, then the rest of a's */
        int64_t a = model->closure_a[c], b = model->closure_b[c], both = common_ancestor(model, a, b);
        const double *at_a = p_a + 3 * c, *at_b = p_b + 3 * c, *lambda = multipliers + 6 * c;
        bool moves_a = false; /* from the common ancestor up, a coordinate moves both sides */
        for (int64_t node = b; node > 0; node = model->parent[node]) {
            int64_t k = model->coordinate[node];
            moves_a = moves_a || node == both;
            if (k >= 0) add_closure_lever(s, k, moves_a, 1, at_a, at_b, lambda, x, t);
        }
        for (int64_t node = a; node > 0 && node != both; node = model->parent[node]) {
            int64_t k = model->coordinate[node];
            if (k >= 0) add_closure_lever(s, k, 1, 0, at_a, at_b, lambda, x, t);
        }
    }
    for (int64_t k = 0; k < nq; k++) { /* the net closure torque on what k moves, turned by k's axis */
        double torque[3] = {t[3 * k], t[3 * k + 1], t[3 * k + 2]};
        cross3(s->omega + 3 * k, torque, t + 3 * k);
    }
    ws_release(w, mark);
}

void closure_force_stiffness(Workspace *w, const Model *model, const State *s, const double *multipliers,
                             double *stiffness) {
    int64_t nq = model->nq;
    if (model->n_closures == 0) return;
    size_t mark = ws_mark(w);
    double *x = ws_doubles(w, 3 * nq), *t = ws_doubles(w, 3 * nq);
    int64_t *chain = ws_indices(w, nq);
    closure_force_columns(w, model, s, multipliers, x, t);
    for (int64_t k = 0; k < nq; k++) {
        int64_t count = moving_coordinates(model, model->coordinate_node[k], chain);
        for (int64_t c = 0; c < count; c++) {
            int64_t j = chain[c];
            double value = dot3(s->omega + 3 * j, x + 3 * k);
            stiffness[j * nq + k] += value;
            if (j != k) stiffness[k * nq + j] += value + dot3(s->omega + 3 * j, t + 3 * k);
        }
    }
    ws_release(w, mark);
}
