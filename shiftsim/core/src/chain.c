/* Continuation chains: a sweep's steps solved one after the other in compiled code, each from the previous step's
 * equilibrium, exactly as the step-by-step path does them in Python (scenario/runner.solve_step, statics.solve):
 *
 *   1. the previous equilibrium with the step's prescribed values, projected onto the loops as kinematics.assemble
 *      does with ``start``: the loops closed at the previous held values, then the held coordinates moved to the
 *      step's values in increments of at most held_step, the loops closed at each (assemble_case);
 *   2. the closure rows independent on the free coordinates at the assembled pose (statics.independent_rows: pivoted
 *      QR of G_u^T) must be those the chain's problem was made with;
 *   3. the loaded equilibrium (solve_case with the step's gravity and loads, stability verdict) and the unloaded
 *      reference (no gravity, loads or rates, no verdict), both from the assembled pose;
 *   4. the joint loads of the loaded equilibrium with the solver's multipliers (joint_loads in loads.c).
 *
 * A step that is not plain (the loops do not close, the rows change, the solve does not converge, no equilibrium,
 * a neutral verdict, held coordinates sharing the loop forces in proportions statics cannot tell) ends its chain
 * there with its outcome: the caller solves it by the step-by-step path, which
 * reports it (messages, blame, neutral directions), and goes on from there.
 */
#include <math.h>
#include <string.h>

#include "core.h"
#include "chain.h"

/* Whether the closure rows independent on the free coordinates at ``s`` are exactly p->rows (sorted). */
static bool rows_unchanged(Workspace *w, const Model *model, const Problem *p, const State *s, double tolerance) {
    int64_t nq = model->nq, nf = p->nf, rows6 = 6 * model->n_closures;
    if (rows6 == 0 || nf == 0) return p->m == 0;
    size_t mark = ws_mark(w);
    double *jac = ws_doubles(w, rows6 * nq), *transposed = ws_doubles(w, nf * rows6);
    int64_t *order = ws_indices(w, rows6);
    closure_jacobian(model, s, jac);
    for (int64_t i = 0; i < nf; i++)
        for (int64_t r = 0; r < rows6; r++) transposed[i * rows6 + r] = jac[r * nq + p->free[i]];
    int64_t rank = pivoted_rank(w, nf, rows6, transposed, tolerance, order);
    bool same = rank == p->m;
    for (int64_t i = 1; i < rank; i++) /* insertion sort: rank is at most 6 K */
        for (int64_t j = i; j > 0 && order[j - 1] > order[j]; j--) {
            int64_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int64_t i = 0; i < rank && same; i++) same = order[i] == p->rows[i];
    ws_release(w, mark);
    return same;
}

/* Whether the held coordinates share the loop forces at ``s`` (an equilibrium) in a way statics cannot split: some
 * column of the closure Jacobian on a held coordinate reaches beyond the span of its columns on the free ones (the
 * rank of [G_u, G_h] above that of G_u). Then some pattern of loop forces loads the held coordinates and no free
 * one, and its share is indeterminate. One Householder QR with column pivoting restricted to the free columns, every
 * reflection applied to the held columns too, then the held columns' parts below the free columns' rank: a column
 * counts while its remaining length exceeds ``tolerance`` times the longest column's (at least 1; loads.statically_open
 * counts ranks alike, by the same pivoted QR of each column set). (The block path calling this has no coupled coordinates; a rigid joint a loop
 * passes through is checked by the caller.) */
