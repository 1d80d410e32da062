/* Ground contacts and tyres: a force field evaluated in the core (no Python call per evaluation).
 *
 * The ground is a surface in the scenario world (z up): a level plane, or a bilinear height grid whose edge cells
 * extend beyond it. The model frame sits in the world at placement_rotation R, placement_translation t (world <-
 * model: p_w = R p + t). Laws, world axes (docs/ground.md has the reasons, shiftsim/ground/contacts.py and tyres.py
 * the Python side):
 *
 * contact at world point p: penetration pen = h(x, y) - z; normal force -k_n pen (h_x, h_y, -1) for pen > 0 (the
 *   gradient of k_n pen^2 / 2); stick friction -k_t P (p - a) toward the anchor a in the ground's tangent plane
 *   there (projector P), saturating at mu N, N = k_n pen sqrt(1 + h_x^2 + h_y^2), along u = P (p - a) / |P (p - a)|.
 * tyre with centre c, spin axis a, friction point b: m = (-h_x, -h_y, 1) under c, w = m - (m.a) a, compression
 *   e = r - (c_z - h) / |w|; energy k e^2 / 2 for e > 0 (its gradient in (c, a) is the force); stick friction on b
 *   as for a contact, saturating at mu k e.
 *
 * Each law gives the force on its vectors and the derivative d force / d vector (analytic); ground_terms chains them
 * with the vectors' Jacobians and second derivatives along the coordinates: Q_k = J_k . f, K = J^T D J plus
 * f . d2x/dq2 (add_point_hessian; for a direction a, d2a/dq_j dq_k = omega_j x (omega_k x a)). ground_partials gives
 * the forces' derivatives with respect to the laws' numbers (stiffness, friction, radius: the ground parameters'
 * columns of partials.c), from the same pieces of each law, so that the regimes are the force's own.
 */
#include <math.h>
#include <string.h>

#include "core.h"

/* Height h, gradient (h_x, h_y) and twist d2h/dxdy of the surface at world (x, y). */
static void surface(const GroundField *g, double x, double y, double *h, double *gradient, double *twist) {
    if (g->nx == 0) {
        *h = g->level[0], gradient[0] = gradient[1] = 0.0, *twist = 0.0;
        return;
    }
    const double *gx = g->grid_x, *gy = g->grid_y, *gz = g->grid_z;
    int64_t i = 0, j = 0, high;
    for (high = g->nx; i < high;) { /* the count of grid_x entries <= x, as numpy's searchsorted(side="right") */
        int64_t mid = (i + high) / 2;
        if (gx[mid] <= x) i = mid + 1; else high = mid;
    }
    for (high = g->ny; j < high;) {
        int64_t mid = (j + high) / 2;
        if (gy[mid] <= y) j = mid + 1; else high = mid;
    }
    i = i - 1 < 0 ? 0 : i - 1 > g->nx - 2 ? g->nx - 2 : i - 1; /* edge cells extend beyond the grid */
    j = j - 1 < 0 ? 0 : j - 1 > g->ny - 2 ? g->ny - 2 : j - 1;
    double wx = gx[i + 1] - gx[i], wy = gy[j + 1] - gy[j], u = (x - gx[i]) / wx, v = (y - gy[j]) / wy;
    double z00 = gz[i * g->ny + j], z10 = gz[(i + 1) * g->ny + j], z01 = gz[i * g->ny + j + 1];
    double z11 = gz[(i + 1) * g->ny + j + 1], t = z00 - z10 - z01 + z11;
    *h = z00 + (z10 - z00) * u + (z01 - z00) * v + t * u * v;
    gradient[0] = ((z10 - z00) + t * v) / wx, gradient[1] = ((z01 - z00) + t * u) / wy;
    *twist = t / (wx * wy);
}

typedef struct {
    double force[3], stiffness[9]; /* d force / d point at a fixed limit */
    double energy, direction[3];   /* u where slipping */
    double pulled[3];              /* P (p - a): the stick force per unit stick stiffness is its negative */
    int slipping;
} Friction;

/* Stick friction of a world point toward its anchor in the tangent plane ``projector`` (3, 3), saturating at ``limit``
 * (N); zero where not touching. The energy of a slipping point is limit |P d| - limit^2 / (2 kt). */
