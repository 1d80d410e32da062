/* Continuation chains (chain.c): a sweep's steps solved one after the other, each from the previous equilibrium. */
#ifndef SHIFTSIM_CHAIN_H
#define SHIFTSIM_CHAIN_H

#include "core.h"

/* C steps in chains (chain k: steps chain_start[k] .. chain_start[k + 1] - 1, starting from q_first[k]). Inputs per
 * step: target (C, nq) whose held coordinates hold the step's prescribed values, gravity (C, 3), load force and torque
 * (C, L, 3). Outputs per step: outcome (C) int64 (SHIFTSIM_CHAIN_OUTCOMES, fields.h), the assembled start (C, nq),
 * flags (C, RESULT_FLAGS) of the loaded solve; for a plain step also q and q_reference (C, nq), multipliers (C, 6 K)
 * zero on the redundant rows, wrench (C, J, 6), rotation (C, J, 3, 3) and effort (C, nq) (joint_loads). */
typedef struct {
    const Problem *p;        /* the loaded and the reference solve */
    const Problem *assembly; /* moves the same free coordinates to close the loops */
    int64_t n_held;
    const int64_t *held;     /* (n_held) the prescribed coordinates */
    double held_step, tolerance, rank_tolerance;
    int64_t max_iterations;
    const int64_t *chain_start;
    const double *q_first, *target, *gravity, *force, *torque;
    int64_t *outcome;
    double *assembled, *flags, *q, *q_reference, *multipliers, *wrench, *rotation, *effort;
} ChainJob;

void solve_chain(Workspace *w, const Model *model, const ChainJob *j, int64_t chain);
size_t chain_workspace_doubles(const Model *model, const ChainJob *j, int tree);

#endif
