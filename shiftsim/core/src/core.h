/* shiftsim compiled core: shared declarations.
 *
 * Every array is row-major float64 (double) or int64; shapes are given as (rows, columns).
 * World-aligned throughout. For one configuration q (nq): node poses X_node = W_node D_node as
 * rotation (n, 3, 3) and position (n, 3); coordinate twists omega, v (nq, 3): a point p moved by
 * coordinate k has dp/dq_k = omega_k x p + v_k. Nodes are numbered parents first (node 0: world).
 */
#ifndef SHIFTSIM_CORE_H
#define SHIFTSIM_CORE_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fields.h"

/* Checked working memory (workspace.c). A kernel allocates with core_malloc / core_calloc and frees with
 * core_free; an entry point runs kernels inside ``core_scope_open(&scope); if (setjmp(scope.jump) == 0) { ...;
 * core_scope_close(&scope); } else { core_scope_unwind(&scope); out of memory }``: a failed allocation jumps to the
 * else branch, which frees what the scope still holds. The header keeps blocks 16-byte aligned. */
typedef struct CoreBlock {
    struct CoreBlock *prev, *next;
    int64_t padding[2];
} CoreBlock;
typedef struct CoreScope {
    jmp_buf jump;
    CoreBlock head;
    struct CoreScope *outer;
} CoreScope;
void core_scope_open(CoreScope *scope);
void core_scope_close(CoreScope *scope);
void core_scope_unwind(CoreScope *scope);
void *core_malloc(size_t size);
void *core_calloc(size_t count, size_t size);
void core_free(void *memory);
void core_fail_allocation(int64_t n); /* debug: the n-th allocation from now fails (0: none) */
int64_t core_live_blocks(void);       /* blocks allocated by the core and not yet freed */
int64_t core_allocations(void);       /* allocations made since the module was loaded */

/* One case's working memory (workspace.c), as MuJoCo's stack or Pinocchio's Data: one checked block sized from the
 * model and problem once (workspace_open), from which the kernels take their arrays in last-in first-out order:
 * ``size_t mark = ws_mark(w); double *a = ws_doubles(w, n); ...; ws_release(w, mark);``. Taking an array moves a
 * pointer: nothing is allocated while a case is computed. A request beyond the size (a sizing bug: the tests assert
 * it never happens) takes a further checked block, kept until released, and is counted (core_workspace_overflows).
 * A batch opens one workspace per thread and reuses it over that thread's cases. */
typedef struct WorkspaceOverflow WorkspaceOverflow;
typedef struct {
    char *memory;
    size_t size, used;             /* bytes */
    WorkspaceOverflow *overflow;   /* blocks taken beyond size, newest first */
} Workspace;
void workspace_open(Workspace *w, size_t bytes);
void workspace_close(Workspace *w);
void workspace_forget(Workspace *w);  /* after a failed case whose scope freed its overflow blocks: empty again */
size_t ws_mark(const Workspace *w);
void ws_release(Workspace *w, size_t mark);
double *ws_doubles(Workspace *w, int64_t n);  /* n doubles, zero */
int64_t *ws_indices(Workspace *w, int64_t n); /* n int64, not initialized */
int64_t core_workspace_overflows(void);       /* requests beyond a workspace's size since the module was loaded */
void core_cap_workspaces(size_t bytes);       /* debug: workspaces of at most this many bytes (0: as sized) */

/* The larger of a and b, NaN if either is NaN (as numpy's maximum: a NaN force must never pass a test). */
static inline double larger(double a, double b) { return (a > b || a != a) ? a : b; }

/* 3-vectors: a . b, and a x b into out (which may be a or b). */
static inline double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline void cross3(const double *a, const double *b, double *out) {
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2], z = a[0] * b[1] - a[1] * b[0];
    out[0] = x, out[1] = y, out[2] = z;
}