static Friction stick_friction(const double *projector, const double *point, const double *anchor, double kt,
                               double limit, int touching) {
    Friction f;
    memset(&f, 0, sizeof f);
    if (!touching) return f;
    double d[3] = {point[0] - anchor[0], point[1] - anchor[1], point[2] - anchor[2]}, *dt = f.pulled;
    for (int r = 0; r < 3; r++) dt[r] = dot3(projector + 3 * r, d);
    double length = sqrt(dot3(dt, dt));
    f.slipping = kt * length > limit && length > 0.0;
    if (!f.slipping) {
        for (int r = 0; r < 3; r++) f.force[r] = -kt * dt[r];
        for (int r = 0; r < 9; r++) f.stiffness[r] = -kt * projector[r];
        f.energy = 0.5 * kt * length * length;
        return f;
    }
    for (int r = 0; r < 3; r++) f.direction[r] = dt[r] / length, f.force[r] = -limit * f.direction[r];
    for (int r = 0; r < 3; r++) /* -limit (I - u u^T) P / |P d| */
        for (int c = 0; c < 3; c++) {
            double turning = 0.0;
            for (int k = 0; k < 3; k++) turning += ((r == k) - f.direction[r] * f.direction[k]) * projector[3 * k + c];
            f.stiffness[3 * r + c] = -limit * turning / length;
        }
    f.energy = limit * length - limit * limit / (2.0 * kt);
    return f;
}

/* Contact i at world point p, the law's pieces: on the penetration pen where touching (else 0), d pen / d p, the
 * surface's slope factor sqrt(1 + h_x^2 + h_y^2), gradient and twist there, and the friction. */
typedef struct {
    double on, dpen[3], slope, gradient[2], twist;
    Friction friction;
    int touching;
} ContactAt;

static ContactAt contact_at(const GroundField *g, int64_t i, const double *p) {
    ContactAt c;
    double h;
    surface(g, p[0], p[1], &h, c.gradient, &c.twist);
    double pen = h - p[2];
    c.touching = pen > 0.0;
    c.on = c.touching ? pen : 0.0;
    c.slope = sqrt(1.0 + c.gradient[0] * c.gradient[0] + c.gradient[1] * c.gradient[1]);
    c.dpen[0] = c.gradient[0], c.dpen[1] = c.gradient[1], c.dpen[2] = -1.0;
    double limit = g->contact_friction[i] * g->contact_normal[i] * c.on * c.slope;
    c.friction = stick_friction(g->contact_projector + 9 * i, p, g->contact_anchor + 3 * i, g->contact_tangential[i],
                                limit, c.touching);
    return c;
}

/* Contact i at world point p: force (3), d force / d p (9), energy; touching and slipping flags. */
static void contact_law(const GroundField *g, int64_t i, const double *p, double *force, double *stiffness,
                        double *energy, int *touching, int *slipping) {
    ContactAt c = contact_at(g, i, p);
    const Friction *f = &c.friction;
    double kn = g->contact_normal[i], on = c.on;
    *touching = c.touching;
    for (int r = 0; r < 3; r++) {
        force[r] = -kn * on * c.dpen[r] + f->force[r];
        for (int col = 0; col < 3; col++) {
            double curvature = (r == 0 && col == 1) || (r == 1 && col == 0) ? c.twist : 0.0;
            stiffness[3 * r + col] = (c.touching ? -kn * (c.dpen[r] * c.dpen[col] + on * curvature) : 0.0)
                                     + f->stiffness[3 * r + col];
        }
    }
    if (f->slipping) { /* the limit grows with the point: -u (d limit / d p)^T */
        double d_slope[3] = {c.gradient[1] * c.twist / c.slope, c.gradient[0] * c.twist / c.slope, 0.0};
        for (int r = 0; r < 3; r++)
            for (int col = 0; col < 3; col++)
                stiffness[3 * r + col] -= f->direction[r] * g->contact_friction[i] * kn
                                          * (c.slope * c.dpen[col] + on * d_slope[col]);
    }
    *energy = 0.5 * kn * on * on + f->energy;
    *slipping = f->slipping;
}

/* d force / d (each ground parameter) of contact i at world point p, d (GROUND_PARAMETERS, 3) world, rows as
 * SHIFTSIM_GROUND_PARAMETERS (fields.h). Within the law's regime the force is linear in each: the normal part
 * -k_n pen (h_x, h_y, -1); sticking, the spring -k_t P (p - a); slipping, -mu N u with N = k_n pen slope. Zero where
 * clear; a contact has no radius. */
