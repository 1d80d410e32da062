/* The sensitivity outputs at an equilibrium, their derivatives in the unknowns (q, lambda) and their explicit partial
 * derivatives in the design parameters, next to the residual's (partials.c).
 *
 * At one configuration q and closure multipliers lambda (6 K), both fixed, each output row y gets its value, its row
 * dy/d(q, lambda) (over the chosen of its nq + 6 K columns: coordinates, then closure rows) and its row dy/dp (P) for
 * the parameter rows of partials.c. The outputs (Y, 4) int64 rows (kind, target, component, 0), kinds of SHIFTSIM_OUTPUT_KINDS (fields.h):
 *   joint   coordinate           its value q_k;
 *   frame   frame, axis          the world position of the frame's origin, R_n o_f + p_n: its row omega_k x p + v_k
 *                                for the coordinates k moving node n, and a frame parameter's shift of it (its own
 *                                offset R_n e_a, and the subtrees the parameter's frame translates);
 *   pin     closure, component   the closure's multiplier lambda_c (the wrench on its child side at the pin);
 *   wrench  tree joint, component  what the parent side exerts on the child side, world axes, moment about the child-
 *                                side joint frame's origin o (as joint_loads in loads.c): sign (F, M - o x F) of
 *                                everything external on the child subtree S (weights, loads, closure wrenches, the
 *                                ground's point forces, the pair springs with one frame inside S), sign -1, or +1
 *                                for a joint the tree meets child first;
 *   effort  coordinate           -(Q_k + G_k^T lambda): the caller's residual, hessian row and dQ_k/dp (the
 *                                equilibrium's own arrays; only the closure Jacobian column is computed here);
 *   wrench_joint  tree joint, component  the wrench in the child-side joint frame's axes, R^T (F, M) with R (world
 *                                <- joint frame) turning with the coordinates k moving that frame: its row adds
 *                                (omega_k x R e_i) . (F or M); frame parameters translate, so R has no partials.
 * A wrench's rows: a force f at p on node n with torque t adds (f, (p - o) x f + t); moving coordinate k moves p by
 * omega_k x p + v_k (k moving n) and o by omega_k x o + v_k (k moving o's node), turns a force that follows its frame
 * by omega_k x f and its torque by omega_k x t; a closure side adds +-(lambda_f, (p - o) x lambda_f + lambda_t); a
 * ground force's law adds its own rate d(f, t)/dq and partials d(f, t)/dp (PointForces: given by the caller); a pair
 * spring's force -+f u (PairLine) adds its rate through its length x, its law's slope f'(x) and its direction u, and
 * its law coefficients' partials x^i u.
 * Explicitly: a mass m adds (g, (c - o) x g) when its node is in S; a centre of mass (R e_a) x m g; gravity's axis
 * a the weights' (m e_a, (c - o) x m e_a); a load's component or factor its force and torque per unit; a frame's
 * position (p_shift - o_shift) x f over every force, each point shifted by the frame's motion rows (partials.c).
 */
#include <math.h>
#include <string.h>

#include "core.h"

/* A load's force and torque (3) each in world axes per unit factor, from its frame's rotation r (3, 3). */
static void load_per_factor(const Loads *loads, int64_t l, const double *r, double *f, double *t) {
    const double *fl = loads->force + 3 * l, *tl = loads->torque + 3 * l;
    for (int row = 0; row < 3; row++) {
        f[row] = loads->follow[l] ? dot3(r + 3 * row, fl) : fl[row];
        t[row] = loads->follow[l] ? dot3(r + 3 * row, tl) : tl[row];
    }
}

/* A pair spring's line of action at a state: its length x (pair_distance's: Euclidean, or along an axis of frame a),
 * its law's force f and slope df = f'(x), frame c's origin p_c, d = p_c - p_a and the direction u (d / |d|, or frame
 * a's axis e). The spring pulls frame c's body by -f u and frame a's body by +f u, both along the line through p_c
 * (loads.c puts a's force at p_a with the couple -f e x d along an axis, and at p_a on the line for a Euclidean pair:
 * the same wrench). Its frames' offsets enter only through p_a and p_c. */
typedef struct {
    double x, f, df, point[3], d[3], direction[3];
    bool euclidean;
} PairLine;

