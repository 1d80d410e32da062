/* Joint loads at an equilibrium: the wrench every joint carries and the effort along every coordinate.
 *
 * Wrench convention: [fx, fy, fz, mx, my, mz], what the parent side (as written in the model file) exerts on
 * the child side through the joint, world axes, moment about the origin of the child-side joint frame. The
 * effort of a coordinate is its twist against the wrench the tree's parent side transmits to its subtree
 * (positive pushes the child toward +q). shiftsim/results.py wraps the arrays; its body_balance is the
 * independent check (every body's net wrench vanishes).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static void cross(const double *a, const double *b, double *out) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* wrench[node] += [force, point x force + torque] (moment about the world origin). */
static void add(double *wrench, int64_t node, const double *point, const double *force, const double *torque) {
    double moment[3];
    cross(point, force, moment);
    for (int i = 0; i < 3; i++) {
        wrench[6 * node + i] += force[i];
        wrench[6 * node + 3 + i] += moment[i] + (torque ? torque[i] : 0.0);
    }
}

/* External wrench on every node (n, 6) about the world origin: weight, loads (frame-following ones turned
 * with their frame), extra point forces (count: point_node, point, force (count, 3), e.g. ground contacts),
 * pair springs on both of their frames, closure wrenches (multipliers (6 K)) on both sides of every loop. */
static void external_wrenches(Workspace *w, const Model *model, const State *s, const double *multipliers,
                              const double *gravity, int64_t n_loads, const int64_t *frames, const double *forces,
                              const double *torques, const int64_t *follow, int64_t count, const int64_t *point_node,
                              const double *point, const double *force, double *wrench) {
    int64_t n = model->n_nodes, nq = model->nq;
    size_t mark = ws_mark(w);
    memset(wrench, 0, sizeof(double) * (size_t)(6 * n));
    for (int64_t i = 0; i < n; i++) {
        const double *r = s->rotation + 9 * i, *com = model->com + 3 * i;
        double p[3], weight[3];
        for (int row = 0; row < 3; row++) {
            p[row] = r[3 * row] * com[0] + r[3 * row + 1] * com[1] + r[3 * row + 2] * com[2] + s->position[3 * i + row];
            weight[row] = model->mass[i] * gravity[row];
        }
        add(wrench, i, p, weight, NULL);
    }
    for (int64_t l = 0; l < n_loads; l++) {
        double r[9], p[3], f[3], t[3];
        frame_pose(model, s, frames[l], r, p);
        for (int row = 0; row < 3; row++) {
            const double *fl = forces + 3 * l, *tl = torques + 3 * l;
            f[row] = follow[l] ? r[3 * row] * fl[0] + r[3 * row + 1] * fl[1] + r[3 * row + 2] * fl[2] : fl[row];
            t[row] = follow[l] ? r[3 * row] * tl[0] + r[3 * row + 1] * tl[1] + r[3 * row + 2] * tl[2] : tl[row];
        }
        add(wrench, model->frame_node[frames[l]], p, f, t);
    }
    for (int64_t j = 0; j < count; j++) add(wrench, point_node[j], point + 3 * j, force + 3 * j, NULL);
    double *grad = ws_doubles(w, nq), *hess = ws_doubles(w, nq * nq);
    for (int64_t i = 0; i < model->n_pairs; i++) {
        int64_t fa = model->pair_frame_a[i], fc = model->pair_frame_c[i];
        double x = pair_distance(w, model, s, fa, fc, model->pair_distance[i], grad, hess), f, df, energy;
        piecewise_law(model, model->pair_law[i], x, &f, &df, &energy);
        double r_a[9], p_a[3], p_c[3], d[3], direction[3], torque_a[3] = {0.0, 0.0, 0.0}, on_c[3], on_a[3];
        frame_pose(model, s, fa, r_a, p_a);
        frame_pose(model, s, fc, NULL, p_c);
        for (int k = 0; k < 3; k++) d[k] = p_c[k] - p_a[k];
        if (model->pair_distance[i] == EUCLIDEAN) {
            double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            for (int k = 0; k < 3; k++) direction[k] = d[k] / (length > 1e-300 ? length : 1e-300);
        } else { /* along an axis of frame model, which the spring also turns */
            int axis = (int)model->pair_distance[i] - 1;
            for (int k = 0; k < 3; k++) direction[k] = r_a[3 * k + axis];
            cross(direction, d, torque_a);
            for (int k = 0; k < 3; k++) torque_a[k] *= -f;
        }
        for (int k = 0; k < 3; k++) on_c[k] = -f * direction[k], on_a[k] = f * direction[k];
        add(wrench, model->frame_node[fc], p_c, on_c, NULL);
        add(wrench, model->frame_node[fa], p_a, on_a, torque_a);
    }
    if (model->n_closures && multipliers) {
        double *p_a = ws_doubles(w, 3 * model->n_closures), *p_b = ws_doubles(w, 3 * model->n_closures);
        closure_points(model, s, p_a, p_b);
        for (int64_t k = 0; k < model->n_closures; k++) {
            const double *lam = multipliers + 6 * k;
            double minus_f[3] = {-lam[0], -lam[1], -lam[2]}, minus_t[3] = {-lam[3], -lam[4], -lam[5]};
            add(wrench, model->closure_b[k], p_b + 3 * k, lam, lam + 3);
            add(wrench, model->closure_a[k], p_a + 3 * k, minus_f, minus_t);
        }
    }
    ws_release(w, mark);
}