static void contact_law_partials(const GroundField *g, int64_t i, const double *p, double *d) {
    ContactAt c = contact_at(g, i, p);
    const Friction *f = &c.friction;
    double kn = g->contact_normal[i], mu = g->contact_friction[i];
    memset(d, 0, sizeof(double) * 3 * GROUND_PARAMETERS);
    if (!c.touching) return;
    for (int r = 0; r < 3; r++) {
        double normal = -c.on * c.dpen[r];
        if (f->slipping) { /* the limit mu k_n pen slope scales with k_n and mu; the stick stiffness plays no part */
            double per_limit = -f->direction[r] * c.on * c.slope;
            d[3 * GROUND_STIFFNESS + r] = d[3 * GROUND_STIFFNESS_AND_STICK + r] = normal + mu * per_limit;
            d[3 * GROUND_FRICTION + r] = kn * per_limit;
        } else {
            d[3 * GROUND_STIFFNESS + r] = normal;
            d[3 * GROUND_STIFFNESS_AND_STICK + r] = normal - f->pulled[r];
            d[3 * GROUND_TANGENTIAL + r] = -f->pulled[r];
        }
    }
}

/* Compression e of tyre i with world centre c and spin axis a, its gradient (6) and Hessian (6, 6) in (c, a), the
 * contact point (3) and, where ``point_jacobian`` is not NULL, its derivative d point / d (c, a) (3, 6). */
static double tyre_compression(const GroundField *g, int64_t i, const double *c, const double *a, double *grad,
                               double *hess, double *point, double *point_jacobian) {
    double h, gradient[2], twist;
    surface(g, c[0], c[1], &h, gradient, &twist);
    double m[3] = {-gradient[0], -gradient[1], 1.0}, t[9] = {0, -twist, 0, -twist, 0, 0, 0, 0, 0}; /* t = dm/dc */
    double ma = dot3(m, a), w[3], ta[3], tw[3];
    for (int r = 0; r < 3; r++) w[r] = m[r] - ma * a[r];
    for (int r = 0; r < 3; r++) ta[r] = dot3(t + 3 * r, a), tw[r] = dot3(t + 3 * r, w);
    double big_w = dot3(m, m) - ma * ma, depth = c[2] - h;
    double grad_d[6] = {m[0], m[1], m[2], 0, 0, 0}, grad_w[6], hess_d[36] = {0}, hess_w[36];
    for (int r = 0; r < 3; r++) grad_w[r] = 2.0 * tw[r], grad_w[3 + r] = -2.0 * ma * m[r];
    for (int r = 0; r < 3; r++)
        for (int col = 0; col < 3; col++) {
            double tt = 0.0;
            for (int k = 0; k < 3; k++) tt += t[3 * r + k] * t[3 * k + col];
            hess_d[6 * r + col] = t[3 * r + col];
            hess_w[6 * r + col] = 2.0 * (tt - ta[r] * ta[col]);
            double mixed = -2.0 * ta[r] * m[col] - 2.0 * ma * t[3 * r + col];
            hess_w[6 * r + 3 + col] = mixed, hess_w[6 * (3 + col) + r] = mixed;
            hess_w[6 * (3 + r) + 3 + col] = -2.0 * m[r] * m[col];
        }
    double r12 = 1.0 / sqrt(big_w), r32 = r12 / big_w, r52 = r32 / big_w;
    for (int r = 0; r < 6; r++) grad[r] = -grad_d[r] * r12 + 0.5 * depth * r32 * grad_w[r];
    for (int r = 0; r < 6; r++)
        for (int col = 0; col < 6; col++)
            hess[6 * r + col] = -hess_d[6 * r + col] * r12
                                + 0.5 * r32 * (grad_d[r] * grad_w[col] + grad_w[r] * grad_d[col])
                                + 0.5 * depth * r32 * hess_w[6 * r + col] - 0.75 * depth * r52 * grad_w[r] * grad_w[col];
    for (int r = 0; r < 3; r++) point[r] = c[r] - depth / big_w * w[r]; /* c - (depth / |w|) w / |w| */
    if (point_jacobian) /* d(c - depth w / W)/dx: dw/dc = t - a (t a)^T, dw/da = -(m.a) I - a m^T */
        for (int r = 0; r < 3; r++)
            for (int col = 0; col < 6; col++) {
                double dw = col < 3 ? t[3 * r + col] - a[r] * ta[col] : -ma * (r == col - 3) - a[r] * m[col - 3];
                point_jacobian[6 * r + col] = (col == r) - (grad_d[col] * w[r] + depth * dw) / big_w
                                              + depth * w[r] * grad_w[col] / (big_w * big_w);
            }
    return g->tyre_radius[i] - depth * r12;
}

/* Tyre i with world centre c, spin axis a and friction point b, the law's pieces: compression e (negative: clear of
 * the ground; on: e where touching, else 0) with its gradient grad (6) and Hessian hess (6, 6) in (c, a), the contact
 * point (3) and (not NULL) its derivative in (c, a) (3, 6), and the friction on b. */
