/* Dense linear algebra for the small matrices of one solve (row-major, n up to a few hundred). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* Cholesky factor low (n, n, lower triangle) of the symmetric a + shift I (its lower triangle read): CORE_OK when
 * every pivot is finite and positive (a + shift I positive definite), CORE_NOT_DEFINITE at the first that is not. */
static Status cholesky(int64_t n, const double *a, double shift, double *low) {
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j <= i; j++) {
            double total = a[i * n + j] + (i == j ? shift : 0.0);
            for (int64_t k = 0; k < j; k++) total -= low[i * n + k] * low[j * n + k];
            if (i != j) {
                low[i * n + j] = total / low[j * n + j];
            } else if (total > 0.0 && isfinite(total)) {
                low[i * n + i] = sqrt(total);
            } else {
                return CORE_NOT_DEFINITE;
            }
        }
    }
    return CORE_OK;
}

/* Whether the symmetric a (n, n) + shift I is positive definite: at once where it is strictly diagonally
 * dominant with a positive diagonal (Gershgorin: O(n^2), the common case of decoupled or free coordinates),
 * otherwise when a Cholesky factorization succeeds. */
bool is_positive_definite(Workspace *w, int64_t n, const double *a, double shift) {
    int dominant = 1;
    for (int64_t i = 0; i < n && dominant; i++) {
        double row = a[i * n + i] + shift;
        for (int64_t j = 0; j < n; j++)
            if (j != i) row -= fabs(a[i * n + j]);
        dominant = row > 0.0;
    }
    if (dominant) return true;
    size_t mark = ws_mark(w);
    bool definite = cholesky(n, a, shift, ws_doubles(w, n * n)) == CORE_OK;
    ws_release(w, mark);
    return definite;
}

/* x with (a + shift I) x = b for a symmetric a by a Cholesky factorization; CORE_NOT_DEFINITE (x untouched) when
 * a + shift I is not positive definite. */
Status cholesky_solve(Workspace *w, int64_t n, const double *a, double shift, const double *b, double *x) {
    size_t mark = ws_mark(w);
    double *low = ws_doubles(w, n * n), *y = ws_doubles(w, n);
    Status status = cholesky(n, a, shift, low);
    if (status == CORE_OK) {
        for (int64_t i = 0; i < n; i++) { /* L y = b */
            double total = b[i];
            for (int64_t k = 0; k < i; k++) total -= low[i * n + k] * y[k];
            y[i] = total / low[i * n + i];
        }
        for (int64_t i = n - 1; i >= 0; i--) { /* L^T x = y */
            double total = y[i];
            for (int64_t k = i + 1; k < n; k++) total -= low[k * n + i] * x[k];
            x[i] = total / low[i * n + i];
        }
    }
    ws_release(w, mark);
    return status;
}

/* x with a x = b by LU with partial pivoting; CORE_SINGULAR (x untouched) when a pivot is exactly zero. */
Status lu_solve(Workspace *w, int64_t n, const double *a, const double *b, double *x) {
    size_t mark = ws_mark(w);
    double *lu = ws_doubles(w, n * n), *y = ws_doubles(w, n);
    memcpy(lu, a, sizeof(double) * (size_t)(n * n));
    memcpy(y, b, sizeof(double) * (size_t)n);
    bool singular = false;
    for (int64_t k = 0; k < n; k++) {
        int64_t pivot = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(lu[i * n + k]) > fabs(lu[pivot * n + k])) pivot = i;
        if (lu[pivot * n + k] == 0.0) {
            singular = true;
            break;
        }
        if (pivot != k) {
            for (int64_t j = 0; j < n; j++) {
                double swap = lu[k * n + j];
                lu[k * n + j] = lu[pivot * n + j], lu[pivot * n + j] = swap;
            }
            double swap = y[k];
            y[k] = y[pivot], y[pivot] = swap;
        }
        for (int64_t i = k + 1; i < n; i++) {
            double factor = lu[i * n + k] / lu[k * n + k];
            if (factor == 0.0) continue;
            for (int64_t j = k; j < n; j++) lu[i * n + j] -= factor * lu[k * n + j];
            y[i] -= factor * y[k];
        }
    }
    if (!singular) {
        for (int64_t i = n - 1; i >= 0; i--) {
            double total = y[i];
            for (int64_t j = i + 1; j < n; j++) total -= lu[i * n + j] * x[j];
            x[i] = total / lu[i * n + i];
        }
    }
    ws_release(w, mark);
    return singular ? CORE_SINGULAR : CORE_OK;
}

/* Eigenvalues (ascending) and eigenvectors (columns of vectors (n, n)) of the symmetric a by cyclic Jacobi
 * rotations, to round-off. */