static bool held_share_loop_forces(Workspace *w, const Model *model, const Problem *p, const ChainJob *j,
                                   const State *s, double tolerance) {
    int64_t nq = model->nq, nf = p->nf, rows6 = 6 * model->n_closures, wide = p->nf + j->n_held;
    if (rows6 == 0 || j->n_held == 0) return false;
    size_t mark = ws_mark(w);
    double *jac = ws_doubles(w, rows6 * nq), *columns = ws_doubles(w, wide * rows6), *norms = ws_doubles(w, wide);
    closure_jacobian(model, s, jac);
    double longest = 1.0;
    for (int64_t i = 0; i < wide; i++) { /* column i of [G_u, G_h], contiguous: the free coordinates' first */
        int64_t coordinate = i < nf ? p->free[i] : j->held[i - nf];
        double *column = columns + i * rows6, total = 0.0;
        for (int64_t r = 0; r < rows6; r++) column[r] = jac[r * nq + coordinate], total += column[r] * column[r];
        norms[i] = total;
        longest = larger(longest, sqrt(total));
    }
    double floor = tolerance * longest;
    int64_t rank = 0;
    for (int64_t k = 0; k < nf && k < rows6; k++, rank++) {
        int64_t pivot = k;
        for (int64_t i = k + 1; i < nf; i++)
            if (norms[i] > norms[pivot]) pivot = i;
        double *v = columns + pivot * rows6, *first = columns + k * rows6;
        if (pivot != k)
            for (int64_t r = 0; r < rows6; r++) {
                double swap = first[r];
                first[r] = v[r], v[r] = swap;
            }
        norms[pivot] = norms[k];
        double length = 0.0;
        for (int64_t r = k; r < rows6; r++) length += first[r] * first[r];
        length = sqrt(length);
        if (!(length > floor)) break;
        double alpha = first[k] > 0.0 ? -length : length, size = 0.0;
        first[k] -= alpha; /* first[k..] is now the Householder vector h */
        for (int64_t r = k; r < rows6; r++) size += first[r] * first[r];
        for (int64_t i = k + 1; i < wide && size > 0.0; i++) {
            double *column = columns + i * rows6, along = 0.0;
            for (int64_t r = k; r < rows6; r++) along += first[r] * column[r];
            along *= 2.0 / size;
            for (int64_t r = k; r < rows6; r++) column[r] -= along * first[r];
            norms[i] -= column[k] * column[k]; /* its length below row k, for the pivot choice only (each pivot's
                                                * length is computed afresh) */
        }
    }
    bool shared = false;
    for (int64_t i = nf; i < wide && !shared; i++) {
        double *column = columns + i * rows6, beyond = 0.0;
        for (int64_t r = rank; r < rows6; r++) beyond += column[r] * column[r];
        shared = sqrt(beyond) > floor;
    }
    ws_release(w, mark);
    return shared;
}

/* Close the loops from ``q`` (in place) with the held coordinates travelling from ``previous`` to their values in q
 * (kinematics.assemble with start): false when some closure leaves a residual above the tolerance. */
static bool assemble_from(Workspace *w, const Model *model, const ChainJob *j, const double *previous, double *q) {
    int64_t iterations, steps = 1;
    double *target = ws_doubles(w, j->n_held), largest = 0.0;
    if (j->n_held == 0 || model->n_closures == 0)
        return assemble_case(w, model, j->assembly, q, j->tolerance, j->max_iterations, &iterations) <= j->tolerance;
    for (int64_t i = 0; i < j->n_held; i++) {
        int64_t k = j->held[i];
        target[i] = q[k], q[k] = previous[k];
    }
    if (!(assemble_case(w, model, j->assembly, q, j->tolerance, j->max_iterations, &iterations) <= j->tolerance))
        return false;
    for (int64_t i = 0; i < j->n_held; i++) largest = larger(largest, fabs(target[i] - q[j->held[i]]));
    double count = ceil(largest / j->held_step);
    if (count > 1.0) steps = (int64_t)count;
    double *travel = ws_doubles(w, j->n_held);
    for (int64_t i = 0; i < j->n_held; i++) travel[i] = target[i] - q[j->held[i]];
    for (int64_t k = 1; k <= steps; k++) {
        for (int64_t i = 0; i < j->n_held; i++)
            q[j->held[i]] = target[i] - travel[i] * (1.0 - (double)k / (double)steps);
        if (!(assemble_case(w, model, j->assembly, q, j->tolerance, j->max_iterations, &iterations) <= j->tolerance))
            return false;
    }
    return true;
}

static bool any_marked(const uint8_t *marks, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (marks[i]) return true;
    return false;
}