typedef struct {
    double e, on;
    Friction friction;
    int touching;
} TyreAt;

static TyreAt tyre_at(const GroundField *g, int64_t i, const double *c, const double *a, const double *b, double *grad,
                      double *hess, double *point, double *point_jacobian) {
    TyreAt t;
    t.e = tyre_compression(g, i, c, a, grad, hess, point, point_jacobian);
    t.touching = t.e > 0.0;
    t.on = t.touching ? t.e : 0.0;
    t.friction = stick_friction(g->tyre_projector + 9 * i, b, g->tyre_anchor + 3 * i, g->tyre_tangential[i],
                                g->tyre_friction[i] * g->tyre_stiffness[i] * t.on, t.touching);
    return t;
}

/* Tyre i with world centre c, spin axis a and friction point b: force on (c, a, b) (9), its derivative (9, 9),
 * energy, contact point and (not NULL) its derivative in (c, a) (3, 6), compression (negative: clear of the ground),
 * touching and slipping. */
static void tyre_law(const GroundField *g, int64_t i, const double *c, const double *a, const double *b, double *force,
                     double *deriv, double *energy, double *point, double *point_jacobian, double *compression,
                     int *touching, int *slipping) {
    double grad[6], hess[36];
    TyreAt t = tyre_at(g, i, c, a, b, grad, hess, point, point_jacobian);
    const Friction *f = &t.friction;
    double k = g->tyre_stiffness[i], mu = g->tyre_friction[i], on = t.on;
    *compression = t.e, *touching = t.touching;
    memset(deriv, 0, sizeof(double) * 81);
    for (int r = 0; r < 6; r++) {
        force[r] = -k * on * grad[r];
        if (t.touching)
            for (int col = 0; col < 6; col++) deriv[9 * r + col] = -k * (grad[r] * grad[col] + on * hess[6 * r + col]);
    }
    for (int r = 0; r < 3; r++) {
        force[6 + r] = f->force[r];
        for (int col = 0; col < 3; col++) deriv[9 * (6 + r) + 6 + col] = f->stiffness[3 * r + col];
        if (f->slipping) /* d(-mu k e u) / d(c, a) */
            for (int col = 0; col < 6; col++) deriv[9 * (6 + r) + col] = -mu * k * f->direction[r] * grad[col];
    }
    *energy = 0.5 * k * on * on + f->energy;
    *slipping = f->slipping;
}

/* d force on (c, a, b) / d (each ground parameter) of tyre i, d (GROUND_PARAMETERS, 9) world, rows as
 * SHIFTSIM_GROUND_PARAMETERS (fields.h). Within the law's regime the force is linear in each: on (c, a) -k e grad e
 * with e = r - depth / |w| (d e / d r = 1); on b, sticking, the spring -k_t P (b - a0), slipping -mu k e u. Zero
 * where clear. */
static void tyre_law_partials(const GroundField *g, int64_t i, const double *c, const double *a, const double *b,
                          double *d) {
    double grad[6], hess[36], point[3];
    TyreAt t = tyre_at(g, i, c, a, b, grad, hess, point, NULL);
    const Friction *f = &t.friction;
    double k = g->tyre_stiffness[i], mu = g->tyre_friction[i];
    memset(d, 0, sizeof(double) * 9 * GROUND_PARAMETERS);
    if (!t.touching) return;
    for (int r = 0; r < 6; r++) {
        d[9 * GROUND_STIFFNESS + r] = d[9 * GROUND_STIFFNESS_AND_STICK + r] = -t.on * grad[r];
        d[9 * GROUND_RADIUS + r] = -k * grad[r];
    }
    for (int r = 0; r < 3; r++) {
        if (f->slipping) { /* the limit mu k e scales with k, mu and (through e) the radius */
            double per_limit = -f->direction[r];
            d[9 * GROUND_STIFFNESS + 6 + r] = d[9 * GROUND_STIFFNESS_AND_STICK + 6 + r] = mu * t.on * per_limit;
            d[9 * GROUND_FRICTION + 6 + r] = k * t.on * per_limit;
            d[9 * GROUND_RADIUS + 6 + r] = mu * k * per_limit;
        } else {
            d[9 * GROUND_STIFFNESS_AND_STICK + 6 + r] = d[9 * GROUND_TANGENTIAL + 6 + r] = -f->pulled[r];
        }
    }
}

