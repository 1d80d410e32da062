/* The extension module shiftsim.core._core: the compiled core's entry points for Python.
 *
 * Arrays cross through the buffer protocol (numpy arrays, C-contiguous, float64 / int64 / uint8 as each
 * function says; outputs are written in place). Batched arrays have the case first: q (B, nq), rotation
 * (B, n, 3, 3), ... A model and a statics problem are built once into capsules that hold the arrays they point
 * at. Batches run over ``threads`` threads with the GIL released, except when a problem calls Python back
 * (couplings, force fields): then one thread, holding the GIL. Every case is computed exactly as alone.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "chain.h"

/* ------------------------------------------------------------------ buffers */
typedef struct {
    Py_buffer view;
    int held;
} Buffer;

/* Take a C-contiguous buffer of ``kind`` 'd' (float64), 'q' (int64) or 'B' (uint8); None gives NULL when
 * ``optional``. Returns the data pointer (NULL with an exception set on error). */
static void *take(PyObject *object, Buffer *b, char kind, int writable, int optional, const char *name) {
    b->held = 0;
    if (object == Py_None && optional) return NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, &b->view, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: a C-contiguous%s array is needed", name, writable ? " writable" : "");
        return NULL;
    }
    b->held = 1;
    char f = b->view.format ? b->view.format[strlen(b->view.format) - 1] : 'B';
    int ok = kind == 'd' ? (f == 'd' && b->view.itemsize == 8)
           : kind == 'q' ? ((f == 'q' || f == 'l') && b->view.itemsize == 8)
           : b->view.itemsize == 1;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected %s items", name,
                     kind == 'd' ? "float64" : kind == 'q' ? "int64" : "one-byte");
        return NULL;
    }
    return b->view.buf;
}

/* Whether the buffer holds ``count`` items; false with a ValueError naming it otherwise (the core reads exactly that
 * many: a wrong shape must not reach it). */
static bool has_items(const Buffer *b, int64_t count, const char *name) {
    if (!b->held) return true; /* an optional array left out */
    int64_t items = (int64_t)(b->view.len / (b->view.itemsize ? b->view.itemsize : 1));
    if (items == count) return true;
    PyErr_Format(PyExc_ValueError, "%s: %lld items, expected %lld for this model", name, (long long)items,
                 (long long)count);
    return false;
}

/* Whether every entry of an int64 buffer lies in [0, limit); false with a ValueError naming it otherwise. */
static bool has_indices_below(const Buffer *b, int64_t limit, const char *name) {
    const int64_t *v = b->view.buf;
    for (int64_t i = 0; i < (int64_t)(b->view.len / 8); i++)
        if (v[i] < 0 || v[i] >= limit) {
            PyErr_Format(PyExc_ValueError, "%s: index %lld outside [0, %lld)", name, (long long)v[i], (long long)limit);
            return false;
        }
    return true;
}

/* The batch size of configurations q: (B, nq), or one for (nq,). */
static int64_t batch_of(const Buffer *q) { return q->view.ndim >= 2 ? (int64_t)q->view.shape[0] : 1; }

static void release(Buffer *buffers, int count) {
    for (int i = 0; i < count; i++)
        if (buffers[i].held) PyBuffer_Release(&buffers[i].view), buffers[i].held = 0;
}

/* ------------------------------------------------------------------ threads
 * A pool of worker threads started on first use and kept: a batch is handed to them (and the calling thread)
 * case by case, so a small batch does not pay for starting threads. One batch at a time (``serial``); after a
 * fork the child starts with no workers. Each thread opens one workspace (core.h) of the batch's size and reuses it
 * over the cases it takes. */
typedef void (*CaseWork)(void *job, int64_t b, Workspace *w);

#define MAX_WORKERS 256
static struct {
    pthread_mutex_t serial, lock;
    pthread_cond_t ready, finished;
    int64_t workers, wanted, running;
    uint64_t generation;
    CaseWork work;
    void *job;
    size_t doubles; /* each thread's workspace */
    int64_t batch, next;
    int failed; /* a case ran out of memory */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          0, 0, 0, 0, NULL, NULL, 0, 0, 0, 0};

/* work(job, b, w) in its own memory scope (workspace.c): CORE_OK, or CORE_NO_MEMORY when an allocation failed (w
 * empty again, nothing the case took left allocated). */
static Status run_case(CaseWork work, void *job, int64_t b, Workspace *w) {
    CoreScope scope;
    core_scope_open(&scope);
    if (setjmp(scope.jump) == 0) {
        work(job, b, w);
        core_scope_close(&scope);
        return CORE_OK;
    }
    core_scope_unwind(&scope);
    workspace_forget(w);
    return CORE_NO_MEMORY;
}

/* The next case of a batch for this thread, -1 when none is left. */
typedef int64_t (*NextCase)(void *source);

/* Cases from next(source) until none is left, on this thread, over one workspace of ``doubles`` opened here: CORE_OK,
 * or CORE_NO_MEMORY when an allocation failed (the workspace: this thread took no case; or a case: its outputs are
 * not all written). */
static Status run_thread(CaseWork work, void *job, size_t doubles, NextCase next, void *source) {
    CoreScope scope;
    Workspace w;
    core_scope_open(&scope);
    if (setjmp(scope.jump) != 0) {
        core_scope_unwind(&scope);
        return CORE_NO_MEMORY;
    }
    workspace_open(&w, doubles <= SIZE_MAX / sizeof(double) ? doubles * sizeof(double) : SIZE_MAX);
    Status status = CORE_OK;
    for (int64_t b = next(source); b >= 0; b = next(source))
        if (run_case(work, job, b, &w) != CORE_OK) status = CORE_NO_MEMORY;
    workspace_close(&w);
    core_scope_close(&scope);
    return status;
}

static int64_t pool_next(void *source) {
    (void)source;
    pthread_mutex_lock(&pool.lock);
    int64_t b = pool.next < pool.batch ? pool.next++ : -1;
    pthread_mutex_unlock(&pool.lock);
    return b;
}

static void take_cases(void) {
    pthread_mutex_lock(&pool.lock);
    CaseWork work = pool.work;
    void *job = pool.job;
    size_t doubles = pool.doubles;
    pthread_mutex_unlock(&pool.lock);
    if (run_thread(work, job, doubles, pool_next, NULL) != CORE_OK) __atomic_store_n(&pool.failed, 1, __ATOMIC_RELAXED);
}

static void *pool_worker(void *argument) {
    int64_t index = (int64_t)(intptr_t)argument;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        while (pool.generation == seen) pthread_cond_wait(&pool.ready, &pool.lock);
        seen = pool.generation;
        int joins = index < pool.wanted;
        pthread_mutex_unlock(&pool.lock);
        if (!joins) continue;
        take_cases();
        pthread_mutex_lock(&pool.lock);
        if (--pool.running == 0) pthread_cond_signal(&pool.finished);
        pthread_mutex_unlock(&pool.lock);
    }
    return NULL;
}

static void pool_after_fork(void) {
    pthread_mutex_init(&pool.serial, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.ready, NULL);
    pthread_cond_init(&pool.finished, NULL);
    pool.workers = pool.wanted = pool.running = 0;
}

static Status run_parallel(CaseWork work, void *job, size_t doubles, int64_t batch, int64_t threads) {
    pthread_mutex_lock(&pool.serial);
    static int registered = 0;
    if (!registered) registered = 1, pthread_atfork(NULL, NULL, pool_after_fork);
    while (pool.workers < threads - 1 && pool.workers < MAX_WORKERS) {
        pthread_t id;
        if (pthread_create(&id, NULL, pool_worker, (void *)(intptr_t)pool.workers) != 0) break;
        pthread_detach(id);
        pool.workers++;
    }
    pthread_mutex_lock(&pool.lock);
    pool.work = work, pool.job = job, pool.doubles = doubles, pool.batch = batch, pool.next = 0, pool.failed = 0;
    pool.wanted = threads - 1 < pool.workers ? threads - 1 : pool.workers;
    pool.running = pool.wanted;
    pool.generation++;
    pthread_cond_broadcast(&pool.ready);
    pthread_mutex_unlock(&pool.lock);
    take_cases();
    pthread_mutex_lock(&pool.lock);
    while (pool.running > 0) pthread_cond_wait(&pool.finished, &pool.lock);
    int failed = pool.failed;
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.serial);
    return failed ? CORE_NO_MEMORY : CORE_OK;
}

typedef struct {
    int64_t next, batch;
} Counter;

static int64_t counter_next(void *source) {
    Counter *c = source;
    return c->next < c->batch ? c->next++ : -1;
}

/* work(job, b, w) for b in [0, batch) on ``threads`` threads, each with a workspace of ``doubles``; the GIL is
 * released unless ``keep_gil`` (the work calls Python back, or is too short to be worth it: then the calling thread
 * alone). CORE_OK, or CORE_NO_MEMORY when an allocation failed (the other cases still ran). */
static Status run_cases(CaseWork work, void *job, size_t doubles, int64_t batch, int64_t threads, bool keep_gil) {
    Status status;
    Counter counter = {0, batch};
    if (threads > batch) threads = batch;
    if (keep_gil) return run_thread(work, job, doubles, counter_next, &counter);
    Py_BEGIN_ALLOW_THREADS
    if (threads <= 1)
        status = run_thread(work, job, doubles, counter_next, &counter);
    else
        status = run_parallel(work, job, doubles, batch, threads);
    Py_END_ALLOW_THREADS
    return status;
}

/* The statuses' names and messages (SHIFTSIM_STATUSES in fields.h), indexed by the code. */
#define STATUS_NAME(c_name, python_name, message) #python_name,
#define STATUS_MESSAGE(c_name, python_name, message) message,
static const char *const status_names[] = {SHIFTSIM_STATUSES(STATUS_NAME)};
static const char *const status_messages[] = {SHIFTSIM_STATUSES(STATUS_MESSAGE)};
#undef STATUS_NAME
#undef STATUS_MESSAGE

/* Set MemoryError with CORE_NO_MEMORY's message, naming the model's size and the workspace's. */
static void no_memory(const Model *core_model, size_t doubles) {
    PyErr_Format(PyExc_MemoryError, "%s (a workspace of %llu MiB) for a model of %lld nodes, %lld coordinates and "
                 "%lld loops", status_messages[CORE_NO_MEMORY], (unsigned long long)(doubles / 131072 + 1),
                 (long long)core_model->n_nodes, (long long)core_model->nq, (long long)core_model->n_closures);
}

/* Run the statements with a workspace ``w`` of ``doubles`` in their own memory scope; MemoryError naming the model's
 * size when an allocation fails. */
#define GUARDED(model, doubles, ...)                                                                                \
    do {                                                                                                            \
        CoreScope scope_;                                                                                           \
        Workspace w;                                                                                                \
        size_t doubles_ = (doubles);                                                                                \
        core_scope_open(&scope_);                                                                                   \
        if (setjmp(scope_.jump) == 0) {                                                                             \
            workspace_open(&w, doubles_ <= SIZE_MAX / sizeof(double) ? doubles_ * sizeof(double) : SIZE_MAX);       \
            __VA_ARGS__;                                                                                            \
            workspace_close(&w);                                                                                    \
            core_scope_close(&scope_);                                                                              \
        } else {                                                                                                    \
            core_scope_unwind(&scope_);                                                                             \
            no_memory(model, doubles_);                                                                             \
        }                                                                                                           \
    } while (0)

/* ------------------------------------------------------------------ the model capsule */
#define BUFFER_int64_t 'q' /* the buffer kind of a table's element type */
#define BUFFER_double 'd'
#define FIELD_INDEX(name, type) FIELD_##name,
enum { SHIFTSIM_MODEL_FIELDS(FIELD_INDEX) };
#undef FIELD_INDEX
#define FIELD_NAME(name, type) #name,
static const char *const model_field_names[MODEL_FIELDS] = {SHIFTSIM_MODEL_FIELDS(FIELD_NAME)};
#undef FIELD_NAME
typedef struct {
    Model model;
    Buffer buffers[MODEL_FIELDS];
} ModelCapsule;

static void model_destroy(PyObject *capsule) {
    ModelCapsule *m = PyCapsule_GetPointer(capsule, "shiftsim.Model");
    if (!m) return;
    release(m->buffers, MODEL_FIELDS);
    free(m);
}

static const Model *model_of(PyObject *capsule) {
    ModelCapsule *m = PyCapsule_GetPointer(capsule, "shiftsim.Model");
    return m ? &m->model : NULL;
}

/* The leading dimension of a buffer (-1 for a 0-d one: no model array is 0-d, and model_valid refuses it). */
static int64_t leading(const Buffer *b) { return b->view.ndim >= 1 ? (int64_t)b->view.shape[0] : -1; }

/* Whether every entry of an int64 buffer lies in [low, high); false with a ValueError naming the model array. */
static bool has_indices_within(const Buffer *b, int64_t low, int64_t high, const char *name) {
    const int64_t *v = b->view.buf;
    for (int64_t i = 0; i < (int64_t)(b->view.len / 8); i++)
        if (v[i] < low || v[i] >= high) {
            PyErr_Format(PyExc_ValueError, "model array %s: entry %lld is %lld, expected an index in [%lld, %lld)", name,
                         (long long)i, (long long)v[i], (long long)low, (long long)high);
            return false;
        }
    return true;
}

/* Whether every tree joint (no closure) names its first node; a loop-closing joint may have none (-1: a rigid joint
 * that closes a loop moves no node, and the core reads a closing joint's load from its multipliers). */
