/* Force laws. A law gives f(x); the generalized force is Q = -f(x); a spring stores V(x) = integral_0^x f. */
#include "core.h"

/* One polynomial, coefficients (degree) constant term first: f, df/dx and integral_0^x f at x (Horner). */
void polynomial_law(const double *c, int64_t degree, double x, double *f, double *df, double *energy) {
    double value = 0.0, slope = 0.0, integral = 0.0;
    for (int64_t m = degree - 1; m >= 0; m--) {
        value = value * x + c[m];
        if (m >= 1) slope = slope * x + (double)m * c[m];
        integral = integral * x + c[m] / (double)(m + 1);
    }
    *f = value, *df = slope, *energy = integral * x;
}

static double local(const Model *a, int64_t law, int which, int64_t piece, double t) {
    const double *c = a->law_coefficients + ((law * 3 + which) * a->law_intervals + piece) * a->law_degree;
    double total = 0.0;
    for (int64_t m = 0; m < a->law_degree; m++) total = total * t + c[m];
    return total;
}

/* Row ``law`` of the piecewise-law table: the piece with breaks[i] <= x < breaks[i + 1] (end pieces extended,
 * as scipy's PPoly with extrapolate), local coefficients in (x - breaks[i]) highest power first. */
void piecewise_law(const Model *a, int64_t law, double x, double *f, double *df, double *energy) {
    const double *breaks = a->law_breaks + law * (a->law_intervals + 1);
    int64_t count = a->law_count[law], i = 0;
    while (i < count - 1 && x >= breaks[i + 1]) i++;
    double t = x - breaks[i];
    *f = local(a, law, 0, i, t);
    *df = local(a, law, 1, i, t);
    *energy = local(a, law, 2, i, t) - a->law_energy_at_zero[law];
}
