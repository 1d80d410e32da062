/* Per-parameter partial derivatives of the equilibrium residual, next to the residual itself (forces.c).
 *
 * At one configuration q and closure multipliers lambda (6 K), fixed, the residual is Q(q, p) + G(q, p)^T lambda
 * (nq) with the loop closures g(q, p) (6 K). For every design parameter p this writes one column of dQ/dp (the
 * closure wrenches' part included) and of dg/dp. A point p on a node moves by omega_k x p + v_k per unit of a
 * coordinate k moving the node, so a force f at p contributes f . (omega_k x p + v_k) to Q_k and a torque t
 * contributes t . omega_k; translating p by d on its body changes that by (f x omega_k) . d.
 *
 * The parameters (P, 4) int64 rows (kind, target, a, b), kinds of SHIFTSIM_PARAMETER_KINDS (fields.h); a row of kind
 * none is a zero column (terms the caller adds), one of kind ground is left to ground_partials (ground.c, beside the
 * contact and tyre laws; in the same batch call):
 *   mass       node                 body mass;
 *   com        node, axis           centre of mass in node coordinates;
 *   frame      frame, axis          a frame's position on its node (its motion rows: below);
 *   spring     spring row, power    coefficient of q^power of a polynomial joint spring;
 *   restraint  joint-law row, piece, power   coefficient of x^power (absolute x) of one piece of a joint law;
 *   pair       pair row, piece, power        the same, of a pair spring (x its distance);
 *   load       load, component      component 0-5 (fx..tz, in the load's axes), 6 its factor;
 *   gravity    axis                 a component of the gravity vector;
 *   ground     what, start, count   what (SHIFTSIM_GROUND_PARAMETERS) of the laws of the contacts and tyres
 *                                   members[start .. start + count) (the ground field's: tyres after the contacts).
 * What moving a frame moves: rows motion_start[f] to motion_start[f + 1] of motion (E, 4) int64, each (POINT, node,
 * closure, side): that closure's point on ``node`` (side +1 its child side b, -1 its side a), or (SUBTREE, root,
 * carries_axis, sign): the subtree of ``root`` translated by sign times the frame's shift (carries_axis: the joint's
 * axis moves with it, so the coordinate at ``root`` itself feels no lever).
 */
#include <math.h>
#include <string.h>

#include "core.h"

static double power_of(double x, int64_t power) {
    double out = 1.0;
    for (int64_t i = 0; i < power; i++) out *= x;
    return out;
}

/* A load's force and torque (3) each in world axes, factor applied, from its frame's rotation r (3, 3). */
static void load_in_world(const Loads *loads, int64_t l, const double *r, double *f, double *t) {
    const double *fl = loads->force + 3 * l, *tl = loads->torque + 3 * l;
    for (int row = 0; row < 3; row++) {
        f[row] = loads->factor[l] * (loads->follow[l] ? dot3(r + 3 * row, fl) : fl[row]);
        t[row] = loads->factor[l] * (loads->follow[l] ? dot3(r + 3 * row, tl) : tl[row]);
    }
}

/* column[k * stride] += sign (f x omega_k) . step for the coordinates k moving ``node`` (skip: one to leave out). */
static void add_turned(const Model *model, const State *s, int64_t node, int64_t skip, const double *f,
                       const double *step, double sign, double *column, int64_t stride) {
    for (; node > 0; node = model->parent[node]) {
        int64_t k = model->coordinate[node];
        if (k < 0 || k == skip) continue;
        double turned[3];
        cross3(f, s->omega + 3 * k, turned);
        column[k * stride] += sign * dot3(turned, step);
    }
}

void frame_shifts(const Model *model, int64_t frame, const int64_t *motion_start, const int64_t *motion,
                  double *node_shift, double *axis_shift) {
    memset(node_shift, 0, sizeof(double) * (size_t)model->n_nodes);
    memset(axis_shift, 0, sizeof(double) * (size_t)model->nq);
    for (int64_t e = motion_start[frame]; e < motion_start[frame + 1]; e++) {
        const int64_t *m = motion + 4 * e;
        if (m[0] != MOTION_SUBTREE) continue;
        for (int64_t node = m[1]; node < model->n_nodes; node++) {
            if (!is_within(model, m[1], node)) continue;
            node_shift[node] += (double)m[3];
            int64_t k = model->coordinate[node];
            if (k >= 0 && (node != m[1] || m[2])) axis_shift[k] += (double)m[3];
        }
    }
}