/* World <- model: x_w = R x (+ t for a point). */
static void to_world(const GroundField *g, const double *x, int point, double *out) {
    const double *r = g->placement_rotation;
    for (int i = 0; i < 3; i++) out[i] = dot3(r + 3 * i, x) + (point ? g->placement_translation[i] : 0.0);
}

/* The model-frame vector of node ``node``'s local ``local``: R_node local (+ p_node for a point). */
static void on_node(const State *s, int64_t node, const double *local, int point, double *out) {
    const double *r = s->rotation + 9 * node;
    for (int i = 0; i < 3; i++) out[i] = dot3(r + 3 * i, local) + (point ? s->position[3 * node + i] : 0.0);
}

/* Contact i's point in the model frame x (3) and the world (3). */
static const int CONTACT_POINTS[1] = {1};
static void contact_vectors(const State *s, const GroundField *g, int64_t i, double *x, double *world) {
    on_node(s, g->contact_node[i], g->contact_local + 3 * i, 1, x);
    to_world(g, x, 1, world);
}

/* Tyre i's centre, spin axis and friction point in the model frame x (9) and the world (9). */
static const int TYRE_POINTS[3] = {1, 0, 1}; /* the axis is a direction */
static void tyre_vectors(const State *s, const GroundField *g, int64_t i, double *x, double *world) {
    int64_t node = g->tyre_node[i];
    memcpy(x, s->position + 3 * node, sizeof(double) * 3);
    on_node(s, node, g->tyre_axis + 3 * i, 0, x + 3);
    on_node(s, node, g->tyre_friction_point + 3 * i, 1, x + 6);
    for (int v = 0; v < 3; v++) to_world(g, x + 3 * v, TYRE_POINTS[v], world + 3 * v);
}

/* The model-frame forces f_model (3 count) of world forces f (3 count): R^T f, vector by vector. */
static void to_model(const GroundField *g, int count, const double *f, double *f_model) {
    const double *r = g->placement_rotation;
    for (int v = 0; v < 3 * count; v++) {
        int block = v / 3, row = v % 3;
        f_model[v] = r[row] * f[3 * block] + r[3 + row] * f[3 * block + 1] + r[6 + row] * f[3 * block + 2];
    }
}

/* dx/dq_k (3) of a model-frame vector x on a node coordinate k moves: omega_k x x (+ v_k for a point). */
static void vector_rate(const State *s, int64_t k, const double *x, int point, double *out) {
    const double *om = s->omega + 3 * k, *lin = s->v + 3 * k;
    out[0] = om[1] * x[2] - om[2] * x[1] + (point ? lin[0] : 0.0);
    out[1] = om[2] * x[0] - om[0] * x[2] + (point ? lin[1] : 0.0);
    out[2] = om[0] * x[1] - om[1] * x[0] + (point ? lin[2] : 0.0);
}

/* Q and K of world forces f (3 count) with derivative d (3 count, 3 count) on ``count`` model-frame vectors x
 * (points where ``point[i]``, else directions) carried by ``node``; jac (count, nq, 3) and chain (nq) scratch. */
static void add_vectors(Workspace *work, const Model *model, const State *s, const GroundField *g, int64_t node,
                        int count, const double *x, const int *point, const double *f, const double *d, double *jac,
                        int64_t *chain, double *q_force, double *stiffness) {
    int64_t nq = model->nq, n = 3 * count, links = moving_coordinates(model, node, chain);
    const double *r = g->placement_rotation;
    double f_model[9], d_model[81];
    to_model(g, count, f, f_model); /* R^T f and R^T D R, block by block */
    for (int v = 0; v < n; v++)
        for (int w = 0; w < n; w++) {
            int bv = v / 3, rv = v % 3, bw = w / 3, rw = w % 3;
            double total = 0.0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) total += r[3 * i + rv] * d[n * (3 * bv + i) + 3 * bw + j] * r[3 * j + rw];
            d_model[n * v + w] = total;
        }
    for (int64_t c = 0; c < links; c++)
        for (int i = 0; i < count; i++) vector_rate(s, chain[c], x + 3 * i, point[i], jac + (i * nq + chain[c]) * 3);
    for (int64_t c = 0; c < links; c++) {
        int64_t k = chain[c];
        double jd[9] = {0}; /* J_k^T D_model, over the 3 count components */
        for (int i = 0; i < count; i++) {
            const double *jk = jac + (i * nq + k) * 3;
            q_force[k] += dot3(jk, f_model + 3 * i);
            for (int w = 0; w < n; w++) jd[w] += jk[0] * d_model[n * (3 * i) + w] + jk[1] * d_model[n * (3 * i + 1) + w]
                                                 + jk[2] * d_model[n * (3 * i + 2) + w];
        }
        for (int64_t e = 0; e < links; e++) {
            int64_t j = chain[e];
            double total = 0.0;
            for (int i = 0; i < count; i++) total += dot3(jd + 3 * i, jac + (i * nq + j) * 3);
            stiffness[k * nq + j] += total;
        }
    }
    for (int i = 0; i < count; i++)
        add_point_hessian(work, model, s, node, jac + i * nq * 3, f_model + 3 * i, 1.0, stiffness);
}