static bool tree_joints_have_nodes(const Model *model) {
    for (int64_t j = 0; j < model->n_joints; j++)
        if (model->joint_closure[j] < 0 && model->joint_first_node[j] < 0)
            return PyErr_Format(PyExc_ValueError, "model arrays joint_first_node, joint_closure: joint %lld closes no "
                                "loop and has no first node, expected a node in [0, %lld)", (long long)j,
                                (long long)model->n_nodes), false;
    return true;
}

/* Whether the model's arrays agree in size with each other and every index they hold points inside the arrays it
 * indexes (so no kernel can read out of range, whatever arrays Python passed); false with a ValueError naming the
 * array otherwise. Run once, when the model is compiled into its capsule. */
static bool is_valid_model(const ModelCapsule *m) {
    const Model *model = &m->model;
    const Buffer *b = m->buffers;
    int64_t n = model->n_nodes, nq = model->nq, frames = model->n_frames, closures = model->n_closures;
    int64_t laws = (int64_t)(b[FIELD_law_count].view.len / 8), intervals = model->law_intervals, joints = model->n_joints;
    if (n < 1) return PyErr_SetString(PyExc_ValueError, "model array parent: no nodes (node 0 is the world)"), false;
    if (b[FIELD_law_coefficients].view.ndim != 4)
        return PyErr_SetString(PyExc_ValueError, "model array law_coefficients: a 4-d array (L, 3, M, D) is needed"), false;
    int64_t counts[MODEL_FIELDS] = {
        n, n, n, n, 16 * n, 16 * n, n, 3 * n, nq, model->n_bodies, frames, 16 * frames, closures, closures,
        16 * closures, 16 * closures, model->n_springs, model->n_springs * model->spring_degree,
        model->n_joint_laws, model->n_joint_laws, model->n_pairs, model->n_pairs, model->n_pairs, model->n_pairs,
        joints, joints, joints, joints, laws * (intervals + 1), laws, laws * 3 * intervals * model->law_degree, laws};
    char what[64];
    for (int i = 0; i < MODEL_FIELDS; i++) {
        snprintf(what, sizeof what, "model array %s", model_field_names[i]);
        if (!has_items(&b[i], counts[i], what)) return false;
    }
    if (b[FIELD_law_coefficients].view.shape[1] != 3)
        return PyErr_SetString(PyExc_ValueError, "model array law_coefficients: (L, 3, M, D) is needed"), false;
    const int64_t *parent = model->parent, *coordinate = model->coordinate;
    if (parent[0] != -1)
        return PyErr_Format(PyExc_ValueError, "model array parent: node 0 (the world) has parent %lld, expected -1",
                            (long long)parent[0]), false;
    for (int64_t i = 1; i < n; i++)
        if (parent[i] < 0 || parent[i] >= i)
            return PyErr_Format(PyExc_ValueError, "model array parent: node %lld has parent %lld, expected a node in "
                                "[0, %lld) (parents first)", (long long)i, (long long)parent[i], (long long)i), false;
    if (!has_indices_within(&b[FIELD_kind], FIXED_MOTION, PRISMATIC + 1, model_field_names[FIELD_kind]) || !has_indices_within(&b[FIELD_coordinate], -1, nq, model_field_names[FIELD_coordinate])
        || !has_indices_within(&b[FIELD_coordinate_node], 0, n, model_field_names[FIELD_coordinate_node]))
        return false;
    for (int64_t i = 0; i < n; i++)
        if ((model->kind[i] != FIXED_MOTION) != (coordinate[i] >= 0) || (coordinate[i] >= 0 && i == 0))
            return PyErr_Format(PyExc_ValueError, "model arrays kind, coordinate: node %lld has kind %lld and coordinate "
                                "%lld, expected a coordinate exactly where the node moves (not the world)", (long long)i,
                                (long long)model->kind[i], (long long)coordinate[i]), false;
    for (int64_t k = 0; k < nq; k++)
        if (coordinate[model->coordinate_node[k]] != k)
            return PyErr_Format(PyExc_ValueError, "model array coordinate_node: coordinate %lld is on node %lld, which "
                                "moves by coordinate %lld", (long long)k, (long long)model->coordinate_node[k],
                                (long long)coordinate[model->coordinate_node[k]]), false;
    return has_indices_within(&b[FIELD_body_node], 0, n, model_field_names[FIELD_body_node]) && has_indices_within(&b[FIELD_frame_node], 0, n, model_field_names[FIELD_frame_node])
           && has_indices_within(&b[FIELD_closure_a], 0, n, model_field_names[FIELD_closure_a]) && has_indices_within(&b[FIELD_closure_b], 0, n, model_field_names[FIELD_closure_b])
           && has_indices_within(&b[FIELD_spring_coordinate], 0, nq, model_field_names[FIELD_spring_coordinate]) && has_indices_within(&b[FIELD_law_coordinate], 0, nq, model_field_names[FIELD_law_coordinate])
           && has_indices_within(&b[FIELD_law_index], 0, laws, model_field_names[FIELD_law_index]) && has_indices_within(&b[FIELD_pair_frame_a], 0, frames, model_field_names[FIELD_pair_frame_a])
           && has_indices_within(&b[FIELD_pair_frame_c], 0, frames, model_field_names[FIELD_pair_frame_c]) && has_indices_within(&b[FIELD_pair_distance], 0, 4, model_field_names[FIELD_pair_distance])
           && has_indices_within(&b[FIELD_pair_law], 0, laws, model_field_names[FIELD_pair_law]) && has_indices_within(&b[FIELD_joint_first_node], -1, n, model_field_names[FIELD_joint_first_node])
           && has_indices_within(&b[FIELD_joint_reversed], 0, 2, model_field_names[FIELD_joint_reversed]) && has_indices_within(&b[FIELD_joint_closure], -1, closures, model_field_names[FIELD_joint_closure])
           && has_indices_within(&b[FIELD_joint_child_frame], 0, frames, model_field_names[FIELD_joint_child_frame]) && has_indices_within(&b[FIELD_law_count], 0, intervals + 1, model_field_names[FIELD_law_count])
           && tree_joints_have_nodes(model);
}

/* model(arrays) -> capsule: a tuple of the arrays named by _core.MODEL_FIELDS (SHIFTSIM_MODEL_FIELDS in fields.h),
 * in that order; their sizes and index contents are checked here, once (model_valid). */
static PyObject *py_model(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *arrays;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &arrays)) return NULL;
    if (PyTuple_GET_SIZE(arrays) != MODEL_FIELDS) return PyErr_Format(PyExc_ValueError, "model: %d arrays expected", MODEL_FIELDS);
#define FIELD_KIND(name, type) BUFFER_##type,
    static const char kinds[MODEL_FIELDS] = {SHIFTSIM_MODEL_FIELDS(FIELD_KIND)};
#undef FIELD_KIND
    ModelCapsule *m = calloc(1, sizeof(ModelCapsule));
    if (!m) return PyErr_NoMemory();
    void *p[MODEL_FIELDS];
    for (int i = 0; i < MODEL_FIELDS; i++) {
        p[i] = take(PyTuple_GET_ITEM(arrays, i), &m->buffers[i], kinds[i], 0, 0, model_field_names[i]);
        if (!p[i]) {
            release(m->buffers, MODEL_FIELDS);
            free(m);
            return NULL;
        }
    }
    Model *core_model = &m->model;
    Py_ssize_t *shape_spring = m->buffers[FIELD_spring_coefficients].view.shape, *shape_laws = m->buffers[FIELD_law_coefficients].view.shape;
#define FIELD_POINTER(name, type) core_model->name = p[FIELD_##name];
    SHIFTSIM_MODEL_FIELDS(FIELD_POINTER)
#undef FIELD_POINTER
    core_model->n_joints = leading(&m->buffers[FIELD_joint_first_node]);
    core_model->n_nodes = leading(&m->buffers[FIELD_parent]), core_model->nq = leading(&m->buffers[FIELD_coordinate_node]);
    core_model->n_bodies = leading(&m->buffers[FIELD_body_node]), core_model->n_frames = leading(&m->buffers[FIELD_frame_node]);
    core_model->n_closures = leading(&m->buffers[FIELD_closure_a]), core_model->n_springs = leading(&m->buffers[FIELD_spring_coordinate]);
    core_model->spring_degree = m->buffers[FIELD_spring_coefficients].view.ndim == 2 ? shape_spring[1] : 1;
    core_model->n_joint_laws = leading(&m->buffers[FIELD_law_coordinate]), core_model->n_pairs = leading(&m->buffers[FIELD_pair_law]);
    core_model->law_intervals = m->buffers[FIELD_law_coefficients].view.ndim == 4 ? shape_laws[2] : 0;
    core_model->law_degree = m->buffers[FIELD_law_coefficients].view.ndim == 4 ? shape_laws[3] : 0;
    if (!is_valid_model(m)) {
        release(m->buffers, MODEL_FIELDS);
        free(m);
        return NULL;
    }
    return PyCapsule_New(m, "shiftsim.Model", model_destroy);
}

/* ------------------------------------------------------------------ the ground capsule (ground.c) */
#define GROUND_INDEX(name, type) GROUND_##name,
enum { SHIFTSIM_GROUND_FIELDS(GROUND_INDEX) };
#undef GROUND_INDEX
#define GROUND_NAME(name, type) #name,
static const char *const ground_field_names[GROUND_FIELDS] = {SHIFTSIM_GROUND_FIELDS(GROUND_NAME)};
#undef GROUND_NAME
typedef struct {
    GroundField ground;
    Buffer buffers[GROUND_FIELDS];
    int64_t n_nodes; /* of the model it was built for */
} GroundCapsule;

static void ground_destroy(PyObject *capsule) {
    GroundCapsule *g = PyCapsule_GetPointer(capsule, "shiftsim.Ground");
    if (!g) return;
    release(g->buffers, GROUND_FIELDS);
    free(g);
}

/* The ground field of a capsule built for a model of ``n_nodes`` nodes; NULL with an exception otherwise. */
static const GroundField *ground_of(PyObject *capsule, int64_t n_nodes) {
    GroundCapsule *g = PyCapsule_GetPointer(capsule, "shiftsim.Ground");
    if (g && g->n_nodes != n_nodes) {
        PyErr_Format(PyExc_ValueError, "ground: built for a model of %lld nodes, used with one of %lld",
                     (long long)g->n_nodes, (long long)n_nodes);
        return NULL;
    }
    return g ? &g->ground : NULL;
}

/* Whether the ground's arrays agree in size, the grid is strictly increasing with at least two lines each way and
 * every node index lies in the model; false with a ValueError naming the array. */
static bool is_valid_ground(const GroundCapsule *c) {
    const GroundField *g = &c->ground;
    int64_t nx = g->nx, ny = g->ny, nc = g->n_contacts, nt = g->n_tyres;
    if ((nx != 0 || ny != 0) && (nx < 2 || ny < 2))
        return PyErr_Format(PyExc_ValueError, "ground arrays grid_x, grid_y: %lld and %lld lines, expected none (a level "
                            "plane) or at least 2 each", (long long)nx, (long long)ny), false;
    int64_t counts[GROUND_FIELDS] = {9, 3, 1, nx, ny, nx * ny, nc, 3 * nc, nc, nc, nc, 3 * nc, 9 * nc,
                                     nt, nt, nt, nt, nt, 3 * nt, 3 * nt, 3 * nt, 9 * nt, nc};
    char what[64];
    for (int i = 0; i < GROUND_FIELDS; i++) {
        snprintf(what, sizeof what, "ground array %s", ground_field_names[i]);
        if (!has_items(&c->buffers[i], counts[i], what)) return false;
    }
    for (int64_t i = 0; i + 1 < nx; i++)
        if (!(g->grid_x[i] < g->grid_x[i + 1]))
            return PyErr_Format(PyExc_ValueError, "ground array grid_x: entry %lld is not below the next (strictly "
                                "increasing x expected)", (long long)i), false;
    for (int64_t i = 0; i + 1 < ny; i++)
        if (!(g->grid_y[i] < g->grid_y[i + 1]))
            return PyErr_Format(PyExc_ValueError, "ground array grid_y: entry %lld is not below the next (strictly "
                                "increasing y expected)", (long long)i), false;
    return has_indices_within(&c->buffers[GROUND_contact_node], 1, c->n_nodes, ground_field_names[GROUND_contact_node])
           && has_indices_within(&c->buffers[GROUND_tyre_node], 1, c->n_nodes, ground_field_names[GROUND_tyre_node]);
}

/* ground(n_nodes, arrays) -> capsule: a tuple of the arrays named by _core.GROUND_FIELDS (SHIFTSIM_GROUND_FIELDS
 * in fields.h), in that order, for a model of n_nodes nodes; checked here, once (ground_valid). */