/* The compiled model (see shiftsim/core/layout.py, which fills it from numpy arrays). */
typedef struct {
    int64_t n_nodes, nq, n_bodies, n_frames, n_closures;
    int64_t n_springs, spring_degree;              /* S, d */
    int64_t n_joint_laws, n_pairs, n_joints;       /* R, P, J */
    int64_t law_intervals, law_degree;             /* M, D */
    /* the arrays (fields.h): parent, kind, coordinate (n) int64 (-1 where none); sign (n); joint A and offset D
     * (n, 4, 4); mass (n) kg; com (n, 3) m in node coordinates; coordinate_node (nq); body_node (bodies);
     * frame_node (F), frame_offset (F, 4, 4) node <- frame; closure_a, closure_b (K) nodes, closure_offset_a,
     * closure_offset_b (K, 4, 4); spring_coordinate (S), spring_coefficients (S, d) constant term first;
     * law_coordinate, law_index (R); pair_frame_a, pair_frame_c, pair_distance, pair_law (P); per joint (J):
     * joint_first_node (its first primitive's node in tree order), joint_reversed (1 where the tree meets the
     * joint child first), joint_closure (-1 for a tree joint), joint_child_frame; the law table: law_breaks
     * (L, M + 1), law_count (L) pieces used, law_coefficients (L, 3, M, D) value, slope, energy with the highest
     * power first, law_energy_at_zero (L). */
#define SHIFTSIM_MODEL_MEMBER(name, type) const type *name;
    SHIFTSIM_MODEL_FIELDS(SHIFTSIM_MODEL_MEMBER)
#undef SHIFTSIM_MODEL_MEMBER
} Model;

/* Doubles a workspace needs for the kernels outside the statics iteration (kinematics, force terms, joint loads, the
 * ground's terms) at a model of this size; workspace_doubles (newton.c) for the statics. */
size_t kernel_workspace_doubles(const Model *model);

/* Kinematic state of one configuration. */
typedef struct {
    double *world;     /* (n, 3, 4) motion frames W (top rows) */
    double *rotation;  /* (n, 3, 3) */
    double *position;  /* (n, 3) */
    double *omega;     /* (nq, 3) */
    double *v;         /* (nq, 3) */
} State;

State state_new(Workspace *w, const Model *model); /* its arrays taken from w */
void state_copy(const Model *model, State *to, const State *from);
void node_state(const Model *model, const double *q, State *s);
void forward_poses(const Model *model, const double *q, State *s, double *bodies, double *frames);
int64_t moving_coordinates(const Model *model, int64_t node, int64_t *out);
int64_t common_ancestor(const Model *model, int64_t a, int64_t b); /* the lowest node at or above both (0: the world) */
bool is_within(const Model *model, int64_t root, int64_t node);    /* node is root or below it */
void frame_pose(const Model *model, const State *s, int64_t frame, double *r, double *p);
void point_jacobian(const Model *model, const State *s, int64_t node, const double *point, double *jac);

/* closures */
void closure_points(const Model *model, const State *s, double *p_a, double *p_b);
void closure_residual(const Model *model, const State *s, double *g);
void closure_jacobian(const Model *model, const State *s, double *jac);
void rotation_vector(const double *m, double *out);

/* laws */
void polynomial_law(const double *coefficients, int64_t degree, double x, double *f, double *df, double *energy);
int64_t piece_at(const Model *model, int64_t law, double x); /* the piece of law row ``law`` that holds at x */
void piecewise_law(const Model *model, int64_t law, double x, double *f, double *df, double *energy);

/* forces: each adds into q_force (nq) and stiffness (nq, nq), stiffness[k][j] = dQ_k/dq_j */
double gravity_and_world_forces(Workspace *w, const Model *model, const State *s, const double *gravity,
                                int64_t count, const int64_t *point_node, const double *point, const double *force,
                                double *q_force, double *stiffness, double *columns);
double joint_springs(const Model *model, const double *q, double *q_force, double *stiffness, double *diagonal);
void add_point_hessian(Workspace *w, const Model *model, const State *s, int64_t node, const double *jv,
                       const double *direction, double scale, double *out);
double pair_distance(Workspace *w, const Model *model, const State *s, int64_t frame_a, int64_t frame_c,
                     int64_t distance, double *grad, double *hess);
double pair_springs(Workspace *w, const Model *model, const State *s, double *q_force, double *stiffness);
int64_t applied_loads(Workspace *w, const Model *model, const State *s, int64_t n_loads, const int64_t *frames,
                      const double *forces, const double *torques, const int64_t *follow, int64_t *point_node,
                      double *point, double *force, double *q_force, double *stiffness);