/* The ground's generalized force on the model (added into q_force (nq)), its stiffness (added into stiffness (nq,
 * nq)) and energy (returned); *conservative is cleared where a contact or tyre slips. */
double ground_terms(Workspace *w, const Model *model, const State *s, const GroundField *g, double *q_force,
                    double *stiffness, int *conservative) {
    int64_t nq = model->nq;
    size_t mark = ws_mark(w);
    double *jac = ws_doubles(w, 9 * nq);
    int64_t *chain = ws_indices(w, nq);
    double energy = 0.0;
    for (int64_t i = 0; i < g->n_contacts; i++) {
        double x[3], world[3], force[3], deriv[9], e;
        int touching, slipping;
        contact_vectors(s, g, i, x, world);
        contact_law(g, i, world, force, deriv, &e, &touching, &slipping);
        energy += e;
        if (slipping) *conservative = 0;
        if (touching)
            add_vectors(w, model, s, g, g->contact_node[i], 1, x, CONTACT_POINTS, force, deriv, jac, chain, q_force,
                        stiffness);
    }
    for (int64_t i = 0; i < g->n_tyres; i++) {
        double x[9], world[9], force[9], deriv[81], e, contact[3], compression;
        int touching, slipping;
        tyre_vectors(s, g, i, x, world);
        tyre_law(g, i, world, world + 3, world + 6, force, deriv, &e, contact, NULL, &compression, &touching,
                 &slipping);
        energy += e;
        if (slipping) *conservative = 0;
        if (touching)
            add_vectors(w, model, s, g, g->tyre_node[i], 3, x, TYRE_POINTS, force, deriv, jac, chain, q_force,
                        stiffness);
    }
    ws_release(w, mark);
    return energy;
}

/* The generalized force column[k * stride] += sum_v dx_v/dq_k . R^T f_v of world forces f (3 count) on ``count``
 * model-frame vectors x (points where ``point[v]``) carried by ``node``; chain (nq) scratch. */
static void add_force_column(const Model *model, const State *s, const GroundField *g, int64_t node, int count,
                             const double *x, const int *point, const double *f, int64_t *chain, double *column,
                             int64_t stride) {
    double f_model[9], rate[3];
    to_model(g, count, f, f_model);
    int64_t links = moving_coordinates(model, node, chain);
    for (int64_t c = 0; c < links; c++)
        for (int v = 0; v < count; v++) {
            vector_rate(s, chain[c], x + 3 * v, point[v], rate);
            column[chain[c] * stride] += dot3(rate, f_model + 3 * v);
        }
}

size_t ground_partials_doubles(const Model *model, const GroundField *g) {
    return (size_t)(g->n_contacts + g->n_tyres) * (9 * GROUND_PARAMETERS + 9 + 90) + (size_t)model->n_nodes
           + 2 * (size_t)model->nq + 8;
}

/* column[k * stride] += (shift - axis_shift[k]) (R^T f x omega_k) . step: the lever of world force f on model-frame
 * point x fixed to ``node`` when a frame parameter translates x by shift step and coordinate k's axis by
 * axis_shift[k] step (step in the model frame). */
static void add_lever_column(const Model *model, const State *s, const GroundField *g, int64_t node, const double *f,
                             double shift, const double *step, const double *axis_shift, double *column,
                             int64_t stride) {
    double f_model[3], turned[3];
    to_model(g, 1, f, f_model);
    for (; node > 0; node = model->parent[node]) {
        int64_t k = model->coordinate[node];
        if (k < 0) continue;
        cross3(f_model, s->omega + 3 * k, turned);
        column[k * stride] += (shift - axis_shift[k]) * dot3(turned, step);
    }
}