static PyObject *py_ground(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *arrays;
    int64_t n_nodes;
    if (!PyArg_ParseTuple(args, "LO!", &n_nodes, &PyTuple_Type, &arrays)) return NULL;
    if (PyTuple_GET_SIZE(arrays) != GROUND_FIELDS)
        return PyErr_Format(PyExc_ValueError, "ground: %d arrays expected (_core.GROUND_FIELDS)", GROUND_FIELDS);
#define GROUND_KIND(name, type) BUFFER_##type,
    static const char kinds[GROUND_FIELDS] = {SHIFTSIM_GROUND_FIELDS(GROUND_KIND)};
#undef GROUND_KIND
    GroundCapsule *c = calloc(1, sizeof(GroundCapsule));
    if (!c) return PyErr_NoMemory();
    void *p[GROUND_FIELDS];
    for (int i = 0; i < GROUND_FIELDS; i++)
        if (!(p[i] = take(PyTuple_GET_ITEM(arrays, i), &c->buffers[i], kinds[i], 0, 0, ground_field_names[i]))) {
            release(c->buffers, GROUND_FIELDS);
            free(c);
            return NULL;
        }
    GroundField *g = &c->ground;
#define GROUND_POINTER(name, type) g->name = p[GROUND_##name];
    SHIFTSIM_GROUND_FIELDS(GROUND_POINTER)
#undef GROUND_POINTER
    g->nx = (int64_t)(c->buffers[GROUND_grid_x].view.len / 8), g->ny = (int64_t)(c->buffers[GROUND_grid_y].view.len / 8);
    g->n_contacts = (int64_t)(c->buffers[GROUND_contact_node].view.len / 8);
    g->n_tyres = (int64_t)(c->buffers[GROUND_tyre_node].view.len / 8);
    c->n_nodes = n_nodes;
    if (!is_valid_ground(c)) {
        release(c->buffers, GROUND_FIELDS);
        free(c);
        return NULL;
    }
    return PyCapsule_New(c, "shiftsim.Ground", ground_destroy);
}

/* ------------------------------------------------------------------ the problem capsule and its callbacks */
#define PROBLEM_ARRAYS 5
typedef struct {
    Problem problem;
    Buffer buffers[PROBLEM_ARRAYS];
    PyObject *apply, *jacobian, *terms; /* Python callables or NULL */
    PyObject *grounds;                  /* the tuple of ground capsules (native fields) */
    const GroundField **ground_list;    /* their fields */
    PyObject *error_type, *error_value, *error_traceback; /* the first exception a callback raised */
    int64_t nq, n_nodes;
} ProblemCapsule;

static void problem_destroy(PyObject *capsule) {
    ProblemCapsule *c = PyCapsule_GetPointer(capsule, "shiftsim.Problem");
    if (!c) return;
    release(c->buffers, PROBLEM_ARRAYS);
    Py_XDECREF(c->apply), Py_XDECREF(c->jacobian), Py_XDECREF(c->terms), Py_XDECREF(c->grounds);
    free(c->ground_list);
    Py_XDECREF(c->error_type), Py_XDECREF(c->error_value), Py_XDECREF(c->error_traceback);
    free(c);
}

static PyObject *memory(const double *data, int64_t count, int writable) {
    return PyMemoryView_FromMemory((char *)data, (Py_ssize_t)(count * (int64_t)sizeof(double)),
                                   writable ? PyBUF_WRITE : PyBUF_READ);
}

/* Call ``function`` with memoryviews: CORE_OK, or CORE_CALLBACK_FAILED with the raised exception kept (later
 * callbacks fail at once; the entry point raises it). */
static Status call_back(ProblemCapsule *c, PyObject *function, PyObject *arguments) {
    if (!arguments) {
        if (!c->error_type) PyErr_Fetch(&c->error_type, &c->error_value, &c->error_traceback);
        return CORE_CALLBACK_FAILED;
    }
    if (c->error_type) {
        Py_DECREF(arguments);
        return CORE_CALLBACK_FAILED;
    }
    PyObject *result = PyObject_CallObject(function, arguments);
    Py_DECREF(arguments);
    if (!result) {
        PyErr_Fetch(&c->error_type, &c->error_value, &c->error_traceback);
        return CORE_CALLBACK_FAILED;
    }
    Py_DECREF(result);
    return CORE_OK;
}

static Status apply_trampoline(void *context, const double *q, double *out) {
    ProblemCapsule *c = context;
    return call_back(c, c->apply, Py_BuildValue("(NN)", memory(q, c->nq, 0), memory(out, c->nq, 1)));
}

static Status jacobian_trampoline(void *context, const double *q, double *out) {
    ProblemCapsule *c = context;
    return call_back(c, c->jacobian, Py_BuildValue("(NN)", memory(q, c->nq, 0),
                                                   memory(out, c->nq * c->problem.nf, 1)));
}

static Status terms_trampoline(void *context, const double *q, const double *rotation, const double *position,
                            const double *omega, const double *v, double *q_force, double *stiffness, double *extra) {
    ProblemCapsule *c = context;
    int64_t nq = c->nq, n = c->n_nodes;
    return call_back(c, c->terms, Py_BuildValue("(NNNNNNNN)", memory(q, nq, 0), memory(rotation, 9 * n, 0),
                                                memory(position, 3 * n, 0), memory(omega, 3 * nq, 0),
                                                memory(v, 3 * nq, 0), memory(q_force, nq, 1),
                                                memory(stiffness, nq * nq, 1), memory(extra, 2, 1)));
}

static ProblemCapsule *problem_of(PyObject *capsule) { return PyCapsule_GetPointer(capsule, "shiftsim.Problem"); }

/* Raise (and clear) the exception a callback kept; whether there was one. */
static bool raise_kept(ProblemCapsule *c) {
    if (!c->error_type) return false;
    PyErr_Restore(c->error_type, c->error_value, c->error_traceback);
    c->error_type = c->error_value = c->error_traceback = NULL;
    return true;
}

#define SETTING_NAME(name, type) #name,
static const char *const settings_field_names[SETTINGS_FIELDS] = {SHIFTSIM_SETTINGS_FIELDS(SETTING_NAME)};
#undef SETTING_NAME

/* Read the settings record (a dict with exactly the names of SHIFTSIM_SETTINGS_FIELDS) into ``p``; 0 = ok, -1
 * with an exception naming the setting. */
