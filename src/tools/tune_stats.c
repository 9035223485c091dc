/* Statistics of the offline tuner; see tune_stats.h. */
#include "tools/tune_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double *sorted_copy(const double *x, size_t n)
{
	double *s = malloc((n ? n : 1) * sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

double tune_quantile_sorted(const double *sorted, size_t n, double q)
{
	if (!n)
		return NAN;
	double h = (double)(n - 1) * q;
	size_t lo = (size_t)floor(h);
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

double tune_median(const double *x, size_t n)
{
	double *s = sorted_copy(x, n);
	if (!s)
		return NAN;
	double m = tune_quantile_sorted(s, n, 0.5);
	free(s);
	return m;
}

size_t tune_iqr_trim(const double *x, size_t n, double *out)
{
	double *s = sorted_copy(x, n);
	if (!s)
		return 0;
	double q1 = tune_quantile_sorted(s, n, 0.25), q3 = tune_quantile_sorted(s, n, 0.75);
	free(s);
	double lo = q1 - 1.5 * (q3 - q1), hi = q3 + 1.5 * (q3 - q1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (x[i] >= lo && x[i] <= hi)
			out[k++] = x[i];
	return k;
}

/* Exact P(U <= u) for sample sizes m, n without ties: counts of arrangements by U, built
 * with the recurrence f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u) (Mann & Whitney 1947). */
static int mwu_exact_cdf(size_t m, size_t n, double u, double *p)
{
	size_t umax = m * n;
	/* f[i][j][*] for i <= m, j <= n, kept as two layers over i */
	size_t width = umax + 1;
	double *prev = calloc((n + 1) * width, sizeof(double));
	double *cur = calloc((n + 1) * width, sizeof(double));
	if (!prev || !cur) {
		free(prev);
		free(cur);
		return -ENOMEM;
	}
	/* i = 0: one arrangement with U = 0 for every j */
	for (size_t j = 0; j <= n; j++)
		prev[j * width] = 1;
	for (size_t i = 1; i <= m; i++) {
		memset(cur, 0, (n + 1) * width * sizeof(double));
		cur[0] = 1; /* j = 0 */
		for (size_t j = 1; j <= n; j++)
			for (size_t k = 0; k <= i * j; k++) {
				/* the largest value is an x (above all j y's: adds j) or a y */
				double a = k >= j ? prev[j * width + k - j] : 0;
				double b = cur[(j - 1) * width + k];
				cur[j * width + k] = a + b;
			}
		double *t = prev;
		prev = cur;
		cur = t;
	}
	double total = 0, below = 0;
	for (size_t k = 0; k <= umax; k++) {
		total += prev[n * width + k];
		if ((double)k <= u + 1e-9)
			below += prev[n * width + k];
	}
	free(prev);
	free(cur);
	*p = below / total;
	return 0;
}

struct tagged {
	double v;
	int group; /* 0 = x, 1 = y */
};

static int cmp_tagged(const void *a, const void *b)
{
	return cmp_double(&((const struct tagged *)a)->v, &((const struct tagged *)b)->v);
}

int tune_mann_whitney_less(const double *x, size_t nx, const double *y, size_t ny, double *u,
			   double *p, int *exact)
{
	if (!nx || !ny)
		return -EINVAL;
	size_t n = nx + ny;
	struct tagged *t = malloc(n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < nx; i++)
		t[i] = (struct tagged){x[i], 0};
	for (size_t i = 0; i < ny; i++)
		t[nx + i] = (struct tagged){y[i], 1};
	qsort(t, n, sizeof(*t), cmp_tagged);
	/* rank sum of x with mid-ranks for ties, and the tie term sum(t^3 - t) */
	double rx = 0, ties = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && t[j + 1].v == t[i].v)
			j++;
		double mid = (double)(i + j) / 2.0 + 1.0, len = (double)(j - i + 1);
		for (size_t k = i; k <= j; k++)
			if (t[k].group == 0)
				rx += mid;
		ties += len * len * len - len;
		i = j + 1;
	}
	free(t);
	double m1 = (double)nx, m2 = (double)ny;
	*u = rx - m1 * (m1 + 1) / 2;
	if (ties == 0 && nx <= TUNE_MWU_EXACT_MAX && ny <= TUNE_MWU_EXACT_MAX) {
		*exact = 1;
		return mwu_exact_cdf(nx, ny, *u, p);
	}
	*exact = 0;
	double N = (double)n;
	double var = m1 * m2 / 12.0 * ((N + 1) - ties / (N * (N - 1)));
	if (var <= 0) { /* every value equal: no evidence either way */
		*p = 1.0;
		return 0;
	}
	double z = (*u - m1 * m2 / 2 + 0.5) / sqrt(var); /* continuity correction toward the mean */
	*p = 0.5 * erfc(-z / sqrt(2.0));
	return 0;
}

/* Number of values in sorted[0..n) strictly below v, and at most v. */
static size_t count_below(const double *sorted, size_t n, double v, int or_equal)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sorted[mid] < v || (or_equal && sorted[mid] == v))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

double tune_cliffs_delta(const double *x, size_t nx, const double *y, size_t ny)
{
	if (!nx || !ny)
		return NAN;
	double *sy = sorted_copy(y, ny);
	if (!sy)
		return NAN;
	double greater = 0, smaller = 0; /* pairs with y > x, y < x */
	for (size_t i = 0; i < nx; i++) {
		size_t below = count_below(sy, ny, x[i], 0), upto = count_below(sy, ny, x[i], 1);
		smaller += (double)below;
		greater += (double)(ny - upto);
	}
	free(sy);
	return (greater - smaller) / ((double)nx * (double)ny);
}
