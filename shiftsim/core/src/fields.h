/* Every table that crosses the boundary between Python and the core, defined once (as MuJoCo's mjxmacro.h).
 *
 * Each table is an X-macro: a list of X(...) entries that the includer expands with its own X. From them come the
 * C structs (Model's arrays, Problem's settings), the argument unpacking in api.c, the index enums of the result
 * rows, and the name tuples the module exports (_core.MODEL_FIELDS, ...), which shiftsim/core/layout.py and
 * shiftsim/core/problem.py check their own names against when they are imported.
 *
 * To add a field: add its X(...) line here (in the order Python passes it), then the field on the Python side
 * (layout.ModelArrays, problem.SETTINGS, ...); an import of shiftsim.core names any table that disagrees.
 */
#ifndef SHIFTSIM_FIELDS_H
#define SHIFTSIM_FIELDS_H

#include <stdint.h>

/* The model arrays, in the order of shiftsim.core.layout.ModelArrays with the law table (law_*) last:
 * X(name, element type). Shapes and meanings: core.h's Model and layout.ModelArrays. */
#define SHIFTSIM_MODEL_FIELDS(X)                                                                                        \
    X(parent, int64_t) X(kind, int64_t) X(coordinate, int64_t) X(sign, double) X(joint, double) X(offset, double)     \
    X(mass, double) X(com, double) X(coordinate_node, int64_t) X(body_node, int64_t) X(frame_node, int64_t)           \
    X(frame_offset, double) X(closure_a, int64_t) X(closure_b, int64_t) X(closure_offset_a, double)                  \
    X(closure_offset_b, double) X(spring_coordinate, int64_t) X(spring_coefficients, double)                         \
    X(law_coordinate, int64_t) X(law_index, int64_t) X(pair_frame_a, int64_t) X(pair_frame_c, int64_t)               \
    X(pair_distance, int64_t) X(pair_law, int64_t) X(joint_first_node, int64_t) X(joint_reversed, int64_t)            \
    X(joint_closure, int64_t) X(joint_child_frame, int64_t) X(law_breaks, double) X(law_count, int64_t)              \
    X(law_coefficients, double) X(law_energy_at_zero, double)

/* The solver settings (shiftsim.statics.SolverOptions as shiftsim.core.problem.settings passes them, by name):
 * X(name, type). */
#define SHIFTSIM_SETTINGS_FIELDS(X)                                                                                     \
    X(max_iterations, int64_t) X(full_load_iterations, int64_t) X(max_load_halvings, int64_t)                         \
    X(force_tolerance, double) X(closure_tolerance, double) X(max_step, double) X(max_shifted_step, double)           \
    X(runaway_sizes, double) X(seek_stable, int64_t) X(finite_difference, int64_t) X(load_stepping, int64_t)  \
    X(structured_from, int64_t)

/* A ground force field (ground.c; shiftsim.core.ground builds it from the ground package's contacts and tyres), in
 * the order Python passes it: X(name, element type). World (z up) <- model frame placement_rotation (3, 3),
 * placement_translation (3); the surface: level (1) m, or a bilinear grid grid_x (nx), grid_y (ny), grid_z (nx, ny)
 * where nx > 0; per contact (C): node, local point (C, 3) in node coordinates, normal and tangential stiffness (N/m),
 * friction coefficient, anchor (C, 3) world, tangent projector (C, 3, 3); per tyre (T): wheel node, unloaded radius
 * (m), radial and tangential stiffness (N/m), friction coefficient, spin axis (T, 3) and friction point (T, 3) in
 * node coordinates, anchor (T, 3) world, tangent projector (T, 3, 3); per contact (C) the model frame it stands at (-1: a
 * point of no frame of its own, a box corner): a frame parameter of that frame moves the contact with it. */
#define SHIFTSIM_GROUND_FIELDS(X)                                                                                       \
    X(placement_rotation, double) X(placement_translation, double) X(level, double) X(grid_x, double)                 \
    X(grid_y, double) X(grid_z, double) X(contact_node, int64_t) X(contact_local, double) X(contact_normal, double)   \
    X(contact_tangential, double) X(contact_friction, double) X(contact_anchor, double) X(contact_projector, double)  \
    X(tyre_node, int64_t) X(tyre_radius, double) X(tyre_stiffness, double) X(tyre_tangential, double)                \
    X(tyre_friction, double) X(tyre_axis, double) X(tyre_friction_point, double) X(tyre_anchor, double)              \
    X(tyre_projector, double) X(contact_frame, int64_t)

/* A solved case's row of result flags (solve_case): X(name). */
#define SHIFTSIM_RESULT_FLAGS(X)                                                                                        \
    X(converged) X(iterations) X(residual) X(stability) X(neutral_count) X(size) X(force_floor)

/* An evaluation's scalars (evaluate_case): X(name). */
#define SHIFTSIM_EVALUATION_SCALARS(X) X(energy) X(force_scale) X(conservative) X(size) X(force_floor)

/* What a core function that can fail returns: 0 (CORE_OK) when it did what it says, otherwise the code of what went
 * wrong, with the message the Python side raises it with: X(C name, Python name, message). A question answered yes or
 * no is a predicate instead (bool, named is_... or as a question: is_positive_definite, all_finite). */
#define SHIFTSIM_STATUSES(X)                                                                                            \
    X(CORE_OK, ok, "done")                                                                                            \
    X(CORE_NO_MEMORY, no_memory, "the compiled core could not allocate its working memory")                          \
    X(CORE_CALLBACK_FAILED, callback_failed, "a Python callback (a coupling or a force field) raised")               \
    X(CORE_SINGULAR, singular, "the matrix is singular (a pivot is exactly zero)")                                   \
    X(CORE_NOT_DEFINITE, not_definite, "the matrix is not positive definite")                                        \
    X(CORE_NOT_CLOSED, not_closed, "the loops did not close within the allowed correction")                          \
    X(CORE_NOT_CONVERGED, not_converged, "no equilibrium within the iterations")

