/* A strict parser of the Prometheus text exposition format 0.0.4, for the metrics tests:
 * metric and label names, label-value escapes, float values, one HELP/TYPE per family
 * before its samples, families contiguous, no duplicate series, counters >= 0, and
 * histograms complete (increasing le ending in +Inf, cumulative buckets, _count equal to
 * the +Inf bucket, _sum present). Returns 0, or -1 with the line and reason in err. */
#ifndef NCCLBPF_TESTS_PROM_PARSE_H
#define NCCLBPF_TESTS_PROM_PARSE_H

#include <stddef.h>

#define PROM_MAX_LABELS 16
struct prom_sample {
	char name[128];
	int n_labels;
	char label[PROM_MAX_LABELS][2][160]; /* name, unescaped value */
	double value;
};

int prom_parse(const char *text, char *err, size_t errlen);
/* The value of the sample name{labels...} where every given label matches (labels as
 * "k=v" strings, NULL-terminated); returns 0 and *value, -1 if absent or ambiguous. */
int prom_find(const char *text, const char *name, const char *const *labels, double *value);

#endif