void symmetric_eigen(Workspace *work, int64_t n, const double *a, double *values, double *vectors) {
    size_t mark = ws_mark(work);
    double *w = ws_doubles(work, n * n), *v = ws_doubles(work, n * n);
    memcpy(w, a, sizeof(double) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) v[i * n + i] = 1.0;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, total = 0.0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                total += w[i * n + j] * w[i * n + j];
                if (i != j) off += w[i * n + j] * w[i * n + j];
            }
        if (!(off > DBL_EPSILON * DBL_EPSILON * total)) break;
        for (int64_t p = 0; p < n - 1; p++) {
            for (int64_t q = p + 1; q < n; q++) {
                double apq = w[p * n + q];
                if (fabs(apq) <= 1e-300 || fabs(apq) <= 1e-18 * sqrt(fabs(w[p * n + p] * w[q * n + q]))) {
                    w[p * n + q] = w[q * n + p] = 0.0; /* below round-off of its diagonal: zero */
                    continue;
                }
                double theta = (w[q * n + q] - w[p * n + p]) / (2.0 * apq);
                double t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int64_t k = 0; k < n; k++) { /* columns p, q */
                    double wkp = w[k * n + p], wkq = w[k * n + q];
                    w[k * n + p] = c * wkp - s * wkq, w[k * n + q] = s * wkp + c * wkq;
                }
                for (int64_t k = 0; k < n; k++) { /* rows p, q */
                    double wpk = w[p * n + k], wqk = w[q * n + k];
                    w[p * n + k] = c * wpk - s * wqk, w[q * n + k] = s * wpk + c * wqk;
                }
                for (int64_t k = 0; k < n; k++) {
                    double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq, v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    int64_t *order = ws_indices(work, n);
    for (int64_t i = 0; i < n; i++) order[i] = i;
    for (int64_t i = 1; i < n; i++) { /* insertion sort by eigenvalue */
        int64_t key = order[i], j = i - 1;
        while (j >= 0 && w[order[j] * n + order[j]] > w[key * n + key]) order[j + 1] = order[j], j--;
        order[j + 1] = key;
    }
    for (int64_t i = 0; i < n; i++) {
        values[i] = w[order[i] * n + order[i]];
        for (int64_t k = 0; k < n; k++) vectors[k * n + i] = v[k * n + order[i]];
    }
    ws_release(work, mark);
}

/* Minimum-norm least-squares x (cols) of a (rows, cols) x = b, singular values below rcond times the largest
 * counting as zero (numpy's lstsq): a one-sided Jacobi SVD (Hestenes) turns the columns of w = a v orthogonal,
 * so that a = (w / sigma) diag(sigma) v^T with sigma the column norms, to round-off. */
void pseudo_solve(Workspace *work, int64_t rows, int64_t cols, const double *a, const double *b, double rcond,
                  double *x) {
    size_t mark = ws_mark(work);
    double *w = ws_doubles(work, rows * cols), *v = ws_doubles(work, cols * cols);
    memcpy(w, a, sizeof(double) * (size_t)(rows * cols));
    for (int64_t i = 0; i < cols; i++) v[i * cols + i] = 1.0;
    double total = 0.0; /* the squared Frobenius norm, which rotations keep: columns below round-off of it are zero */
    for (int64_t i = 0; i < rows * cols; i++) total += w[i] * w[i];
    double negligible = DBL_EPSILON * DBL_EPSILON * total;
    for (int sweep = 0; sweep < 60; sweep++) {
        int rotated = 0;
        for (int64_t p = 0; p < cols - 1; p++) {
            for (int64_t q = p + 1; q < cols; q++) {
                double alpha = 0.0, beta = 0.0, gamma = 0.0;
                for (int64_t r = 0; r < rows; r++) {
                    double wp = w[r * cols + p], wq = w[r * cols + q];
                    alpha += wp * wp, beta += wq * wq, gamma += wp * wq;
                }
                if (gamma == 0.0 || fabs(gamma) <= DBL_EPSILON * sqrt(alpha * beta) || alpha <= negligible
                    || beta <= negligible)
                    continue;
                rotated = 1;
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), s = c * t;
                for (int64_t r = 0; r < rows; r++) {
                    double wp = w[r * cols + p], wq = w[r * cols + q];
                    w[r * cols + p] = c * wp - s * wq, w[r * cols + q] = s * wp + c * wq;
                }
                for (int64_t r = 0; r < cols; r++) {
                    double vp = v[r * cols + p], vq = v[r * cols + q];
                    v[r * cols + p] = c * vp - s * vq, v[r * cols + q] = s * vp + c * vq;
                }
            }
        }
        if (!rotated) break;
    }
    double largest = 0.0;
    double *sigma = ws_doubles(work, cols);
    for (int64_t i = 0; i < cols; i++) {
        double total = 0.0;
        for (int64_t r = 0; r < rows; r++) total += w[r * cols + i] * w[r * cols + i];
        sigma[i] = sqrt(total);
        largest = fmax(largest, sigma[i]);
    }
    memset(x, 0, sizeof(double) * (size_t)cols);
    for (int64_t i = 0; i < cols; i++) {
        if (!(sigma[i] > rcond * largest) || sigma[i] == 0.0) continue;
        double along = 0.0;
        for (int64_t r = 0; r < rows; r++) along += w[r * cols + i] * b[r];
        along /= sigma[i] * sigma[i];
        for (int64_t k = 0; k < cols; k++) x[k] += v[k * cols + i] * along;
    }
    ws_release(work, mark);
}

