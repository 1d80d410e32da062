/* The statics iteration: a descent of the potential energy on the closed-loop manifold, for one case.
 *
 * Loops are closed by Gauss-Newton with minimum-norm steps (project); every iterate has least-squares closure
 * multipliers; the Newton step is taken in the null space of the closure Jacobian with the reduced tangent
 * stiffness shifted to positive definite where it is not; the line search projects each trial back onto
 * g(q) = 0 and compares the energy (the residual norm when forces have no potential). Unstable equilibria are
 * left toward the start; unheld coordinates and runaway translations end the case (no equilibrium); a failed
 * full load is retried with load stepping. shiftsim/statics.py holds the Python API and docs/statics.md the
 * reasons. Units: N or N m per coordinate, m, rad. u: the free coordinates (nf); m independent closure rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"


typedef struct {
    const Model *model;
    const Problem *p;
    const Case *c;
    Workspace *w; /* the case's working memory: every array below is taken from it (core.h) */
    bool tree; /* the stiffness has tree structure: factorized in tree order (tree.c), see is_tree_structured */
} Context;

typedef struct {
    double *residual;        /* (nf) reduced force with closure forces */
    double *closure;         /* (m) */
    double *g_u;             /* (m, nf) */
    double *hessian;         /* (nf, nf) = -d residual / du; NULL with tree structure (see omega) */
    double energy, force_scale;
    int conservative;
    double *q_force_reduced; /* (nf) without closure forces */
    double *multipliers;     /* (m) */
    double *omega, *columns, *springs; /* tree structure only: axes, stiffness columns (nq, 3), spring diagonal (nq) */
    double *lower;             /* tree structure with loops: the columns below the diagonal (nq, 3), see tree.c */
    double largest_stiffness;  /* tree structure only: the hessian's largest |entry| (tree_largest_entry) */
} Evaluation;

static double *zeros(const Context *x, int64_t n) { return ws_doubles(x->w, n); }


/* Doubles per coordinate of an evaluation's tree structure: omega, columns (3 each), springs, and with loops lower (3). */
static int64_t tree_arrays(const Context *x) { return x->p->m > 0 ? 10 : 7; }

static Evaluation evaluation_new(const Context *x) { /* every array in one piece of the workspace */
    Evaluation e;
    int64_t nf = x->p->nf, m = x->p->m, tree = x->tree ? tree_arrays(x) * x->model->nq : 0, dense = x->tree ? 0 : nf * nf;
    e.residual = zeros(x, 3 * nf + 2 * m + m * nf + dense + tree);
    e.closure = e.residual + nf, e.g_u = e.closure + m, e.hessian = x->tree ? NULL : e.g_u + m * nf;
    e.q_force_reduced = e.g_u + m * nf + dense, e.multipliers = e.q_force_reduced + nf;
    e.largest_stiffness = 0.0;
    e.omega = x->tree ? e.multipliers + m : NULL;
    e.columns = x->tree ? e.omega + 3 * x->model->nq : NULL;
    e.springs = x->tree ? e.columns + 3 * x->model->nq : NULL;
    e.lower = x->tree && x->p->m > 0 ? e.springs + x->model->nq : NULL;
    e.energy = e.force_scale = 0.0, e.conservative = 1;
    return e;
}

static void evaluation_copy(const Context *x, Evaluation *to, const Evaluation *from) {
    const Problem *p = x->p;
    if (x->tree) memcpy(to->omega, from->omega, sizeof(double) * (size_t)(tree_arrays(x) * x->model->nq));
    memcpy(to->residual, from->residual, sizeof(double) * (size_t)p->nf);
    memcpy(to->closure, from->closure, sizeof(double) * (size_t)p->m);
    memcpy(to->g_u, from->g_u, sizeof(double) * (size_t)(p->m * p->nf));
    if (!x->tree) memcpy(to->hessian, from->hessian, sizeof(double) * (size_t)(p->nf * p->nf));
    to->largest_stiffness = from->largest_stiffness;
    memcpy(to->q_force_reduced, from->q_force_reduced, sizeof(double) * (size_t)p->nf);
    memcpy(to->multipliers, from->multipliers, sizeof(double) * (size_t)p->m);
    to->energy = from->energy, to->force_scale = from->force_scale, to->conservative = from->conservative;
}

static void evaluation_swap(Evaluation *x, Evaluation *y) {
    Evaluation t = *x;
    *x = *y, *y = t;
}

static double max_abs(int64_t n, const double *x) {
    double largest = 0.0;
    for (int64_t i = 0; i < n; i++) largest = larger(largest, fabs(x[i]));
    return largest;
}

static bool all_finite(int64_t n, const double *x) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* x with a x = b; the minimum-norm least-squares x (rcond) where a is exactly singular; NaN if not finite. */
static void solve_or_least_squares(Workspace *w, int64_t n, const double *a, const double *b, double rcond,
                                   double *x) {
    if (n == 0) return;
    if (!all_finite(n * n, a) || !all_finite(n, b)) {
        for (int64_t i = 0; i < n; i++) x[i] = NAN;
        return;
    }
    if (lu_solve(w, n, a, b, x) != CORE_OK) pseudo_solve(w, n, n, a, b, rcond, x);
}

/* gram (m, m) = g g^T of g (m, nf), each entry summed over k in order (the upper triangle mirrors the lower one:
 * the same products, so the same bits). */
static void gram_matrix(int64_t m, int64_t nf, const double *g, double *gram) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j <= i; j++) {
            double total = 0.0;
            for (int64_t k = 0; k < nf; k++) total += g[i * nf + k] * g[j * nf + k];
            gram[i * m + j] = gram[j * m + i] = total;
        }
}

/* ------------------------------------------------------------------ couplings */
static void apply_couplings(const Context *x, double *q) {
    if (!x->p->coupling_apply) return;
    size_t mark = ws_mark(x->w);
    double *out = zeros(x, x->model->nq);
    if (x->p->coupling_apply(x->p->context, q, out) != CORE_OK)
        for (int64_t i = 0; i < x->model->nq; i++) out[i] = NAN;
    memcpy(q, out, sizeof(double) * (size_t)x->model->nq);
    ws_release(x->w, mark);
}

/* T = dq/du (nq, nf), or NULL without couplings (T selects the free coordinates); taken from the workspace. */
static double *coupling_map(const Context *x, const double *q) {
    if (!x->p->coupling_jacobian) return NULL;
    double *t = zeros(x, x->model->nq * x->p->nf);
    if (x->p->coupling_jacobian(x->p->context, q, t) != CORE_OK)
        for (int64_t i = 0; i < x->model->nq * x->p->nf; i++) t[i] = NAN;
    return t;
}

static void reduce_vector(const Context *x, const double *t, const double *v, double *out) {
    int64_t nq = x->model->nq, nf = x->p->nf;
    for (int64_t i = 0; i < nf; i++) {
        if (!t) {
            out[i] = v[x->p->free[i]];
            continue;
        }
        double total = 0.0;
        for (int64_t k = 0; k < nq; k++) total += t[k * nf + i] * v[k];
        out[i] = total;
    }
}

/* out (rows, nf) = matrix (rows, nq) T */
static void reduce_columns(const Context *x, const double *t, int64_t rows, const double *matrix, double *out) {
    int64_t nq = x->model->nq, nf = x->p->nf;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < nf; i++) {
            if (!t) {
                out[r * nf + i] = matrix[r * nq + x->p->free[i]];
                continue;
            }
            double total = 0.0;
            for (int64_t k = 0; k < nq; k++) total += matrix[r * nq + k] * t[k * nf + i];
            out[r * nf + i] = total;
        }
}

/* ------------------------------------------------------------------ evaluation */
/* The largest |entry| of the hessian (nf, nf). */
static double stiffness_size(const Context *x, const Evaluation *e) {
    return x->tree ? e->largest_stiffness : max_abs(x->p->nf * x->p->nf, e->hessian);
}