static void pair_line(const Model *model, const State *s, int64_t pair, PairLine *line) {
    double r_a[9], p_a[3], energy;
    frame_pose(model, s, model->pair_frame_a[pair], r_a, p_a);
    frame_pose(model, s, model->pair_frame_c[pair], NULL, line->point);
    for (int row = 0; row < 3; row++) line->d[row] = line->point[row] - p_a[row];
    line->euclidean = model->pair_distance[pair] == EUCLIDEAN;
    if (line->euclidean) {
        line->x = sqrt(dot3(line->d, line->d));
        double guarded = line->x > 1e-300 ? line->x : 1e-300;
        for (int row = 0; row < 3; row++) line->direction[row] = line->d[row] / guarded;
    } else {
        int axis = (int)model->pair_distance[pair] - 1;
        for (int row = 0; row < 3; row++) line->direction[row] = r_a[3 * row + axis];
        line->x = dot3(line->direction, line->d);
    }
    piecewise_law(model, model->pair_law[pair], line->x, &line->f, &line->df, &energy);
}

/* The change of f u (3, into out) for a change dd of d = p_c - p_a and a turn de of frame a's axis (ignored for a
 * Euclidean pair): dx = u . dd (+ de . d along an axis), du = (dd - dx u) / x (or de). Linear in (dd, de). */
static void pair_force_change(const PairLine *line, const double *dd, const double *de, double *out) {
    const double *u = line->direction;
    if (line->euclidean) {
        double dx = dot3(u, dd), guarded = line->x > 1e-300 ? line->x : 1e-300;
        for (int row = 0; row < 3; row++)
            out[row] = line->df * dx * u[row] + line->f * (dd[row] - dx * u[row]) / guarded;
    } else {
        double dx = dot3(u, dd) + dot3(de, line->d);
        for (int row = 0; row < 3; row++) out[row] = line->df * dx * u[row] + line->f * de[row];
    }
}

/* One external force on the subtree: its node, world point, force and torque, and what it is. A pair spring's force
 * on frame a's body acts on the line through p_c: its node is frame c's (the point's), its side +1 (-1 on c's). */
enum { FROM_WEIGHT, FROM_LOAD, FROM_CLOSURE, FROM_GROUND, FROM_PAIR };
typedef struct {
    int64_t node, from, index; /* node: the one whose motion moves the point; index: the load, closure, record or pair */
    double side;               /* a closure's side: +1 its child side b, -1 its side a; a pair's: +1 on a, -1 on c */
    double point[3], force[3], torque[3];
    bool follows;              /* turns with its frame (a load given in the frame's axes) */
} Force;

/* The external forces on the subtree of ``root`` (out: at most n_nodes + loads + 2 K + ground records + pairs); their
 * count. A pair spring counts when one of its frames is inside and the other outside (inside both, its forces cancel). */