void joint_loads(Workspace *w, const Model *model, const State *s, const double *multipliers, const double *gravity,
                 int64_t n_loads, const int64_t *frames, const double *forces, const double *torques,
                 const int64_t *follow, int64_t count, const int64_t *point_node, const double *point,
                 const double *force, double *wrench_world, double *rotation, double *effort) {
    int64_t n = model->n_nodes;
    size_t mark = ws_mark(w);
    double *subtree = ws_doubles(w, 6 * n);
    external_wrenches(w, model, s, multipliers, gravity, n_loads, frames, forces, torques, follow, count, point_node,
                      point, force, subtree);
    for (int64_t i = n - 1; i > 0; i--) /* subtree sums, about the world origin */
        for (int c = 0; c < 6; c++) subtree[6 * model->parent[i] + c] += subtree[6 * i + c];
    for (int64_t k = 0; k < model->nq; k++) {
        const double *at = subtree + 6 * model->coordinate_node[k], *om = s->omega + 3 * k, *v = s->v + 3 * k;
        effort[k] = -(om[0] * at[3] + om[1] * at[4] + om[2] * at[5] + v[0] * at[0] + v[1] * at[1] + v[2] * at[2]);
    }
    double *p_a = ws_doubles(w, 3 * model->n_closures), *p_b = ws_doubles(w, 3 * model->n_closures);
    closure_points(model, s, p_a, p_b);
    for (int64_t j = 0; j < model->n_joints; j++) {
        double *w = wrench_world + 6 * j, p[3], moment[3];
        int64_t closure = model->joint_closure[j];
        if (closure < 0) { /* the tree parent's wrench on the subtree, signed for the file's parent and child */
            const double *transmitted = subtree + 6 * model->joint_first_node[j];
            double sign = model->joint_reversed[j] ? 1.0 : -1.0;
            for (int c = 0; c < 6; c++) w[c] = sign * transmitted[c];
        } else {
            const double *lam = multipliers + 6 * closure;
            cross(p_b + 3 * closure, lam, moment);
            for (int c = 0; c < 3; c++) w[c] = lam[c], w[3 + c] = moment[c] + lam[3 + c];
        }
        frame_pose(model, s, model->joint_child_frame[j], rotation + 9 * j, p);
        cross(p, w, moment); /* moment about the joint frame's origin */
        for (int c = 0; c < 3; c++) w[3 + c] -= moment[c];
    }
    ws_release(w, mark);
}