static void evaluate_analytic(const Context *x, const double *q, const State *s, const double *given_multipliers,
                              double scale, Evaluation *e) {
    const Model *model = x->model;
    const Problem *p = x->p;
    int64_t nq = model->nq, nf = p->nf, m = p->m, n_loads = p->n_loads;
    int64_t dense = x->tree ? 0 : nq * nq; /* the tree structure needs no stiffness matrix */
    size_t mark = ws_mark(x->w);
    double *block = zeros(x, 12 * n_loads + dense + 5 * nq);
    double *forces = block, *torques = forces + 3 * n_loads, *point = torques + 3 * n_loads;
    double *force = point + 3 * n_loads, *stiffness = force + 3 * n_loads, *q_force = stiffness + dense;
    double *magnitude = q_force + nq, *term = magnitude + nq, *constraint_force = term + nq;
    if (x->tree) stiffness = NULL; /* the terms write their tree structure into e instead */
    int64_t *point_node = ws_indices(x->w, n_loads);
    int conservative = 1;
    int64_t count = 0;
    for (int64_t i = 0; i < 3 * n_loads; i++) { /* torques and following loads have no potential */
        forces[i] = x->c->force[i] * scale, torques[i] = x->c->torque[i] * scale;
        if (torques[i] != 0.0 || (forces[i] != 0.0 && p->load_follow[i / 3])) conservative = 0;
    }
    double gravity[3] = {x->c->gravity[0] * scale, x->c->gravity[1] * scale, x->c->gravity[2] * scale};
    double energy = 0.0;
    for (int part = 0; part < 5; part++) { /* each term's force separately: the force scale adds their sizes */
        memset(term, 0, sizeof(double) * (size_t)nq);
        if (part == 0) {
            count = applied_loads(x->w, model, s, n_loads, p->load_frame, forces, torques, p->load_follow, point_node,
                                  point,
                                  force, term, stiffness);
        } else if (part == 1) {
            energy += gravity_and_world_forces(x->w, model, s, gravity, count, point_node, point, force, term,
                                               stiffness,
                                               e->columns);
        } else if (part == 2) {
            if (e->springs) memset(e->springs, 0, sizeof(double) * (size_t)nq);
            energy += joint_springs(model, q, term, stiffness, e->springs);
        } else if (part == 3) {
            energy += pair_springs(x->w, model, s, term, stiffness);
        } else {
            for (int64_t g = 0; g < p->n_grounds; g++) /* native fields: ground contacts and tyres */
                energy += ground_terms(x->w, model, s, p->grounds[g], term, stiffness, &conservative);
            if (p->field_terms) {
                double more[2] = {0.0, 1.0}; /* energy, conservative */
                if (p->field_terms(p->context, q, s->rotation, s->position, s->omega, s->v, term, stiffness, more)
                    != CORE_OK)
                    for (int64_t i = 0; i < nq; i++) term[i] = NAN;
                energy += more[0];
                conservative = conservative && more[1] != 0.0;
            }
        }
        for (int64_t i = 0; i < nq; i++) q_force[i] += term[i], magnitude[i] += fabs(term[i]);
    }
    if (e->omega) { /* the tree structure of the hessian, -stiffness (tree.c) */
        memcpy(e->omega, s->omega, sizeof(double) * (size_t)(3 * nq));
        for (int64_t i = 0; i < 3 * nq; i++) e->columns[i] = -e->columns[i];
    }
    if (p->has_rates) { /* constant generalized forces: potential -Q . q */
        for (int64_t i = 0; i < nq; i++) q_force[i] += x->c->rate_force[i], energy -= x->c->rate_force[i] * q[i];
    }
    double *t = coupling_map(x, q);
    reduce_vector(x, t, q_force, e->q_force_reduced);
    if (m > 0) {
        int64_t rows6 = 6 * model->n_closures;
        double *g_full = zeros(x, rows6), *jac_full = zeros(x, rows6 * nq), *jac = zeros(x, m * nq);
        closure_residual(model, s, g_full);
        closure_jacobian(model, s, jac_full);
        for (int64_t r = 0; r < m; r++) {
            e->closure[r] = g_full[p->rows[r]];
            memcpy(jac + r * nq, jac_full + p->rows[r] * nq, sizeof(double) * (size_t)nq);
        }
        reduce_columns(x, t, m, jac, e->g_u);
        if (given_multipliers) {
            memcpy(e->multipliers, given_multipliers, sizeof(double) * (size_t)m);
        } else { /* least squares: lambda minimizing |Q + G_u^T lambda| */
            double *gram = zeros(x, m * m), *rhs = zeros(x, m);
            gram_matrix(m, nf, e->g_u, gram);
            for (int64_t i = 0; i < m; i++) {
                double total = 0.0;
                for (int64_t k = 0; k < nf; k++) total += e->g_u[i * nf + k] * e->q_force_reduced[k];
                rhs[i] = -total;
            }
            solve_or_least_squares(x->w, m, gram, rhs, 1e-12, e->multipliers);
        }
        double *full = zeros(x, rows6);
        for (int64_t r = 0; r < m; r++) full[p->rows[r]] = e->multipliers[r];
        for (int64_t k = 0; k < nq; k++) {
            double total = 0.0;
            for (int64_t r = 0; r < m; r++) total += jac[r * nq + k] * e->multipliers[r];
            constraint_force[k] = total;
            magnitude[k] += fabs(total);
        }
        if (x->tree) { /* the closure forces' stiffness in tree structure: columns, and the lower ones (tree.c) */
            double *turn = zeros(x, 6 * nq), *column = turn + 3 * nq;
            closure_force_columns(x->w, model, s, full, column, turn);
            for (int64_t i = 0; i < 3 * nq; i++) {
                e->columns[i] -= column[i];
                e->lower[i] = e->columns[i] - turn[i];
            }
        } else {
            closure_force_stiffness(x->w, model, s, full, stiffness);
        }
    }
    reduce_vector(x, t, constraint_force, e->residual);
    for (int64_t i = 0; i < nf; i++) e->residual[i] += e->q_force_reduced[i];
    double largest_magnitude = 0.0;
    if (t) {
        double *kt = zeros(x, nq * nf);
        for (int64_t k = 0; k < nq; k++)
            for (int64_t i = 0; i < nf; i++) {
                double total = 0.0;
                for (int64_t l = 0; l < nq; l++) total += stiffness[k * nq + l] * t[l * nf + i];
                kt[k * nf + i] = total;
            }
        for (int64_t i = 0; i < nf; i++) {
            for (int64_t j = 0; j < nf; j++) {
                double total = 0.0;
                for (int64_t k = 0; k < nq; k++) total += t[k * nf + i] * kt[k * nf + j];
                e->hessian[i * nf + j] = -total;
            }
            double total = 0.0;
            for (int64_t k = 0; k < nq; k++) total += fabs(t[k * nf + i]) * magnitude[k];
            largest_magnitude = larger(largest_magnitude, total);
        }
    } else {
        for (int64_t i = 0; i < nf; i++) {
            if (!x->tree)
                for (int64_t j = 0; j < nf; j++) e->hessian[i * nf + j] = -stiffness[p->free[i] * nq + p->free[j]];
            largest_magnitude = larger(largest_magnitude, magnitude[p->free[i]]);
        }
    }
    if (x->tree) {
        e->largest_stiffness = tree_largest_entry(x->w, model, nf, p->free, e->omega, e->columns, e->springs);
        if (m > 0) /* the entries below the diagonal too */
            e->largest_stiffness = larger(e->largest_stiffness, tree_largest_entry(x->w, model, nf, p->free, e->omega,
                                                                                   e->lower, e->springs));
    }
    /* the size of the forces in play: the largest generalized force of any term or, where the forces vanish (a
     * pendulum hanging straight down), the stiffness times 1 mrad or 1 mm, never below the model's own scale */
    e->force_scale = x->c->force_floor;
    if (nf > 0) e->force_scale = larger(e->force_scale, larger(largest_magnitude, 1e-3 * stiffness_size(x, e)));
    e->energy = energy;
    e->conservative = conservative;
    ws_release(x->w, mark);
}

/* -d(residual)/du by central differences (multipliers fixed), step 1e-6 per coordinate (rad or m). */
static void finite_difference_hessian(const Context *x, const double *q, const double *multipliers, double scale,
                                      double *out) {
    int64_t nq = x->model->nq, nf = x->p->nf;
    size_t mark = ws_mark(x->w);
    double step = 1e-6, *plus = zeros(x, nq), *minus = zeros(x, nq);
    State s = state_new(x->w, x->model);
    Evaluation e_plus = evaluation_new(x), e_minus = evaluation_new(x);
    for (int64_t column = 0; column < nf; column++) {
        memcpy(plus, q, sizeof(double) * (size_t)nq);
        memcpy(minus, q, sizeof(double) * (size_t)nq);
        plus[x->p->free[column]] += step, minus[x->p->free[column]] -= step;
        apply_couplings(x, plus), apply_couplings(x, minus);
        node_state(x->model, plus, &s);
        evaluate_analytic(x, plus, &s, multipliers, scale, &e_plus);
        node_state(x->model, minus, &s);
        evaluate_analytic(x, minus, &s, multipliers, scale, &e_minus);
        for (int64_t i = 0; i < nf; i++) out[i * nf + column] = -(e_plus.residual[i] - e_minus.residual[i]) / (2.0 * step);
    }
    ws_release(x->w, mark);
}

/* The evaluation at q (state s): multipliers given (m) or least squares (NULL); stiffness by central
 * differences when the problem asks for them. */
