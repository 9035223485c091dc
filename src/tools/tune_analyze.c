/* The offline tuner's decisions; see tune_analyze.h. */
#include "tools/tune_analyze.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/policy.h>

#include "tools/tune_stats.h"

void tune_opts_default(struct tune_opts *o)
{
	o->alpha = 0.01;
	o->min_delta = 0.33;
	o->gain_small = 0.05;
	o->gain_large = 0.10;
	o->large_from = 64ull << 20;
	o->min_samples = 6;
}

/* Median of the odd- or even-positioned values. */
static double half_median(const double *x, size_t n, int odd, double *scratch)
{
	size_t k = 0;
	for (size_t i = (size_t)odd; i < n; i += 2)
		scratch[k++] = x[i];
	return k ? tune_median(scratch, k) : NAN;
}

int tune_gates_eval(const double *c, size_t nc, const double *d, size_t nd, uint64_t bytes,
		    const struct tune_opts *o, struct tune_gates *g)
{
	memset(g, 0, sizeof(*g));
	g->p = 1;
	g->threshold = bytes >= o->large_from ? o->gain_large : o->gain_small;
	size_t cap = (nc > nd ? nc : nd) + 1;
	double *ct = malloc(nc * sizeof(double) + 1), *dt = malloc(nd * sizeof(double) + 1);
	double *scratch = malloc(cap * sizeof(double));
	int rc = -ENOMEM;
	if (!ct || !dt || !scratch)
		goto out;
	g->kept = nc ? tune_iqr_trim(c, nc, ct) : 0;
	g->default_kept = nd ? tune_iqr_trim(d, nd, dt) : 0;
	g->trimmed = nc - g->kept;
	g->default_trimmed = nd - g->default_kept;
	rc = 0;
	if (g->kept < o->min_samples || g->default_kept < o->min_samples)
		goto out; /* not enough evidence: fails every gate */
	g->median_us = tune_median(ct, g->kept);
	g->default_median_us = tune_median(dt, g->default_kept);
	rc = tune_mann_whitney_less(ct, g->kept, dt, g->default_kept, &g->u, &g->p, &g->exact);
	if (rc)
		goto out;
	g->cliffs_delta = tune_cliffs_delta(ct, g->kept, dt, g->default_kept);
	g->gain = 1.0 - g->median_us / g->default_median_us;
	/* split-half: both halves of the (time-ordered) samples must see the candidate win */
	g->split_half = 1;
	for (int odd = 0; odd <= 1; odd++) {
		double mc = half_median(ct, g->kept, odd, scratch);
		double md = half_median(dt, g->default_kept, odd, scratch);
		if (!(mc < md))
			g->split_half = 0;
	}
	g->passed = g->p < o->alpha && g->cliffs_delta > o->min_delta && g->split_half &&
		    g->gain > g->threshold;
out:
	free(ct);
	free(dt);
	free(scratch);
	return rc;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct tune_sample *x = a, *y = b;
#define CMP(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
	CMP(coll);
	CMP(nranks);
	CMP(nnodes);
	CMP(bytes);
	CMP(algo);
	CMP(proto);
	CMP(channels);
	CMP(order);
#undef CMP
	return 0;
}

static int same_group(const struct tune_sample *a, const struct tune_sample *b)
{
	return a->coll == b->coll && a->nranks == b->nranks && a->nnodes == b->nnodes;
}

static int same_config(const struct tune_sample *a, const struct tune_sample *b)
{
	return a->algo == b->algo && a->proto == b->proto && a->channels == b->channels;
}

/* Decision at one size. */
struct size_decision {
	uint64_t bytes;
	struct tune_config choice;
	int has_gates, no_default;
	struct tune_config candidate;
	struct tune_gates gates;
};

static int decide_size(const struct tune_sample *v, size_t n, const struct tune_opts *o,
		       struct size_decision *dec, double *bufc, double *bufd)
{
	memset(dec, 0, sizeof(*dec));
	dec->bytes = v[0].bytes;
	dec->choice = (struct tune_config){TUNE_DEFAULT, TUNE_DEFAULT, 0};
	size_t nd = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].algo == TUNE_DEFAULT && v[i].proto == TUNE_DEFAULT && v[i].channels == 0)
			bufd[nd++] = v[i].time_us;
	if (!nd) {
		dec->no_default = 1;
		return 0;
	}
	double best_pass = -INFINITY, best_any = -INFINITY;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && same_config(&v[i], &v[j]))
			j++;
		if (!(v[i].algo == TUNE_DEFAULT && v[i].proto == TUNE_DEFAULT && v[i].channels == 0)) {
			size_t nc = 0;
			for (size_t k = i; k < j; k++)
				bufc[nc++] = v[k].time_us;
			struct tune_gates g;
			int rc = tune_gates_eval(bufc, nc, bufd, nd, dec->bytes, o, &g);
			if (rc)
				return rc;
			struct tune_config cfg = {v[i].algo, v[i].proto, v[i].channels};
			if (g.passed && g.gain > best_pass) {
				best_pass = g.gain;
				dec->choice = cfg;
				dec->candidate = cfg;
				dec->gates = g;
				dec->has_gates = 1;
			} else if (best_pass == -INFINITY && g.median_us > 0 && g.gain > best_any) {
				best_any = g.gain;
				dec->candidate = cfg;
				dec->gates = g;
				dec->has_gates = 1;
			}
		}
		i = j;
	}
	return 0;
}