/* Case ``c`` of the job from the equilibrium ``previous`` (nq); its outcome (CHAIN_PLAIN: go on from j->q[c]). */
static int64_t chain_step(Workspace *w, const Model *model, const ChainJob *j, int64_t c, const double *previous) {
    const Problem *p = j->p;
    int64_t nq = model->nq, nf = p->nf, loads = 3 * p->n_loads;
    double *assembled = j->assembled + nq * c;
    for (int64_t k = 0; k < nq; k++) assembled[k] = previous[k];
    for (int64_t i = 0; i < j->n_held; i++) assembled[j->held[i]] = j->target[nq * c + j->held[i]];
    size_t mark = ws_mark(w);
    if (!assemble_from(w, model, j, previous, assembled)) return ws_release(w, mark), CHAIN_NOT_CLOSED;
    State s = state_new(w, model);
    node_state(model, assembled, &s);
    if (!rows_unchanged(w, model, p, &s, j->rank_tolerance)) return ws_release(w, mark), CHAIN_ROWS_CHANGED;
    double *neutral = ws_doubles(w, nf * nf), *zeros = ws_doubles(w, nq + 3 + 2 * loads);
    double *multipliers = ws_doubles(w, p->m), *flags_reference = ws_doubles(w, RESULT_FLAGS);
    uint8_t *unheld = (uint8_t *)ws_doubles(w, nf / 8 + 1), *runaway = (uint8_t *)ws_doubles(w, nf / 8 + 1);
    double *flags = j->flags + RESULT_FLAGS * c;
    Case loaded = {j->gravity + 3 * c, j->force + loads * c, j->torque + loads * c, zeros, 0.0, 0.0};
    case_scales(w, model, assembled, p->n_loads, loaded.gravity, loaded.force, loaded.torque, &loaded.force_floor,
                &loaded.size);
    solve_case(w, model, p, &loaded, assembled, 1, j->q + nq * c, multipliers, flags, neutral, unheld, runaway);
    flags[FLAG_size] = loaded.size, flags[FLAG_force_floor] = loaded.force_floor;
    bool plain = flags[FLAG_converged] > 0.5 && !any_marked(unheld, nf) && !any_marked(runaway, nf)
                 && (int64_t)flags[FLAG_stability] != NEUTRAL;
    if (!plain) return ws_release(w, mark), CHAIN_NOT_PLAIN;
    node_state(model, j->q + nq * c, &s);
    if (held_share_loop_forces(w, model, p, j, &s, j->rank_tolerance)) return ws_release(w, mark), CHAIN_LOADS_OPEN;
    Case reference = {zeros + nq, zeros + nq + 3, zeros + nq + 3 + loads, zeros, 0.0, 0.0};
    case_scales(w, model, assembled, p->n_loads, reference.gravity, reference.force, reference.torque,
                &reference.force_floor, &reference.size);
    solve_case(w, model, p, &reference, assembled, 0, j->q_reference + nq * c, ws_doubles(w, p->m), flags_reference,
               neutral, unheld, runaway);
    double *full = ws_doubles(w, 6 * model->n_closures); /* zero on the redundant rows */
    for (int64_t r = 0; r < p->m; r++) full[p->rows[r]] = multipliers[r];
    memcpy(j->multipliers + 6 * model->n_closures * c, full, sizeof(double) * (size_t)(6 * model->n_closures));
    node_state(model, j->q + nq * c, &s);
    joint_loads(w, model, &s, full, loaded.gravity, p->n_loads, p->load_frame, loaded.force, loaded.torque,
                p->load_follow, 0, NULL, NULL, NULL, j->wrench + 6 * model->n_joints * c,
                j->rotation + 9 * model->n_joints * c, j->effort + nq * c);
    ws_release(w, mark);
    return CHAIN_PLAIN;
}

void solve_chain(Workspace *w, const Model *model, const ChainJob *j, int64_t chain) {
    int64_t first = j->chain_start[chain], end = j->chain_start[chain + 1], nq = model->nq;
    const double *previous = j->q_first + nq * chain;
    int64_t c = first;
    for (; c < end; c++) {
        j->outcome[c] = chain_step(w, model, j, c, previous);
        if (j->outcome[c] != CHAIN_PLAIN) break;
        previous = j->q + nq * c;
    }
    for (c = c + 1; c < end; c++) j->outcome[c] = CHAIN_NOT_SOLVED;
}

size_t chain_workspace_doubles(const Model *model, const ChainJob *j, int tree) {
    int64_t nq = model->nq, nf = j->p->nf, rows6 = 6 * model->n_closures, loads = 3 * j->p->n_loads;
    size_t solve = workspace_doubles(model, j->p, tree, FOR_SOLVE), assemble = workspace_doubles(model, j->assembly, 0,
                                                                                                 FOR_ASSEMBLE);
    size_t kernels = kernel_workspace_doubles(model), state = 24 * (size_t)model->n_nodes + 6 * (size_t)nq + 2;
    size_t own = 2 * (size_t)j->n_held + state + (size_t)(rows6 * nq + (nf + j->n_held) * (rows6 + 1) + rows6)
                 + (size_t)(nf * nf)
                 + (size_t)(nq + 3 + 2 * loads) + 2 * (size_t)j->p->m + RESULT_FLAGS + 2 * (size_t)(nf / 8 + 1)
                 + (size_t)rows6 + 64;
    size_t widest = solve > assemble ? solve : assemble;
    if (kernels > widest) widest = kernels;
    return own + widest + 2 * (size_t)(nf * rows6 + nf + rows6 + 8) + 512;
}