static void evaluate(const Context *x, const double *q, const State *s, const double *multipliers, double scale,
                     Evaluation *e) {
    evaluate_analytic(x, q, s, multipliers, scale, e);
    if (x->p->finite_difference) finite_difference_hessian(x, q, e->multipliers, scale, e->hessian);
}

static bool is_converged(const Context *x, const Evaluation *e) {
    return max_abs(x->p->nf, e->residual) <= x->p->force_tolerance * e->force_scale
           && max_abs(x->p->m, e->closure) <= x->p->closure_tolerance;
}

static double residual_norm(const Context *x, const Evaluation *e) {
    double forces = 0.0, gaps = 0.0;
    for (int64_t i = 0; i < x->p->nf; i++) forces += e->residual[i] * e->residual[i];
    for (int64_t i = 0; i < x->p->m; i++) gaps += e->closure[i] * e->closure[i];
    return sqrt(forces / (e->force_scale * e->force_scale) + gaps);
}

/* What the line search lowers: the energy, or the residual norm when the forces have no potential. */
static double merit(const Context *x, const Evaluation *e) { return e->conservative ? e->energy : residual_norm(x, e); }

/* Above this many free coordinates a tree-structured stiffness is never written out (nf x nf): its neutral
 * directions are not given (the verdict is), and the escape from an unstable equilibrium follows the most negative
 * pivot of the tree factorization instead of the lowest eigenvector (both directions of negative curvature). */
#define WRITTEN_OUT_UP_TO 2000

/* The tree structure's columns below the diagonal: NULL (the same as above it) without loops. */
static const double *lower_columns(const Context *x, const Evaluation *e) { return x->p->m > 0 ? e->lower : NULL; }

/* e with its hessian written out: e itself, or with tree structure a copy whose hessian (nf, nf) is built here (taken
 * from the workspace), for what needs the whole matrix (eigenvectors: neutral and escape directions). */
static Evaluation written_out(const Context *x, const Evaluation *e) {
    Evaluation dense = *e;
    if (x->tree) {
        dense.hessian = zeros(x, x->p->nf * x->p->nf);
        tree_dense(x->w, x->model, x->p->nf, x->p->free, e->omega, e->columns, lower_columns(x, e), e->springs,
                   dense.hessian);
    }
    return dense;
}

/* Null-space basis z (nf, r) of G_u, r = nf - m (identity without closures), taken from the workspace. */
static double *basis(const Context *x, const Evaluation *e, int64_t *r) {
    int64_t nf = x->p->nf, m = x->p->m;
    *r = nf - m;
    double *z = zeros(x, nf * (*r));
    if (m == 0) {
        for (int64_t i = 0; i < nf; i++) z[i * nf + i] = 1.0;
    } else if (!all_finite(m * nf, e->g_u)) {
        for (int64_t i = 0; i < nf * (*r); i++) z[i] = NAN;
    } else {
        null_space(x->w, m, nf, e->g_u, z);
    }
    return z;
}

/* Z^T H Z (r, r), symmetrized when ``symmetric`` (H itself without closures: Z is the identity), taken from the
 * workspace. */
static double *reduced_stiffness(const Context *x, const Evaluation *e, const double *z, int64_t r, int symmetric) {
    int64_t nf = x->p->nf;
    double *out = zeros(x, r * r);
    if (x->p->m == 0) {
        memcpy(out, e->hessian, sizeof(double) * (size_t)(nf * nf));
        if (symmetric)
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < i; j++) out[i * r + j] = out[j * r + i] = 0.5 * (out[i * r + j] + out[j * r + i]);
        return out;
    }
    size_t mark = ws_mark(x->w);
    double *hz = zeros(x, nf * r);
    for (int64_t i = 0; i < nf; i++)
        for (int64_t j = 0; j < r; j++) {
            double total = 0.0;
            for (int64_t k = 0; k < nf; k++) total += e->hessian[i * nf + k] * z[k * r + j];
            hz[i * r + j] = total;
        }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < r; j++) {
            double total = 0.0;
            for (int64_t k = 0; k < nf; k++) total += z[k * r + i] * hz[k * r + j];
            out[i * r + j] = total;
        }
    if (symmetric)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < i; j++) {
                double mean = 0.5 * (out[i * r + j] + out[j * r + i]);
                out[i * r + j] = out[j * r + i] = mean;
            }
    ws_release(x->w, mark);
    return out;
}

/* Stiffness eigenvalues below this in magnitude count as zero: relative to the force scale and the largest
 * stiffness entry. */
static double stiffness_floor(const Context *x, const Evaluation *e) {
    return 1e-9 * larger(e->force_scale, stiffness_size(x, e));
}

/* ------------------------------------------------------------------ loop re-assembly */
/* Close the loops from q (nq, in place) by moving the free coordinates: Gauss-Newton with minimum-norm steps.
 * CORE_OK when all 6 K equations closed to the tolerance with a correction no larger than max_correction (rad or m:
 * a trial whose projection lands far away may have jumped to another assembly branch), CORE_NOT_CLOSED otherwise;
 * s holds the kinematic state at the returned q. */
static Status project(const Context *x, double *q, double max_correction, State *s) {
    const Model *model = x->model;
    const Problem *p = x->p;
    int64_t nq = model->nq, nf = p->nf, m = p->m, rows6 = 6 * model->n_closures;
    node_state(model, q, s);
    if (model->n_closures == 0) return CORE_OK;
    size_t mark = ws_mark(x->w);
    double *start = zeros(x, nq), *g_full = zeros(x, rows6), *jac_full = zeros(x, rows6 * nq), *jac = zeros(x, m * nq);
    double *g_u = zeros(x, m * nf), *gram = zeros(x, m * m), *g = zeros(x, m), *y = zeros(x, m);
    memcpy(start, q, sizeof(double) * (size_t)nq);
    double target = 1e-3 * p->closure_tolerance, previous = INFINITY, norm = INFINITY;
    int iteration;
    for (iteration = 0; iteration < 30; iteration++) {
        closure_residual(model, s, g_full);
        norm = max_abs(rows6, g_full);
        if (!all_finite(rows6, g_full)) norm = NAN;
        if (!(norm > target && norm < 0.5 * previous)) break;
        previous = norm;
        closure_jacobian(model, s, jac_full);
        for (int64_t r = 0; r < m; r++) {
            g[r] = g_full[p->rows[r]];
            memcpy(jac + r * nq, jac_full + p->rows[r] * nq, sizeof(double) * (size_t)nq);
        }
        size_t before = ws_mark(x->w);
        double *t = coupling_map(x, q);
        reduce_columns(x, t, m, jac, g_u);
        ws_release(x->w, before);
        gram_matrix(m, nf, g_u, gram);
        solve_or_least_squares(x->w, m, gram, g, 1e-12, y);
        for (int64_t k = 0; k < nf; k++) {
            double total = 0.0;
            for (int64_t r = 0; r < m; r++) total += g_u[r * nf + k] * y[r];
            q[p->free[k]] -= total;
        }
        apply_couplings(x, q);
        node_state(model, q, s);
    }
    if (iteration == 30) { /* out of iterations: measure where the last step left the loops */
        closure_residual(model, s, g_full);
        norm = all_finite(rows6, g_full) ? max_abs(rows6, g_full) : NAN;
    }
    bool closed = isfinite(norm) && norm <= p->closure_tolerance;
    if (closed) {
        double moved = 0.0;
        for (int64_t i = 0; i < nq; i++) moved = larger(moved, fabs(q[i] - start[i]));
        closed = moved <= max_correction;
    }
    ws_release(x->w, mark);
    return closed ? CORE_OK : CORE_NOT_CLOSED;
}

/* ------------------------------------------------------------------ the iteration */
/* The stiffness level of the shift search: the largest |entry| of the reduced stiffness plus round-off. */
static double shift_level(const Evaluation *e, double largest) { return largest + 1e-12 * e->force_scale; }

/* The Newton direction du (nf) of a dense (reduced) stiffness: y with (Z^T H Z + shift I) y = Z^T residual, du = Z y.
 * Returns the shift (see newton_step). */
