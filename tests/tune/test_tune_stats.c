/* The offline tuner's statistics and gates against known values. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "test_util.h"
#include "tools/tune_analyze.h"
#include "tools/tune_stats.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

static void test_quantiles(void)
{
	double s[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	/* R type 7: quantile(1:10, .25) = 3.25, .75 = 7.75, median 5.5 */
	CHECK(NEAR(tune_quantile_sorted(s, 10, 0.25), 3.25, 1e-12));
	CHECK(NEAR(tune_quantile_sorted(s, 10, 0.75), 7.75, 1e-12));
	double u[] = {9, 1, 5, 3, 7};
	CHECK(NEAR(tune_median(u, 5), 5, 1e-12));
	CHECK(NEAR(tune_median(u, 4), 4, 1e-12)); /* 9 1 5 3 -> 1 3 5 9 */
}

static void test_iqr(void)
{
	/* Q1 = 3.25, Q3 = 7.75, IQR 4.5: fences -3.5 and 14.5 */
	double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14.5, 14.6, -3.6, -3.5};
	double out[14];
	size_t k = tune_iqr_trim(x, 10, out);
	CHECK(k == 10);
	/* with the extra points the quartiles move; check a clear outlier goes */
	double y[] = {10, 11, 10, 12, 11, 10, 11, 500};
	k = tune_iqr_trim(y, 8, out);
	CHECK(k == 7);
	for (size_t i = 0; i < k; i++)
		CHECK(out[i] != 500);
	CHECK(out[0] == 10 && out[3] == 12); /* order kept */
	(void)x;
}

static void test_mann_whitney(void)
{
	double u, p;
	int exact;
	/* R: x <- c(0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46)
	 *    y <- c(1.15, 0.88, 0.90, 0.74, 1.21); wilcox.test(x, y, alternative = "g")
	 *    W = 35, p-value = 0.1272 (exact). Our test is "first sample smaller", so y vs x:
	 *    U_y = 50 - 35 = 15, p = P(U <= 15) = 0.1272. */
	double x[] = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
	double y[] = {1.15, 0.88, 0.90, 0.74, 1.21};
	CHECK(tune_mann_whitney_less(y, 5, x, 10, &u, &p, &exact) == 0);
	CHECK(exact == 1);
	CHECK(NEAR(u, 15, 1e-12));
	CHECK(NEAR(p, 0.1272, 5e-5));
	/* {1,2,3} vs {4,5,6}: U = 0, exact p = 1 / C(6,3) = 0.05 */
	double a[] = {1, 2, 3}, b[] = {4, 5, 6};
	CHECK(tune_mann_whitney_less(a, 3, b, 3, &u, &p, &exact) == 0);
	CHECK(exact && u == 0 && NEAR(p, 0.05, 1e-12));
	CHECK(tune_mann_whitney_less(b, 3, a, 3, &u, &p, &exact) == 0);
	CHECK(u == 9 && NEAR(p, 1.0, 1e-12));
	/* ties, by hand: x = {1,2,2}, y = {2,3,3}: mid-ranks 1,3,3 | 3,5.5,5.5; U = 1;
	 * tie term 24 + 6 = 30; var = 9/12 (7 - 30/30) = 4.5; z = (1 - 4.5 + 0.5)/sqrt(4.5)
	 * = -1.414214; p = Phi(z) = 0.0786496 */
	double t1[] = {1, 2, 2}, t2[] = {2, 3, 3};
	CHECK(tune_mann_whitney_less(t1, 3, t2, 3, &u, &p, &exact) == 0);
	CHECK(!exact && NEAR(u, 1, 1e-12) && NEAR(p, 0.0786496, 1e-6));
	/* all equal: no evidence */
	double e[] = {5, 5, 5, 5};
	CHECK(tune_mann_whitney_less(e, 4, e, 4, &u, &p, &exact) == 0 && p == 1.0);
	CHECK(tune_mann_whitney_less(e, 0, e, 4, &u, &p, &exact) == -EINVAL);
	/* large samples: the normal approximation agrees with the exact value at n = 20 */
	double big1[20], big2[20];
	for (int i = 0; i < 20; i++) {
		big1[i] = 2 * i;       /* even numbers */
		big2[i] = 2 * i + 7;   /* shifted odd numbers: no ties */
	}
	double pe;
	CHECK(tune_mann_whitney_less(big1, 20, big2, 20, &u, &pe, &exact) == 0 && exact);
	double c1[21], c2[21];
	for (int i = 0; i < 21; i++) {
		c1[i] = 2 * i;
		c2[i] = 2 * i + 7;
	}
	double pn;
	CHECK(tune_mann_whitney_less(c1, 21, c2, 21, &u, &pn, &exact) == 0 && !exact);
	CHECK(pe > 0.001 && pe < 0.5 && pn > 0.001 && pn < 0.5);
	CHECK(fabs(log(pe) - log(pn)) < 0.5); /* neighbouring n, same shift: same magnitude */
}