/* column[k * stride] += the change of a point force's generalized force Q_k = f . (omega_k x p + v_k) + t . omega_k
 * (t may be NULL) when a frame parameter moves it: its force and torque change by df, dt, its point by
 * shift step and coordinate k's axis by axis_shift[k] step, which changes its lever by (shift - axis_shift[k]) step. */
static void add_moved_point(const Model *model, const State *s, int64_t node, const double *p, const double *f,
                            const double *df, const double *dt, double shift, const double *step,
                            const double *axis_shift, double *column, int64_t stride) {
    for (; node > 0; node = model->parent[node]) {
        int64_t k = model->coordinate[node];
        if (k < 0) continue;
        const double *om = s->omega + 3 * k;
        double twist[3], turned[3];
        cross3(om, p, twist);
        for (int row = 0; row < 3; row++) twist[row] += s->v[3 * k + row];
        cross3(f, om, turned);
        column[k * stride] += dot3(df, twist) + (dt ? dot3(dt, om) : 0.0)
                              + (shift - axis_shift[k]) * dot3(turned, step);
    }
}

/* Pair restraint ``pair``'s terms in the column of a frame parameter (``frame`` moved by ``step``, world): its ends
 * move by t_a step and t_c step (their nodes' shifts, one more for the moved frame itself), so the spring's length x
 * and direction change by delta = (t_c - t_a) step, and with them its forces: on the second end -f(x) u (u the unit
 * vector from the first end, or the first frame's axis n for a distance along it, which also puts the couple
 * -f n x (p_c - p_a) on the first end), on the first end the opposite force. A couple has no lever: a translation
 * changes only its size. */
static void add_pair_frame_terms(const Model *model, const State *s, int64_t pair, int64_t frame, const double *step,
                                 const double *node_shift, const double *axis_shift, double *column, int64_t stride) {
    int64_t fa = model->pair_frame_a[pair], fc = model->pair_frame_c[pair];
    int64_t na = model->frame_node[fa], nc = model->frame_node[fc];
    double t_a = node_shift[na] + (fa == frame ? 1.0 : 0.0), t_c = node_shift[nc] + (fc == frame ? 1.0 : 0.0);
    double r_a[9], p_a[3], p_c[3], d[3], delta[3], u[3], f, df, energy;
    frame_pose(model, s, fa, r_a, p_a);
    frame_pose(model, s, fc, NULL, p_c);
    for (int row = 0; row < 3; row++) d[row] = p_c[row] - p_a[row], delta[row] = (t_c - t_a) * step[row];
    double on_c[3], d_on_c[3], on_a[3], d_on_a[3], d_couple[3] = {0.0, 0.0, 0.0};
    if (model->pair_distance[pair] == EUCLIDEAN) {
        double x = sqrt(dot3(d, d)), guarded = x > 1e-300 ? x : 1e-300;
        for (int row = 0; row < 3; row++) u[row] = d[row] / guarded;
        double dx = dot3(u, delta);
        piecewise_law(model, model->pair_law[pair], x, &f, &df, &energy);
        for (int row = 0; row < 3; row++) /* d(-f u) = -f' dx u - f (delta - (u . delta) u) / x */
            on_c[row] = -f * u[row], d_on_c[row] = -df * dx * u[row] - f * (delta[row] - dx * u[row]) / guarded;
    } else {
        int axis = (int)model->pair_distance[pair] - 1;
        for (int row = 0; row < 3; row++) u[row] = r_a[3 * row + axis];
        double x = dot3(u, d), dx = dot3(u, delta), lever[3], d_lever[3];
        piecewise_law(model, model->pair_law[pair], x, &f, &df, &energy);
        cross3(u, d, lever);
        cross3(u, delta, d_lever);
        for (int row = 0; row < 3; row++) {
            on_c[row] = -f * u[row], d_on_c[row] = -df * dx * u[row];
            d_couple[row] = -df * dx * lever[row] - f * d_lever[row]; /* of the couple -f n x d */
        }
    }
    for (int row = 0; row < 3; row++) on_a[row] = -on_c[row], d_on_a[row] = -d_on_c[row];
    add_moved_point(model, s, nc, p_c, on_c, d_on_c, NULL, t_c, step, axis_shift, column, stride);
    add_moved_point(model, s, na, p_a, on_a, d_on_a, d_couple, t_a, step, axis_shift, column, stride);
}