static double dense_direction(const Context *x, const Evaluation *e, double *du) {
    int64_t nf = x->p->nf, r;
    size_t mark = ws_mark(x->w);
    double *z = basis(x, e, &r);
    double *reduced = reduced_stiffness(x, e, z, r, 0), *block = zeros(x, r * r + 2 * r);
    double *symmetric = block, *force = symmetric + r * r, *y = force + r;
    for (int64_t i = 0; i < r; i++) {
        for (int64_t j = 0; j < r; j++) symmetric[i * r + j] = 0.5 * (reduced[i * r + j] + reduced[j * r + i]);
        double total = 0.0;
        for (int64_t k = 0; k < nf; k++) total += z[k * r + i] * e->residual[k];
        force[i] = total;
    }
    /* the smallest shift of the form 1e-3 |K| 2^k that makes the reduced stiffness positive definite, none where it
     * already is beyond 1e-8 |K| (found by Cholesky factorizations, not eigenvalues) */
    double level = shift_level(e, max_abs(r * r, reduced)), base = 1e-3 * level, shift = 0.0;
    if (!is_positive_definite(x->w, r, symmetric, -1e-8 * level)) {
        /* positive definiteness only grows with the shift: bisect over k between 0 and an exponent whose shift
         * passes Gershgorin's bound (strictly diagonally dominant with a positive diagonal: definite) */
        double bound = INFINITY;
        for (int64_t i = 0; i < r; i++) {
            double row = symmetric[i * r + i];
            for (int64_t j = 0; j < r; j++)
                if (j != i) row -= fabs(symmetric[i * r + j]);
            bound = row < bound ? row : bound;
        }
        int low = 0, high = 1100;
        if (isfinite(bound)) high = (int)fmin(1100.0, ceil(log2(fmax(-bound / base, 1.0))) + 1.0);
        while (low < high) {
            int middle = (low + high) / 2;
            if (is_positive_definite(x->w, r, symmetric, base * pow(2.0, middle))) high = middle;
            else low = middle + 1;
        }
        shift = base * pow(2.0, low);
    }
    int symmetric_system = 1; /* conservative forces without loops: Cholesky; otherwise LU on K itself */
    for (int64_t i = 0; i < r && symmetric_system; i++)
        for (int64_t j = 0; j < i; j++)
            if (reduced[i * r + j] != reduced[j * r + i]) {
                symmetric_system = 0;
                break;
            }
    for (int64_t i = 0; i < r; i++) reduced[i * r + i] += shift;
    if (r > 0 && all_finite(r * r, reduced) && all_finite(r, force)) {
        if ((!symmetric_system || cholesky_solve(x->w, r, reduced, 0.0, force, y) != CORE_OK)
            && lu_solve(x->w, r, reduced, force, y) != CORE_OK)
            pseudo_solve(x->w, r, r, reduced, force, 1e-15, y);
    } else {
        for (int64_t i = 0; i < r; i++) y[i] = NAN;
    }
    for (int64_t i = 0; i < nf; i++) {
        double total = 0.0;
        for (int64_t j = 0; j < r; j++) total += z[i * r + j] * y[j];
        du[i] = total;
    }
    ws_release(x->w, mark);
    return shift;
}

/* The tree-structured stiffness H of e with loops: Z^T (H + shift I) Z on the closed-loop motions (Z the null space
 * of G_u, orthonormal) through the tree factorization B of H + shift I + its lifts (tree.c), as the bordered system
 * [B C^T; C E] with C the m closure rows and a unit row per lifted pivot, E = diag(0, 1 / lift): its Schur
 * complement S = C B^-1 C^T - E ((m + p) square, m + p small) carries the loops. Without loops or lifts S is empty
 * and this is the tree factorization alone. Its arrays are taken from the case's workspace. */
typedef struct {
    int64_t size, not_positive;  /* m + p; the pivots of B that are not positive */
    double *pivot, *reach, *reach_lower, *lift; /* (nf), (nf, 3), (nf, 3), (nf) */
    int64_t *lifted;             /* (p) the free indices of the lifted pivots */
    double *y, *schur;           /* B^-1 C^T as rows (size, nf); S (size, size) */
} TreeSystem;

static TreeSystem tree_system_new(const Context *x) {
    int64_t nf = x->p->nf;
    bool loops = x->p->m > 0; /* reach_lower and lift with loops only */
    TreeSystem t = {0, 0, zeros(x, (loops ? 8 : 4) * nf), NULL, NULL, NULL, loops ? ws_indices(x->w, nf) : NULL, NULL,
                    NULL};
    t.reach = t.pivot + nf, t.reach_lower = loops ? t.reach + 3 * nf : NULL, t.lift = loops ? t.reach + 6 * nf : NULL;
    return t;
}

/* Row r of C (nf): a closure row of G_u, or the unit row of a lifted pivot. */
static void border_row(const Context *x, const Evaluation *e, const TreeSystem *t, int64_t r, double *row) {
    int64_t nf = x->p->nf, m = x->p->m;
    if (r < m) {
        memcpy(row, e->g_u + r * nf, sizeof(double) * (size_t)nf);
    } else {
        memset(row, 0, sizeof(double) * (size_t)nf);
        row[t->lifted[r - m]] = 1.0;
    }
}

/* Factorize H + shift I of e (symmetric: its symmetric part, for definiteness) into t; t's border arrays are taken
 * from the workspace after mark (the caller releases to it before the next factorization). */
static void tree_system_factor(const Context *x, const Evaluation *e, double shift, bool symmetric, TreeSystem *t) {
    const Model *model = x->model;
    int64_t nf = x->p->nf, m = x->p->m, nq = model->nq;
    const double *columns = e->columns, *lower = lower_columns(x, e);
    if (symmetric && lower) { /* the symmetric part: (upper + lower) / 2 on both sides */
        double *half = zeros(x, 3 * nq);
        for (int64_t i = 0; i < 3 * nq; i++) half[i] = 0.5 * (e->columns[i] + e->lower[i]);
        columns = half, lower = NULL;
    }
    double level = shift_level(e, e->largest_stiffness);
    t->not_positive = tree_factor(x->w, model, nf, x->p->free, e->omega, columns, lower, e->springs, shift, level,
                                  t->pivot, t->reach, lower ? t->reach_lower : NULL, m > 0 ? t->lift : NULL);
    int64_t p = 0;
    for (int64_t i = 0; m > 0 && i < nf; i++)
        if (t->lift[i] != 0.0) t->lifted[p++] = i;
    t->size = m + p;
    t->y = zeros(x, t->size * nf), t->schur = zeros(x, t->size * t->size);
    double *row = zeros(x, nf);
    for (int64_t r = 0; r < t->size; r++) {
        border_row(x, e, t, r, row);
        tree_solve(x->w, model, nf, x->p->free, e->omega, t->pivot, t->reach, lower ? t->reach_lower : NULL, row,
                   t->y + r * nf);
    }
    for (int64_t r = 0; r < t->size; r++) {
        border_row(x, e, t, r, row);
        for (int64_t c = 0; c < t->size; c++) {
            double total = 0.0;
            for (int64_t i = 0; i < nf; i++) total += row[i] * t->y[c * nf + i];
            t->schur[r * t->size + c] = total - (r == c && r >= m ? 1.0 / t->lift[t->lifted[r - m]] : 0.0);
        }
    }
}

/* Whether Z^T (H_sym + shift I) Z is positive definite (H_sym the symmetric part of e's): by inertia, the bordered
 * matrix has as many negative eigenvalues as B's non-positive pivots and S's positive eigenvalues together, which is
 * m (the border's own) exactly when the restriction is positive definite (Haynsworth). */
static bool is_tree_definite(const Context *x, const Evaluation *e, double shift, TreeSystem *t) {
    size_t mark = ws_mark(x->w);
    tree_system_factor(x, e, shift, true, t);
    bool definite = t->not_positive == 0;
    int64_t n = t->size, positive = 0;
    if (n > 0) {
        double *symmetric = zeros(x, n * n + n + n * n), *values = symmetric + n * n, *vectors = values + n;
        double largest = 0.0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) symmetric[i * n + j] = 0.5 * (t->schur[i * n + j] + t->schur[j * n + i]);
        bool finite = all_finite(n * n, symmetric), vanishing = false;
        if (finite) symmetric_eigen(x->w, n, symmetric, values, vectors);
        for (int64_t i = 0; i < n; i++) largest = larger(largest, fabs(values[i]));
        for (int64_t i = 0; i < n; i++) {
            if (fabs(values[i]) <= 1e-13 * largest) vanishing = true;
            else if (values[i] > 0.0) positive++;
        }
        definite = finite && !vanishing && t->not_positive + positive == x->p->m;
    }
    ws_release(x->w, mark);
    return definite;
}

/* is_tree_definite with its own scratch. */
static bool is_tree_positive_definite(const Context *x, const Evaluation *e, double shift) {
    size_t mark = ws_mark(x->w);
    TreeSystem t = tree_system_new(x);
    bool definite = is_tree_definite(x, e, shift, &t);
    ws_release(x->w, mark);
    return definite;
}

/* du (nf) with Z^T (H + shift I) Z y = Z^T b, du = Z y, from the factorization t of H + shift I (not symmetric):
 * x0 = B^-1 b, S v = C x0, du = x0 - B^-1 C^T v. */