/* Orthonormal basis z (nf, nf - m) of the null space of the full-row-rank g (m, nf): the last nf - m columns of
 * the orthogonal factor of a Householder QR of g^T. */
void null_space(Workspace *w, int64_t m, int64_t nf, const double *g, double *z) {
    size_t mark = ws_mark(w);
    double *r = ws_doubles(w, nf * m), *q = ws_doubles(w, nf * nf), *h = ws_doubles(w, nf);
    for (int64_t i = 0; i < nf; i++) {
        for (int64_t j = 0; j < m; j++) r[i * m + j] = g[j * nf + i];
        q[i * nf + i] = 1.0;
    }
    for (int64_t k = 0; k < m && k < nf; k++) {
        double norm = 0.0;
        for (int64_t i = k; i < nf; i++) norm += r[i * m + k] * r[i * m + k];
        norm = sqrt(norm);
        if (norm == 0.0) continue;
        double alpha = r[k * m + k] > 0.0 ? -norm : norm, length = 0.0;
        for (int64_t i = 0; i < nf; i++) h[i] = i < k ? 0.0 : r[i * m + k];
        h[k] -= alpha;
        for (int64_t i = k; i < nf; i++) length += h[i] * h[i];
        if (length == 0.0) continue;
        for (int64_t j = 0; j < m; j++) { /* r = (I - 2 h h^T / |h|^2) r */
            double along = 0.0;
            for (int64_t i = k; i < nf; i++) along += h[i] * r[i * m + j];
            along *= 2.0 / length;
            for (int64_t i = k; i < nf; i++) r[i * m + j] -= along * h[i];
        }
        for (int64_t i = 0; i < nf; i++) { /* q = q (I - 2 h h^T / |h|^2) */
            double along = 0.0;
            for (int64_t l = k; l < nf; l++) along += q[i * nf + l] * h[l];
            along *= 2.0 / length;
            for (int64_t l = k; l < nf; l++) q[i * nf + l] -= along * h[l];
        }
    }
    int64_t rank = nf - m;
    for (int64_t i = 0; i < nf; i++)
        for (int64_t j = 0; j < rank; j++) z[i * rank + j] = q[i * nf + m + j];
    ws_release(w, mark);
}

/* The rank of a (rows, cols) and, in ``order`` (cols), its columns in the order a Householder QR with column
 * pivoting takes them: the first ``rank`` are independent. A column counts while its remaining norm exceeds
 * tolerance times the largest of the first pivot and 1 (scipy's qr(pivoting=True) on the same matrix picks the
 * same columns but for ties). */
int64_t pivoted_rank(Workspace *w, int64_t rows, int64_t cols, const double *a, double tolerance, int64_t *order) {
    size_t mark = ws_mark(w);
    double *r = ws_doubles(w, rows * cols), *norms = ws_doubles(w, cols), *h = ws_doubles(w, rows);
    memcpy(r, a, sizeof(double) * (size_t)(rows * cols));
    for (int64_t j = 0; j < cols; j++) {
        order[j] = j;
        double total = 0.0;
        for (int64_t i = 0; i < rows; i++) total += r[i * cols + j] * r[i * cols + j];
        norms[j] = total;
    }
    int64_t rank = 0, steps = rows < cols ? rows : cols;
    double first = 0.0;
    for (int64_t k = 0; k < steps; k++) {
        int64_t pivot = k;
        for (int64_t j = k + 1; j < cols; j++)
            if (norms[j] > norms[pivot]) pivot = j;
        if (pivot != k) {
            for (int64_t i = 0; i < rows; i++) {
                double swap = r[i * cols + k];
                r[i * cols + k] = r[i * cols + pivot], r[i * cols + pivot] = swap;
            }
            double swap = norms[k];
            norms[k] = norms[pivot], norms[pivot] = swap;
            int64_t index = order[k];
            order[k] = order[pivot], order[pivot] = index;
        }
        double norm = 0.0;
        for (int64_t i = k; i < rows; i++) norm += r[i * cols + k] * r[i * cols + k];
        norm = sqrt(norm);
        if (k == 0) first = norm;
        if (!(norm > tolerance * fmax(first, 1.0))) break;
        rank++;
        double alpha = r[k * cols + k] > 0.0 ? -norm : norm, length = 0.0;
        for (int64_t i = k; i < rows; i++) h[i] = r[i * cols + k];
        h[k] -= alpha;
        for (int64_t i = k; i < rows; i++) length += h[i] * h[i];
        if (length > 0.0)
            for (int64_t j = k; j < cols; j++) {
                double along = 0.0;
                for (int64_t i = k; i < rows; i++) along += h[i] * r[i * cols + j];
                along *= 2.0 / length;
                for (int64_t i = k; i < rows; i++) r[i * cols + j] -= along * h[i];
            }
        for (int64_t j = k + 1; j < cols; j++) { /* the columns' norms below row k (recomputed: no downdating drift) */
            double total = 0.0;
            for (int64_t i = k + 1; i < rows; i++) total += r[i * cols + j] * r[i * cols + j];
            norms[j] = total;
        }
    }
    ws_release(w, mark);
    return rank;
}