static int64_t subtree_forces(const Model *model, const State *s, const double *gravity, const Loads *loads,
                              const double *multipliers, const PointForces *ground, const double *p_a,
                              const double *p_b, int64_t root, Force *out) {
    int64_t count = 0;
    for (int64_t i = root; i < model->n_nodes; i++) {
        if (model->mass[i] == 0.0 || !is_within(model, root, i)) continue;
        Force *f = out + count++;
        memset(f, 0, sizeof(*f));
        f->node = i, f->from = FROM_WEIGHT, f->index = i;
        for (int row = 0; row < 3; row++) {
            f->point[row] = dot3(s->rotation + 9 * i + 3 * row, model->com + 3 * i) + s->position[3 * i + row];
            f->force[row] = model->mass[i] * gravity[row];
        }
    }
    for (int64_t l = 0; l < loads->count; l++) {
        int64_t node = model->frame_node[loads->frame[l]];
        if (!is_within(model, root, node)) continue;
        Force *f = out + count++;
        double r[9];
        memset(f, 0, sizeof(*f));
        f->node = node, f->from = FROM_LOAD, f->index = l, f->follows = loads->follow[l] != 0;
        frame_pose(model, s, loads->frame[l], r, f->point);
        load_per_factor(loads, l, r, f->force, f->torque);
        for (int row = 0; row < 3; row++) f->force[row] *= loads->factor[l], f->torque[row] *= loads->factor[l];
    }
    for (int64_t c = 0; c < model->n_closures; c++)
        for (int b = 1; b >= 0; b--) {
            int64_t node = b ? model->closure_b[c] : model->closure_a[c];
            if (!is_within(model, root, node)) continue;
            Force *f = out + count++;
            double side = b ? 1.0 : -1.0;
            memset(f, 0, sizeof(*f));
            f->node = node, f->from = FROM_CLOSURE, f->index = c, f->side = side;
            for (int row = 0; row < 3; row++) {
                f->point[row] = (b ? p_b : p_a)[3 * c + row];
                f->force[row] = side * multipliers[6 * c + row], f->torque[row] = side * multipliers[6 * c + 3 + row];
            }
        }
    for (int64_t g = 0; g < ground->count; g++) {
        int64_t node = ground->node[g];
        if (node < 0 || !is_within(model, root, node)) continue;
        Force *f = out + count++;
        memset(f, 0, sizeof(*f));
        f->node = node, f->from = FROM_GROUND, f->index = g;
        memcpy(f->point, ground->forces + 9 * g, sizeof(f->point));
        memcpy(f->force, ground->forces + 9 * g + 3, sizeof(f->force));
        memcpy(f->torque, ground->forces + 9 * g + 6, sizeof(f->torque));
    }
    for (int64_t pair = 0; pair < model->n_pairs; pair++) {
        int64_t node_c = model->frame_node[model->pair_frame_c[pair]];
        bool has_a = is_within(model, root, model->frame_node[model->pair_frame_a[pair]]);
        if (has_a == is_within(model, root, node_c)) continue;
        Force *f = out + count++;
        PairLine line;
        pair_line(model, s, pair, &line);
        memset(f, 0, sizeof(*f));
        f->node = node_c, f->from = FROM_PAIR, f->index = pair, f->side = has_a ? 1.0 : -1.0;
        memcpy(f->point, line.point, sizeof(f->point));
        for (int row = 0; row < 3; row++) f->force[row] = f->side * line.f * line.direction[row];
    }
    return count;
}

/* How far a frame parameter (frame, axis) translates ``node``, in units of the frame's step R e_axis: the sum of the
 * signs of its motion's subtree rows that hold the node. */
static double subtree_shift(const Model *model, int64_t frame, const int64_t *motion_start, const int64_t *motion,
                            int64_t node) {
    double shift = 0.0;
    for (int64_t e = motion_start[frame]; e < motion_start[frame + 1]; e++) {
        const int64_t *m = motion + 4 * e;
        if (m[0] == MOTION_SUBTREE && is_within(model, m[1], node)) shift += (double)m[3];
    }
    return shift;
}

/* How far a frame parameter (frame, axis) moves a force's point, in units of the frame's step: its node's subtree
 * shift, plus one for a load at the frame itself or a closure point the frame carries. */
static double point_shift(const Model *model, int64_t frame, const int64_t *motion_start, const int64_t *motion,
                          const Loads *loads, const Force *f) {
    double shift = subtree_shift(model, frame, motion_start, motion, f->node);
    if (f->from == FROM_LOAD && loads->frame[f->index] == frame) shift += 1.0;
    if (f->from == FROM_PAIR && model->pair_frame_c[f->index] == frame) shift += 1.0; /* its point: frame c's origin */
    if (f->from == FROM_CLOSURE)
        for (int64_t e = motion_start[frame]; e < motion_start[frame + 1]; e++) {
            const int64_t *m = motion + 4 * e;
            if (m[0] == MOTION_POINT && m[2] == f->index && (double)m[3] == f->side) shift += 1.0;
        }
    return shift;
}

/* Component ``component`` of a tree joint's wrench (6; its rows d_state (6, columns) and d_parameter (6, P), as
 * joint_wrench gives them) in its child-side joint frame's axes: its value, its row out_row (columns) and explicit row (P), added to. */
static double in_joint_axes(const Model *model, const State *s, int64_t joint, int64_t component, const double *wrench,
                            const double *d_state, const double *d_parameter, int64_t columns, int64_t P, double *out_row,
                            double *explicit) {
    int64_t frame = model->joint_child_frame[joint], block = component / 3, axis = component % 3;
    double r[9], origin[3], e[3];
    frame_pose(model, s, frame, r, origin);
    for (int row = 0; row < 3; row++) e[row] = r[3 * row + axis];
    for (int row = 0; row < 3; row++) {
        for (int64_t c = 0; c < columns; c++) out_row[c] += e[row] * d_state[(3 * block + row) * columns + c];
        for (int64_t c = 0; c < P; c++) explicit[c] += e[row] * d_parameter[(3 * block + row) * P + c];
    }
    for (int64_t node = model->frame_node[frame]; node > 0; node = model->parent[node]) { /* R turns */
        int64_t k = model->coordinate[node];
        if (k < 0) continue;
        double turned[3];
        cross3(s->omega + 3 * k, e, turned);
        out_row[k] += dot3(turned, wrench + 3 * block);
    }
    return dot3(e, wrench + 3 * block);
}