static void tree_system_solve(const Context *x, const Evaluation *e, const TreeSystem *t, const double *b, double *du) {
    int64_t nf = x->p->nf, n = t->size;
    tree_solve(x->w, x->model, nf, x->p->free, e->omega, t->pivot, t->reach,
               lower_columns(x, e) ? t->reach_lower : NULL, b, du);
    if (n == 0) return;
    size_t mark = ws_mark(x->w);
    double *rhs = zeros(x, 2 * n + nf), *v = rhs + n, *row = v + n;
    for (int64_t r = 0; r < n; r++) {
        border_row(x, e, t, r, row);
        for (int64_t i = 0; i < nf; i++) rhs[r] += row[i] * du[i];
    }
    solve_or_least_squares(x->w, n, t->schur, rhs, 1e-15, v);
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < nf; i++) du[i] -= v[r] * t->y[r * nf + i];
    ws_release(x->w, mark);
}

/* dense_direction for a tree-structured stiffness, factorized in tree order (TreeSystem): the same shift search by
 * the same definiteness tests, each linear in nf (times the loops' m + p). */
static double tree_direction(const Context *x, const Evaluation *e, double *du) {
    size_t mark = ws_mark(x->w);
    TreeSystem t = tree_system_new(x);
    double level = shift_level(e, e->largest_stiffness), base = 1e-3 * level, shift = 0.0;
    if (!is_tree_definite(x, e, -1e-8 * level, &t)) {
        int low = 0, high = 1100;
        while (low < high) {
            int middle = (low + high) / 2;
            if (is_tree_definite(x, e, base * pow(2.0, middle), &t)) high = middle;
            else low = middle + 1;
        }
        shift = base * pow(2.0, low);
    }
    tree_system_factor(x, e, shift, false, &t);
    tree_system_solve(x, e, &t, e->residual, du);
    ws_release(x->w, mark);
    return shift;
}

/* Whether the reduced stiffness has the structure tree.c factorizes, and the problem is large enough
 * (structured_from free coordinates) for it to pay: a tree (its loops, if any, through the bordered system of
 * TreeSystem) without couplings, force fields (Python or native ground), frame-pair springs or finite differences,
 * whose loads are world-fixed forces (torques and following loads add terms outside the structure). */
bool is_tree_structured(const Model *model, const Problem *p, const Case *c) {
    if (p->nf == 0 || p->nf < p->structured_from || model->n_pairs > 0
        || p->coupling_apply || p->coupling_jacobian || p->field_terms || p->n_grounds > 0 || p->finite_difference)
        return false;
    for (int64_t i = 0; i < 3 * p->n_loads; i++)
        if (c->torque[i] != 0.0 || (c->force[i] != 0.0 && p->load_follow[i / 3])) return false;
    return true;
}

/* One damped Newton step on the closed-loop manifold, q, e and s updated in place (e_trial, s_trial: the trials'
 * evaluation and state, swapped with e and s when a trial is accepted). Direction: the Newton step in
 * the null space Z of G_u with Z^T K Z shifted to positive definite where it is not (the smallest shift
 * 1e-3 |K| 2^k); caps where shifted: rotations max_shifted_step (rad), translations reach times that (m);
 * elsewhere rotations a quarter turn. Length: backtracking on the merit, every trial projected back onto the
 * loops first. Returns whether a capped step was accepted whole; *again: no trial was accepted and the next step from
 * here would be this one again (the same direction and caps: unshifted, or shifted with reach 1). */
static bool newton_step(const Context *x, double *q, Evaluation *e, State *s, Evaluation *e_trial, State *s_trial,
                       double scale, double reach, bool *again) {
    const Problem *p = x->p;
    int64_t nq = x->model->nq, nf = p->nf;
    size_t mark = ws_mark(x->w);
    double *block = zeros(x, nf + nq), *du = block, *trial = du + nf;
    double shift = x->tree ? tree_direction(x, e, du) : dense_direction(x, e, du);
    double largest_turn = 0.0, largest_move = 0.0;
    for (int64_t i = 0; i < nf; i++) {
        double total = du[i];
        if (p->translation[i]) largest_move = larger(largest_move, fabs(total));
        else largest_turn = larger(largest_turn, fabs(total));
        if (isnan(total)) largest_turn = NAN;
    }
    int shifted = shift > 0.0;
    double turn_limit = shifted ? p->max_shifted_step : fmin(p->max_step, M_PI / 2);
    double move_limit = shifted ? reach * p->max_shifted_step : p->max_step;
    double cap = fmin(largest_turn > turn_limit ? turn_limit / largest_turn : 1.0,
                      largest_move > move_limit ? move_limit / largest_move : 1.0);
    for (int64_t i = 0; i < nf; i++) du[i] *= cap;
    double phi0 = merit(x, e), slope = 0.0;
    if (e->conservative)
        for (int64_t i = 0; i < nf; i++) slope -= e->q_force_reduced[i] * du[i];
    else
        slope = -phi0;
    int lost = fabs(slope) < 1e-12 * (fabs(phi0) + 1.0); /* the predicted change is round-off: judge by the residual */
    double norm0 = residual_norm(x, e), largest = max_abs(nf, du), alpha = 1.0;
    bool grown = false;
    *again = shift == 0.0 || reach <= 1.0;
    for (int attempt = 0; attempt < 40; attempt++) {
        memcpy(trial, q, sizeof(double) * (size_t)nq);
        for (int64_t i = 0; i < nf; i++) trial[p->free[i]] += alpha * du[i];
        apply_couplings(x, trial);
        /* the correction back onto the loops is second order in the step: one as large as half the step is a jump */
        bool closed = project(x, trial, 0.5 * alpha * largest + 1e-6, s_trial) == CORE_OK;
        evaluate(x, trial, s_trial, NULL, scale, e_trial);
        int accept = merit(x, e_trial) <= phi0 + 1e-4 * alpha * fmin(slope, 0.0);
        if (lost && shift == 0.0 && residual_norm(x, e_trial) < (1.0 - 1e-4 * alpha) * norm0) accept = 1;
        if (accept && closed) {
            memcpy(q, trial, sizeof(double) * (size_t)nq);
            evaluation_swap(e, e_trial);
            State accepted = *s_trial;
            *s_trial = *s, *s = accepted;
            grown = alpha == 1.0 && shifted && cap < 1.0;
            *again = false;
            break;
        }
        if (alpha < 1e-10) break;
        alpha *= 0.5;
    }
    ws_release(x->w, mark);
    return grown;
}

/* Unit direction (nf) of most negative curvature on the closed-loop motions, signed toward anchor. */
/* For a large tree: y = L^-T e_k for the most negative pivot d_k of H = L D L^T (tree order), y^T H y = d_k < 0; with
 * loops (H's symmetric part) projected onto the closed-loop motions, a direction of descent there though no longer
 * the most negative curvature. */
static void tree_escape_direction(const Context *x, const Evaluation *e, const double *q, const double *anchor,
                                  double *direction) {
    const Model *model = x->model;
    size_t mark = ws_mark(x->w);
    int64_t nf = x->p->nf, lowest = 0, *index = ws_indices(x->w, model->nq);
    double *pivot = zeros(x, 5 * nf), *reach = pivot + nf, *b = reach + 3 * nf, toward = 0.0, norm = 0.0;
    const double *columns = e->columns;
    if (lower_columns(x, e)) { /* loops: the symmetric part's factorization */
        double *half = zeros(x, 3 * model->nq);
        for (int64_t i = 0; i < 3 * model->nq; i++) half[i] = 0.5 * (e->columns[i] + e->lower[i]);
        columns = half;
    }
    tree_factor(x->w, model, nf, x->p->free, e->omega, columns, NULL, e->springs, 0.0, 0.0, pivot, reach, NULL, NULL);
    for (int64_t k = 0; k < model->nq; k++) index[k] = -1;
    for (int64_t i = 0; i < nf; i++) {
        index[x->p->free[i]] = i;
        if (pivot[i] < pivot[lowest]) lowest = i;
    }
    /* b = L D e_k: d_k at k, omega_j . X~_k (X~_k = d_k reach_k) at the free j above k; then H^-1 b = L^-T e_k */
    const double *w = reach + 3 * lowest;
    b[lowest] = pivot[lowest];
    int64_t node = model->coordinate_node[x->p->free[lowest]];
    for (node = model->parent[node]; node > 0; node = model->parent[node]) {
        int64_t j = model->coordinate[node];
        if (j < 0 || index[j] < 0) continue;
        const double *om = e->omega + 3 * j;
        b[index[j]] = pivot[lowest] * (om[0] * w[0] + om[1] * w[1] + om[2] * w[2]);
    }
    tree_solve(x->w, model, nf, x->p->free, e->omega, pivot, reach, NULL, b, direction);
    if (x->p->m > 0) { /* onto the closed-loop motions: direction - G_u^T (G_u G_u^T)^-1 G_u direction */
        int64_t m = x->p->m;
        double *gram = zeros(x, m * m + 2 * m), *g = gram + m * m, *y = g + m;
        gram_matrix(m, nf, e->g_u, gram);
        for (int64_t r = 0; r < m; r++)
            for (int64_t i = 0; i < nf; i++) g[r] += e->g_u[r * nf + i] * direction[i];
        solve_or_least_squares(x->w, m, gram, g, 1e-12, y);
        for (int64_t r = 0; r < m; r++)
            for (int64_t i = 0; i < nf; i++) direction[i] -= e->g_u[r * nf + i] * y[r];
    }
    for (int64_t i = 0; i < nf; i++) {
        norm += direction[i] * direction[i];
        toward += direction[i] * (anchor[x->p->free[i]] - q[x->p->free[i]]);
    }
    norm = (toward < 0.0 ? -1.0 : 1.0) / sqrt(norm);
    for (int64_t i = 0; i < nf; i++) direction[i] *= norm;
    ws_release(x->w, mark);
}