void force_partials(Workspace *w, const Model *model, const double *q, const State *s, const double *gravity,
                    const Loads *loads, const double *multipliers, int64_t n_parameters, const int64_t *parameters,
                    const int64_t *motion_start, const int64_t *motion, double *force, double *closure) {
    int64_t n = model->n_nodes, nq = model->nq, K = model->n_closures, P = n_parameters;
    size_t mark = ws_mark(w);
    double *com = ws_doubles(w, 3 * n);       /* world centres of mass */
    double *moment = ws_doubles(w, 4 * n);    /* per subtree: mass and first moment m c (world) */
    double *resultant = ws_doubles(w, 3 * n); /* per subtree: the resultant force of weights, loads and closures */
    double *jv = ws_doubles(w, 3 * nq), *grad = ws_doubles(w, nq), *hess = ws_doubles(w, nq * nq);
    double *node_shift = ws_doubles(w, n), *axis_shift = ws_doubles(w, nq); /* a frame parameter's (frame_shifts) */
    memset(force, 0, sizeof(double) * (size_t)(nq * P));
    memset(closure, 0, sizeof(double) * (size_t)(6 * K * P));
    for (int64_t i = 0; i < n; i++) {
        const double *r = s->rotation + 9 * i, *c = model->com + 3 * i;
        double m = model->mass[i];
        for (int row = 0; row < 3; row++) {
            com[3 * i + row] = dot3(r + 3 * row, c) + s->position[3 * i + row];
            moment[4 * i + 1 + row] = m * com[3 * i + row];
            resultant[3 * i + row] = m * gravity[row];
        }
        moment[4 * i] = m;
    }
    for (int64_t l = 0; l < loads->count; l++) {
        double r[9], p[3], f[3], t[3];
        frame_pose(model, s, loads->frame[l], r, p);
        load_in_world(loads, l, r, f, t);
        for (int row = 0; row < 3; row++) resultant[3 * model->frame_node[loads->frame[l]] + row] += f[row];
    }
    for (int64_t c = 0; c < K; c++)
        for (int row = 0; row < 3; row++) {
            resultant[3 * model->closure_b[c] + row] += multipliers[6 * c + row];
            resultant[3 * model->closure_a[c] + row] -= multipliers[6 * c + row];
        }
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t up = model->parent[i];
        for (int c = 0; c < 4; c++) moment[4 * up + c] += moment[4 * i + c];
        for (int c = 0; c < 3; c++) resultant[3 * up + c] += resultant[3 * i + c];
    }
    for (int64_t column = 0; column < P; column++) {
        const int64_t *code = parameters + 4 * column;
        int64_t kind = code[0], target = code[1], a = code[2], b = code[3];
        double *out = force + column, *out_closure = closure + column;
        if (kind == PARAMETER_MASS) { /* Q_k = m g . (omega_k x c + v_k) */
            for (int64_t node = target; node > 0; node = model->parent[node]) {
                int64_t k = model->coordinate[node];
                if (k < 0) continue;
                double lever[3];
                cross3(s->omega + 3 * k, com + 3 * target, lever);
                for (int row = 0; row < 3; row++) lever[row] += s->v[3 * k + row];
                out[k * P] = dot3(lever, gravity);
            }
        } else if (kind == PARAMETER_GRAVITY) { /* Q_k = (omega_k x sum m c + v_k sum m)_axis over what k moves */
            for (int64_t k = 0; k < nq; k++) {
                const double *sums = moment + 4 * model->coordinate_node[k];
                double lever[3];
                cross3(s->omega + 3 * k, sums + 1, lever);
                out[k * P] = lever[target] + s->v[3 * k + target] * sums[0];
            }
        } else if (kind == PARAMETER_COM) { /* d/dc_a of m g . (omega_k x (R c + o)) = m (g x omega_k) . R e_a */
            double step[3], weight[3];
            for (int row = 0; row < 3; row++)
                step[row] = s->rotation[9 * target + 3 * row + a], weight[row] = model->mass[target] * gravity[row];
            add_turned(model, s, target, -1, weight, step, 1.0, out, P);
        } else if (kind == PARAMETER_SPRING) {
            int64_t k = model->spring_coordinate[target];
            out[k * P] = -power_of(q[k], a);
        } else if (kind == PARAMETER_RESTRAINT) {
            int64_t k = model->law_coordinate[target];
            double x = q[k];
            if (piece_at(model, model->law_index[target], x) == a) out[k * P] = -power_of(x, b);
        } else if (kind == PARAMETER_PAIR) { /* Q = -f(x) dx/dq, x the pair's distance */
            double x = pair_distance(w, model, s, model->pair_frame_a[target], model->pair_frame_c[target],
                                     model->pair_distance[target], grad, hess);
            if (piece_at(model, model->pair_law[target], x) == a)
                for (int64_t k = 0; k < nq; k++) out[k * P] = -power_of(x, b) * grad[k];
        } else if (kind == PARAMETER_LOAD) {
            int64_t frame = loads->frame[target], node = model->frame_node[frame];
            double r[9], p[3], axes[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, f[3] = {0, 0, 0}, t[3] = {0, 0, 0};
            frame_pose(model, s, frame, r, p);
            if (loads->follow[target]) memcpy(axes, r, sizeof(axes));
            for (int row = 0; row < 3; row++) {
                if (a == 6) { /* the factor: the load itself */
                    f[row] = dot3(axes + 3 * row, loads->force + 3 * target);
                    t[row] = dot3(axes + 3 * row, loads->torque + 3 * target);
                } else if (a < 3) {
                    f[row] = axes[3 * row + a] * loads->factor[target];
                } else {
                    t[row] = axes[3 * row + a - 3] * loads->factor[target];
                }
            }
            point_jacobian(model, s, node, p, jv);
            for (; node > 0; node = model->parent[node]) {
                int64_t k = model->coordinate[node];
                if (k >= 0) out[k * P] = dot3(jv + 3 * k, f) + dot3(s->omega + 3 * k, t);
            }
        } else if (kind == PARAMETER_FRAME) {
            int64_t node = model->frame_node[target];
            double step[3];
            for (int row = 0; row < 3; row++) step[row] = s->rotation[9 * node + 3 * row + a];
            for (int64_t l = 0; l < loads->count; l++) { /* a force acting at the frame moves with it */
                if (loads->frame[l] != target) continue;
                double r[9], p[3], f[3], t[3];
                frame_pose(model, s, target, r, p);
                load_in_world(loads, l, r, f, t);
                add_turned(model, s, node, -1, f, step, 1.0, out, P);
            }
            for (int64_t e = motion_start[target]; e < motion_start[target + 1]; e++) {
                const int64_t *m = motion + 4 * e;
                if (m[0] == MOTION_POINT) { /* a closure point: its multiplier force moves, and the closure's gap */
                    double side = (double)m[3];
                    add_turned(model, s, m[1], -1, multipliers + 6 * m[2], step, side, out, P);
                    for (int row = 0; row < 3; row++) out_closure[(6 * m[2] + row) * P] += side * step[row];
                } else { /* a subtree translated: its resultant's lever, and the closures it crosses */
                    int64_t root = m[1];
                    double sign = (double)m[3];
                    add_turned(model, s, root, m[2] ? model->coordinate[root] : -1, resultant + 3 * root, step, sign,
                               out, P);
                    for (int64_t c = 0; c < K; c++) {
                        double crossing = (double)is_within(model, root, model->closure_b[c])
                                        - (double)is_within(model, root, model->closure_a[c]);
                        if (crossing != 0.0)
                            for (int row = 0; row < 3; row++)
                                out_closure[(6 * c + row) * P] += sign * crossing * step[row];
                    }
                }
            }
            if (model->n_pairs > 0) { /* the pair restraints its move stretches or turns */
                frame_shifts(model, target, motion_start, motion, node_shift, axis_shift);
                for (int64_t pair = 0; pair < model->n_pairs; pair++)
                    add_pair_frame_terms(model, s, pair, target, step, node_shift, axis_shift, out, P);
            }
        }
    }
    ws_release(w, mark);
}

size_t partials_workspace_doubles(const Model *model) {
    size_t n = (size_t)model->n_nodes, nq = (size_t)model->nq;
    return kernel_workspace_doubles(model) + 35 * n + 11 * nq + nq * nq + 64; /* with the case's state */
}