/* The wrench of tree joint ``joint`` (6), its rows d/d(q, lambda) (6, columns = nq + 6 K) and d/dp (6, P). */
static void joint_wrench(Workspace *w, const Model *model, const State *s, const double *gravity, const Loads *loads,
                         const double *multipliers, const PointForces *ground, int64_t P, const int64_t *parameters,
                         const int64_t *motion_start, const int64_t *motion, const double *p_a, const double *p_b,
                         int64_t joint, double *wrench, double *d_state, double *d_parameter) {
    int64_t nq = model->nq, columns = nq + 6 * model->n_closures;
    int64_t root = model->joint_first_node[joint], origin_frame = model->joint_child_frame[joint];
    int64_t origin = model->frame_node[origin_frame];
    double o[3];
    frame_pose(model, s, origin_frame, NULL, o);
    size_t mark = ws_mark(w);
    Force *forces = (Force *)ws_doubles(w, (int64_t)((sizeof(Force) + 7) / 8)
                                               * (model->n_nodes + loads->count + 2 * model->n_closures + ground->count
                                                  + model->n_pairs));
    int64_t count = subtree_forces(model, s, gravity, loads, multipliers, ground, p_a, p_b, root, forces);
    memset(wrench, 0, 6 * sizeof(double));
    memset(d_state, 0, sizeof(double) * (size_t)(6 * columns));
    memset(d_parameter, 0, sizeof(double) * (size_t)(6 * P));
    double mass = 0.0, first_moment[3] = {0.0, 0.0, 0.0}; /* of the subtree's weights: for gravity */
    for (int64_t i = 0; i < count; i++) {
        const Force *f = forces + i;
        double lever[3], moment[3];
        for (int row = 0; row < 3; row++) lever[row] = f->point[row] - o[row];
        cross3(lever, f->force, moment);
        for (int row = 0; row < 3; row++) wrench[row] += f->force[row], wrench[3 + row] += moment[row] + f->torque[row];
        for (int64_t node = f->node; node > 0; node = model->parent[node]) { /* the point moves, a follower turns */
            int64_t k = model->coordinate[node];
            if (k < 0) continue;
            const double *om = s->omega + 3 * k;
            double twist[3], turned[3];
            cross3(om, f->point, twist);
            for (int row = 0; row < 3; row++) twist[row] += s->v[3 * k + row];
            cross3(twist, f->force, turned);
            for (int row = 0; row < 3; row++) d_state[(3 + row) * columns + k] += turned[row];
            if (f->follows) {
                double df[3], dm[3], dt[3];
                cross3(om, f->force, df);
                cross3(lever, df, dm);
                cross3(om, f->torque, dt);
                for (int row = 0; row < 3; row++)
                    d_state[row * columns + k] += df[row], d_state[(3 + row) * columns + k] += dm[row] + dt[row];
            }
        }
        if (f->from == FROM_WEIGHT) {
            mass += model->mass[f->node];
            for (int row = 0; row < 3; row++) first_moment[row] += model->mass[f->node] * f->point[row];
        } else if (f->from == FROM_CLOSURE) { /* +-(lambda_f, lever x lambda_f + lambda_t) */
            double *at = d_state + nq + 6 * f->index;
            for (int row = 0; row < 3; row++) {
                at[row * columns + row] += f->side;
                at[(3 + row) * columns + 3 + row] += f->side;
                at[(3 + row) * columns + (row + 1) % 3] -= f->side * lever[(row + 2) % 3]; /* [lever]x */
                at[(3 + row) * columns + (row + 2) % 3] += f->side * lever[(row + 1) % 3];
            }
        } else if (f->from == FROM_PAIR) { /* the spring's rate: p_c's motion, p_a's against it, frame a's turn */
            PairLine line;
            pair_line(model, s, f->index, &line);
            int64_t node_a = model->frame_node[model->pair_frame_a[f->index]];
            for (int at_a = 0; at_a < 2; at_a++)
                for (int64_t node = at_a ? node_a : f->node; node > 0; node = model->parent[node]) {
                    int64_t k = model->coordinate[node];
                    if (k < 0) continue;
                    const double *om = s->omega + 3 * k;
                    double end[3], dd[3], de[3] = {0.0, 0.0, 0.0}, df[3], dm[3];
                    for (int row = 0; row < 3; row++) end[row] = at_a ? line.point[row] - line.d[row] : line.point[row];
                    cross3(om, end, dd);
                    for (int row = 0; row < 3; row++) dd[row] = (at_a ? -1.0 : 1.0) * (dd[row] + s->v[3 * k + row]);
                    if (at_a) cross3(om, line.direction, de);
                    pair_force_change(&line, dd, de, df);
                    for (int row = 0; row < 3; row++) df[row] *= f->side;
                    cross3(lever, df, dm);
                    for (int row = 0; row < 3; row++)
                        d_state[row * columns + k] += df[row], d_state[(3 + row) * columns + k] += dm[row];
                }
        } else if (f->from == FROM_GROUND) { /* the law's own rate and partials */
            const double *rate = ground->rate + 6 * nq * f->index, *partial = ground->partial + 6 * P * f->index;
            for (int64_t k = 0; k < nq; k++) {
                double dm[3];
                cross3(lever, rate + 6 * k, dm);
                for (int row = 0; row < 3; row++)
                    d_state[row * columns + k] += rate[6 * k + row],
                    d_state[(3 + row) * columns + k] += dm[row] + rate[6 * k + 3 + row];
            }
            for (int64_t column = 0; column < P; column++) {
                double df[3] = {partial[column], partial[P + column], partial[2 * P + column]}, dm[3];
                cross3(lever, df, dm);
                for (int row = 0; row < 3; row++)
                    d_parameter[row * P + column] += df[row],
                    d_parameter[(3 + row) * P + column] += dm[row] + partial[(3 + row) * P + column];
            }
        }
    }
    for (int64_t node = origin; node > 0; node = model->parent[node]) { /* o moves: -(omega_k x o + v_k) x F */
        int64_t k = model->coordinate[node];
        if (k < 0) continue;
        double twist[3], turned[3];
        cross3(s->omega + 3 * k, o, twist);
        for (int row = 0; row < 3; row++) twist[row] += s->v[3 * k + row];
        cross3(twist, wrench, turned);
        for (int row = 0; row < 3; row++) d_state[(3 + row) * columns + k] -= turned[row];
    }
    for (int64_t column = 0; column < P; column++) {
        const int64_t *code = parameters + 4 * column;
        int64_t kind = code[0], target = code[1], a = code[2];
        double df[3] = {0.0, 0.0, 0.0}, dm[3] = {0.0, 0.0, 0.0};
        if ((kind == PARAMETER_MASS || kind == PARAMETER_COM) && is_within(model, root, target)) {
            const double *r = s->rotation + 9 * target;
            if (kind == PARAMETER_MASS) { /* (g, (c - o) x g) */
                double lever[3];
                for (int row = 0; row < 3; row++)
                    lever[row] = dot3(r + 3 * row, model->com + 3 * target) + s->position[3 * target + row] - o[row];
                memcpy(df, gravity, sizeof(df));
                cross3(lever, gravity, dm);
            } else { /* (R e_a) x m g */
                double step[3] = {r[a], r[3 + a], r[6 + a]}, weight[3];
                for (int row = 0; row < 3; row++) weight[row] = model->mass[target] * gravity[row];
                cross3(step, weight, dm);
            }
        } else if (kind == PARAMETER_GRAVITY) { /* (m e_a, sum m (c - o) x e_a) over the weights */
            double lever[3], unit[3] = {0.0, 0.0, 0.0};
            unit[target] = 1.0;
            for (int row = 0; row < 3; row++) lever[row] = first_moment[row] - mass * o[row];
            df[target] = mass;
            cross3(lever, unit, dm);
        } else if (kind == PARAMETER_PAIR) { /* +-x^b u per unit of coefficient b of piece a, where that piece holds */
            for (int64_t i = 0; i < count; i++) {
                const Force *f = forces + i;
                if (f->from != FROM_PAIR || f->index != target) continue;
                PairLine line;
                pair_line(model, s, target, &line);
                if (piece_at(model, model->pair_law[target], line.x) != a) continue;
                double per_unit = f->side * pow(line.x, (double)code[3]), unit[3], lever[3], turn[3];
                for (int row = 0; row < 3; row++)
                    unit[row] = per_unit * line.direction[row], lever[row] = f->point[row] - o[row];
                cross3(lever, unit, turn);
                for (int row = 0; row < 3; row++) df[row] += unit[row], dm[row] += turn[row];
            }
        } else if (kind == PARAMETER_LOAD || kind == PARAMETER_FRAME) {
            double step[3];
            if (kind == PARAMETER_FRAME)
                for (int row = 0; row < 3; row++) step[row] = s->rotation[9 * model->frame_node[target] + 3 * row + a];
            double origin_shift = kind == PARAMETER_FRAME ? subtree_shift(model, target, motion_start, motion, origin)
                                                            + (origin_frame == target ? 1.0 : 0.0) : 0.0;
            for (int64_t i = 0; i < count; i++) {
                const Force *f = forces + i;
                if (kind == PARAMETER_FRAME) { /* (p_shift - o_shift) x f */
                    double at = point_shift(model, target, motion_start, motion, loads, f), turn[3];
                    cross3(step, f->force, turn);
                    for (int row = 0; row < 3; row++) dm[row] += (at - origin_shift) * turn[row];
                    if (f->from == FROM_PAIR) { /* the spring's ends part by (t_c - t_a) step: its force changes */
                        int64_t frame_a = model->pair_frame_a[f->index];
                        double t_a = subtree_shift(model, target, motion_start, motion, model->frame_node[frame_a])
                                     + (frame_a == target ? 1.0 : 0.0);
                        double apart[3], unturned[3] = {0.0, 0.0, 0.0}, change[3], lever[3], moment[3];
                        PairLine line;
                        pair_line(model, s, f->index, &line);
                        for (int row = 0; row < 3; row++)
                            apart[row] = (at - t_a) * step[row], lever[row] = f->point[row] - o[row];
                        pair_force_change(&line, apart, unturned, change);
                        for (int row = 0; row < 3; row++) change[row] *= f->side;
                        cross3(lever, change, moment);
                        for (int row = 0; row < 3; row++) df[row] += change[row], dm[row] += moment[row];
                    }
                } else if (f->from == FROM_LOAD && f->index == target) { /* per unit of a component or the factor */
                    double r[9], unit_f[3] = {0.0, 0.0, 0.0}, unit_t[3] = {0.0, 0.0, 0.0}, lever[3], turn[3];
                    frame_pose(model, s, loads->frame[target], r, lever);
                    if (a == 6) {
                        load_per_factor(loads, target, r, unit_f, unit_t);
                    } else {
                        double *unit = a < 3 ? unit_f : unit_t;
                        for (int row = 0; row < 3; row++)
                            unit[row] = loads->factor[target] * (loads->follow[target] ? r[3 * row + a % 3]
                                                                                      : (double)(row == a % 3));
                    }
                    for (int row = 0; row < 3; row++) lever[row] -= o[row];
                    cross3(lever, unit_f, turn);
                    for (int row = 0; row < 3; row++)
                        df[row] += unit_f[row], dm[row] += turn[row] + unit_t[row];
                }
            }
        }
        for (int row = 0; row < 3; row++) d_parameter[row * P + column] += df[row], d_parameter[(3 + row) * P + column] += dm[row];
    }
    double sign = model->joint_reversed[joint] ? 1.0 : -1.0; /* reversed: the file's child side is the tree parent */
    for (int row = 0; row < 6; row++) wrench[row] *= sign;
    for (int64_t i = 0; i < 6 * columns; i++) d_state[i] *= sign;
    for (int64_t i = 0; i < 6 * P; i++) d_parameter[i] *= sign;
    ws_release(w, mark);
}