static void escape_direction(const Context *x, const Evaluation *tree_or_dense, const double *q, const double *anchor,
                             double *direction) {
    if (x->tree && x->p->nf > WRITTEN_OUT_UP_TO) {
        tree_escape_direction(x, tree_or_dense, q, anchor, direction);
        return;
    }
    size_t mark = ws_mark(x->w);
    Evaluation dense = written_out(x, tree_or_dense), *e = &dense;
    int64_t nf = x->p->nf, r;
    double *z = basis(x, e, &r), *reduced = reduced_stiffness(x, e, z, r, 1);
    double *values = zeros(x, r), *vectors = zeros(x, r * r), toward = 0.0;
    symmetric_eigen(x->w, r, reduced, values, vectors);
    for (int64_t i = 0; i < nf; i++) {
        double total = 0.0;
        for (int64_t j = 0; j < r; j++) total += z[i * r + j] * vectors[j * r];
        direction[i] = total;
        toward += total * (anchor[x->p->free[i]] - q[x->p->free[i]]);
    }
    if (toward < 0.0)
        for (int64_t i = 0; i < nf; i++) direction[i] = -direction[i];
    ws_release(x->w, mark);
}

static bool is_unstable(const Context *x, const Evaluation *e) {
    if (x->tree)
        return !is_tree_positive_definite(x, e, stiffness_floor(x, e)) && all_finite(3 * x->model->nq, e->columns);
    int64_t r;
    size_t mark = ws_mark(x->w);
    double *z = basis(x, e, &r), *reduced = reduced_stiffness(x, e, z, r, 1);
    bool unstable = r > 0 && all_finite(r * r, reduced)
                   && !is_positive_definite(x->w, r, reduced, stiffness_floor(x, e));
    ws_release(x->w, mark);
    return unstable;
}

/* Newton iterations from q (in place) under the load factor ``scale``, every iterate on the closed-loop
 * manifold; multipliers (m) out. CORE_OK when converged, CORE_NOT_CLOSED when the start's loops did not close,
 * CORE_NOT_CONVERGED otherwise; *iterations; runaway (nf): the free translations that ran runaway_sizes machine sizes
 * from anchor while the energy kept falling. A capped step accepted whole lets the next be four times longer (a
 * partial one halves the growth). */
static Status newton(const Context *x, double *q, double scale, int64_t max_iterations, const double *anchor,
                  double *multipliers, int64_t *iterations, uint8_t *runaway, const Evaluation *start,
                  Evaluation *finish) {
    const Problem *p = x->p;
    int64_t nq = x->model->nq, nf = p->nf;
    size_t mark = ws_mark(x->w);
    State s = state_new(x->w, x->model), s_trial = state_new(x->w, x->model);
    Evaluation e = evaluation_new(x), e_trial = evaluation_new(x);
    bool closed = true;
    int done = 0, escapes = 0; /* done: 1 converged, -1 ran away, 0 not yet */
    double reach = 1.0, far = x->p->runaway_sizes * larger(x->c->size, 1.0);
    double *trial = zeros(x, nq), *direction = zeros(x, nf);
    *iterations = 0;
    memset(runaway, 0, (size_t)nf);
    if (start) { /* the caller projected q and evaluated it (with least-squares multipliers) */
        node_state(x->model, q, &s);
        evaluation_copy(x, &e, start);
    } else {
        closed = project(x, q, INFINITY, &s) == CORE_OK;
        evaluate(x, q, &s, NULL, scale, &e);
    }
    if (closed) {
        for (int64_t it = 0; it < max_iterations; it++) {
            done = is_converged(x, &e);
            if (p->seek_stable && done && escapes < 3 && is_unstable(x, &e)) {
                /* leave the unstable equilibrium along its direction of negative curvature, toward the start */
                escape_direction(x, &e, q, anchor, direction);
                memcpy(trial, q, sizeof(double) * (size_t)nq);
                for (int64_t i = 0; i < nf; i++) trial[p->free[i]] += 0.05 * direction[i];
                apply_couplings(x, trial);
                if (project(x, trial, INFINITY, &s) == CORE_OK) {
                    memcpy(q, trial, sizeof(double) * (size_t)nq);
                    escapes++;
                    evaluate(x, q, &s, NULL, scale, &e);
                    done = is_converged(x, &e);
                } else {
                    node_state(x->model, q, &s);
                }
            }
            if (done) break;
            (*iterations)++;
            bool again;
            bool grown = newton_step(x, q, &e, &s, &e_trial, &s_trial, scale, reach, &again);
            if (again) break; /* stuck: every further iteration would repeat this one, q and e unchanged */
            reach = grown ? 4.0 * reach : larger(1.0, 0.5 * reach);
            bool ran = false;
            for (int64_t i = 0; i < nf; i++) {
                runaway[i] = p->translation[i] && fabs(q[p->free[i]] - anchor[p->free[i]]) > far;
                ran = ran || runaway[i];
            }
            if (ran) {
                done = -1;
                break;
            }
        }
        if (done == 0) done = is_converged(x, &e);
    }
    memcpy(multipliers, e.multipliers, sizeof(double) * (size_t)p->m);
    if (finish) evaluation_copy(x, finish, &e);
    ws_release(x->w, mark);
    return !closed ? CORE_NOT_CLOSED : done == 1 ? CORE_OK : CORE_NOT_CONVERGED;
}

/* Continuation in the load factor from 0 to 1 from q_start (q out), the increment doubled after a success and
 * halved after a failure. CORE_OK when it reached the full load, else newton's status; *iterations. */
static Status load_stepping(const Context *x, const double *q_start, double *q, double *multipliers,
                         int64_t *iterations) {
    const Problem *p = x->p;
    int64_t nq = x->model->nq, its;
    size_t mark = ws_mark(x->w);
    double *q_try = zeros(x, nq), *lam_try = zeros(x, p->m);
    uint8_t *runaway = (uint8_t *)zeros(x, p->nf / 8 + 1);
    memcpy(q, q_start, sizeof(double) * (size_t)nq);
    Status status = newton(x, q, 0.0, p->max_iterations, q_start, multipliers, iterations, runaway, NULL, NULL);
    double level = 0.0, increment = 0.25, smallest = 0.25 / pow(2.0, (double)p->max_load_halvings);
    bool going = status == CORE_OK;
    while (going) {
        double target = fmin(1.0, level + increment);
        memcpy(q_try, q, sizeof(double) * (size_t)nq);
        status = newton(x, q_try, target, p->max_iterations, q_start, lam_try, &its, runaway, NULL, NULL);
        *iterations += its;
        if (status == CORE_OK) {
            memcpy(q, q_try, sizeof(double) * (size_t)nq);
            memcpy(multipliers, lam_try, sizeof(double) * (size_t)p->m);
            level = target, increment *= 2.0;
        } else {
            increment *= 0.5;
        }
        going = level < 1.0 && increment >= smallest;
    }
    ws_release(x->w, mark);
    return level >= 1.0 ? CORE_OK : status;
}

/* Free coordinates nothing holds against the load (out (nf)): a generalized force beyond the tolerance and no
 * stiffness at all (row, column and closure column zero), confirmed by probing 1 and 1000 model sizes away
 * along the force (the force stays the same to 1e-6). */