/* A frame parameter's column (``frame`` moved by ``step`` on its node, model frame; node_shift, axis_shift its
 * frame_shifts): each contact and tyre its move carries (a contact at the frame itself by one more: it stands at the
 * frame) is translated by shift step at a fixed configuration, so its
 * force changes through the law's own derivative (d force / d point; a tyre's in its centre and friction point, the
 * spin axis does not turn) and acts at the moved point. law (C + T, 90): per item its world force and derivative
 * (contact: 3 and 9; tyre: 9 and 81). Adds d Q / d p into column[k * stride] and writes the world forces' partials
 * (world_contact + 3 i P: contact i's 3 rows, world_tyre + 9 t P: tyre t's 9 rows, at stride P; either NULL). */
static void add_frame_column(const Model *model, const State *s, const GroundField *g, const double *x,
                             const double *law, int64_t frame, const double *step, const double *node_shift,
                             const double *axis_shift, int64_t *chain, double *column, int64_t P,
                             double *world_contact, double *world_tyre) {
    int64_t C = g->n_contacts, T = g->n_tyres;
    for (int64_t item = 0; item < C + T; item++) {
        bool tyre = item >= C;
        int64_t node = tyre ? g->tyre_node[item - C] : g->contact_node[item];
        double shift = node_shift[node] + (!tyre && g->contact_frame[item] == frame ? 1.0 : 0.0);
        double moved[3], world_step[3], df[9] = {0.0};
        for (int row = 0; row < 3; row++) moved[row] = shift * step[row];
        to_world(g, moved, 0, world_step);
        const double *force = law + 90 * item, *deriv = force + (tyre ? 9 : 3);
        int size = tyre ? 9 : 3;
        for (int r = 0; r < size; r++) /* d force = D dx over the points that move (a tyre's centre and b) */
            for (int v = 0; v < size; v += tyre ? 6 : 3)
                df[r] += dot3(deriv + size * r + v, world_step);
        add_force_column(model, s, g, node, tyre ? 3 : 1, x + 9 * item, tyre ? TYRE_POINTS : CONTACT_POINTS, df,
                         chain, column, P);
        for (int v = 0; v < size; v += tyre ? 6 : 3)
            add_lever_column(model, s, g, node, force + v, shift, step, axis_shift, column, P);
        double *world = tyre ? world_tyre ? world_tyre + 9 * (item - C) * P : NULL
                             : world_contact ? world_contact + 3 * item * P : NULL;
        if (world)
            for (int r = 0; r < size; r++) world[r * P] += df[r];
    }
}

/* The ground parameters' columns at one state: for each parameter row (PARAMETER_GROUND, what, start, count) of
 * ``parameters`` (P, 4), what (SHIFTSIM_GROUND_PARAMETERS) the parameter scales in the laws of the contacts and tyres
 * members[start .. start + count) (contact i numbered i, tyre t n_contacts + t): d Q / d p added into force (nq, P)
 * and, not NULL, d (contact force) / d p (C, 3, P) and d (tyre force on its centre, spin axis and friction point) /
 * d p (T, 9, P), world axes, written (zero in the other columns). For each row (PARAMETER_FRAME, frame, axis, 0) the
 * contacts and tyres the frame's move carries (motion_start, motion: partials.c) and the contacts standing at the frame
 * (contact_frame): their forces' change and lever added (add_frame_column). Rows of other kinds are left alone. */