void output_partials(Workspace *w, const Model *model, const double *q, const State *s, const double *gravity,
                     const Loads *loads, const double *multipliers, const PointForces *ground, int64_t n_parameters,
                     const int64_t *parameters, const int64_t *motion_start, const int64_t *motion,
                     const double *residual, const double *hessian, const double *force_partial, int64_t n_outputs,
                     const int64_t *outputs, int64_t n_chosen, const int64_t *chosen, double *value, double *state_rows,
                     double *parameter_rows) {
    int64_t nq = model->nq, K = model->n_closures, P = n_parameters, columns = nq + 6 * K;
    size_t mark = ws_mark(w);
    double *p_a = ws_doubles(w, 3 * K), *p_b = ws_doubles(w, 3 * K), *jacobian = NULL, *row = ws_doubles(w, columns);
    double *wrench = ws_doubles(w, 6), *d_state = ws_doubles(w, 6 * columns), *d_parameter = ws_doubles(w, 6 * P);
    int64_t wrench_of = -1; /* the joint whose wrench rows are in wrench, d_state, d_parameter */
    closure_points(model, s, p_a, p_b);
    memset(parameter_rows, 0, sizeof(double) * (size_t)(n_outputs * P));
    for (int64_t y = 0; y < n_outputs; y++) {
        const int64_t *code = outputs + 4 * y;
        int64_t kind = code[0], target = code[1], a = code[2];
        double *explicit = parameter_rows + y * P;
        memset(row, 0, sizeof(double) * (size_t)columns);
        if (kind == OUTPUT_JOINT) {
            value[y] = q[target];
            row[target] = 1.0;
        } else if (kind == OUTPUT_PIN) {
            value[y] = multipliers[6 * target + a];
            row[nq + 6 * target + a] = 1.0;
        } else if (kind == OUTPUT_FRAME) {
            int64_t node = model->frame_node[target];
            double p[3];
            frame_pose(model, s, target, NULL, p);
            value[y] = p[a];
            for (int64_t up = node; up > 0; up = model->parent[up]) {
                int64_t k = model->coordinate[up];
                if (k < 0) continue;
                const double *om = s->omega + 3 * k;
                row[k] = om[(a + 1) % 3] * p[(a + 2) % 3] - om[(a + 2) % 3] * p[(a + 1) % 3] + s->v[3 * k + a];
            }
            for (int64_t column = 0; column < P; column++) { /* a frame parameter's shift of this frame */
                const int64_t *pc = parameters + 4 * column;
                if (pc[0] != PARAMETER_FRAME) continue;
                double shift = subtree_shift(model, pc[1], motion_start, motion, node) + (pc[1] == target ? 1.0 : 0.0);
                explicit[column] = shift * s->rotation[9 * model->frame_node[pc[1]] + 3 * a + pc[2]];
            }
        } else if (kind == OUTPUT_WRENCH || kind == OUTPUT_WRENCH_JOINT) {
            if (wrench_of != target)
                joint_wrench(w, model, s, gravity, loads, multipliers, ground, P, parameters, motion_start, motion, p_a,
                             p_b, target, wrench, d_state, d_parameter);
            wrench_of = target;
            if (kind == OUTPUT_WRENCH) {
                value[y] = wrench[a];
                memcpy(row, d_state + a * columns, sizeof(double) * (size_t)columns);
                memcpy(explicit, d_parameter + a * P, sizeof(double) * (size_t)P);
            } else {
                value[y] = in_joint_axes(model, s, target, a, wrench, d_state, d_parameter, columns, P, row, explicit);
            }
        } else if (kind == OUTPUT_EFFORT) { /* -(Q_k + G_k^T lambda): d = H_k dq - G_k^T dlambda - dQ_k/dp */
            if (!jacobian) {
                jacobian = ws_doubles(w, 6 * K * nq);
                closure_jacobian(model, s, jacobian);
            }
            value[y] = -residual[target];
            memcpy(row, hessian + target * nq, sizeof(double) * (size_t)nq);
            for (int64_t r = 0; r < 6 * K; r++) row[nq + r] = -jacobian[r * nq + target];
            for (int64_t column = 0; column < P; column++) explicit[column] = -force_partial[target * P + column];
        }
        for (int64_t i = 0; i < n_chosen; i++) state_rows[y * n_chosen + i] = row[chosen[i]];
    }
    ws_release(w, mark);
}

size_t output_partials_workspace_doubles(const Model *model, int64_t n_loads, int64_t n_ground, int64_t n_parameters) {
    size_t n = (size_t)model->n_nodes, nq = (size_t)model->nq, K = (size_t)model->n_closures;
    size_t forces = (sizeof(Force) + 7) / 8 * (n + (size_t)n_loads + 2 * K + (size_t)n_ground + (size_t)model->n_pairs);
    return 24 * n + 6 * nq + 2 + 6 * K + 6 * K * nq + 7 * (nq + 6 * K) + 6 + 6 * (size_t)n_parameters + forces + 64;
}