void closure_force_stiffness(Workspace *w, const Model *model, const State *s, const double *multipliers,
                             double *stiffness);
/* The tree structure of closure_force_stiffness: x, t (nq, 3), its stiffness being omega_j . x_k at (j, k) and
 * omega_j . (x_k + t_k) at (k, j) for j above k (t_k = omega_k x the net closure torque on what k moves). */
void closure_force_columns(Workspace *w, const Model *model, const State *s, const double *multipliers, double *x,
                           double *t);

/* joint loads (loads.c): wrench_world (J, 6) about each child-side joint frame origin, that frame's rotation
 * (J, 3, 3), effort (nq); loads as in applied_loads (following ones in frame axes), extra world point forces
 * (count) such as ground contacts, closure multipliers (6 K). */
void joint_loads(Workspace *w, const Model *model, const State *s, const double *multipliers, const double *gravity,
                 int64_t n_loads, const int64_t *frames, const double *forces, const double *torques,
                 const int64_t *follow, int64_t count, const int64_t *point_node, const double *point,
                 const double *force, double *wrench_world, double *rotation, double *effort);

/* Applied loads at frames (L = count): frame (L), force and torque (L, 3) in world axes or, where follow (L) is 1, in
 * the frame's axes, factor (L) scaling both. */
typedef struct {
    int64_t count;
    const int64_t *frame, *follow;
    const double *force, *torque, *factor;
} Loads;

/* partial derivatives of the residual with respect to design parameters (partials.c): at configuration q (nq) with
 * state s and closure multipliers (6 K), fixed, force (nq, P) = dQ/dp (closure wrenches included) and closure (6 K, P)
 * = dg/dp for the parameters (P, 4) rows (kind, target, a, b); motion_start (F + 1) and motion (E, 4) say what moving
 * each frame moves. Kinds and rows: partials.c. */
void force_partials(Workspace *w, const Model *model, const double *q, const State *s, const double *gravity,
                    const Loads *loads, const double *multipliers, int64_t n_parameters, const int64_t *parameters,
                    const int64_t *motion_start, const int64_t *motion, double *force, double *closure);
size_t partials_workspace_doubles(const Model *model);
/* How moving frame ``frame`` on its node translates things, in units of its step R e_axis (its motion rows' subtree
 * translations): node_shift (n_nodes) for every point fixed to a node (the frame's own origin moves by one more),
 * axis_shift (nq) for each coordinate's joint axis (partials.c). */
void frame_shifts(const Model *model, int64_t frame, const int64_t *motion_start, const int64_t *motion,
                  double *node_shift, double *axis_shift);

/* Point forces the caller gives with their own derivatives (the ground's contacts and tyres, whose law partials are
 * the caller's for now): per record (G) its node (-1: none), point, force and torque (G, 9) world, their rate
 * d(force, torque)/dq through the law (G, nq, 6) and partials d(force, torque)/dp (G, 6, P). */
typedef struct {
    int64_t count;
    const int64_t *node;
    const double *forces, *rate, *partial;
} PointForces;

/* The sensitivity outputs (output_partials.c): at configuration q with state s and closure multipliers (6 K), fixed,
 * for the outputs (Y, 4) rows (kind, target, component, 0) their value (Y), rows d/d(q, lambda) (Y, C) over the
 * chosen (C) of the nq + 6 K columns (coordinates, then closure rows) and explicit partials d/dp (Y, P) for the
 * parameter rows of force_partials; efforts from the caller's residual (nq), hessian (nq, nq) = -d(Q + G^T lambda)/dq
 * and force_partial (nq, P) = dQ/dp. Kinds and rows: output_partials.c. */
void output_partials(Workspace *w, const Model *model, const double *q, const State *s, const double *gravity,
                     const Loads *loads, const double *multipliers, const PointForces *ground, int64_t n_parameters,
                     const int64_t *parameters, const int64_t *motion_start, const int64_t *motion,
                     const double *residual, const double *hessian, const double *force_partial, int64_t n_outputs,
                     const int64_t *outputs, int64_t n_chosen, const int64_t *chosen, double *value, double *state_rows,
                     double *parameter_rows);
