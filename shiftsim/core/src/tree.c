/* Tree-ordered factorization of the reduced stiffness of a tree without loops, in O(n).
 *
 * Gravity, world-fixed point forces and joint springs give a stiffness (free coordinates, nf x nf) of the form
 * H_jk = omega_j . X_k for j at or above k on k's path to the root (H_kj the same), 0 between coordinates on
 * different branches, plus a diagonal: the column X_k (3) of coordinate k depends only on what k carries. Such a
 * matrix is dense along a chain, yet eliminating its coordinates leaves first (an LDL^T of the symmetric
 * permutation) keeps the structure: eliminating k changes H_jl for j, l above k by -omega_j . (X~_k X~_k^T / d_k)
 * omega_l, a 3 x 3 matrix that collects up the tree (as the articulated-body inertia does for the mass matrix).
 * With R_n the sum of those matrices of the coordinates below node n, coordinate k on node n has the column
 * X~_k = X_k - R_n omega_k and the pivot d_k = omega_k . X~_k + diagonal_k + shift. Pivot signs give the
 * inertia (Sylvester): all positive is positive definite. Nodes are numbered parents first (core.h).
 *
 * Loop-closing forces add a term that is not symmetric (a world-fixed torque turns with nothing): H_kj =
 * omega_j . lower_k below the diagonal (k below j) while H_jk = omega_j . upper_k above it. The same elimination
 * then collects R_n = sum X~_k Y~_k^T / d_k with X~_k = upper_k - R_n omega_k, Y~_k = lower_k - R_n^T omega_k: an
 * L D U factorization whose L holds X~ / d and U holds Y~ / d. lower NULL: lower = upper (symmetric, L = U^T).
 * A pivot that vanishes against the terms it is made of (|d| <= 1e-9 of them: a loop joint's own coordinate, a
 * massless link only a loop holds) is lifted by tree_factor when asked (lift not NULL): d + lift_k, and the caller
 * accounts for the lift (one more border row per lifted pivot, newton.c). */
#include <math.h>
#include <string.h>

#include "core.h"


/* free index of each coordinate (nq), -1 where held */
static int64_t *free_index(Workspace *w, const Model *model, int64_t nf, const int64_t *free) {
    int64_t *index = ws_indices(w, model->nq);
    for (int64_t k = 0; k < model->nq; k++) index[k] = -1;
    for (int64_t i = 0; i < nf; i++) index[free[i]] = i;
    return index;
}

int64_t tree_factor(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                    const double *columns, const double *lower, const double *diagonal, double shift, double level,
                    double *pivot, double *reach, double *reach_lower, double *lift) {
    size_t mark = ws_mark(w);
    int64_t n = model->n_nodes, not_positive = 0, *index = free_index(w, model, nf, free);
    double *below = ws_doubles(w, 9 * n); /* R (n, 3, 3) */
    if (!lower) lower = columns;
    for (int64_t node = n - 1; node > 0; node--) {
        double *r = below + 9 * node, *up = below + 9 * model->parent[node];
        int64_t k = model->coordinate[node], i = k >= 0 ? index[k] : -1;
        if (i >= 0) {
            const double *om = omega + 3 * k, *x = columns + 3 * k, *y = lower + 3 * k;
            double column[3], row[3], d, own = 0.0;
            for (int a = 0; a < 3; a++) {
                column[a] = x[a] - (r[3 * a] * om[0] + r[3 * a + 1] * om[1] + r[3 * a + 2] * om[2]);
                row[a] = y[a] - (r[a] * om[0] + r[3 + a] * om[1] + r[6 + a] * om[2]);
            }
            d = om[0] * column[0] + om[1] * column[1] + om[2] * column[2] + diagonal[k] + shift;
            if (lift) { /* the size of the terms d is made of: a pivot far below it vanishes */
                for (int a = 0; a < 3; a++) own += fabs(om[a] * x[a]) + fabs(om[a] * (x[a] - column[a]));
                own += fabs(diagonal[k]) + fabs(shift);
                lift[i] = fabs(d) <= 1e-9 * own || d == 0.0 ? (own > 0.0 ? own : level) : 0.0;
                d += lift[i];
            }
            pivot[i] = d;
            if (!(d > 0.0)) not_positive++;
            /* an exactly zero pivot drops its coordinate (the step moves it not at all), as a pseudo-inverse would */
            double scale = d != 0.0 ? 1.0 / d : 0.0;
            for (int a = 0; a < 3; a++) reach[3 * i + a] = column[a] * scale;
            if (reach_lower)
                for (int a = 0; a < 3; a++) reach_lower[3 * i + a] = row[a] * scale;
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) r[3 * a + b] += column[a] * row[b] * scale;
        }
        for (int c = 0; c < 9; c++) up[c] += r[c];
    }
    ws_release(w, mark);
    return not_positive;
}