static void unheld(const Context *x, const double *q, const Evaluation *e, uint8_t *out) {
    const Problem *p = x->p;
    int64_t nf = p->nf, m = p->m, nq = x->model->nq, any = 0;
    size_t mark = ws_mark(x->w);
    double scale = larger(e->force_scale, stiffness_size(x, e)), *bounds = NULL;
    if (x->tree) { /* a bound on each column: zero bound, zero column */
        bounds = zeros(x, nf);
        tree_column_bounds(x->w, x->model, nf, p->free, e->omega, e->columns, e->springs, bounds);
        if (lower_columns(x, e)) { /* loops: the entries below the diagonal too */
            double *more = zeros(x, nf);
            tree_column_bounds(x->w, x->model, nf, p->free, e->omega, e->lower, e->springs, more);
            for (int64_t i = 0; i < nf; i++) bounds[i] = larger(bounds[i], more[i]);
        }
    }
    for (int64_t i = 0; i < nf; i++) {
        double column = bounds ? bounds[i] : 0.0;
        for (int64_t j = 0; !bounds && j < nf; j++)
            column = larger(column, larger(fabs(e->hessian[j * nf + i]), fabs(e->hessian[i * nf + j])));
        for (int64_t r = 0; r < m; r++) column = larger(column, fabs(e->g_u[r * nf + i]));
        out[i] = column <= 1e-12 * scale && fabs(e->q_force_reduced[i]) > p->force_tolerance * e->force_scale;
        any = any || out[i];
    }
    if (!any) {
        ws_release(x->w, mark);
        return;
    }
    double size = larger(x->c->size, 1.0), distances[2] = {1.0, 1000.0}, *trial = zeros(x, nq);
    State s = state_new(x->w, x->model);
    Evaluation moved = evaluation_new(x);
    for (int d = 0; d < 2; d++) {
        memcpy(trial, q, sizeof(double) * (size_t)nq);
        for (int64_t i = 0; i < nf; i++)
            if (out[i]) trial[p->free[i]] += distances[d] * size * (e->q_force_reduced[i] > 0.0 ? 1.0 : -1.0);
        apply_couplings(x, trial);
        node_state(x->model, trial, &s);
        evaluate(x, trial, &s, NULL, 1.0, &moved);
        for (int64_t i = 0; i < nf; i++)
            out[i] = out[i] && fabs(moved.q_force_reduced[i] - e->q_force_reduced[i]) <= 1e-6 * fabs(e->q_force_reduced[i]);
    }
    ws_release(x->w, mark);
}

/* STABLE, NEUTRAL or UNSTABLE from the stiffness on the closed-loop motions; the neutral directions (unit
 * vectors in free coordinates) go to the rows of neutral (nf, nf), their count to *count. Stable: a Cholesky
 * factorization of K - floor I succeeds; unstable: an eigenvalue below -floor. */
static int stability(const Context *x, const Evaluation *tree_or_dense, double *neutral, int64_t *count) {
    int64_t nf = x->p->nf, r;
    *count = 0;
    double floor_ = stiffness_floor(x, tree_or_dense);
    if (x->tree && is_tree_positive_definite(x, tree_or_dense, -floor_)) return STABLE; /* else: written out */
    if (x->tree && nf > WRITTEN_OUT_UP_TO)
        return is_tree_positive_definite(x, tree_or_dense, floor_) ? NEUTRAL : UNSTABLE;
    size_t mark = ws_mark(x->w);
    Evaluation dense = written_out(x, tree_or_dense), *e = &dense;
    double *z = basis(x, e, &r), *reduced = reduced_stiffness(x, e, z, r, 1);
    int verdict = STABLE;
    if (r > 0) {
        if (!is_positive_definite(x->w, r, reduced, -floor_)) {
            if (!all_finite(r * r, reduced) || !is_positive_definite(x->w, r, reduced, floor_)) {
                verdict = UNSTABLE; /* an eigenvalue below -floor */
            } else { /* eigenvalues in [-floor, floor]: the neutral directions */
                double *values = zeros(x, r), *vectors = zeros(x, r * r);
                symmetric_eigen(x->w, r, reduced, values, vectors);
                if (values[0] < -floor_) {
                    verdict = UNSTABLE;
                } else {
                    verdict = NEUTRAL;
                    for (int64_t j = 0; j < r; j++) {
                        if (values[j] > floor_) continue;
                        for (int64_t i = 0; i < nf; i++) {
                            double total = 0.0;
                            for (int64_t l = 0; l < r; l++) total += z[i * r + l] * vectors[l * r + j];
                            neutral[*count * nf + i] = total;
                        }
                        (*count)++;
                    }
                }
            }
        }
    }
    ws_release(x->w, mark);
    return verdict;
}

/* One case from q_start (nq): q (nq), multipliers (m), flags (RESULT_FLAGS, fields.h): converged, iterations,
 * residual norm, stability code, neutral count set here (size and force floor are the Case's, set by the caller);
 * neutral (nf, nf); unheld, runaway (nf). */
void solve_case(Workspace *w, const Model *model, const Problem *p, const Case *c, const double *q_start,
                int64_t classify, double *q, double *multipliers, double *flags, double *neutral, uint8_t *out_unheld,
                uint8_t *out_runaway) {
    Context x = {model, p, c, w, is_tree_structured(model, p, c)};
    int64_t nq = model->nq, nf = p->nf, iterations = 0, any_unheld = 0, any_runaway = 0;
    size_t mark = ws_mark(w);
    State s = state_new(w, model);
    Evaluation e = evaluation_new(&x);
    memcpy(q, q_start, sizeof(double) * (size_t)nq);
    bool closed = project(&x, q, INFINITY, &s) == CORE_OK, ok = false;
    evaluate(&x, q, &s, NULL, 1.0, &e);
    memset(out_unheld, 0, (size_t)nf);
    memset(out_runaway, 0, (size_t)nf);
    memcpy(multipliers, e.multipliers, sizeof(double) * (size_t)p->m);
    if (closed) unheld(&x, q, &e, out_unheld);
    for (int64_t i = 0; i < nf; i++) any_unheld = any_unheld || out_unheld[i];
    if (closed && !any_unheld) {
        double *anchor = zeros(&x, nq);
        memcpy(anchor, q, sizeof(double) * (size_t)nq);
        int64_t first = p->max_iterations < p->full_load_iterations ? p->max_iterations : p->full_load_iterations;
        ok = newton(&x, q, 1.0, first, anchor, multipliers, &iterations, out_runaway, &e, &e) == CORE_OK;
        for (int64_t i = 0; i < nf; i++) any_runaway = any_runaway || out_runaway[i];
        if (!ok && !any_runaway && p->load_stepping) {
            int64_t more = 0;
            ok = load_stepping(&x, q_start, q, multipliers, &more) == CORE_OK;
            iterations += more;
            node_state(model, q, &s);
            evaluate(&x, q, &s, multipliers, 1.0, &e);
        }
    }
    int64_t count = 0;
    int verdict = STABLE;
    if (ok && classify) verdict = stability(&x, &e, neutral, &count);
    flags[FLAG_converged] = ok, flags[FLAG_iterations] = (double)iterations;
    flags[FLAG_residual] = residual_norm(&x, &e), flags[FLAG_stability] = verdict;
    flags[FLAG_neutral_count] = (double)count;
    ws_release(w, mark);
}

/* The evaluation at q (nq) for diagnostics and tests: multipliers given (m) or NULL for least squares;
 * residual (nf), closure (m), g_u (m, nf), hessian (nf, nf), scalars (EVALUATION_SCALARS, fields.h): energy,
 * force scale, conservative set here (size and force floor are the Case's, set by the caller); q_force_reduced (nf),
 * multipliers_out (m). */
void evaluate_case(Workspace *w, const Model *model, const Problem *p, const Case *c, const double *q,
                   const double *multipliers, double *residual, double *closure, double *g_u, double *hessian,
                   double *scalars, double *q_force_reduced, double *multipliers_out) {
    Context x = {model, p, c, w, false};
    size_t mark = ws_mark(w);
    State s = state_new(w, model);
    Evaluation e = evaluation_new(&x);
    node_state(model, q, &s);
    evaluate(&x, q, &s, multipliers, 1.0, &e);
    memcpy(residual, e.residual, sizeof(double) * (size_t)p->nf);
    memcpy(closure, e.closure, sizeof(double) * (size_t)p->m);
    memcpy(g_u, e.g_u, sizeof(double) * (size_t)(p->m * p->nf));
    memcpy(hessian, e.hessian, sizeof(double) * (size_t)(p->nf * p->nf));
    memcpy(q_force_reduced, e.q_force_reduced, sizeof(double) * (size_t)p->nf);
    memcpy(multipliers_out, e.multipliers, sizeof(double) * (size_t)p->m);
    scalars[SCALAR_energy] = e.energy, scalars[SCALAR_force_scale] = e.force_scale;
    scalars[SCALAR_conservative] = e.conservative;
    ws_release(w, mark);
}

/* The model's own scales for one case: its size (m, the largest distance of a frame origin from the world
 * origin at q_start) and its force floor (N m): 1e-3 of its weight under gravity (3) and its load forces
 * (L, 3) times its size, plus the load torques (L, 3). Forces below force_tolerance times the floor are
 * round-off: a model whose forces all vanish (wheels with their centres of mass on their axles) has
 * converged, not failed. */