static int config_eq(const struct tune_config *a, const struct tune_config *b)
{
	return a->algo == b->algo && a->proto == b->proto && a->channels == b->channels;
}

/* Geometric midpoint between two measured sizes: the boundary of their ranges. */
static uint64_t midpoint(uint64_t a, uint64_t b)
{
	double m = floor(sqrt((double)a * (double)b));
	uint64_t x = (uint64_t)m;
	if (x < a)
		x = a;
	if (x >= b)
		x = b - 1;
	return x;
}

int tune_analyze(struct tune_samples *s, const struct tune_opts *o, struct tune_range **ranges,
		 size_t *nranges)
{
	*ranges = NULL;
	*nranges = 0;
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp_sample);
	double *bufc = malloc(s->n * sizeof(double)), *bufd = malloc(s->n * sizeof(double));
	struct size_decision *dec = malloc(s->n * sizeof(*dec));
	struct tune_range *out = malloc(s->n * sizeof(*out));
	size_t nout = 0;
	int rc = -ENOMEM;
	if (!bufc || !bufd || !dec || !out)
		goto fail;
	for (size_t g0 = 0; g0 < s->n;) {
		size_t g1 = g0;
		while (g1 < s->n && same_group(&s->v[g0], &s->v[g1]))
			g1++;
		/* one decision per size of the group */
		size_t nd = 0;
		for (size_t i = g0; i < g1;) {
			size_t j = i;
			while (j < g1 && s->v[j].bytes == s->v[i].bytes)
				j++;
			rc = decide_size(&s->v[i], j - i, o, &dec[nd++], bufc, bufd);
			if (rc)
				goto fail;
			i = j;
		}
		/* merge adjacent sizes with the same decision */
		for (size_t i = 0; i < nd;) {
			size_t j = i + 1;
			while (j < nd && !dec[j].no_default && !dec[i].no_default &&
			       config_eq(&dec[j].choice, &dec[i].choice))
				j++;
			struct tune_range *r = &out[nout++];
			memset(r, 0, sizeof(*r));
			r->coll = s->v[g0].coll;
			r->nranks = s->v[g0].nranks;
			r->nnodes = s->v[g0].nnodes;
			r->measured_min = dec[i].bytes;
			r->measured_max = dec[j - 1].bytes;
			r->min_bytes = i == 0 ? dec[i].bytes : midpoint(dec[i - 1].bytes, dec[i].bytes) + 1;
			r->max_bytes = j == nd ? dec[j - 1].bytes : midpoint(dec[j - 1].bytes, dec[j].bytes);
			r->nsizes = j - i;
			r->choice = dec[i].choice;
			r->no_default = dec[i].no_default;
			/* gates: for a winner its weakest size (smallest gain), for default the
			 * strongest loser (largest gain) */
			int winner = r->choice.algo != TUNE_DEFAULT || r->choice.proto != TUNE_DEFAULT ||
				     r->choice.channels;
			for (size_t k = i; k < j; k++) {
				if (!dec[k].has_gates)
					continue;
				int better = !r->has_gates || (winner ? dec[k].gates.gain < r->gates.gain
								       : dec[k].gates.gain > r->gates.gain);
				if (better) {
					r->has_gates = 1;
					r->candidate = dec[k].candidate;
					r->gates = dec[k].gates;
				}
			}
			i = j;
		}
		g0 = g1;
	}
	free(bufc);
	free(bufd);
	free(dec);
	*ranges = out;
	*nranges = nout;
	return 0;
fail:
	free(bufc);
	free(bufd);
	free(dec);
	free(out);
	return rc;
}

int tune_ranges_to_rules(const struct tune_range *r, size_t n, struct tune_rule *rules, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tune_config *c = &r[i].choice;
		if (c->algo == TUNE_DEFAULT && c->proto == TUNE_DEFAULT && c->channels == 0)
			continue;
		if (k == max)
			return -E2BIG;
		struct tune_rule *q = &rules[k++];
		memset(q, 0, sizeof(*q));
		q->min_bytes = r[i].min_bytes;
		q->max_bytes = r[i].max_bytes;
		q->coll_type = r[i].coll;
		q->n_nodes = (int32_t)r[i].nnodes;
		q->n_ranks = (int32_t)r[i].nranks;
		q->num_pipe_ops = -1;
		q->algo = c->algo == TUNE_DEFAULT ? NCCLBPF_ALGO_KEEP : c->algo;
		q->proto = c->proto == TUNE_DEFAULT ? NCCLBPF_PROTO_KEEP : c->proto;
		q->n_channels = c->channels;
	}
	return (int)k;
}