size_t output_partials_workspace_doubles(const Model *model, int64_t n_loads, int64_t n_ground, int64_t n_parameters);

/* linear algebra on small dense matrices (linalg.c) */
bool is_positive_definite(Workspace *w, int64_t n, const double *a, double shift);
Status lu_solve(Workspace *w, int64_t n, const double *a, const double *b, double *x); /* CORE_SINGULAR */
Status cholesky_solve(Workspace *w, int64_t n, const double *a, double shift, const double *b,
                      double *x); /* CORE_NOT_DEFINITE */
void symmetric_eigen(Workspace *w, int64_t n, const double *a, double *values, double *vectors);
void pseudo_solve(Workspace *w, int64_t rows, int64_t cols, const double *a, const double *b, double rcond,
                  double *x);
void null_space(Workspace *w, int64_t m, int64_t nf, const double *g, double *z);
int64_t pivoted_rank(Workspace *w, int64_t rows, int64_t cols, const double *a, double tolerance, int64_t *order);

/* ground contacts and tyres (ground.c): a force field with the arrays of SHIFTSIM_GROUND_FIELDS (fields.h) */
typedef struct {
    int64_t nx, ny, n_contacts, n_tyres; /* nx = 0: a level plane */
#define SHIFTSIM_GROUND_MEMBER(name, type) const type *name;
    SHIFTSIM_GROUND_FIELDS(SHIFTSIM_GROUND_MEMBER)
#undef SHIFTSIM_GROUND_MEMBER
} GroundField;

/* Per contact and per tyre at one state, world axes (ground_points); NULL members are not written. */
typedef struct {
    double *contact_point, *contact_force, *contact_stiffness, *contact_energy; /* (C, 3), (C, 3), (C, 3, 3), (C) */
    uint8_t *contact_touching, *contact_slipping;                               /* (C) */
    double *tyre_point, *tyre_force, *tyre_compression, *tyre_energy;          /* (T, 3), (T, 9) on c, a, b, (T), (T) */
    uint8_t *tyre_touching, *tyre_slipping;                                     /* (T) */
    double *tyre_stiffness;      /* (T, 9, 9): d force / d (c, a, b), the tyre law's own (analytic) derivative */
    double *tyre_point_jacobian; /* (T, 3, 6): d contact point / d (c, a) */
} GroundPoints;

double ground_terms(Workspace *w, const Model *model, const State *s, const GroundField *ground, double *q_force,
                    double *stiffness, int *conservative);
void ground_points(const State *s, const GroundField *ground, const GroundPoints *out);
/* the ground parameters' columns of the residual's partial derivatives (rows of kind PARAMETER_GROUND, partials.c), the
 * ground's terms in the columns of frames whose move carries contacts or tyres (PARAMETER_FRAME), and the world
 * forces' own; ground_partials_doubles: the workspace they need beside partials_workspace_doubles */
void ground_partials(Workspace *w, const Model *model, const State *s, const GroundField *ground, int64_t n_parameters,
                     const int64_t *parameters, const int64_t *members, const int64_t *motion_start,
                     const int64_t *motion, double *force, double *contact_partials, double *tyre_partials);
size_t ground_partials_doubles(const Model *model, const GroundField *ground);

/* tree-ordered factorization (tree.c) of H (nf, nf) = [omega_j . X_k for j at or above k, omega_j . Y_k for j
 * below k] + diag(diagonal) + shift I over the free coordinates free (nf) of a tree: omega (nq, 3) the coordinate
 * axes, columns (nq, 3) the X_k, lower (nq, 3) the Y_k or NULL (Y = X: symmetric), diagonal (nq). tree_factor
 * writes pivot (nf), reach (nf, 3) and, not NULL, reach_lower (nf, 3) and lift (nf: what was added to each
 * vanishing pivot, 0 elsewhere; a pivot with no terms at all is lifted by level), and returns how many pivots are
 * not positive (0 and symmetric: positive definite); tree_solve gives x (nf) with H x = b (nf) from them
 * (reach_lower NULL: symmetric). */