static int read_settings(PyObject *settings, Problem *p) {
    if (PyDict_GET_SIZE(settings) != SETTINGS_FIELDS)
        return PyErr_Format(PyExc_ValueError, "problem: settings has %zd entries, expected the %d of "
                            "_core.SETTINGS_FIELDS", PyDict_GET_SIZE(settings), SETTINGS_FIELDS), -1;
    PyObject *item;
#define READ_int64_t PyLong_AsLongLong
#define READ_double PyFloat_AsDouble
#define READ_SETTING(name, type)                                                                                     \
    if (!(item = PyDict_GetItemString(settings, #name)))                                                          \
        return PyErr_Format(PyExc_KeyError, "problem: settings lacks %s (expected the names of "                  \
                            "_core.SETTINGS_FIELDS)", #name), -1;                                                  \
    p->name = (type)READ_##type(item);                                                                              \
    if (PyErr_Occurred()) return -1;
    SHIFTSIM_SETTINGS_FIELDS(READ_SETTING)
#undef READ_SETTING
    return 0;
}

/* problem(model, free, rows, translation, load_frame, load_follow, apply, jacobian, terms, has_rates, settings[,
 * grounds]) -> capsule. ``settings`` is a dict by the names of _core.SETTINGS_FIELDS (fields.h). The callables may
 * be None: apply(q, out), jacobian(q, out) (out (nq, nf) flat), terms(q, rotation, position, omega, v, q_force,
 * stiffness, extra) adding into q_force and stiffness and writing extra = (energy, conservative); every argument a
 * flat float64 memoryview valid during the call. ``grounds`` (default none): a tuple of ground capsules (``ground``),
 * force fields evaluated in the core. */
static PyObject *py_problem(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *arrays[PROBLEM_ARRAYS], *apply, *jacobian, *terms, *grounds, *settings;
    ProblemCapsule *c = calloc(1, sizeof(ProblemCapsule));
    if (!c) return PyErr_NoMemory();
    Problem *p = &c->problem;
    grounds = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLO!|O!", &model, &arrays[0], &arrays[1], &arrays[2], &arrays[3],
                          &arrays[4], &apply, &jacobian, &terms, &p->has_rates, &PyDict_Type, &settings, &PyTuple_Type,
                          &grounds)
        || read_settings(settings, p) != 0) {
        free(c);
        return NULL;
    }
    PyObject *none = PyTuple_New(0);
    if (!none) return free(c), NULL;
    if (!grounds) grounds = none;
    const Model *given_model = model_of(model);
    Py_ssize_t n_grounds = PyTuple_GET_SIZE(grounds);
    c->ground_list = given_model ? calloc((size_t)n_grounds + 1, sizeof(GroundField *)) : NULL;
    for (Py_ssize_t i = 0; i < n_grounds && c->ground_list; i++)
        if (!(c->ground_list[i] = ground_of(PyTuple_GET_ITEM(grounds, i), given_model->n_nodes))) {
            free(c->ground_list);
            c->ground_list = NULL;
        }
    if (!c->ground_list) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        Py_DECREF(none), free(c);
        return NULL;
    }
    Py_INCREF(grounds), c->grounds = grounds;
    Py_DECREF(none);
    p->n_grounds = n_grounds, p->grounds = c->ground_list;
    const Model *core_model = model_of(model);
    void *data[PROBLEM_ARRAYS];
    for (int i = 0; i < PROBLEM_ARRAYS && core_model; i++) {
        data[i] = take(arrays[i], &c->buffers[i], 'q', 0, 0, "problem array");
        if (!data[i]) core_model = NULL;
    }
    if (!core_model) {
        release(c->buffers, PROBLEM_ARRAYS);
        Py_DECREF(c->grounds), free(c->ground_list), free(c);
        return NULL;
    }
    p->free = data[0], p->rows = data[1], p->translation = data[2], p->load_frame = data[3], p->load_follow = data[4];
    p->nf = c->buffers[0].view.shape[0], p->m = c->buffers[1].view.shape[0], p->n_loads = c->buffers[3].view.shape[0];
    if (!has_indices_below(&c->buffers[0], core_model->nq, "free") || !has_indices_below(&c->buffers[1], 6 * core_model->n_closures, "rows")
        || !has_indices_below(&c->buffers[3], core_model->n_frames, "load_frame") || !has_items(&c->buffers[2], p->nf, "translation")
        || !has_items(&c->buffers[4], p->n_loads, "load_follow")) {
        release(c->buffers, PROBLEM_ARRAYS);
        Py_DECREF(c->grounds), free(c->ground_list), free(c);
        return NULL;
    }
    c->nq = core_model->nq, c->n_nodes = core_model->n_nodes;
    p->context = c;
    if (apply != Py_None) Py_INCREF(apply), c->apply = apply, p->coupling_apply = apply_trampoline;
    if (jacobian != Py_None) Py_INCREF(jacobian), c->jacobian = jacobian, p->coupling_jacobian = jacobian_trampoline;
    if (terms != Py_None) Py_INCREF(terms), c->terms = terms, p->field_terms = terms_trampoline;
    return PyCapsule_New(c, "shiftsim.Problem", problem_destroy);
}

/* ------------------------------------------------------------------ kinematics */
typedef struct {
    const Model *core_model;
    const double *q;
    double *rotation, *position, *omega, *v, *bodies, *frames;
} KinematicsJob;

static void state_work(void *job, int64_t b, Workspace *w) {
    KinematicsJob *k = job;
    const Model *core_model = k->core_model;
    size_t mark = ws_mark(w);
    State s = {ws_doubles(w, 12 * core_model->n_nodes), k->rotation + b * 9 * core_model->n_nodes,
               k->position + b * 3 * core_model->n_nodes, k->omega + b * 3 * core_model->nq, k->v + b * 3 * core_model->nq};
    node_state(core_model, k->q + b * core_model->nq, &s);
    ws_release(w, mark);
}

static void forward_work(void *job, int64_t b, Workspace *w) {
    KinematicsJob *k = job;
    const Model *core_model = k->core_model;
    size_t mark = ws_mark(w);
    State s = state_new(w, core_model);
    forward_poses(core_model, k->q + b * core_model->nq, &s, k->bodies ? k->bodies + b * 16 * core_model->n_bodies : NULL,
                  k->frames ? k->frames + b * 16 * core_model->n_frames : NULL);
    ws_release(w, mark);
}

/* state(model, q (B, nq), rotation (B, n, 3, 3), position (B, n, 3), omega (B, nq, 3), v (B, nq, 3), threads) */
static PyObject *py_state(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[5];
    int64_t threads;
    Buffer b[5] = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOL", &model, &o[0], &o[1], &o[2], &o[3], &o[4], &threads)) return NULL;
    KinematicsJob job = {model_of(model), NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    if (job.core_model && (job.q = take(o[0], &b[0], 'd', 0, 0, "q")) && (job.rotation = take(o[1], &b[1], 'd', 1, 0, "rotation"))
        && (job.position = take(o[2], &b[2], 'd', 1, 0, "position")) && (job.omega = take(o[3], &b[3], 'd', 1, 0, "omega"))
        && (job.v = take(o[4], &b[4], 'd', 1, 0, "v")) && has_items(&b[0], batch_of(&b[0]) * job.core_model->nq, "q")
        && has_items(&b[1], batch_of(&b[0]) * 9 * job.core_model->n_nodes, "rotation")
        && has_items(&b[2], batch_of(&b[0]) * 3 * job.core_model->n_nodes, "position")
        && has_items(&b[3], batch_of(&b[0]) * 3 * job.core_model->nq, "omega") && has_items(&b[4], batch_of(&b[0]) * 3 * job.core_model->nq, "v"))
        if (run_cases(state_work, &job, kernel_workspace_doubles(job.core_model), batch_of(&b[0]), threads,
                      batch_of(&b[0]) == 1) != CORE_OK) /* one: GIL kept */
            no_memory(job.core_model, kernel_workspace_doubles(job.core_model));
    release(b, 5);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* forward(model, q (B, nq), bodies (B, n_bodies, 4, 4) or None, frames (B, n_frames, 4, 4) or None, threads) */
static PyObject *py_forward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[3];
    int64_t threads;
    Buffer b[3] = {0};
    if (!PyArg_ParseTuple(args, "OOOOL", &model, &o[0], &o[1], &o[2], &threads)) return NULL;
    KinematicsJob job = {model_of(model), NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    if (job.core_model && (job.q = take(o[0], &b[0], 'd', 0, 0, "q"))) {
        job.bodies = take(o[1], &b[1], 'd', 1, 1, "bodies");
        if (!PyErr_Occurred()) job.frames = take(o[2], &b[2], 'd', 1, 1, "frames");
        int64_t batch = batch_of(&b[0]);
        if (!PyErr_Occurred() && has_items(&b[0], batch * job.core_model->nq, "q") && has_items(&b[1], batch * 16 * job.core_model->n_bodies, "bodies")
            && has_items(&b[2], batch * 16 * job.core_model->n_frames, "frames"))
            if (run_cases(forward_work, &job, kernel_workspace_doubles(job.core_model), batch_of(&b[0]), threads,
                          batch_of(&b[0]) == 1) != CORE_OK)
                no_memory(job.core_model, kernel_workspace_doubles(job.core_model));
    }
    release(b, 3);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* The state buffers (rotation, position, omega, v; batch first) of four objects; returns the batch size. */
static int64_t take_states(const Model *core_model, PyObject **o, Buffer *b, double **p) {
    const char *names[4] = {"rotation", "position", "omega", "v"};
    for (int i = 0; i < 4; i++)
        if (!(p[i] = take(o[i], &b[i], 'd', 0, 0, names[i]))) return -1;
    int64_t batch = (int64_t)(b[0].view.len / 8 / (9 * core_model->n_nodes));
    if (!has_items(&b[0], batch * 9 * core_model->n_nodes, "rotation") || !has_items(&b[1], batch * 3 * core_model->n_nodes, "position")
        || !has_items(&b[2], batch * 3 * core_model->nq, "omega") || !has_items(&b[3], batch * 3 * core_model->nq, "v"))
        return -1;
    return batch;
}

static State view_of(const Model *core_model, double **p, int64_t b) {
    State s = {NULL, p[0] + b * 9 * core_model->n_nodes, p[1] + b * 3 * core_model->n_nodes, p[2] + b * 3 * core_model->nq, p[3] + b * 3 * core_model->nq};
    return s;
}

/* closures(model, rotation, position, omega, v, g (B, 6 K) or None, jac (B, 6 K, nq) or None) */
static PyObject *py_closures(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[6];
    Buffer b[6] = {0};
    double *p[4], *volatile g = NULL, *volatile jac = NULL; /* read inside a memory scope (setjmp) */
    if (!PyArg_ParseTuple(args, "OOOOOOO", &model, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5])) return NULL;
    const Model *core_model = model_of(model);
    int64_t batch = core_model ? take_states(core_model, o, b, p) : -1;
    if (batch >= 0 && !PyErr_Occurred()) g = take(o[4], &b[4], 'd', 1, 1, "g");
    if (batch >= 0 && !PyErr_Occurred()) jac = take(o[5], &b[5], 'd', 1, 1, "jac");
    if (batch >= 0 && !PyErr_Occurred() && has_items(&b[4], batch * 6 * core_model->n_closures, "g")
        && has_items(&b[5], batch * 6 * core_model->n_closures * core_model->nq, "jac"))
        GUARDED(core_model, kernel_workspace_doubles(core_model), for (int64_t k = 0; k < batch; k++) {
            State s = view_of(core_model, p, k);
            if (g) closure_residual(core_model, &s, g + k * 6 * core_model->n_closures);
            if (jac) closure_jacobian(core_model, &s, jac + k * 6 * core_model->n_closures * core_model->nq);
        });
    release(b, 6);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* point_hessian(model, rotation, position, omega, v, node, jv (B, nq, 3), direction (B, 3), out (B, nq, nq)):
 * out += direction . d2p/dq_j dq_k for points on ``node``. */
static PyObject *py_point_hessian(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[7];
    int64_t node;
    Buffer b[7] = {0};
    double *p[4], *jv, *direction, *out;
    if (!PyArg_ParseTuple(args, "OOOOOLOOO", &model, &o[0], &o[1], &o[2], &o[3], &node, &o[4], &o[5], &o[6]))
        return NULL;
    const Model *core_model = model_of(model);
    int64_t batch = core_model ? take_states(core_model, o, b, p) : -1;
    if (batch >= 0 && (jv = take(o[4], &b[4], 'd', 0, 0, "jv")) && (direction = take(o[5], &b[5], 'd', 0, 0, "direction"))
        && (out = take(o[6], &b[6], 'd', 1, 0, "out")) && has_items(&b[4], batch * 3 * core_model->nq, "jv")
        && has_items(&b[5], batch * 3, "direction") && has_items(&b[6], batch * core_model->nq * core_model->nq, "out")
        && (node >= 0 && node < core_model->n_nodes ? 1 : (PyErr_SetString(PyExc_ValueError, "point_hessian: node out of range"), 0)))
        GUARDED(core_model, kernel_workspace_doubles(core_model), for (int64_t k = 0; k < batch; k++) {
            State s = view_of(core_model, p, k);
            add_point_hessian(&w, core_model, &s, node, jv + k * 3 * core_model->nq, direction + 3 * k, 1.0, out + k * core_model->nq * core_model->nq);
        });
    release(b, 7);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* terms(model, which, q, rotation, position, omega, v, gravity, point_node, point, force, frames, forces, torques,
 *       follow, q_force (B, nq), stiffness (B, nq, nq), energy (B)): one of the model's own force terms at given
 * states, added into the outputs. which 0: gravity (B, 3) and world forces (point_node (P), point, force
 * (B, P, 3)); 1: joint springs (q (B, nq); no state needed); 2: pair springs; 3: torques and following loads
 * (frames, follow (L), forces, torques (B, L, 3)). Arguments a term does not use may be None. */
enum { Q, ROTATION, POSITION, OMEGA, V, GRAVITY, POINT_NODE, POINT, FORCE, FRAMES, FORCES, TORQUES, FOLLOW, Q_FORCE,
       STIFFNESS, ENERGY, TERM_ARRAYS };

static PyObject *py_terms(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[TERM_ARRAYS];
    int64_t which;
    Buffer b[TERM_ARRAYS] = {0};
    if (!PyArg_ParseTuple(args, "OLOOOOOOOOOOOOOOOO", &model, &which, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15]))
        return NULL;
    const Model *core_model = model_of(model);
    static const char kinds[TERM_ARRAYS + 1] = "ddddddqddqddqddd";
    void *p[TERM_ARRAYS];
    for (int i = 0; i < TERM_ARRAYS && core_model; i++) {
        p[i] = take(o[i], &b[i], kinds[i], i >= Q_FORCE, 1, "terms argument");
        if (PyErr_Occurred()) core_model = NULL;
    }
    if (core_model && (which < 0 || which > 3)) {
        PyErr_Format(PyExc_ValueError, "terms: which is %lld, expected 0 (gravity), 1 (joint springs), "
                     "2 (pair springs) or 3 (loads)", (long long)which);
        core_model = NULL;
    }
    if (core_model && !(b[Q_FORCE].held && b[STIFFNESS].held && b[ENERGY].held)) {
        PyErr_SetString(PyExc_ValueError, "terms: q_force, stiffness and energy are needed");
        core_model = NULL;
    }
    int64_t batch = core_model ? (int64_t)(b[ENERGY].view.len / 8) : 0;
    int64_t count = b[POINT_NODE].held ? b[POINT_NODE].view.shape[0] : 0;
    int64_t n_loads = b[FRAMES].held ? b[FRAMES].view.shape[0] : 0;
    if (core_model) {
        int state_ok = b[ROTATION].held ? has_items(&b[ROTATION], batch * 9 * core_model->n_nodes, "rotation")
                                          && has_items(&b[POSITION], batch * 3 * core_model->n_nodes, "position")
                                          && has_items(&b[OMEGA], batch * 3 * core_model->nq, "omega")
                                          && has_items(&b[V], batch * 3 * core_model->nq, "v")
                                        : which == 1;
        int ok = state_ok && has_items(&b[Q_FORCE], batch * core_model->nq, "q_force")
                 && has_items(&b[STIFFNESS], batch * core_model->nq * core_model->nq, "stiffness") && has_items(&b[Q], batch * core_model->nq, "q");
        if (ok && which == 1 && !b[Q].held)
            ok = (PyErr_SetString(PyExc_ValueError, "terms: joint springs (which=1) need q"), 0);
        if (ok && which == 0)
            ok = b[GRAVITY].held && has_items(&b[GRAVITY], 3 * batch, "gravity")
                 && has_items(&b[POINT], 3 * count * batch, "point") && has_items(&b[FORCE], 3 * count * batch, "force")
                 && has_indices_below(&b[POINT_NODE], core_model->n_nodes, "point_node");
        if (ok && which == 3)
            ok = has_indices_below(&b[FRAMES], core_model->n_frames, "frames") && has_items(&b[FORCES], 3 * n_loads * batch, "forces")
                 && has_items(&b[TORQUES], 3 * n_loads * batch, "torques") && has_items(&b[FOLLOW], n_loads, "follow");
        if (!ok) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "terms: the arrays this term needs are missing");
            core_model = NULL;
        }
    }
    if (core_model) {
        GUARDED(core_model, kernel_workspace_doubles(core_model) + 7 * (size_t)n_loads + 8, {
        int64_t nq = core_model->nq, *scratch_node = ws_indices(&w, n_loads);
        double *scratch = ws_doubles(&w, 6 * n_loads);
        double *st[4] = {p[ROTATION], p[POSITION], p[OMEGA], p[V]};
        for (int64_t k = 0; k < batch; k++) {
            State s = {NULL, NULL, NULL, NULL, NULL};
            if (b[ROTATION].held) s = view_of(core_model, st, k);
            double *fb = (double *)p[Q_FORCE] + k * nq, *kb = (double *)p[STIFFNESS] + k * nq * nq;
            double *eb = (double *)p[ENERGY] + k;
            if (which == 0)
                *eb += gravity_and_world_forces(&w, core_model, &s, (double *)p[GRAVITY] + 3 * k, count, p[POINT_NODE],
                                                (double *)p[POINT] + 3 * count * k, (double *)p[FORCE] + 3 * count * k,
                                                fb, kb, NULL);
            else if (which == 1)
                *eb += joint_springs(core_model, (double *)p[Q] + k * nq, fb, kb, NULL);
            else if (which == 2)
                *eb += pair_springs(&w, core_model, &s, fb, kb);
            else
                applied_loads(&w, core_model, &s, n_loads, p[FRAMES], (double *)p[FORCES] + 3 * n_loads * k,
                              (double *)p[TORQUES] + 3 * n_loads * k, p[FOLLOW], scratch_node, scratch,
                              scratch + 3 * n_loads, fb, kb);
        }
        });
    }
    release(b, TERM_ARRAYS);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ground_terms(model, ground, rotation, position, omega, v, q_force (B, nq), stiffness (B, nq, nq), energy (B),
 * conservative (B)): the ground field's generalized force, stiffness and energy at given states (ground_terms in
 * ground.c), added into q_force, stiffness and energy; conservative set to 1 or 0 (a contact or tyre slips). */
static PyObject *py_ground_terms(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *ground, *o[8];
    Buffer b[8] = {0};
    double *p[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &model, &ground, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    const Model *core_model = model_of(model);
    const GroundField *g = core_model ? ground_of(ground, core_model->n_nodes) : NULL;
    int64_t batch = g ? take_states(core_model, o, b, p) : -1;
    static const char *names[4] = {"q_force", "stiffness", "energy", "conservative"};
    int ok = batch >= 0;
    for (int i = 4; i < 8 && ok; i++) ok = (p[i] = take(o[i], &b[i], 'd', 1, 0, names[i - 4])) != NULL;
    if (ok && has_items(&b[4], batch * core_model->nq, "q_force") && has_items(&b[5], batch * core_model->nq * core_model->nq, "stiffness")
        && has_items(&b[6], batch, "energy") && has_items(&b[7], batch, "conservative"))
        GUARDED(core_model, kernel_workspace_doubles(core_model), for (int64_t k = 0; k < batch; k++) {
            State s = view_of(core_model, p, k);
            int conservative = 1;
            p[6][k] += ground_terms(&w, core_model, &s, g, p[4] + k * core_model->nq, p[5] + k * core_model->nq * core_model->nq,
                                   &conservative);
            p[7][k] = conservative;
        });
    release(b, 8);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ground_points(ground, rotation (B, n, 3, 3), position (B, n, 3), then per contact (B, C, ...): point, force,
 * stiffness (3, 3), energy, touching (uint8), slipping (uint8); per tyre (B, T, ...): contact point, force (9) on
 * centre, axis and friction point, compression, energy, touching, slipping, stiffness (9, 9) d force / d (centre,
 * axis, friction point), contact point's Jacobian (3, 6) d point / d (centre, axis)): each written where not None,
 * world axes (ground_points in ground.c). */
static PyObject *py_ground_points(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ground, *o[16];
    Buffer b[16] = {0};
    void *out[14] = {NULL};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOO", &ground, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15]))
        return NULL;
    GroundCapsule *c = PyCapsule_GetPointer(ground, "shiftsim.Ground");
    const GroundField *g = c ? &c->ground : NULL;
    double *rotation = g ? take(o[0], &b[0], 'd', 0, 0, "rotation") : NULL;
    double *position = rotation ? take(o[1], &b[1], 'd', 0, 0, "position") : NULL;
    int64_t n = c ? c->n_nodes : 0, batch = position ? (int64_t)(b[1].view.len / 8) / (3 * n) : -1;
    int ok = position && has_items(&b[0], 9 * n * batch, "rotation") && has_items(&b[1], 3 * n * batch, "position");
    static const char *names[14] = {"contact_point", "contact_force", "contact_stiffness", "contact_energy",
                                    "contact_touching", "contact_slipping", "tyre_point", "tyre_force",
                                    "tyre_compression", "tyre_energy", "tyre_touching", "tyre_slipping",
                                    "tyre_stiffness", "tyre_point_jacobian"};
    static const char kinds[14] = {'d', 'd', 'd', 'd', 'B', 'B', 'd', 'd', 'd', 'd', 'B', 'B', 'd', 'd'};
    if (ok) {
        int64_t per_case[14] = {3 * g->n_contacts, 3 * g->n_contacts, 9 * g->n_contacts, g->n_contacts, g->n_contacts,
                                g->n_contacts, 3 * g->n_tyres, 9 * g->n_tyres, g->n_tyres, g->n_tyres, g->n_tyres,
                                g->n_tyres, 81 * g->n_tyres, 18 * g->n_tyres};
        for (int i = 0; i < 14 && ok; i++) {
            out[i] = take(o[2 + i], &b[2 + i], kinds[i], 1, 1, names[i]);
            ok = !PyErr_Occurred() && has_items(&b[2 + i], batch * per_case[i], names[i]);
        }
    }
    if (ok) {
        int64_t nc = g->n_contacts, nt = g->n_tyres;
        for (int64_t k = 0; k < batch; k++) {
            State s = {NULL, rotation + 9 * n * k, position + 3 * n * k, NULL, NULL};
#define AT(i, type, size) (out[i] ? (type *)out[i] + k * (size) : NULL)
            GroundPoints points = {AT(0, double, 3 * nc), AT(1, double, 3 * nc), AT(2, double, 9 * nc), AT(3, double, nc),
                                   AT(4, uint8_t, nc), AT(5, uint8_t, nc), AT(6, double, 3 * nt), AT(7, double, 9 * nt),
                                   AT(8, double, nt), AT(9, double, nt), AT(10, uint8_t, nt), AT(11, uint8_t, nt),
                                   AT(12, double, 81 * nt), AT(13, double, 18 * nt)};
#undef AT
            ground_points(&s, g, &points);
        }
    }
    release(b, 16);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* pair_distance(model, rotation, position, omega, v, frame_a, frame_c, distance, x (B), grad (B, nq),
 * hess (B, nq, nq)) */
static PyObject *py_pair_distance(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[7];
    int64_t frame_a, frame_c, distance;
    Buffer b[7] = {0};
    double *p[4], *x, *grad, *hess;
    if (!PyArg_ParseTuple(args, "OOOOOLLLOOO", &model, &o[0], &o[1], &o[2], &o[3], &frame_a, &frame_c, &distance,
                          &o[4], &o[5], &o[6]))
        return NULL;
    const Model *core_model = model_of(model);
    int64_t batch = core_model ? take_states(core_model, o, b, p) : -1;
    int frames_ok = frame_a >= 0 && frame_c >= 0 && core_model && frame_a < core_model->n_frames && frame_c < core_model->n_frames
                    && distance >= 0 && distance <= 3;
    if (batch >= 0 && !frames_ok)
        PyErr_SetString(PyExc_ValueError, "pair_distance: frame out of range or distance type not in 0..3");
    if (batch >= 0 && frames_ok && (x = take(o[4], &b[4], 'd', 1, 0, "x")) && (grad = take(o[5], &b[5], 'd', 1, 0, "grad"))
        && (hess = take(o[6], &b[6], 'd', 1, 0, "hess")) && has_items(&b[4], batch, "x") && has_items(&b[5], batch * core_model->nq, "grad")
        && has_items(&b[6], batch * core_model->nq * core_model->nq, "hess"))
        GUARDED(core_model, kernel_workspace_doubles(core_model), for (int64_t k = 0; k < batch; k++) {
            State s = view_of(core_model, p, k);
            x[k] = pair_distance(&w, core_model, &s, frame_a, frame_c, distance, grad + k * core_model->nq, hess + k * core_model->nq * core_model->nq);
        });
    release(b, 7);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* polynomials(coefficients (count, degree) constant term first, x (count), f, df, energy (count)) */
static PyObject *py_polynomials(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5];
    Buffer b[5] = {0};
    double *p[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &o[0], &o[1], &o[2], &o[3], &o[4])) return NULL;
    int ok = 1;
    for (int i = 0; i < 5 && ok; i++) ok = (p[i] = take(o[i], &b[i], 'd', i >= 2, 0, "polynomial array")) != NULL;
    int64_t count = ok ? (int64_t)(b[1].view.len / 8) : 0, degree = count ? (int64_t)(b[0].view.len / 8) / count : 0;
    static const char *names[5] = {"polynomials: coefficients (count, degree)", "x", "f", "df", "energy"};
    for (int i = 0; i < 5 && ok; i++) ok = has_items(&b[i], i == 0 ? count * degree : count, names[i]);
    if (ok) {
        for (int64_t i = 0; i < count; i++) polynomial_law(p[0] + i * degree, degree, p[1][i], p[2] + i, p[3] + i, p[4] + i);
    }
    release(b, 5);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* joint_loads(model, q (nq), multipliers (6 K), gravity (3), frames (L) int64, forces, torques (L, 3), follow (L)
 *             int64, point_node (P) int64, point, force (P, 3), wrench_world (J, 6), rotation (J, 3, 3),
 *             effort (nq)): the loads every joint carries at an equilibrium (joint_loads in loads.c). */
static PyObject *py_joint_loads(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[13];
    Buffer b[13] = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOO", &model, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10], &o[11], &o[12]))
        return NULL;
    const Model *core_model = model_of(model);
    static const char kinds[] = "dddqddqqddddd";
    void *p[13];
    int ok = core_model != NULL;
    for (int i = 0; i < 13 && ok; i++) ok = (p[i] = take(o[i], &b[i], kinds[i], i >= 10, 0, "joint_loads array")) != NULL;
    if (ok) {
        int64_t loads = b[3].view.shape[0], points = b[7].view.shape[0];
        static const char *names[14] = {"q", "multipliers", "gravity", "frames", "forces", "torques", "follow", "point_node",
                                        "point", "force", "wrench_world", "rotation", "effort"};
        int64_t counts[13] = {core_model->nq, 6 * core_model->n_closures, 3, loads, 3 * loads, 3 * loads, loads, points, 3 * points,
                              3 * points, 6 * core_model->n_joints, 9 * core_model->n_joints, core_model->nq};
        for (int i = 0; i < 13 && ok; i++) ok = has_items(&b[i], counts[i], names[i]);
        ok = ok && has_indices_below(&b[3], core_model->n_frames, "frames") && has_indices_below(&b[7], core_model->n_nodes, "point_node");
    }
    if (ok) {
        GUARDED(core_model, kernel_workspace_doubles(core_model), State s = state_new(&w, core_model);
                node_state(core_model, p[0], &s);
                joint_loads(&w, core_model, &s, p[1], p[2], b[3].view.shape[0], p[3], p[4], p[5], p[6], b[7].view.shape[0], p[7],
                            p[8], p[9], p[10], p[11], p[12]));
    }
    release(b, 13);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* assemble(model, problem, q (nq) in place, tolerance, max_iterations) -> (residual norm, iterations): close the
 * loops by moving the problem's free coordinates (assemble_case in newton.c). */
static PyObject *py_assemble(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *problem, *o;
    double tolerance;
    int64_t max_iterations, iterations = 0;
    Buffer b = {0};
    if (!PyArg_ParseTuple(args, "OOOdL", &model, &problem, &o, &tolerance, &max_iterations)) return NULL;
    const Model *core_model = model_of(model);
    ProblemCapsule *c = problem_of(problem);
    double *q = core_model && c ? take(o, &b, 'd', 1, 0, "q") : NULL, norm = 0.0;
    if (q && !has_items(&b, core_model->nq, "q")) q = NULL;
    if (q) GUARDED(core_model, workspace_doubles(core_model, &c->problem, 0, FOR_ASSEMBLE),
                   norm = assemble_case(&w, core_model, &c->problem, q, tolerance, max_iterations, &iterations));
    release(&b, 1);
    if (c && raise_kept(c)) return NULL;
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("dL", norm, iterations);
}

/* pivoted_rank(a (rows, cols), tolerance, order (cols) int64 out) -> rank: Householder QR with column pivoting
 * (pivoted_rank in linalg.c); the first ``rank`` entries of order are independent columns. */
static PyObject *py_pivoted_rank(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    double tolerance;
    Buffer b[2] = {0};
    volatile int64_t rank = -1; /* set inside a memory scope (setjmp) */
    if (!PyArg_ParseTuple(args, "OdO", &o[0], &tolerance, &o[1])) return NULL;
    double *a = take(o[0], &b[0], 'd', 0, 0, "a");
    int64_t *order = a ? take(o[1], &b[1], 'q', 1, 0, "order") : NULL;
    if (order && b[0].view.ndim != 2)
        PyErr_SetString(PyExc_ValueError, "pivoted_rank: a 2-d array is needed");
    else if (order && has_items(&b[1], b[0].view.shape[1], "pivoted_rank: order (one entry per column of a)"))
    {
        int64_t rows = b[0].view.shape[0], cols = b[0].view.shape[1];
        CoreScope scope;
        Workspace w;
        core_scope_open(&scope);
        if (setjmp(scope.jump) == 0) {
            workspace_open(&w, sizeof(double) * (size_t)(rows * cols + rows + cols + 8));
            rank = pivoted_rank(&w, rows, cols, a, tolerance, order);
            workspace_close(&w);
            core_scope_close(&scope);
        } else {
            core_scope_unwind(&scope);
            PyErr_Format(PyExc_MemoryError, "pivoted_rank: %s for a %lld x %lld matrix", status_messages[CORE_NO_MEMORY],
                         (long long)rows, (long long)cols);
        }
    }
    release(b, 2);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(rank);
}

/* ------------------------------------------------------------------ statics */
typedef struct {
    const Model *core_model;
    const Problem *p;
    const double *gravity, *force, *torque, *rates, *q_start;
    const int64_t *classify;
    double *q, *multipliers, *flags, *neutral;
    uint8_t *unheld, *runaway;
} SolveJob;

static void solve_work(void *job, int64_t b, Workspace *w) {
    SolveJob *j = job;
    const Model *core_model = j->core_model;
    const Problem *p = j->p;
    int64_t nq = core_model->nq, nf = p->nf, loads = 3 * p->n_loads;
    Case c = {j->gravity + 3 * b, j->force + loads * b, j->torque + loads * b, j->rates + nq * b, 0.0, 0.0};
    case_scales(w, core_model, j->q_start + nq * b, p->n_loads, c.gravity, c.force, c.torque, &c.force_floor, &c.size);
    solve_case(w, core_model, p, &c, j->q_start + nq * b, j->classify[b], j->q + nq * b, j->multipliers + p->m * b,
               j->flags + RESULT_FLAGS * b, j->neutral + nf * nf * b, j->unheld + nf * b, j->runaway + nf * b);
    j->flags[RESULT_FLAGS * b + FLAG_size] = c.size, j->flags[RESULT_FLAGS * b + FLAG_force_floor] = c.force_floor;
}

/* solve(model, problem, gravity (B, 3), force (B, L, 3), torque (B, L, 3), rates (B, nq), q_start (B, nq),
 *       classify (B) int64, q (B, nq), multipliers (B, m), flags (B, 7), neutral (B, nf, nf), unheld (B, nf)
 *       uint8, runaway (B, nf) uint8, threads): equilibria of B cases (solve_case in newton.c); flags per
 * case: converged, iterations, residual norm, stability code, neutral count, size (m), force floor (N m). */
static PyObject *py_solve(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *problem, *o[12];
    int64_t threads;
    Buffer b[12] = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOL", &model, &problem, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &threads))
        return NULL;
    ProblemCapsule *c = problem_of(problem);
    SolveJob job = {model_of(model), c ? &c->problem : NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, NULL};
    static const char kinds[] = "dddddqddddBB";
    void *p[12];
    int ok = job.core_model && job.p;
    for (int i = 0; i < 12 && ok; i++) ok = (p[i] = take(o[i], &b[i], kinds[i], i >= 6, 0, "solve array")) != NULL;
    if (ok) {
        int64_t batch = (int64_t)(b[5].view.len / 8), nq = job.core_model->nq, nf = job.p->nf, loads = 3 * job.p->n_loads;
        static const char *names[12] = {"gravity", "force", "torque", "rates", "q_start", "classify", "q",
                                        "multipliers", "flags", "neutral", "unheld", "runaway"};
        int64_t per_case[12] = {3, loads, loads, nq, nq, 1, nq, job.p->m, RESULT_FLAGS, nf * nf, nf, nf};
        for (int i = 0; i < 12 && ok; i++) ok = has_items(&b[i], batch * per_case[i], names[i]);
    }
    if (ok) {
        job.gravity = p[0], job.force = p[1], job.torque = p[2], job.rates = p[3], job.q_start = p[4];
        job.classify = p[5], job.q = p[6], job.multipliers = p[7], job.flags = p[8], job.neutral = p[9];
        job.unheld = p[10], job.runaway = p[11];
        int calls_python = c->apply || c->terms; /* native ground fields need no GIL */
        int64_t batch = (int64_t)(b[5].view.len / 8), loads = 3 * job.p->n_loads, tree = 1;
        for (int64_t k = 0; k < batch && tree; k++) { /* the dense size unless every case has tree structure */
            Case one = {job.gravity + 3 * k, job.force + loads * k, job.torque + loads * k, NULL, 0.0, 0.0};
            tree = is_tree_structured(job.core_model, job.p, &one);
        }
        size_t doubles = workspace_doubles(job.core_model, job.p, tree, FOR_SOLVE);
        if (run_cases(solve_work, &job, doubles, batch, threads, calls_python) != CORE_OK)
            no_memory(job.core_model, doubles);
    }
    release(b, 12);
    if (c && raise_kept(c)) return NULL;
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

typedef struct {
    const Model *core_model;
    const ChainJob *job;
} ChainRun;

static void chain_work(void *job, int64_t k, Workspace *w) {
    const ChainRun *run = job;
    solve_chain(w, run->core_model, run->job, k);
}

/* solve_chain(model, problem, assembly_problem, held (h) int64, held_step, tolerance, rank_tolerance, max_iterations,
 *             chain_start (K + 1) int64, q_first (K, nq), target (C, nq), gravity (C, 3), force (C, L, 3),
 *             torque (C, L, 3), outcome (C) int64, assembled (C, nq), flags (C, 7), q (C, nq), q_reference (C, nq),
 *             multipliers (C, 6 n_closures), wrench (C, J, 6), rotation (C, J, 3, 3), effort (C, nq), threads):
 * K continuation chains of C steps in all (solve_chain in chain.c), the chains on ``threads`` threads. */
static PyObject *py_solve_chain(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *problem, *assembly, *o[16];
    int64_t threads;
    ChainJob job;
    memset(&job, 0, sizeof job);
    Buffer b[16] = {0};
    if (!PyArg_ParseTuple(args, "OOOOdddLOOOOOOOOOOOOOOOL", &model, &problem, &assembly, &o[0], &job.held_step,
                          &job.tolerance, &job.rank_tolerance, &job.max_iterations, &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &threads))
        return NULL;
    const Model *core_model = model_of(model);
    ProblemCapsule *c = core_model ? problem_of(problem) : NULL, *a = c ? problem_of(assembly) : NULL;
    static const char kinds[] = "qdddddqdddddddd"; /* held (q) first, then these */
    static const char *names[16] = {"held", "chain_start", "q_first", "target", "gravity", "force", "torque", "outcome",
                                    "assembled", "flags", "q", "q_reference", "multipliers", "wrench", "rotation",
                                    "effort"};
    void *p[16];
    int ok = a != NULL;
    for (int i = 0; i < 16 && ok; i++) ok = (p[i] = take(o[i], &b[i], i ? kinds[i - 1] : 'q', i >= 7, 0, names[i])) != NULL;
    int64_t chains = ok ? (int64_t)(b[1].view.len / 8) - 1 : 0, steps = ok ? (int64_t)(b[7].view.len / 8) : 0;
    if (ok) {
        int64_t nq = core_model->nq, loads = 3 * c->problem.n_loads, joints = core_model->n_joints;
        int64_t per_step[16] = {0, 0, 0, nq, 3, loads, loads, 1, nq, RESULT_FLAGS, nq, nq, 6 * core_model->n_closures,
                                6 * joints, 9 * joints, nq};
        ok = chains >= 0 && has_indices_below(&b[0], nq, "held") && has_items(&b[2], chains * nq, names[2]);
        for (int i = 3; i < 16 && ok; i++) ok = has_items(&b[i], steps * per_step[i], names[i]);
        const int64_t *start = p[1];
        for (int64_t k = 0; k < chains && ok; k++)
            if (start[0] != 0 || start[k] > start[k + 1] || start[chains] != steps) {
                PyErr_SetString(PyExc_ValueError, "chain_start: expected 0, ascending, ending at the step count");
                ok = 0;
            }
        if (ok && (c->problem.nf != a->problem.nf || memcmp(c->problem.free, a->problem.free,
                                                           sizeof(int64_t) * (size_t)c->problem.nf) != 0)) {
            PyErr_SetString(PyExc_ValueError, "solve_chain: the assembly problem must move the solve's free coordinates");
            ok = 0;
        }
    }
    if (ok && chains > 0) {
        job.p = &c->problem, job.assembly = &a->problem, job.n_held = (int64_t)(b[0].view.len / 8), job.held = p[0];
        job.chain_start = p[1], job.q_first = p[2], job.target = p[3], job.gravity = p[4], job.force = p[5];
        job.torque = p[6], job.outcome = p[7], job.assembled = p[8], job.flags = p[9], job.q = p[10];
        job.q_reference = p[11], job.multipliers = p[12], job.wrench = p[13], job.rotation = p[14], job.effort = p[15];
        int64_t loads = 3 * c->problem.n_loads, tree = 1;
        for (int64_t k = 0; k < steps && tree; k++) {
            Case one = {job.gravity + 3 * k, job.force + loads * k, job.torque + loads * k, NULL, 0.0, 0.0};
            tree = is_tree_structured(core_model, job.p, &one);
        }
        ChainRun run = {core_model, &job};
        size_t doubles = chain_workspace_doubles(core_model, &job, (int)tree);
        if (run_cases(chain_work, &run, doubles, chains, threads, c->apply || c->terms || a->apply) != CORE_OK)
            no_memory(core_model, doubles);
    }
    release(b, 16);
    if (a && raise_kept(a)) return NULL;
    if (c && raise_kept(c)) return NULL;
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* evaluate(model, problem, gravity (3), force (L, 3), torque (L, 3), q (nq), multipliers (m) or None,
 *          residual (nf), closure (m), g_u (m, nf), hessian (nf, nf), scalars (5), q_force_reduced (nf),
 *          multipliers_out (m)): the evaluation of one configuration (evaluate_case in newton.c); scalars:
 * energy, force scale, conservative, size, force floor. */
static PyObject *py_evaluate(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *problem, *o[12];
    Buffer b[12] = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOO", &model, &problem, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11]))
        return NULL;
    ProblemCapsule *c = problem_of(problem);
    const Model *core_model = model_of(model);
    void *p[12];
    int ok = core_model && c;
    for (int i = 0; i < 12 && ok; i++) {
        p[i] = take(o[i], &b[i], 'd', i >= 5, i == 4, "evaluate array");
        ok = !PyErr_Occurred();
    }
    if (ok) {
        const Problem *pr = &c->problem;
        static const char *names[12] = {"gravity", "force", "torque", "q", "multipliers", "residual", "closure", "g_u",
                                        "hessian", "scalars", "q_force_reduced", "multipliers_out"};
        int64_t counts[12] = {3, 3 * pr->n_loads, 3 * pr->n_loads, core_model->nq, pr->m, pr->nf, pr->m, pr->m * pr->nf,
                              pr->nf * pr->nf, EVALUATION_SCALARS, pr->nf, pr->m};
        for (int i = 0; i < 12 && ok; i++) ok = has_items(&b[i], counts[i], names[i]);
    }
    if (ok) {
        GUARDED(core_model, workspace_doubles(core_model, &c->problem, 0, FOR_EVALUATE) + (size_t)core_model->nq + 2, {
        double *zeros = ws_doubles(&w, core_model->nq), *scalars = p[9];
        Case k = {p[0], p[1], p[2], zeros, 0.0, 0.0};
        case_scales(&w, core_model, p[3], c->problem.n_loads, k.gravity, k.force, k.torque, &k.force_floor, &k.size);
        evaluate_case(&w, core_model, &c->problem, &k, p[3], p[4], p[5], p[6], p[7], p[8], scalars, p[10], p[11]);
        scalars[SCALAR_size] = k.size, scalars[SCALAR_force_floor] = k.force_floor;
        });
    }
    release(b, 12);
    if (c && raise_kept(c)) return NULL;
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ partial derivatives */
typedef struct {
    const Model *core_model;
    const double *q, *multipliers, *gravity, *load_force, *load_torque, *load_factor;
    const int64_t *load_frame, *load_follow, *parameters, *motion_start, *motion;
    int64_t n_loads, n_parameters;
    double *force, *closure;
    const GroundField *ground; /* NULL: none (no row of kind ground) */
    const int64_t *ground_members;
    double *contact_partials, *tyre_partials; /* (B, C, 3, P), (B, T, 9, P) or NULL */
} PartialsJob;

static void partials_work(void *job, int64_t b, Workspace *w) {
    PartialsJob *j = job;
    const Model *core_model = j->core_model;
    int64_t nq = core_model->nq, K = core_model->n_closures, L = j->n_loads, P = j->n_parameters;
    size_t mark = ws_mark(w);
    State s = state_new(w, core_model);
    node_state(core_model, j->q + nq * b, &s);
    Loads loads = {L, j->load_frame, j->load_follow, j->load_force + 3 * L * b, j->load_torque + 3 * L * b,
                   j->load_factor + L * b};
    force_partials(w, core_model, j->q + nq * b, &s, j->gravity + 3 * b, &loads, j->multipliers + 6 * K * b, P,
                   j->parameters, j->motion_start, j->motion, j->force + nq * P * b, j->closure + 6 * K * P * b);
    const GroundField *g = j->ground;
    if (g)
        ground_partials(w, core_model, &s, g, P, j->parameters, j->ground_members, j->motion_start, j->motion,
                        j->force + nq * P * b,
                        j->contact_partials ? j->contact_partials + 3 * g->n_contacts * P * b : NULL,
                        j->tyre_partials ? j->tyre_partials + 9 * g->n_tyres * P * b : NULL);
    ws_release(w, mark);
}

/* Whether a ground parameter row (PARAMETER_GROUND, what, start, count) names what it scales and members within the
 * ground field ``g`` (contacts, then tyres; a radius scales tyres only); false with a ValueError naming row ``i``. */
static bool is_valid_ground_row(const GroundField *g, const int64_t *r, int64_t i, const int64_t *members,
                                int64_t n_members) {
    const char *wrong = !g ? "is a ground parameter but no ground field was given"
                      : r[1] < 0 || r[1] >= GROUND_PARAMETERS ? "scales no law number (GROUND_PARAMETERS)"
                      : r[2] < 0 || r[3] < 0 || r[2] > n_members - r[3] ? "has members outside ground_members"
                      : NULL;
    for (int64_t e = wrong ? 0 : r[2]; !wrong && e < r[2] + r[3]; e++)
        if (members[e] < (r[1] == GROUND_RADIUS ? g->n_contacts : 0) || members[e] >= g->n_contacts + g->n_tyres)
            wrong = r[1] == GROUND_RADIUS ? "scales the radius of a member that is not a tyre"
                                          : "has a member that is not a contact or tyre of the ground field";
    if (wrong)
        PyErr_Format(PyExc_ValueError, "partials: parameter row %lld (ground, %lld, %lld, %lld) %s", (long long)i,
                     (long long)r[1], (long long)r[2], (long long)r[3], wrong);
    return !wrong;
}

/* Whether every parameter row (P, 4) is of a kind of SHIFTSIM_PARAMETER_KINDS with a target, component and piece
 * this model (and its ground field ``g``, members (M)) has, and the frame motion rows hold; false with a ValueError
 * naming the row otherwise. */
static bool has_valid_parameters(const Model *m, const int64_t *rows, int64_t count, int64_t n_loads,
                                 const int64_t *motion_start, const int64_t *motion, int64_t n_motion,
                                 const GroundField *g, const int64_t *members, int64_t n_members) {
    for (int64_t i = 0; i < count; i++) {
        const int64_t *r = rows + 4 * i;
        if (r[0] == PARAMETER_NONE) continue; /* a term the caller adds: a zero column here */
        if (r[0] == PARAMETER_GROUND) {
            if (!is_valid_ground_row(g, r, i, members, n_members)) return false;
            continue;
        }
        int64_t limit = r[0] == PARAMETER_MASS || r[0] == PARAMETER_COM ? m->n_nodes
                      : r[0] == PARAMETER_FRAME ? m->n_frames : r[0] == PARAMETER_SPRING ? m->n_springs
                      : r[0] == PARAMETER_RESTRAINT ? m->n_joint_laws : r[0] == PARAMETER_PAIR ? m->n_pairs
                      : r[0] == PARAMETER_LOAD ? n_loads : r[0] == PARAMETER_GRAVITY ? 3 : 0;
        int64_t components = r[0] == PARAMETER_COM || r[0] == PARAMETER_FRAME ? 3
                           : r[0] == PARAMETER_SPRING ? m->spring_degree : r[0] == PARAMETER_LOAD ? 7
                           : r[0] == PARAMETER_RESTRAINT || r[0] == PARAMETER_PAIR ? m->law_intervals : 1;
        if (r[1] < 0 || r[1] >= limit || r[2] < 0 || r[2] >= (components > 0 ? components : 1) || r[3] < 0) {
            PyErr_Format(PyExc_ValueError, "partials: parameter row %lld (kind %lld, target %lld, %lld, %lld) outside "
                         "this model (target below %lld, component below %lld)", (long long)i, (long long)r[0],
                         (long long)r[1], (long long)r[2], (long long)r[3], (long long)limit, (long long)components);
            return false;
        }
    }
    for (int64_t f = 0; f < m->n_frames; f++)
        if (motion_start[f] < 0 || motion_start[f] > motion_start[f + 1] || motion_start[f + 1] > n_motion) {
            PyErr_Format(PyExc_ValueError, "partials: motion_start[%lld] outside [0, %lld]", (long long)f,
                         (long long)n_motion);
            return false;
        }
    for (int64_t e = 0; e < n_motion; e++) {
        const int64_t *r = motion + 4 * e;
        bool point = r[0] == MOTION_POINT;
        if ((!point && r[0] != MOTION_SUBTREE) || r[1] < 0 || r[1] >= m->n_nodes
            || (point && (r[2] < 0 || r[2] >= m->n_closures)) || (r[3] != 1 && r[3] != -1)) {
            PyErr_Format(PyExc_ValueError, "partials: motion row %lld is not (point, node, closure, +-1) nor "
                         "(subtree, node, 0 or 1, +-1) of this model", (long long)e);
            return false;
        }
    }
    return true;
}

/* partials(model, q (B, nq), multipliers (B, 6 K), gravity (B, 3), load_frame (L) int64, load_force (B, L, 3),
 *          load_torque (B, L, 3), load_factor (B, L), load_follow (L) int64, parameters (P, 4) int64,
 *          motion_start (F + 1) int64, motion (E, 4) int64, force (B, nq, P), closure (B, 6 K, P), threads[, ground,
 *          ground_members (M) int64, contact_partials (B, C, 3, P), tyre_partials (B, T, 9, P)]): the residual's
 * partial derivatives with respect to P design parameters at B configurations (force_partials in partials.c; the
 * ground parameters' by ground_partials in ground.c, on the ground capsule ``ground``, which also writes the world
 * forces' partials where those arrays are given, not None), over the batch's threads as solve. */
static PyObject *py_partials(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *model, *o[16] = {NULL}, *ground = Py_None;
    int64_t threads;
    Buffer b[16] = {0};
    o[13] = o[14] = o[15] = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOL|OOOO", &model, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &threads, &ground, &o[13], &o[14], &o[15]))
        return NULL;
    PartialsJob job = {model_of(model), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL,
                       NULL, NULL, NULL, NULL, NULL};
    static const char kinds[] = "dddqdddqqqqddqdd";
    void *p[16];
    int ok = job.core_model != NULL;
    if (ok && ground != Py_None) ok = (job.ground = ground_of(ground, job.core_model->n_nodes)) != NULL;
    for (int i = 0; i < 16 && ok; i++)
        ok = (p[i] = take(o[i], &b[i], kinds[i], i >= 11 && i != 13, i >= 13, "partials array")) != NULL
             || (i >= 13 && o[i] == Py_None);
    int64_t batch = 0;
    for (int i = 8; i <= 10 && ok; i += 2)
        if (b[i].view.ndim != 2 || b[i].view.shape[1] != 4) {
            PyErr_Format(PyExc_ValueError, "partials: %s must have 4 columns (rows of kind, target and two indices)",
                         i == 8 ? "parameters (P, 4)" : "motion (E, 4)");
            ok = 0;
        }
    if (ok) {
        const Model *m = job.core_model;
        int64_t nq = m->nq, K = m->n_closures;
        batch = (int64_t)(b[2].view.len / 8) / 3;
        job.n_loads = (int64_t)(b[3].view.len / 8), job.n_parameters = (int64_t)(b[8].view.len / 32);
        int64_t L = job.n_loads, P = job.n_parameters, n_motion = (int64_t)(b[10].view.len / 32);
        const GroundField *g = job.ground;
        int64_t C = g ? g->n_contacts : 0, T = g ? g->n_tyres : 0, n_members = (int64_t)(b[13].view.len / 8);
        static const char *names[16] = {"q", "multipliers", "gravity", "load_frame", "load_force", "load_torque",
                                        "load_factor", "load_follow", "parameters (P, 4)", "motion_start",
                                        "motion (E, 4)", "force", "closure", "ground_members",
                                        "contact_partials (B, C, 3, P)", "tyre_partials (B, T, 9, P)"};
        int64_t counts[16] = {batch * nq, batch * 6 * K, batch * 3, L, batch * 3 * L, batch * 3 * L, batch * L, L, 4 * P,
                              m->n_frames + 1, 4 * n_motion, batch * nq * P, batch * 6 * K * P, n_members,
                              batch * C * 3 * P, batch * T * 9 * P};
        for (int i = 0; i < 16 && ok; i++) ok = has_items(&b[i], counts[i], names[i]);
        ok = ok && has_indices_below(&b[3], m->n_frames, "load_frame")
             && has_valid_parameters(m, p[8], P, L, p[9], p[10], n_motion, g, b[13].held ? p[13] : NULL, n_members);
    }
    if (ok) {
        job.q = p[0], job.multipliers = p[1], job.gravity = p[2], job.load_frame = p[3], job.load_force = p[4];
        job.load_torque = p[5], job.load_factor = p[6], job.load_follow = p[7], job.parameters = p[8];
        job.motion_start = p[9], job.motion = p[10], job.force = p[11], job.closure = p[12];
        job.ground_members = b[13].held ? p[13] : NULL;
        job.contact_partials = b[14].held ? p[14] : NULL, job.tyre_partials = b[15].held ? p[15] : NULL;
        size_t doubles = partials_workspace_doubles(job.core_model)
                       + (job.ground ? ground_partials_doubles(job.core_model, job.ground) : 0);
        if (run_cases(partials_work, &job, doubles, batch, threads, batch == 1) != CORE_OK)
            no_memory(job.core_model, doubles);
    }
    release(b, 16);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the outputs' partial derivatives */
typedef struct {
    PartialsJob at; /* the configurations, loads and parameters, as partials */
    const int64_t *ground_node, *outputs, *chosen;
    const double *ground_forces, *ground_rate, *ground_partial, *residual, *hessian, *force_partial;
    int64_t n_ground, n_outputs, n_chosen;
    double *value, *state_rows, *parameter_rows;
} OutputsJob;

static void outputs_work(void *job, int64_t b, Workspace *w) {
    OutputsJob *j = job;
    const Model *core_model = j->at.core_model;
    int64_t nq = core_model->nq, K = core_model->n_closures, L = j->at.n_loads, P = j->at.n_parameters;
    int64_t G = j->n_ground, Y = j->n_outputs, C = j->n_chosen;
    size_t mark = ws_mark(w);
    State s = state_new(w, core_model);
    node_state(core_model, j->at.q + nq * b, &s);
    Loads loads = {L, j->at.load_frame, j->at.load_follow, j->at.load_force + 3 * L * b, j->at.load_torque + 3 * L * b,
                   j->at.load_factor + L * b};
    PointForces ground = {G, j->ground_node + G * b, j->ground_forces + 9 * G * b, j->ground_rate + 6 * nq * G * b,
                          j->ground_partial + 6 * P * G * b};
    output_partials(w, core_model, j->at.q + nq * b, &s, j->at.gravity + 3 * b, &loads, j->at.multipliers + 6 * K * b,
                    &ground, P, j->at.parameters, j->at.motion_start, j->at.motion, j->residual + nq * b,
                    j->hessian + nq * nq * b, j->force_partial + nq * P * b, Y, j->outputs, C, j->chosen,
                    j->value + Y * b, j->state_rows + Y * C * b, j->parameter_rows + Y * P * b);
    ws_release(w, mark);
}

/* Whether every output row (Y, 4) is (kind of SHIFTSIM_OUTPUT_KINDS, target, component, 0) of this model: a
 * coordinate (joint, effort), a frame and axis, a closure and component (pin), a tree joint and component (wrench,
 * wrench_joint); false with a ValueError naming the row otherwise. */
static bool has_valid_outputs(const Model *m, const int64_t *rows, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        const int64_t *r = rows + 4 * i;
        bool wrench = r[0] == OUTPUT_WRENCH || r[0] == OUTPUT_WRENCH_JOINT;
        int64_t limit = r[0] == OUTPUT_JOINT || r[0] == OUTPUT_EFFORT ? m->nq : r[0] == OUTPUT_FRAME ? m->n_frames
                      : r[0] == OUTPUT_PIN ? m->n_closures : wrench ? m->n_joints : 0;
        int64_t components = r[0] == OUTPUT_FRAME ? 3 : r[0] == OUTPUT_PIN || wrench ? 6 : 1;
        bool tree = !wrench || (r[1] >= 0 && r[1] < limit && m->joint_closure[r[1]] < 0);
        if (r[1] < 0 || r[1] >= limit || r[2] < 0 || r[2] >= components || r[3] != 0 || !tree) {
            PyErr_Format(PyExc_ValueError, "output_partials: output row %lld (kind %lld, target %lld, %lld, %lld) "
                         "outside this model (expected a target below %lld, a component below %lld, 0; a wrench of a "
                         "tree joint)", (long long)i, (long long)r[0], (long long)r[1], (long long)r[2],
                         (long long)r[3], (long long)limit, (long long)components);
            return false;
        }
    }
    return true;
}

/* output_partials(model, q (B, nq), multipliers (B, 6 K), gravity (B, 3), load_frame (L) int64, load_force (B, L, 3),
 *                 load_torque (B, L, 3), load_factor (B, L), load_follow (L) int64, parameters (P, 4) int64,
 *                 motion_start (F + 1) int64, motion (E, 4) int64, ground_node (B, G) int64, ground_forces (B, G, 9),
 *                 ground_rate (B, G, nq, 6), ground_partial (B, G, 6, P), residual (B, nq), hessian (B, nq, nq),
 *                 force_partial (B, nq, P), outputs (Y, 4) int64, columns (C) int64, value (B, Y), state (B, Y, C),
 *                 explicit (B, Y, P), threads): the sensitivity outputs' values, their rows d/d(q, lambda) over the
 * chosen columns (indices into the nq coordinates, then the 6 K closure rows) and their explicit partial derivatives
 * at B configurations (output_partials.c), over the batch's threads as partials. */
static PyObject *py_output_partials(PyObject *self, PyObject *args) {
    (void)self;
    enum { ARRAYS = 23 };
    PyObject *model, *o[ARRAYS];
    int64_t threads;
    Buffer b[ARRAYS] = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOOOOL", &model, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18],
                          &o[19], &o[20], &o[21], &o[22], &threads))
        return NULL;
    OutputsJob job;
    memset(&job, 0, sizeof(job));
    job.at.core_model = model_of(model);
    static const char kinds[] = "dddqdddqqqqqddddddqqddd";
    void *p[ARRAYS];
    int ok = job.at.core_model != NULL;
    for (int i = 0; i < ARRAYS && ok; i++)
        ok = (p[i] = take(o[i], &b[i], kinds[i], i >= 20, 0, "output_partials array")) != NULL;
    static const int rows_of_four[3] = {8, 10, 18};
    for (int r = 0; r < 3 && ok; r++) {
        const Buffer *rows = &b[rows_of_four[r]];
        if (rows->view.ndim != 2 || rows->view.shape[1] != 4) {
            PyErr_Format(PyExc_ValueError, "output_partials: %s must have 4 columns",
                         r == 0 ? "parameters (P, 4)" : r == 1 ? "motion (E, 4)" : "outputs (Y, 4)");
            ok = 0;
        }
    }
    int64_t batch = 0;
    if (ok) {
        const Model *m = job.at.core_model;
        int64_t nq = m->nq, K = m->n_closures;
        batch = (int64_t)(b[2].view.len / 8) / 3;
        job.at.n_loads = (int64_t)(b[3].view.len / 8), job.at.n_parameters = (int64_t)(b[8].view.len / 32);
        job.n_ground = batch ? (int64_t)(b[11].view.len / 8) / batch : 0, job.n_outputs = (int64_t)(b[18].view.len / 32);
        job.n_chosen = (int64_t)(b[19].view.len / 8);
        int64_t L = job.at.n_loads, P = job.at.n_parameters, G = job.n_ground, Y = job.n_outputs, C = job.n_chosen;
        int64_t n_motion = (int64_t)(b[10].view.len / 32);
        static const char *names[ARRAYS] = {"q", "multipliers", "gravity", "load_frame", "load_force", "load_torque",
                                            "load_factor", "load_follow", "parameters (P, 4)", "motion_start",
                                            "motion (E, 4)", "ground_node", "ground_forces", "ground_rate",
                                            "ground_partial", "residual", "hessian", "force_partial", "outputs (Y, 4)",
                                            "columns", "value", "state", "explicit"};
        int64_t counts[ARRAYS] = {batch * nq, batch * 6 * K, batch * 3, L, batch * 3 * L, batch * 3 * L, batch * L, L,
                                  4 * P, m->n_frames + 1, 4 * n_motion, batch * G, batch * G * 9, batch * G * nq * 6,
                                  batch * G * 6 * P, batch * nq, batch * nq * nq, batch * nq * P, 4 * Y, C, batch * Y,
                                  batch * Y * C, batch * Y * P};
        for (int i = 0; i < ARRAYS && ok; i++) ok = has_items(&b[i], counts[i], names[i]);
        const int64_t *nodes = p[11];
        for (int64_t g = 0; g < batch * G && ok; g++)
            if (nodes[g] < -1 || nodes[g] >= m->n_nodes) {
                PyErr_Format(PyExc_ValueError, "output_partials: ground_node %lld is %lld, expected a node in [0, %lld) "
                             "or -1 (none)", (long long)g, (long long)nodes[g], (long long)m->n_nodes);
                ok = 0;
            }
        ok = ok && has_indices_below(&b[3], m->n_frames, "load_frame")
             && has_indices_below(&b[19], nq + 6 * K, "columns") && has_valid_outputs(m, p[18], Y)
             && has_valid_parameters(m, p[8], P, L, p[9], p[10], n_motion, NULL, NULL, 0); /* the ground's: records */
    }
    if (ok) {
        job.at.q = p[0], job.at.multipliers = p[1], job.at.gravity = p[2], job.at.load_frame = p[3];
        job.at.load_force = p[4], job.at.load_torque = p[5], job.at.load_factor = p[6], job.at.load_follow = p[7];
        job.at.parameters = p[8], job.at.motion_start = p[9], job.at.motion = p[10], job.ground_node = p[11];
        job.ground_forces = p[12], job.ground_rate = p[13], job.ground_partial = p[14], job.residual = p[15];
        job.hessian = p[16], job.force_partial = p[17], job.outputs = p[18], job.chosen = p[19];
        job.value = p[20], job.state_rows = p[21], job.parameter_rows = p[22];
        size_t doubles = output_partials_workspace_doubles(job.at.core_model, job.at.n_loads, job.n_ground,
                                                           job.at.n_parameters);
        if (run_cases(outputs_work, &job, doubles, batch, threads, batch == 1) != CORE_OK)
            no_memory(job.at.core_model, doubles);
    }
    release(b, ARRAYS);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* linear_algebra(name, a (rows, cols), b, out, shift_or_rcond) -> status: the dense kernels of linalg.c on their own,
 * for tests against numpy and scipy. name: "cholesky_solve" (a square, out = x, shift), "lu_solve" (out = x),
 * "pseudo_solve" (b (rows), out = x (cols), rcond), "null_space" (out (cols, cols - rows)), "symmetric_eigen"
 * (b = values out (n), out = vectors (n, n)). Returns the kernel's status (_core.STATUSES: 0 = ok, "singular" from
 * lu_solve, "not_definite" from cholesky_solve), 0 for the kernels that cannot fail. */
static PyObject *py_linear_algebra(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *o[3];
    double parameter;
    Buffer b[3] = {0};
    volatile Status status = CORE_OK; /* set inside a memory scope (setjmp) */
    if (!PyArg_ParseTuple(args, "sOOOd", &name, &o[0], &o[1], &o[2], &parameter)) return NULL;
    double *a = take(o[0], &b[0], 'd', 0, 0, "a"), *rhs = NULL, *out = NULL;
    int eigen = strcmp(name, "symmetric_eigen") == 0;
    if (a) rhs = take(o[1], &b[1], 'd', eigen, 1, "b");
    if (a && !PyErr_Occurred()) out = take(o[2], &b[2], 'd', 1, 0, "out");
    if (out && b[0].view.ndim != 2) PyErr_SetString(PyExc_ValueError, "linear_algebra: a must be 2-d");
    if (out && !PyErr_Occurred()) {
        int64_t rows = b[0].view.shape[0], cols = b[0].view.shape[1];
        int square = rows == cols, known = 1, ok = 1;
        if (!strcmp(name, "cholesky_solve") || !strcmp(name, "lu_solve"))
            ok = square && b[1].held && has_items(&b[1], rows, "b") && has_items(&b[2], rows, "out");
        else if (!strcmp(name, "pseudo_solve"))
            ok = b[1].held && has_items(&b[1], rows, "b") && has_items(&b[2], cols, "out");
        else if (!strcmp(name, "null_space"))
            ok = rows <= cols && has_items(&b[2], cols * (cols - rows), "out");
        else if (eigen)
            ok = square && b[1].held && has_items(&b[1], rows, "b") && has_items(&b[2], rows * rows, "out");
        else
            known = 0;
        if (!known)
            PyErr_Format(PyExc_ValueError, "linear_algebra: unknown kernel %s (cholesky_solve, lu_solve, pseudo_solve, "
                         "null_space, symmetric_eigen)", name);
        else if (!ok && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "linear_algebra: shapes do not fit the kernel");
        else if (ok) {
            CoreScope scope;
            Workspace w;
            core_scope_open(&scope);
            if (setjmp(scope.jump) == 0) {
                workspace_open(&w, sizeof(double) * (size_t)(2 * (rows + cols + 2) * (rows + cols + 2)));
                if (!strcmp(name, "cholesky_solve")) status = cholesky_solve(&w, rows, a, parameter, rhs, out);
                else if (!strcmp(name, "lu_solve")) status = lu_solve(&w, rows, a, rhs, out);
                else if (!strcmp(name, "pseudo_solve")) pseudo_solve(&w, rows, cols, a, rhs, parameter, out);
                else if (!strcmp(name, "null_space")) null_space(&w, rows, cols, a, out);
                else symmetric_eigen(&w, rows, a, rhs, out);
                workspace_close(&w);
                core_scope_close(&scope);
            } else {
                core_scope_unwind(&scope);
                PyErr_Format(PyExc_MemoryError, "linear_algebra: %s", status_messages[CORE_NO_MEMORY]);
            }
        }
    }
    release(b, 3);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(status);
}

/* fail_allocation(n): debug hook, the n-th allocation the core makes from now fails (0: none). */
static PyObject *py_fail_allocation(PyObject *self, PyObject *args) {
    (void)self;
    int64_t n;
    if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
    core_fail_allocation(n > 0 ? n : 0);
    Py_RETURN_NONE;
}

/* live_allocations() -> blocks the core has allocated and not yet freed (0 between calls). */
static PyObject *py_live_allocations(PyObject *self, PyObject *args) {
    (void)self, (void)args;
    return PyLong_FromLongLong(core_live_blocks());
}

/* cap_workspaces(bytes): debug hook, every workspace opened from now holds at most this many bytes (0: as sized), so
 * that tests can make the kernels' requests overflow it. */
static PyObject *py_cap_workspaces(PyObject *self, PyObject *args) {
    (void)self;
    int64_t bytes;
    if (!PyArg_ParseTuple(args, "L", &bytes)) return NULL;
    core_cap_workspaces(bytes > 0 ? (size_t)bytes : 0);
    Py_RETURN_NONE;
}

/* allocations() -> (allocations made, workspace requests beyond a workspace's size), both since the module was
 * loaded: a solve makes one allocation per thread (its workspace), however many iterations it takes. */
static PyObject *py_allocations(PyObject *self, PyObject *args) {
    (void)self, (void)args;
    return Py_BuildValue("LL", (long long)core_allocations(), (long long)core_workspace_overflows());
}

static PyMethodDef methods[] = {
    {"model", py_model, METH_VARARGS, "model(arrays) -> capsule: a model for the core (see api.c)"},
    {"problem", py_problem, METH_VARARGS, "problem(...) -> capsule: a statics problem (see api.c)"},
    {"ground", py_ground, METH_VARARGS, "ground(model, arrays) -> capsule: ground contacts and tyres (see api.c)"},
    {"ground_terms", py_ground_terms, METH_VARARGS, "the ground field's generalized force and stiffness"},
    {"ground_points", py_ground_points, METH_VARARGS, "each contact's and tyre's point, force and state"},
    {"state", py_state, METH_VARARGS, "node poses and coordinate twists of a batch of configurations"},
    {"forward", py_forward, METH_VARARGS, "body and frame poses of a batch of configurations"},
    {"closures", py_closures, METH_VARARGS, "closure residual and Jacobian at given states"},
    {"point_hessian", py_point_hessian, METH_VARARGS, "direction . second derivatives of points"},
    {"terms", py_terms, METH_VARARGS, "one of the model's own force terms at given states"},
    {"pair_distance", py_pair_distance, METH_VARARGS, "distance of a pair restraint with its derivatives"},
    {"polynomials", py_polynomials, METH_VARARGS, "polynomial laws with slope and energy"},
    {"assemble", py_assemble, METH_VARARGS, "close the loops by moving the free coordinates"},
    {"joint_loads", py_joint_loads, METH_VARARGS, "the loads every joint carries at an equilibrium"},
    {"pivoted_rank", py_pivoted_rank, METH_VARARGS, "rank and independent columns by pivoted QR"},
    {"solve", py_solve, METH_VARARGS, "equilibria of a batch of cases"},
    {"solve_chain", py_solve_chain, METH_VARARGS, "continuation chains of steps, each from the previous equilibrium"},
    {"evaluate", py_evaluate, METH_VARARGS, "the solver's evaluation at one configuration"},
    {"partials", py_partials, METH_VARARGS, "the residual's partial derivatives with respect to design parameters"},
    {"output_partials", py_output_partials, METH_VARARGS, "the sensitivity outputs and their partial derivatives"},
    {"linear_algebra", py_linear_algebra, METH_VARARGS, "a dense kernel of linalg.c on its own (for tests)"},
    {"fail_allocation", py_fail_allocation, METH_VARARGS, "debug: the n-th allocation from now fails (0: none)"},
    {"live_allocations", py_live_allocations, METH_NOARGS, "blocks the core has allocated and not yet freed"},
    {"allocations", py_allocations, METH_NOARGS, "allocations made and workspace overflows since loading"},
    {"cap_workspaces", py_cap_workspaces, METH_VARARGS, "debug: workspaces of at most this many bytes (0: as sized)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", "shiftsim's compiled core (see shiftsim/core)", -1,
                                    methods, NULL, NULL, NULL, NULL};

/* A tuple of the names ``names`` (count), set on the module as ``attribute``; 0 = ok. */
static int export_names(PyObject *module, const char *attribute, const char *const *names, int count) {
    PyObject *tuple = PyTuple_New(count);
    if (!tuple) return -1;
    for (int i = 0; i < count; i++) {
        PyObject *name = PyUnicode_FromString(names[i]);
        if (!name) return Py_DECREF(tuple), -1;
        PyTuple_SET_ITEM(tuple, i, name);
    }
    return PyModule_AddObject(module, attribute, tuple) < 0 ? (Py_DECREF(tuple), -1) : 0;
}

#define PLAIN_NAME(name) #name,
#define CODE_NAME(c_name, python_name) #python_name,
static const char *const result_flag_names[] = {SHIFTSIM_RESULT_FLAGS(PLAIN_NAME)};
static const char *const evaluation_scalar_names[] = {SHIFTSIM_EVALUATION_SCALARS(PLAIN_NAME)};
static const char *const verdict_names[] = {SHIFTSIM_VERDICTS(CODE_NAME)};
static const char *const node_kind_names[] = {SHIFTSIM_NODE_KINDS(CODE_NAME)};
static const char *const distance_type_names[] = {SHIFTSIM_DISTANCE_TYPES(CODE_NAME)};
static const char *const chain_outcome_names[] = {SHIFTSIM_CHAIN_OUTCOMES(CODE_NAME)};
static const char *const parameter_kind_names[] = {SHIFTSIM_PARAMETER_KINDS(CODE_NAME)};
static const char *const frame_motion_names[] = {SHIFTSIM_FRAME_MOTIONS(CODE_NAME)};
static const char *const ground_parameter_names[] = {SHIFTSIM_GROUND_PARAMETERS(CODE_NAME)};
static const char *const output_kind_names[] = {SHIFTSIM_OUTPUT_KINDS(CODE_NAME)};
#undef PLAIN_NAME
#undef CODE_NAME
#define COUNT_OF(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* The module, with the tables of fields.h as name tuples (MODEL_FIELDS, SETTINGS_FIELDS, RESULT_FLAGS,
 * EVALUATION_SCALARS, VERDICTS, NODE_KINDS, DISTANCE_TYPES, CHAIN_OUTCOMES, PARAMETER_KINDS, FRAME_MOTIONS,
 * GROUND_PARAMETERS, OUTPUT_KINDS, STATUSES and their STATUS_MESSAGES; a code is its name's index). */
PyMODINIT_FUNC PyInit__core(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (export_names(m, "MODEL_FIELDS", model_field_names, MODEL_FIELDS) != 0
        || export_names(m, "SETTINGS_FIELDS", settings_field_names, SETTINGS_FIELDS) != 0
        || export_names(m, "GROUND_FIELDS", ground_field_names, GROUND_FIELDS) != 0
        || export_names(m, "RESULT_FLAGS", result_flag_names, COUNT_OF(result_flag_names)) != 0
        || export_names(m, "EVALUATION_SCALARS", evaluation_scalar_names, COUNT_OF(evaluation_scalar_names)) != 0
        || export_names(m, "VERDICTS", verdict_names, COUNT_OF(verdict_names)) != 0
        || export_names(m, "NODE_KINDS", node_kind_names, COUNT_OF(node_kind_names)) != 0
        || export_names(m, "DISTANCE_TYPES", distance_type_names, COUNT_OF(distance_type_names)) != 0
        || export_names(m, "CHAIN_OUTCOMES", chain_outcome_names, COUNT_OF(chain_outcome_names)) != 0
        || export_names(m, "PARAMETER_KINDS", parameter_kind_names, COUNT_OF(parameter_kind_names)) != 0
        || export_names(m, "FRAME_MOTIONS", frame_motion_names, COUNT_OF(frame_motion_names)) != 0
        || export_names(m, "GROUND_PARAMETERS", ground_parameter_names, COUNT_OF(ground_parameter_names)) != 0
        || export_names(m, "OUTPUT_KINDS", output_kind_names, COUNT_OF(output_kind_names)) != 0
        || export_names(m, "STATUSES", status_names, COUNT_OF(status_names)) != 0
        || export_names(m, "STATUS_MESSAGES", status_messages, COUNT_OF(status_messages)) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
