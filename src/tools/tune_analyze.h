/* The offline tuner's decisions: for each (collective, nranks, nnodes, size) every measured
 * config is compared against NCCL's default with five gates, and adjacent sizes with the
 * same winner merge into ranges. */
#ifndef NCCLBPF_TUNE_ANALYZE_H
#define NCCLBPF_TUNE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/tune_input.h"

struct tune_opts {
	double alpha;          /* Mann-Whitney significance, default 0.01 */
	double min_delta;      /* Cliff's delta must exceed it, default 0.33 */
	double gain_small;     /* improvement needed below large_from, default 0.05 */
	double gain_large;     /* at and above large_from, default 0.10 */
	uint64_t large_from;   /* default 64 MiB */
	size_t min_samples;    /* per config after trimming, default 6 */
};
void tune_opts_default(struct tune_opts *o);

struct tune_gates {
	size_t kept, trimmed;                 /* candidate's samples after / removed by IQR */
	size_t default_kept, default_trimmed; /* the same for default */
	double u, p;                          /* one-sided Mann-Whitney */
	int exact;                            /* exact null distribution used */
	double cliffs_delta;                  /* > 0: the candidate is faster */
	int split_half;                       /* odd and even samples agree */
	double gain;                          /* 1 - median(candidate) / median(default) */
	double threshold;                     /* the gain needed at this size */
	double median_us, default_median_us;
	int passed;
};

struct tune_config {
	int algo, proto, channels; /* TUNE_DEFAULT (-1) = NCCL's choice; channels 0 = NCCL's */
};

struct tune_range {
	int coll;
	uint32_t nranks, nnodes;
	uint64_t measured_min, measured_max; /* first and last measured size of the range */
	uint64_t min_bytes, max_bytes;       /* what the rules cover: up to the midpoints */
	size_t nsizes;
	struct tune_config choice;           /* algo TUNE_DEFAULT = keep NCCL's */
	int has_gates;                       /* a candidate was evaluated */
	struct tune_config candidate;        /* the winner, or for default ranges the best loser */
	struct tune_gates gates;             /* the weakest size's gates of the winner, or the best loser's */
	int no_default;                      /* some size lacked default samples */
};

/* Analyzes samples (reordered in place). *ranges is malloc'd. Returns 0 or -ENOMEM. */
int tune_analyze(struct tune_samples *s, const struct tune_opts *o, struct tune_range **ranges,
		 size_t *nranges);

/* Gates of one candidate against default (exposed for tests). c, d in sample order. */
int tune_gates_eval(const double *c, size_t nc, const double *d, size_t nd, uint64_t bytes,
		    const struct tune_opts *o, struct tune_gates *g);

/* Rules for the table policy from the non-default ranges. Returns the count, or -E2BIG. */
int tune_ranges_to_rules(const struct tune_range *r, size_t n, struct tune_rule *rules, size_t max);

#endif