int64_t tree_factor(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                    const double *columns, const double *lower, const double *diagonal, double shift, double level,
                    double *pivot, double *reach, double *reach_lower, double *lift);
void tree_solve(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                const double *pivot, const double *reach, const double *reach_lower, const double *b, double *x);
/* the same H written out (nf, nf) without shift, and per free coordinate a bound on its column's largest |entry|
 * (out (nf)): |X_k| + |diagonal_k| + |omega_k| max |X_j| over the free j below (axes are unit or zero). */
void tree_dense(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                const double *columns, const double *lower, const double *diagonal, double *out);
void tree_column_bounds(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                        const double *columns, const double *diagonal, double *out);
/* H's largest |entry| (axes equal to 1e-12 taken as one: linear time while a path has few distinct axes). */
double tree_largest_entry(Workspace *w, const Model *model, int64_t nf, const int64_t *free, const double *omega,
                          const double *columns, const double *diagonal);

/* statics (newton.c) */
/* Callbacks into the caller (Python: couplings and force fields), each returning CORE_OK or CORE_CALLBACK_FAILED. */
typedef Status (*CouplingApply)(void *context, const double *q, double *out);    /* out (nq) */
typedef Status (*CouplingJacobian)(void *context, const double *q, double *out); /* out (nq, nf) */
typedef Status (*FieldTerms)(void *context, const double *q, const double *rotation, const double *position,
                          const double *omega, const double *v, double *q_force, double *stiffness,
                          double *energy_and_conservative);

typedef struct {
    int64_t nf, m, n_loads;
    const int64_t *free, *rows;            /* (nf), (m) */
    const int64_t *translation;            /* (nf) 1 where a translation */
    const int64_t *load_frame, *load_follow;   /* (L) */
    CouplingApply coupling_apply;          /* NULL: no couplings */
    CouplingJacobian coupling_jacobian;
    FieldTerms field_terms;                /* NULL: no fields called back */
    int64_t n_grounds;                     /* native force fields: ground contacts and tyres (ground.c) */
    const GroundField *const *grounds;     /* (n_grounds) */
    void *context;                         /* passed to the callbacks */
    int64_t has_rates;
    /* the settings (fields.h): iteration counts, tolerances, step caps; runaway_sizes: a free translation this
     * many machine sizes away means no equilibrium */
#define SHIFTSIM_SETTING_MEMBER(name, type) type name;
    SHIFTSIM_SETTINGS_FIELDS(SHIFTSIM_SETTING_MEMBER)
#undef SHIFTSIM_SETTING_MEMBER
} Problem;

typedef struct {
    const double *gravity;     /* (3) m/s^2 */
    const double *force;       /* (L, 3) */
    const double *torque;      /* (L, 3) */
    const double *rate_force;  /* (nq) */
    double force_floor;        /* N m: the model's own force scale under these loads (case_scales) */
    double size;               /* m: the machine's size at the start */
} Case;

void case_scales(Workspace *w, const Model *model, const double *q_start, int64_t n_loads, const double *gravity,
                 const double *force, const double *torque, double *force_floor, double *size);
/* Doubles a workspace needs for solve_case, evaluate_case or assemble_case (purpose) of problem p (tree: a case with
 * the tree structure of tree.c; otherwise dense). */
enum { FOR_SOLVE, FOR_EVALUATE, FOR_ASSEMBLE };
size_t workspace_doubles(const Model *model, const Problem *p, int tree, int purpose);
bool is_tree_structured(const Model *model, const Problem *p, const Case *c);
void solve_case(Workspace *w, const Model *model, const Problem *p, const Case *c, const double *q_start,
                int64_t classify, double *q, double *multipliers, double *flags, double *neutral, uint8_t *out_unheld,
                uint8_t *out_runaway);
double assemble_case(Workspace *w, const Model *model, const Problem *p, double *q, double tolerance,
                     int64_t max_iterations, int64_t *iterations);
void evaluate_case(Workspace *w, const Model *model, const Problem *p, const Case *c, const double *q,
                   const double *multipliers, double *residual, double *closure, double *g_u, double *hessian,
                   double *scalars, double *q_force_reduced, double *multipliers_out);

#endif