void tree_solve(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                const double *pivot, const double *reach, const double *reach_lower, const double *b, double *x) {
    size_t mark = ws_mark(w);
    int64_t n = model->n_nodes, *index = free_index(w, model, nf, free);
    double *sum = ws_doubles(w, 3 * n); /* (n, 3) */
    for (int64_t node = n - 1; node > 0; node--) { /* L z = b, leaves first: sum_n = reach_k z_k over k below n */
        double *s = sum + 3 * node, *up = sum + 3 * model->parent[node];
        int64_t k = model->coordinate[node], i = k >= 0 ? index[k] : -1;
        if (i >= 0) {
            const double *om = omega + 3 * k;
            double z = b[i] - (om[0] * s[0] + om[1] * s[1] + om[2] * s[2]);
            x[i] = z;
            for (int a = 0; a < 3; a++) s[a] += reach[3 * i + a] * z;
        }
        for (int a = 0; a < 3; a++) up[a] += s[a];
    }
    memset(sum, 0, sizeof(double) * (size_t)(3 * n)); /* D L^T x = z, root first: sum_n = omega_j x_j at or above n */
    for (int64_t node = 1; node < n; node++) {
        double *s = sum + 3 * node;
        const double *up = sum + 3 * model->parent[node];
        memcpy(s, up, 3 * sizeof(double));
        int64_t k = model->coordinate[node], i = k >= 0 ? index[k] : -1;
        if (i < 0) continue;
        const double *om = omega + 3 * k, *r = (reach_lower ? reach_lower : reach) + 3 * i;
        double value = (pivot[i] != 0.0 ? x[i] / pivot[i] : 0.0) - (r[0] * up[0] + r[1] * up[1] + r[2] * up[2]);
        x[i] = value;
        for (int a = 0; a < 3; a++) s[a] += om[a] * value;
    }
    ws_release(w, mark);
}

void tree_dense(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                const double *columns, const double *lower, const double *diagonal, double *out) {
    size_t mark = ws_mark(w);
    int64_t *index = free_index(w, model, nf, free);
    if (!lower) lower = columns;
    memset(out, 0, sizeof(double) * (size_t)(nf * nf));
    for (int64_t i = 0; i < nf; i++) {
        int64_t k = free[i];
        const double *x = columns + 3 * k, *y = lower + 3 * k;
        for (int64_t node = model->coordinate_node[k]; node > 0; node = model->parent[node]) {
            int64_t j = model->coordinate[node], row = j >= 0 ? index[j] : -1;
            if (row < 0) continue;
            const double *om = omega + 3 * j;
            out[row * nf + i] = om[0] * x[0] + om[1] * x[1] + om[2] * x[2];
            if (row != i) out[i * nf + row] = om[0] * y[0] + om[1] * y[1] + om[2] * y[2];
        }
        out[i * nf + i] += diagonal[k];
    }
    ws_release(w, mark);
}

void tree_column_bounds(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                        const double *columns, const double *diagonal, double *out) {
    size_t mark = ws_mark(w);
    int64_t n = model->n_nodes, *index = free_index(w, model, nf, free);
    double *largest = ws_doubles(w, n); /* largest |X_j| of the free j below each node */
    for (int64_t node = n - 1; node > 0; node--) {
        int64_t k = model->coordinate[node], i = k >= 0 ? index[k] : -1, up = model->parent[node];
        double own = 0.0;
        if (i >= 0) {
            const double *x = columns + 3 * k, *om = omega + 3 * k;
            own = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
            out[i] = own + fabs(diagonal[k]) + sqrt(om[0] * om[0] + om[1] * om[1] + om[2] * om[2]) * largest[node];
        }
        double below = own > largest[node] ? own : largest[node];
        if (below > largest[up]) largest[up] = below;
    }
    ws_release(w, mark);
}

/* Distinct axes (to 1e-12) kept per node by tree_largest_entry; beyond this many a column walks its path. */
#define TREE_AXES 8

double tree_largest_entry(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                          const double *columns, const double *diagonal) {
    size_t mark = ws_mark(w);
    int64_t n = model->n_nodes, *index = free_index(w, model, nf, free);
    /* the distinct axes of the free coordinates at or above each node (count -1: more than TREE_AXES) */
    int64_t *count = ws_indices(w, n);
    double *axes = ws_doubles(w, 3 * TREE_AXES * n), largest = 0.0;
    count[0] = 0;
    for (int64_t node = 1; node < n; node++) {
        int64_t up = model->parent[node], k = model->coordinate[node], i = k >= 0 ? index[k] : -1;
        double *own = axes + 3 * TREE_AXES * node;
        count[node] = count[up];
        if (count[up] > 0) memcpy(own, axes + 3 * TREE_AXES * up, sizeof(double) * (size_t)(3 * count[up]));
        if (i < 0) continue;
        const double *x = columns + 3 * k, *om = omega + 3 * k;
        if (count[up] >= 0) { /* the entries above the diagonal: omega_j . X_k over the distinct axes above */
            for (int64_t a = 0; a < count[up]; a++) {
                const double *axis = own + 3 * a;
                largest = larger(largest, fabs(axis[0] * x[0] + axis[1] * x[1] + axis[2] * x[2]));
            }
        } else { /* too many: every coordinate above */
            for (int64_t above = up; above > 0; above = model->parent[above]) {
                int64_t j = model->coordinate[above];
                if (j < 0 || index[j] < 0) continue;
                const double *axis = omega + 3 * j;
                largest = larger(largest, fabs(axis[0] * x[0] + axis[1] * x[1] + axis[2] * x[2]));
            }
        }
        largest = larger(largest, fabs(om[0] * x[0] + om[1] * x[1] + om[2] * x[2] + diagonal[k]));
        if (count[node] < 0) continue;
        int known = 0;
        for (int64_t a = 0; a < count[node] && !known; a++)
            known = fabs(own[3 * a] - om[0]) <= 1e-12 && fabs(own[3 * a + 1] - om[1]) <= 1e-12
                    && fabs(own[3 * a + 2] - om[2]) <= 1e-12;
        if (known) continue;
        if (count[node] == TREE_AXES) {
            count[node] = -1;
        } else {
            memcpy(own + 3 * count[node], om, 3 * sizeof(double));
            count[node]++;
        }
    }
    ws_release(w, mark);
    return largest;
}