void case_scales(Workspace *w, const Model *model, const double *q_start, int64_t n_loads, const double *gravity,
                 const double *force, const double *torque, double *force_floor, double *size) {
    size_t mark = ws_mark(w);
    State s = state_new(w, model);
    node_state(model, q_start, &s);
    double largest = 0.0, p[3], mass = 0.0, forces = 0.0, torques = 0.0;
    for (int64_t f = 0; f < model->n_frames; f++) {
        frame_pose(model, &s, f, NULL, p);
        largest = larger(largest, p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    }
    for (int64_t i = 0; i < model->n_nodes; i++) mass += model->mass[i];
    for (int64_t i = 0; i < n_loads; i++) {
        const double *f = force + 3 * i, *t = torque + 3 * i;
        forces += sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
        torques += sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
    }
    *size = sqrt(largest);
    double weight = mass * sqrt(gravity[0] * gravity[0] + gravity[1] * gravity[1] + gravity[2] * gravity[2]);
    *force_floor = larger(1e-3 * ((weight + forces) * larger(*size, 1e-3) + torques), 1e-9);
    ws_release(w, mark);
}

/* Close the loops from q (nq, in place) by moving the free coordinates of the problem (the unheld, uncoupled
 * ones): Gauss-Newton on the closure residual with minimum-norm least-squares steps on all 6 K equations (so
 * the configuration moves as little as the loops allow), each step halved until the residual norm falls.
 * Returns the final residual norm (2-norm over all equations) and *iterations. */
double assemble_case(Workspace *w, const Model *model, const Problem *p, double *q, double tolerance,
                     int64_t max_iterations, int64_t *iterations) {
    Context x = {model, p, NULL, w, false};
    int64_t nq = model->nq, nf = p->nf, rows6 = 6 * model->n_closures;
    apply_couplings(&x, q);
    *iterations = 0;
    if (model->n_closures == 0) return 0.0;
    size_t mark = ws_mark(w);
    State s = state_new(w, model);
    double *g = zeros(&x, rows6), *g_trial = zeros(&x, rows6), *jac_full = zeros(&x, rows6 * nq);
    double *jac = zeros(&x, rows6 * nf), *step = zeros(&x, nf), *minus_g = zeros(&x, rows6), *trial = zeros(&x, nq);
    node_state(model, q, &s);
    closure_residual(model, &s, g);
    double norm = 0.0;
    for (int64_t i = 0; i < rows6; i++) norm += g[i] * g[i];
    norm = sqrt(norm);
    while (norm > tolerance && *iterations < max_iterations) {
        (*iterations)++;
        closure_jacobian(model, &s, jac_full);
        size_t before = ws_mark(w);
        double *t = coupling_map(&x, q);
        reduce_columns(&x, t, rows6, jac_full, jac);
        ws_release(w, before);
        for (int64_t i = 0; i < rows6; i++) minus_g[i] = -g[i];
        pseudo_solve(w, rows6, nf, jac, minus_g, 1e-12, step);
        double alpha = 1.0, trial_norm = INFINITY;
        while (alpha > 1e-6) {
            memcpy(trial, q, sizeof(double) * (size_t)nq);
            for (int64_t i = 0; i < nf; i++) trial[p->free[i]] += alpha * step[i];
            apply_couplings(&x, trial);
            node_state(model, trial, &s);
            closure_residual(model, &s, g_trial);
            trial_norm = 0.0;
            for (int64_t i = 0; i < rows6; i++) trial_norm += g_trial[i] * g_trial[i];
            trial_norm = sqrt(trial_norm);
            if (trial_norm < norm) break;
            alpha *= 0.5;
        }
        if (!(trial_norm < norm)) {
            node_state(model, q, &s);
            break;
        }
        memcpy(q, trial, sizeof(double) * (size_t)nq);
        memcpy(g, g_trial, sizeof(double) * (size_t)rows6);
        norm = trial_norm;
    }
    ws_release(w, mark);
    return norm;
}

/* ------------------------------------------------------------------ the workspace's size */
static size_t larger_size(size_t a, size_t b) { return a > b ? a : b; }

/* Doubles solve_case (FOR_SOLVE), evaluate_case (FOR_EVALUATE) or assemble_case (FOR_ASSEMBLE) take from their
 * workspace at most: each function's arrays added along the deepest chain of calls (solve_case -> load_stepping ->
 * newton -> newton_step -> evaluate -> finite differences -> the force terms), with 2 doubles of alignment per array.
 * A tree-structured stiffness of more than TREE_WRITTEN_OUT free coordinates is not written out here: the rare
 * unstable or neutral verdict that needs it takes a further block (counted: core_workspace_overflows). */
#define TREE_WRITTEN_OUT 256
size_t workspace_doubles(const Model *model, const Problem *p, int tree, int purpose) {
    size_t n = (size_t)model->n_nodes, nq = (size_t)model->nq, nf = (size_t)p->nf, m = (size_t)p->m;
    size_t rows6 = 6 * (size_t)model->n_closures, loads = (size_t)p->n_loads, r = nf > m ? nf - m : 0, pad = 2;
    size_t coupled = p->coupling_jacobian ? nq * nf : 0, couplings = p->coupling_apply ? nq + pad : 0;
    size_t state = 24 * n + 6 * nq + 2 + pad;
    if (purpose == FOR_ASSEMBLE) /* the state, its seven arrays, the couplings and pseudo_solve */
        return state + 4 * rows6 + rows6 * nq + rows6 * nf + nf + nq + coupled + couplings + rows6 * nf + nf * nf + nf
               + 16 * pad + 64;
    size_t evaluation = 3 * nf + 2 * m + m * nf + (tree ? (m ? 10 : 7) * nq : nf * nf) + 1 + pad;
    size_t least_squares = 2 * m * m + 2 * m + 3 * pad;                 /* lu_solve, then pseudo_solve */
    size_t terms = larger_size(larger_size(4 * nq + 12 * n, model->n_pairs ? nq * nq + 17 * nq : 0),
                               larger_size(10 * nq, 6 * (size_t)model->n_closures + 7 * nq)) + 8 * pad;
    size_t closures = m ? 2 * rows6 + rows6 * nq + m * nq + m * m + m + least_squares + 5 * pad
                          + (tree ? 6 * nq + rows6 + 3 * pad : 0) : 0; /* closure_force_columns */
    size_t analytic = 13 * loads + (tree ? 0 : nq * nq) + 5 * nq + 2 * coupled + closures
                      + (tree ? 3 * n + 3 * 8 * n + nq : 0) + terms + 4 * pad;
    size_t evaluate = analytic + (p->finite_difference ? 2 * nq + state + 2 * evaluation + 4 * pad : 0);
    if (purpose == FOR_EVALUATE) return state + evaluation + evaluate + 64;
    size_t project = m ? nq + 2 * rows6 + rows6 * nq + m * nq + m * nf + m * m + 2 * m + coupled + least_squares
                     + 10 * pad : 0;
    size_t factor = 4 * nf + nq + 9 * n + 3 * n + 4 * pad;             /* tree_factor, tree_solve */
    size_t border = m ? m + 8 : 0; /* TreeSystem's border: the closure rows and a few lifted pivots */
    size_t system = m ? 9 * nf + 3 * nq + border * nf + border * border + nf + factor      /* tree_system_factor */
                        + 4 * border * border + 3 * border + nf + 2 * m * m + 2 * border + 12 * pad /* definite */
                      : 4 * nf + factor + 2 * pad;
    size_t direction = tree ? system : nf * r + 2 * r * r + 2 * r + larger_size(r * r + r, 2 * r * r + r) + 6 * pad;
    size_t dense_eigen = (tree ? nf * nf : 0) + nf * r + r * r + r + r * r + 2 * r * r + r + 8 * pad;
    size_t eigen = tree && nf > TREE_WRITTEN_OUT ? system + nf + (m ? 4 * nq + m * m + 2 * m : nq) + 4 * pad
                                                 : dense_eigen; /* escape and stability */
    size_t step = nf + nq + pad + larger_size(direction, project + evaluate + couplings);
    size_t newton = 2 * state + 2 * evaluation + nq + nf + 2 * pad
                    + larger_size(larger_size(step, eigen + nq), project + evaluate + couplings);
    size_t unheld = nf + state + evaluation + nq + 4 * pad + evaluate + couplings + (tree ? 2 * n + nq + (m ? nf : 0) : 0);
    size_t stepping = nq + m + nf / 8 + 1 + 3 * pad + newton;
    return state + evaluation + nq + 3 * pad + larger_size(larger_size(project + evaluate, unheld),
                                                           larger_size(larger_size(newton, stepping), eigen)) + 512;
}