static void test_cliffs_delta(void)
{
	double x[] = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
	double y[] = {1.15, 0.88, 0.90, 0.74, 1.21};
	/* pairs with y < x: 35 (= W above), y > x: 15: delta(y vs x) = (35 - 15)/50 = 0.4 */
	CHECK(NEAR(tune_cliffs_delta(y, 5, x, 10), 0.4, 1e-12));
	CHECK(NEAR(tune_cliffs_delta(x, 10, y, 5), -0.4, 1e-12));
	double a[] = {1, 2, 3}, b[] = {4, 5, 6};
	CHECK(tune_cliffs_delta(a, 3, b, 3) == 1.0);
	CHECK(tune_cliffs_delta(b, 3, a, 3) == -1.0);
	double t1[] = {1, 2, 2}, t2[] = {2, 3, 3}; /* smaller pairs 7, greater 0, ties 2: 7/9 */
	CHECK(NEAR(tune_cliffs_delta(t1, 3, t2, 3), 7.0 / 9.0, 1e-12));
	CHECK(isnan(tune_cliffs_delta(a, 0, b, 3)));
}

/* Each gate on its own decides: data that passes four gates and fails the fifth is rejected. */
static void test_gates(void)
{
	struct tune_opts o;
	tune_opts_default(&o);
	struct tune_gates g;
	double d[40], c[40];
	/* clear winner: 20 % faster, no overlap */
	for (int i = 0; i < 40; i++) {
		d[i] = 100 + (i % 10);
		c[i] = 80 + (i % 10);
	}
	CHECK(tune_gates_eval(c, 40, d, 40, 4096, &o, &g) == 0);
	CHECK(g.passed && g.p < 0.01 && g.cliffs_delta > 0.33 && g.split_half && NEAR(g.gain, 0.2, 0.01));
	CHECK(g.threshold == 0.05);
	/* gain gate: 8 % faster passes below 64 MiB, fails at 64 MiB (10 % needed) */
	for (int i = 0; i < 40; i++)
		c[i] = 92 + 0.1 * (i % 10);
	for (int i = 0; i < 40; i++)
		d[i] = 100 + 0.1 * (i % 10);
	CHECK(tune_gates_eval(c, 40, d, 40, 1 << 20, &o, &g) == 0 && g.passed);
	CHECK(tune_gates_eval(c, 40, d, 40, 64u << 20, &o, &g) == 0 && !g.passed && g.threshold == 0.10);
	CHECK(g.p < 0.01 && g.split_half && g.cliffs_delta > 0.33); /* only the gain failed */
	/* split-half gate: the candidate wins in the even samples only */
	for (int i = 0; i < 40; i++) {
		d[i] = 100 + (i % 7);
		c[i] = (i % 2) ? 101 + (i % 7) : 60 + (i % 7);
	}
	CHECK(tune_gates_eval(c, 40, d, 40, 4096, &o, &g) == 0);
	CHECK(!g.split_half && !g.passed);
	/* Cliff's delta gate: half the candidate's samples are far faster, half slightly slower:
	 * the median gain can be large, delta stays near 0 */
	for (int i = 0; i < 40; i++) {
		d[i] = 100 + 0.01 * i;
		c[i] = (i % 4 < 2) ? 50 + 0.01 * i : 100.5 + 0.01 * i;
	}
	CHECK(tune_gates_eval(c, 40, d, 40, 4096, &o, &g) == 0);
	CHECK(g.cliffs_delta < 0.33 && !g.passed);
	/* too few samples: nothing passes */
	CHECK(tune_gates_eval(c, 4, d, 4, 4096, &o, &g) == 0 && !g.passed);
	/* IQR: one huge outlier in the default is trimmed and does not fake a win */
	for (int i = 0; i < 40; i++) {
		d[i] = 100 + (i % 5);
		c[i] = 100 + (i % 5);
	}
	d[7] = 1e6;
	CHECK(tune_gates_eval(c, 40, d, 40, 4096, &o, &g) == 0);
	CHECK(g.default_trimmed == 1 && !g.passed);
}

int main(void)
{
	test_quantiles();
	test_iqr();
	test_mann_whitney();
	test_cliffs_delta();
	test_gates();
	TEST_DONE();
}
