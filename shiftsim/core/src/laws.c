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

static double local(const Model *model, int64_t law, int which, int64_t piece, double t) {
    const double *c = model->law_coefficients + ((law * 3 + which) * model->law_intervals + piece) * model->law_degree;
    double total = 0.0;
    for (int64_t m = 0; m < model->law_degree; m++) total = total * t + c[m];
    return total;
}

/* The piece of law row ``law`` that holds at x: the one with breaks[i] <= x < breaks[i + 1] (end pieces extended,
 * as scipy's PPoly with extrapolate). */
int64_t piece_at(const Model *model, int64_t law, double x) {
    const double *breaks = model->law_breaks + law * (model->law_intervals + 1);
    int64_t count = model->law_count[law], i = 0;
    while (i < count - 1 && x >= breaks[i + 1]) i++;
    return i;
}

/* Row ``law`` of the piecewise-law table at x, on its piece i (piece_at), local coefficients in (x - breaks[i])
 * highest power first. */
void piecewise_law(const Model *model, int64_t law, double x, double *f, double *df, double *energy) {
    int64_t i = piece_at(model, law, x);
    double t = x - model->law_breaks[law * (model->law_intervals + 1) + i];
    *f = local(model, law, 0, i, t);
    *df = local(model, law, 1, i, t);
    *energy = local(model, law, 2, i, t) - model->law_energy_at_zero[law];
}
