/* Statistics of the offline tuner (`ncclbpf tune`): quartiles, IQR trimming, the one-sided
 * Mann-Whitney U test and Cliff's delta. Pure functions on arrays of doubles; no I/O. */
#ifndef NCCLBPF_TUNE_STATS_H
#define NCCLBPF_TUNE_STATS_H

#include <stddef.h>

/* Quantile q in [0, 1] of sorted[0..n) with linear interpolation (R type 7, NumPy default). */
double tune_quantile_sorted(const double *sorted, size_t n, double q);
/* Median of x[0..n) (x is not modified). n > 0. Returns NAN on allocation failure. */
double tune_median(const double *x, size_t n);

/* Tukey's fences: keeps the values within [Q1 - 1.5 IQR, Q3 + 1.5 IQR], in their original
 * order, in out[] (room for n). Returns the number kept, or 0 on allocation failure (n > 0). */
size_t tune_iqr_trim(const double *x, size_t n, double *out);

/* One-sided Mann-Whitney U test of H1 "x is stochastically smaller than y".
 * u = sum over pairs of [x > y] + 0.5 [x == y] (small u favours H1); p = P(U <= u | H0).
 * Exact null distribution when there are no ties and nx, ny <= TUNE_MWU_EXACT_MAX; normal
 * approximation with tie correction and continuity correction otherwise.
 * Returns 0, or -EINVAL (empty input) / -ENOMEM. *exact tells which was used. */
#define TUNE_MWU_EXACT_MAX 20
int tune_mann_whitney_less(const double *x, size_t nx, const double *y, size_t ny, double *u,
			   double *p, int *exact);

/* Cliff's delta of x against y: (#{x < y} - #{x > y}) / (nx ny), in [-1, 1]; positive when
 * x tends to be smaller (faster, for latencies). NAN for empty input or allocation failure. */
double tune_cliffs_delta(const double *x, size_t nx, const double *y, size_t ny);

#endif
