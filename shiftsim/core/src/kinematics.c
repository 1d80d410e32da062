/* Forward kinematics: motion frames, node poses, coordinate twists, frame poses, point Jacobians.
 *
 * W_node = W_parent A_node Z(sign q[coordinate]) with Z a rotation about or a translation along z;
 * X_node = W_node D_node. Coordinate k moves node n when k's node is n or one of its ancestors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

State state_new(Workspace *w, const Model *model) { /* world, rotation, position, omega, v in a row */
    State s;
    s.world = ws_doubles(w, 24 * model->n_nodes + 6 * model->nq + 2);
    s.rotation = s.world + 12 * model->n_nodes;
    s.position = s.rotation + 9 * model->n_nodes;
    s.omega = s.position + 3 * model->n_nodes;
    s.v = s.omega + 3 * model->nq + 1;
    return s;
}

void state_copy(const Model *model, State *to, const State *from) {
    memcpy(to->world, from->world, sizeof(double) * (size_t)(model->n_nodes * 12));
    memcpy(to->rotation, from->rotation, sizeof(double) * (size_t)(model->n_nodes * 9));
    memcpy(to->position, from->position, sizeof(double) * (size_t)(model->n_nodes * 3));
    memcpy(to->omega, from->omega, sizeof(double) * (size_t)(model->nq * 3));
    memcpy(to->v, from->v, sizeof(double) * (size_t)(model->nq * 3));
}

static void motion_frames(const Model *model, const double *q, double *world) {
    memset(world, 0, sizeof(double) * 12);
    world[0] = world[5] = world[10] = 1.0;
    for (int64_t i = 1; i < model->n_nodes; i++) {
        const double *up = world + 12 * model->parent[i];
        const double *joint = model->joint + 16 * i;
        double *w = world + 12 * i;
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 4; c++) {
                w[4 * r + c] = up[4 * r] * joint[c] + up[4 * r + 1] * joint[4 + c] + up[4 * r + 2] * joint[8 + c]
                               + (c == 3 ? up[4 * r + 3] : 0.0);
            }
        }
        if (model->kind[i] == REVOLUTE) { /* columns 0, 1 of W Rz(theta) */
            double theta = model->sign[i] * q[model->coordinate[i]];
            double c = cos(theta), s = sin(theta);
            for (int r = 0; r < 3; r++) {
                double x = w[4 * r], y = w[4 * r + 1];
                w[4 * r] = c * x + s * y;
                w[4 * r + 1] = c * y - s * x;
            }
        } else if (model->kind[i] == PRISMATIC) { /* column 3 of W Tz(theta) */
            double theta = model->sign[i] * q[model->coordinate[i]];
            for (int r = 0; r < 3; r++) w[4 * r + 3] += theta * w[4 * r + 2];
        }
    }
}

static void node_poses(const Model *model, State *s) {
    for (int64_t i = 0; i < model->n_nodes; i++) {
        const double *w = s->world + 12 * i, *d = model->offset + 16 * i;
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 4; c++) {
                double total = w[4 * r] * d[c] + w[4 * r + 1] * d[4 + c] + w[4 * r + 2] * d[8 + c];
                if (c == 3)
                    s->position[3 * i + r] = total + w[4 * r + 3];
                else
                    s->rotation[9 * i + 3 * r + c] = total;
            }
        }
    }
}

void node_state(const Model *model, const double *q, State *s) {
    motion_frames(model, q, s->world);
    node_poses(model, s);
    for (int64_t k = 0; k < model->nq; k++) {
        int64_t node = model->coordinate_node[k];
        const double *w = s->world + 12 * node;
        double sign = model->sign[node];
        double axis[3] = {w[2] * sign, w[6] * sign, w[10] * sign};
        double *om = s->omega + 3 * k, *v = s->v + 3 * k;
        if (model->kind[node] == REVOLUTE) {
            double o[3] = {w[3], w[7], w[11]};
            om[0] = axis[0], om[1] = axis[1], om[2] = axis[2];
            v[0] = o[1] * axis[2] - o[2] * axis[1];
            v[1] = o[2] * axis[0] - o[0] * axis[2];
            v[2] = o[0] * axis[1] - o[1] * axis[0];
        } else {
            om[0] = om[1] = om[2] = 0.0;
            v[0] = axis[0], v[1] = axis[1], v[2] = axis[2];
        }
    }
}

/* out (4, 4) = X_node @ offset (offset NULL: identity). */
static void pose_into(const State *s, int64_t node, const double *offset, double *out) {
    const double *r = s->rotation + 9 * node, *p = s->position + 3 * node;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 4; j++) {
            double total;
            if (offset)
                total = r[3 * i] * offset[j] + r[3 * i + 1] * offset[4 + j] + r[3 * i + 2] * offset[8 + j];
            else
                total = j < 3 ? r[3 * i + j] : 0.0;
            out[4 * i + j] = total + (j == 3 ? p[i] : 0.0);
        }
    }
    out[12] = out[13] = out[14] = 0.0;
    out[15] = 1.0;
}

void forward_poses(const Model *model, const double *q, State *s, double *bodies, double *frames) {
    motion_frames(model, q, s->world);
    node_poses(model, s);
    if (bodies)
        for (int64_t b = 0; b < model->n_bodies; b++) pose_into(s, model->body_node[b], NULL, bodies + 16 * b);
    if (frames)
        for (int64_t f = 0; f < model->n_frames; f++)
            pose_into(s, model->frame_node[f], model->frame_offset + 16 * f, frames + 16 * f);
}

int64_t moving_coordinates(const Model *model, int64_t node, int64_t *out) {
    int64_t count = 0;
    while (node > 0) {
        int64_t k = model->coordinate[node];
        if (k >= 0) out[count++] = k;
        node = model->parent[node];
    }
    return count;
}

int64_t common_ancestor(const Model *model, int64_t a, int64_t b) {
    while (a != b) /* parents come first: the later node is not above the other */
        if (a > b) a = model->parent[a];
        else b = model->parent[b];
    return a;
}

bool is_within(const Model *model, int64_t root, int64_t node) {
    while (node > root) node = model->parent[node]; /* parents come first */
    return node == root;
}

void frame_pose(const Model *model, const State *s, int64_t frame, double *r, double *p) {
    int64_t node = model->frame_node[frame];
    const double *rn = s->rotation + 9 * node, *pn = s->position + 3 * node, *o = model->frame_offset + 16 * frame;
    for (int i = 0; i < 3; i++) {
        if (r)
            for (int j = 0; j < 3; j++)
                r[3 * i + j] = rn[3 * i] * o[j] + rn[3 * i + 1] * o[4 + j] + rn[3 * i + 2] * o[8 + j];
        p[i] = rn[3 * i] * o[3] + rn[3 * i + 1] * o[7] + rn[3 * i + 2] * o[11] + pn[i];
    }
}

void point_jacobian(const Model *model, const State *s, int64_t node, const double *point, double *jac) {
    memset(jac, 0, sizeof(double) * (size_t)(3 * model->nq));
    while (node > 0) {
        int64_t k = model->coordinate[node];
        if (k >= 0) {
            const double *om = s->omega + 3 * k, *v = s->v + 3 * k;
            jac[3 * k] = om[1] * point[2] - om[2] * point[1] + v[0];
            jac[3 * k + 1] = om[2] * point[0] - om[0] * point[2] + v[1];
            jac[3 * k + 2] = om[0] * point[1] - om[1] * point[0] + v[2];
        }
        node = model->parent[node];
    }
}