void ground_partials(Workspace *w, const Model *model, const State *s, const GroundField *g, int64_t n_parameters,
                     const int64_t *parameters, const int64_t *members, const int64_t *motion_start,
                     const int64_t *motion, double *force, double *contact_partials, double *tyre_partials) {
    int64_t C = g->n_contacts, T = g->n_tyres, P = n_parameters;
    size_t mark = ws_mark(w);
    double *d = ws_doubles(w, (size_t)(C + T) * 9 * GROUND_PARAMETERS); /* per item, d force / d what (9 a row) */
    double *x = ws_doubles(w, (size_t)(C + T) * 9);                      /* per item, its model-frame vectors */
    double *law = ws_doubles(w, (size_t)(C + T) * 90);                   /* per item, its world force and derivative */
    double *node_shift = ws_doubles(w, model->n_nodes), *axis_shift = ws_doubles(w, model->nq);
    int64_t *chain = ws_indices(w, model->nq);
    for (int64_t i = 0; i < C; i++) {
        double world[3], partials[3 * GROUND_PARAMETERS], e;
        int touching, slipping;
        contact_vectors(s, g, i, x + 9 * i, world);
        contact_law_partials(g, i, world, partials);
        for (int what = 0; what < GROUND_PARAMETERS; what++)
            memcpy(d + 9 * (GROUND_PARAMETERS * i + what), partials + 3 * what, sizeof(double) * 3);
        contact_law(g, i, world, law + 90 * i, law + 90 * i + 3, &e, &touching, &slipping);
    }
    for (int64_t t = 0; t < T; t++) {
        double world[9], e, contact[3], compression;
        int touching, slipping;
        tyre_vectors(s, g, t, x + 9 * (C + t), world);
        tyre_law_partials(g, t, world, world + 3, world + 6, d + 9 * GROUND_PARAMETERS * (C + t));
        tyre_law(g, t, world, world + 3, world + 6, law + 90 * (C + t), law + 90 * (C + t) + 9, &e, contact, NULL,
                 &compression, &touching, &slipping);
    }
    if (contact_partials) memset(contact_partials, 0, sizeof(double) * (size_t)(3 * C * P));
    if (tyre_partials) memset(tyre_partials, 0, sizeof(double) * (size_t)(9 * T * P));
    for (int64_t column = 0; column < P; column++) {
        const int64_t *row = parameters + 4 * column;
        if (row[0] == PARAMETER_FRAME) {
            double step[3];
            for (int r = 0; r < 3; r++) step[r] = s->rotation[9 * model->frame_node[row[1]] + 3 * r + row[2]];
            frame_shifts(model, row[1], motion_start, motion, node_shift, axis_shift);
            add_frame_column(model, s, g, x, law, row[1], step, node_shift, axis_shift, chain, force + column, P,
                             contact_partials ? contact_partials + column : NULL,
                             tyre_partials ? tyre_partials + column : NULL);
            continue;
        }
        if (row[0] != PARAMETER_GROUND) continue;
        for (int64_t e = row[2]; e < row[2] + row[3]; e++) {
            int64_t item = members[e];
            bool tyre = item >= C;
            int size = tyre ? 9 : 3;
            const double *df = d + 9 * (GROUND_PARAMETERS * item + row[1]);
            add_force_column(model, s, g, tyre ? g->tyre_node[item - C] : g->contact_node[item], tyre ? 3 : 1,
                             x + 9 * item, tyre ? TYRE_POINTS : CONTACT_POINTS, df, chain, force + column, P);
            double *world = tyre ? tyre_partials ? tyre_partials + 9 * (item - C) * P : NULL
                                 : contact_partials ? contact_partials + 3 * item * P : NULL;
            if (world)
                for (int r = 0; r < size; r++) world[r * P + column] += df[r];
        }
    }
    ws_release(w, mark);
}

/* Each contact's and tyre's world point, force, energy and flags at one state (its node poses; the members of ``out``
 * not NULL). */
void ground_points(const State *s, const GroundField *g, const GroundPoints *out) {
    for (int64_t i = 0; i < g->n_contacts; i++) {
        double x[3], world[3], force[3], deriv[9], e;
        int touching, slipping;
        contact_vectors(s, g, i, x, world);
        contact_law(g, i, world, force, deriv, &e, &touching, &slipping);
        if (out->contact_point) memcpy(out->contact_point + 3 * i, world, sizeof world);
        if (out->contact_force) memcpy(out->contact_force + 3 * i, force, sizeof force);
        if (out->contact_stiffness) memcpy(out->contact_stiffness + 9 * i, deriv, sizeof deriv);
        if (out->contact_energy) out->contact_energy[i] = e;
        if (out->contact_touching) out->contact_touching[i] = (uint8_t)touching;
        if (out->contact_slipping) out->contact_slipping[i] = (uint8_t)slipping;
    }
    for (int64_t i = 0; i < g->n_tyres; i++) {
        double x[9], world[9], force[9], deriv[81], e, contact[3], contact_jacobian[18], compression;
        int touching, slipping;
        tyre_vectors(s, g, i, x, world);
        tyre_law(g, i, world, world + 3, world + 6, force, deriv, &e, contact, contact_jacobian, &compression,
                 &touching, &slipping);
        if (out->tyre_point) memcpy(out->tyre_point + 3 * i, contact, sizeof contact);
        if (out->tyre_force) memcpy(out->tyre_force + 9 * i, force, sizeof force);
        if (out->tyre_compression) out->tyre_compression[i] = compression;
        if (out->tyre_energy) out->tyre_energy[i] = e;
        if (out->tyre_touching) out->tyre_touching[i] = (uint8_t)touching;
        if (out->tyre_slipping) out->tyre_slipping[i] = (uint8_t)slipping;
        if (out->tyre_stiffness) memcpy(out->tyre_stiffness + 81 * i, deriv, sizeof deriv);
        if (out->tyre_point_jacobian) memcpy(out->tyre_point_jacobian + 18 * i, contact_jacobian, sizeof contact_jacobian);
    }
}