/* How a step of a continuation chain ended (solve_chain, chain.c): X(C name, Python name), numbered from 0. Plain:
 * solved, the chain goes on from it; the others end the chain there (the step-by-step path solves that step). */
#define SHIFTSIM_CHAIN_OUTCOMES(X)                                                                                      \
    X(CHAIN_PLAIN, plain) X(CHAIN_NOT_CLOSED, not_closed) X(CHAIN_ROWS_CHANGED, rows_changed)                         \
    X(CHAIN_NOT_PLAIN, not_plain) X(CHAIN_NOT_SOLVED, not_solved) X(CHAIN_LOADS_OPEN, loads_open)

/* Codes: X(C name, Python name), numbered from 0 in this order. */
#define SHIFTSIM_VERDICTS(X) X(STABLE, stable) X(NEUTRAL, neutral) X(UNSTABLE, unstable)
#define SHIFTSIM_NODE_KINDS(X) X(FIXED_MOTION, fixed) X(REVOLUTE, revolute) X(PRISMATIC, prismatic)
#define SHIFTSIM_DISTANCE_TYPES(X) X(EUCLIDEAN, euclidean) X(ALONG_X, Tx) X(ALONG_Y, Ty) X(ALONG_Z, Tz)
/* A design parameter's kind (partials.c; shiftsim.sensitivity.parameters.KINDS in this order, then ``none``: a
 * parameter whose terms the caller adds, then ``ground``: a number of the laws of some ground contacts and tyres) and
 * a row of a frame's motion (partials.c). */
#define SHIFTSIM_PARAMETER_KINDS(X)                                                                                     \
    X(PARAMETER_MASS, mass) X(PARAMETER_COM, com) X(PARAMETER_FRAME, frame) X(PARAMETER_SPRING, spring)               \
    X(PARAMETER_RESTRAINT, restraint) X(PARAMETER_PAIR, pair) X(PARAMETER_LOAD, load) X(PARAMETER_GRAVITY, gravity)  \
    X(PARAMETER_NONE, none) X(PARAMETER_GROUND, ground)
#define SHIFTSIM_FRAME_MOTIONS(X) X(MOTION_POINT, point) X(MOTION_SUBTREE, subtree)
/* What a ground parameter scales in the laws of its contacts and tyres (ground.c; shiftsim.core.ground): the normal
 * stiffness (a tyre's radial one), the same with the stick stiffness that follows it (a ground that gives no
 * tangential stiffness), the stick stiffness, the Coulomb coefficient, a tyre's unloaded radius. */
#define SHIFTSIM_GROUND_PARAMETERS(X)                                                                                   \
    X(GROUND_STIFFNESS, stiffness) X(GROUND_STIFFNESS_AND_STICK, stiffness_and_stick) X(GROUND_TANGENTIAL, tangential) \
    X(GROUND_FRICTION, friction) X(GROUND_RADIUS, radius)
/* A sensitivity output's kind (output_partials.c; shiftsim.sensitivity.outputs.KINDS in this order). */
#define SHIFTSIM_OUTPUT_KINDS(X)                                                                                        \
    X(OUTPUT_JOINT, joint) X(OUTPUT_FRAME, frame) X(OUTPUT_PIN, pin) X(OUTPUT_WRENCH, wrench) X(OUTPUT_EFFORT, effort) \
    X(OUTPUT_WRENCH_JOINT, wrench_joint)

#define SHIFTSIM_CODE(c_name, python_name) c_name,
#define SHIFTSIM_COUNT(...) +1
#define SHIFTSIM_INDEX(name) FLAG_##name,
#define SHIFTSIM_STATUS_CODE(c_name, python_name, message) c_name,
typedef enum { SHIFTSIM_STATUSES(SHIFTSIM_STATUS_CODE) } Status;
#undef SHIFTSIM_STATUS_CODE
enum { SHIFTSIM_VERDICTS(SHIFTSIM_CODE) };
enum { SHIFTSIM_NODE_KINDS(SHIFTSIM_CODE) };
enum { SHIFTSIM_DISTANCE_TYPES(SHIFTSIM_CODE) };
enum { SHIFTSIM_CHAIN_OUTCOMES(SHIFTSIM_CODE) };
enum { SHIFTSIM_PARAMETER_KINDS(SHIFTSIM_CODE) };
enum { SHIFTSIM_FRAME_MOTIONS(SHIFTSIM_CODE) };
enum { SHIFTSIM_GROUND_PARAMETERS(SHIFTSIM_CODE) GROUND_PARAMETERS };
enum { SHIFTSIM_OUTPUT_KINDS(SHIFTSIM_CODE) };
enum { SHIFTSIM_RESULT_FLAGS(SHIFTSIM_INDEX) RESULT_FLAGS };
#undef SHIFTSIM_INDEX
#define SHIFTSIM_INDEX(name) SCALAR_##name,
enum { SHIFTSIM_EVALUATION_SCALARS(SHIFTSIM_INDEX) EVALUATION_SCALARS };
#undef SHIFTSIM_INDEX
enum { MODEL_FIELDS = 0 SHIFTSIM_MODEL_FIELDS(SHIFTSIM_COUNT), SETTINGS_FIELDS = 0 SHIFTSIM_SETTINGS_FIELDS(SHIFTSIM_COUNT),
       GROUND_FIELDS = 0 SHIFTSIM_GROUND_FIELDS(SHIFTSIM_COUNT) };

#endif
