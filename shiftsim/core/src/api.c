/* Entry points called from Python (ctypes): batches of configurations or cases, spread over threads.
 *
 * Batched arrays have the case first: q (B, nq), rotation (B, n, 3, 3), and so on. ``threads`` <= 1 runs
 * in the calling thread; every case is computed exactly as it would be alone.
 */
#include <Python.h> /* only for the module init that lets setuptools build this as an extension */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

void solve_case(const Model *a, const Problem *p, const Case *c, const double *q_start, int64_t classify,
                double *q, double *multipliers, double *flags, double *neutral, uint8_t *out_unheld,
                uint8_t *out_runaway);

typedef void (*CaseWork)(void *job, int64_t b);

typedef struct {
    CaseWork work;
    void *job;
    int64_t batch;
    int64_t next;
    pthread_mutex_t lock;
} Pool;

static void *pool_worker(void *argument) {
    Pool *pool = argument;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        int64_t b = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (b >= pool->batch) return NULL;
        pool->work(pool->job, b);
    }
}

/* work(job, b) for b in [0, batch), on ``threads`` threads taking cases one at a time. */
static void run_cases(CaseWork work, void *job, int64_t batch, int64_t threads) {
    if (threads > batch) threads = batch;
    if (threads <= 1) {
        for (int64_t b = 0; b < batch; b++) work(job, b);
        return;
    }
    Pool pool = {work, job, batch, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t *ids = malloc(sizeof(pthread_t) * (size_t)threads);
    int64_t started = 0;
    for (int64_t t = 0; t < threads; t++)
        if (pthread_create(&ids[started], NULL, pool_worker, &pool) == 0) started++;
    if (started == 0) pool_worker(&pool);
    for (int64_t t = 0; t < started; t++) pthread_join(ids[t], NULL);
    free(ids);
}

/* ------------------------------------------------------------------ kinematics */
typedef struct {
    const Model *a;
    const double *q;
    double *rotation, *position, *omega, *v, *bodies, *frames;
} KinematicsJob;

static void state_work(void *job, int64_t b) {
    KinematicsJob *k = job;
    const Model *a = k->a;
    State s = state_new(a);
    node_state(a, k->q + b * a->nq, &s);
    memcpy(k->rotation + b * 9 * a->n_nodes, s.rotation, sizeof(double) * (size_t)(9 * a->n_nodes));
    memcpy(k->position + b * 3 * a->n_nodes, s.position, sizeof(double) * (size_t)(3 * a->n_nodes));
    memcpy(k->omega + b * 3 * a->nq, s.omega, sizeof(double) * (size_t)(3 * a->nq));
    memcpy(k->v + b * 3 * a->nq, s.v, sizeof(double) * (size_t)(3 * a->nq));
    state_free(&s);
}

/* Node poses rotation (B, n, 3, 3), position (B, n, 3) and twists omega, v (B, nq, 3) at q (B, nq). */
void shiftsim_state(const Model *a, int64_t batch, const double *q, double *rotation, double *position,
                    double *omega, double *v, int64_t threads) {
    KinematicsJob job = {a, q, rotation, position, omega, v, NULL, NULL};
    run_cases(state_work, &job, batch, threads);
}

static void forward_work(void *job, int64_t b) {
    KinematicsJob *k = job;
    const Model *a = k->a;
    State s = state_new(a);
    forward_poses(a, k->q + b * a->nq, &s, k->bodies ? k->bodies + b * 16 * a->n_bodies : NULL,
                  k->frames ? k->frames + b * 16 * a->n_frames : NULL);
    state_free(&s);
}

/* World poses (4, 4) of every body (B, n_bodies, 4, 4) and frame (B, n_frames, 4, 4) at q (B, nq); either
 * output may be NULL. */
void shiftsim_forward(const Model *a, int64_t batch, const double *q, double *bodies, double *frames, int64_t threads) {
    KinematicsJob job = {a, q, NULL, NULL, NULL, NULL, bodies, frames};
    run_cases(forward_work, &job, batch, threads);
}

static State view(const Model *a, int64_t b, const double *rotation, const double *position, const double *omega,
                  const double *v) {
    State s = {NULL, (double *)rotation + b * 9 * a->n_nodes, (double *)position + b * 3 * a->n_nodes,
               (double *)omega + b * 3 * a->nq, (double *)v + b * 3 * a->nq};
    return s;
}

/* Closure residual g (B, 6 K) and Jacobian jac (B, 6 K, nq) (either may be NULL) at given states. */
void shiftsim_closures(const Model *a, int64_t batch, const double *rotation, const double *position,
                       const double *omega, const double *v, double *g, double *jac) {
    for (int64_t b = 0; b < batch; b++) {
        State s = view(a, b, rotation, position, omega, v);
        if (g) closure_residual(a, &s, g + b * 6 * a->n_closures);
        if (jac) closure_jacobian(a, &s, jac + b * 6 * a->n_closures * a->nq);
    }
}

/* direction . d2p/dq_j dq_k added into out (B, nq, nq) for points on ``node`` with Jacobians jv (B, nq, 3). */
void shiftsim_point_hessian(const Model *a, int64_t batch, const double *rotation, const double *position,
                            const double *omega, const double *v, int64_t node, const double *jv,
                            const double *direction, double *out) {
    for (int64_t b = 0; b < batch; b++) {
        State s = view(a, b, rotation, position, omega, v);
        add_point_hessian(a, &s, node, jv + b * 3 * a->nq, direction + 3 * b, 1.0, out + b * a->nq * a->nq);
    }
}

/* Generalized forces of the model's own terms at given states, each (B, nq) force, (B, nq, nq) stiffness and
 * (B) energy: ``which`` 0 gravity and world forces (gravity (B, 3); count, point_node (count), point and force
 * (B, count, 3)), 1 joint springs (q (B, nq)), 2 pair springs, 3 closure forces (multipliers (B, 6 K); adds
 * only stiffness), 4 loads (n_loads, frames, forces, torques (B, L, 3), follow (L); their world-fixed forces
 * are not included: see gravity). */
void shiftsim_terms(const Model *a, int64_t which, int64_t batch, const double *q, const double *rotation,
                    const double *position, const double *omega, const double *v, const double *gravity,
                    int64_t count, const int64_t *point_node, const double *point, const double *force,
                    const double *multipliers, int64_t n_loads, const int64_t *frames, const double *forces,
                    const double *torques, const int64_t *follow, double *q_force, double *stiffness,
                    double *energy) {
    int64_t nq = a->nq;
    int64_t *scratch_node = calloc((size_t)(n_loads + 1), sizeof(int64_t));
    double *scratch_point = calloc((size_t)(3 * n_loads + 1), sizeof(double));
    double *scratch_force = calloc((size_t)(3 * n_loads + 1), sizeof(double));
    for (int64_t b = 0; b < batch; b++) {
        State s = view(a, b, rotation, position, omega, v);
        double *fb = q_force + b * nq, *kb = stiffness + b * nq * nq;
        if (which == 0)
            energy[b] = gravity_and_world_forces(a, &s, gravity + 3 * b, count, point_node, point + 3 * count * b,
                                                 force + 3 * count * b, fb, kb);
        else if (which == 1)
            energy[b] = joint_springs(a, q + b * nq, fb, kb);
        else if (which == 2)
            energy[b] = pair_springs(a, &s, fb, kb);
        else if (which == 3)
            closure_force_stiffness(a, &s, multipliers + b * 6 * a->n_closures, kb);
        else
            applied_loads(a, &s, n_loads, frames, forces + 3 * n_loads * b, torques + 3 * n_loads * b, follow,
                          scratch_node, scratch_point, scratch_force, fb, kb);
    }
    free(scratch_node), free(scratch_point), free(scratch_force);
}

/* Distance x (B), gradient (B, nq) and Hessian (B, nq, nq) of pair restraint ``pair``'s frames at given states. */
void shiftsim_pair_distance(const Model *a, int64_t batch, const double *rotation, const double *position,
                            const double *omega, const double *v, int64_t frame_a, int64_t frame_c,
                            int64_t distance, double *x, double *grad, double *hess) {
    for (int64_t b = 0; b < batch; b++) {
        State s = view(a, b, rotation, position, omega, v);
        x[b] = pair_distance(a, &s, frame_a, frame_c, distance, grad + b * a->nq, hess + b * a->nq * a->nq);
    }
}

/* f, df/dx and energy (each (count)) of polynomial laws (coefficients (count, degree), constant term first)
 * at x (count). */
void shiftsim_polynomials(int64_t count, int64_t degree, const double *coefficients, const double *x, double *f,
                          double *df, double *energy) {
    for (int64_t i = 0; i < count; i++)
        polynomial_law(coefficients + i * degree, degree, x[i], f + i, df + i, energy + i);
}

/* ------------------------------------------------------------------ statics */
typedef struct {
    const Model *a;
    const Problem *p;
    const double *gravity, *force, *torque, *rates, *scales, *q_start;
    int64_t classify;
    double *q, *multipliers, *flags, *neutral;
    uint8_t *unheld, *runaway;
} SolveJob;

static void solve_work(void *job, int64_t b) {
    SolveJob *j = job;
    const Model *a = j->a;
    const Problem *p = j->p;
    int64_t nq = a->nq, nf = p->nf, loads = 3 * p->n_loads;
    Case c = {j->gravity + 3 * b, j->force + loads * b, j->torque + loads * b, j->rates + nq * b, j->scales[2 * b],
              j->scales[2 * b + 1]};
    solve_case(a, p, &c, j->q_start + nq * b, j->classify, j->q + nq * b, j->multipliers + p->m * b, j->flags + 5 * b,
               j->neutral + nf * nf * b, j->unheld + nf * b, j->runaway + nf * b);
}

/* Equilibria of B cases (see solve_case in newton.c). Per case: gravity (3), force, torque (L, 3), rates
 * (nq), scales (2): force floor and size, q_start (nq); outputs q (nq), multipliers (m), flags (5), neutral
 * (nf, nf), unheld, runaway (nf). Cases that call Python back (couplings, fields) must use threads <= 1. */
void shiftsim_solve(const Model *a, const Problem *p, int64_t batch, const double *gravity, const double *force,
                    const double *torque, const double *rates, const double *scales, const double *q_start,
                    int64_t classify, double *q, double *multipliers, double *flags, double *neutral,
                    uint8_t *unheld, uint8_t *runaway, int64_t threads) {
    SolveJob job = {a, p, gravity, force, torque, rates, scales, q_start, classify, q, multipliers, flags, neutral,
                    unheld, runaway};
    run_cases(solve_work, &job, batch, threads);
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", "shiftsim's compiled core (called through ctypes)",
                                    -1, NULL, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
