/* ncclbpf tune: the offline tuner. Reads sample CSVs (scripts/emulate-nodes.sh,
 * ncclbpf-gpubench --samples), decides per (collective, nranks, nnodes, size) whether a
 * measured config beats NCCL's default through five gates, merges sizes into ranges, and
 * prints them (table or --json) and/or writes a verified table policy (-o). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tune_analyze.h"
#include "tools/tune_input.h"
#include "tools/tune_object.h"

int cmd_tune(int argc, char **argv);

#define TUNE_MAX_INPUT (1ull << 32)

static void tune_usage(FILE *f)
{
	fprintf(f,
		"usage: ncclbpf tune [--json] [-o rules.bpf.o] [--reps all|even|odd|N,M..]\n"
		"                    [--alpha P] [--min-delta D] [--gain-small G] [--gain-large G]\n"
		"                    [--large-from BYTES] [--min-samples N] SAMPLES.csv...\n"
		"  Input: CSV with header; columns coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n"
		"  (algo/proto 'default' = NCCL's choice), optional rep and policy (rows with a policy\n"
		"  are skipped: they are not NCCL configs). Gates per size and config against default:\n"
		"  IQR trimming, one-sided Mann-Whitney p < alpha (0.01), Cliff's delta > 0.33,\n"
		"  split-half agreement, gain > 5 %% below 64 MiB and > 10 %% from 64 MiB.\n");
}

static void json_num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("null");
}

static void print_json(const struct tune_range *r, size_t n)
{
	printf("[\n");
	for (size_t i = 0; i < n; i++) {
		const struct tune_range *x = &r[i];
		printf("{\"coll\":\"%s\",\"nranks\":%u,\"nnodes\":%u,\"min_bytes\":%llu,\"max_bytes\":%llu,"
		       "\"measured_min\":%llu,\"measured_max\":%llu,\"sizes\":%zu,"
		       "\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,",
		       tune_coll_name(x->coll), x->nranks, x->nnodes, (unsigned long long)x->min_bytes,
		       (unsigned long long)x->max_bytes, (unsigned long long)x->measured_min,
		       (unsigned long long)x->measured_max, x->nsizes, tune_algo_name(x->choice.algo),
		       tune_proto_name(x->choice.proto), x->choice.channels);
		if (x->no_default)
			printf("\"note\":\"no default samples at this size\",");
		if (!x->has_gates) {
			printf("\"gates\":null}%s\n", i + 1 < n ? "," : "");
			continue;
		}
		const struct tune_gates *g = &x->gates;
		printf("\"candidate\":{\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d},",
		       tune_algo_name(x->candidate.algo), tune_proto_name(x->candidate.proto),
		       x->candidate.channels);
		printf("\"gates\":{\"iqr\":{\"kept\":%zu,\"trimmed\":%zu,\"default_kept\":%zu,"
		       "\"default_trimmed\":%zu},\"u\":",
		       g->kept, g->trimmed, g->default_kept, g->default_trimmed);
		json_num(g->u);
		printf(",\"p\":");
		json_num(g->p);
		printf(",\"exact\":%s,\"cliffs_delta\":", g->exact ? "true" : "false");
		json_num(g->cliffs_delta);
		printf(",\"split_half\":%s,\"gain\":", g->split_half ? "true" : "false");
		json_num(g->gain);
		printf(",\"threshold\":");
		json_num(g->threshold);
		printf(",\"median_us\":");
		json_num(g->median_us);
		printf(",\"default_median_us\":");
		json_num(g->default_median_us);
		printf(",\"passed\":%s}}%s\n", g->passed ? "true" : "false", i + 1 < n ? "," : "");
	}
	printf("]\n");
}

static void print_table(const struct tune_range *r, size_t n)
{
	printf("%-13s %6s %6s %12s %12s  %-8s %-7s %3s  %-18s %9s %7s %6s %5s %7s\n", "coll", "nranks",
	       "nnodes", "min_bytes", "max_bytes", "algo", "proto", "ch", "best candidate", "p", "delta",
	       "split", "gain", "needed");
	for (size_t i = 0; i < n; i++) {
		const struct tune_range *x = &r[i];
		char cand[64] = "-";
		if (x->has_gates)
			snprintf(cand, sizeof(cand), "%s/%s/%d", tune_algo_name(x->candidate.algo),
				 tune_proto_name(x->candidate.proto), x->candidate.channels);
		printf("%-13s %6u %6u %12llu %12llu  %-8s %-7s %3d  %-18s", tune_coll_name(x->coll), x->nranks,
		       x->nnodes, (unsigned long long)x->min_bytes, (unsigned long long)x->max_bytes,
		       tune_algo_name(x->choice.algo), tune_proto_name(x->choice.proto), x->choice.channels,
		       cand);
		if (x->has_gates)
			printf(" %9.3g %7.3f %6s %4.1f%% %6.1f%%", x->gates.p, x->gates.cliffs_delta,
			       x->gates.split_half ? "yes" : "no", 100 * x->gates.gain, 100 * x->gates.threshold);
		printf("%s\n", x->no_default ? "  (no default samples)" : "");
	}
}

static int parse_double_arg(const char *s, double lo, double hi, double *v)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x >= lo && x <= hi))
		return -1;
	*v = x;
	return 0;
}

int cmd_tune(int argc, char **argv)
{
	struct tune_opts o;
	tune_opts_default(&o);
	struct tune_rep_filter reps;
	tune_rep_filter_parse("all", &reps);
	const char *out_path = NULL;
	int json = 0, ninputs = 0;
	const char *inputs[64];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		double d;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			tune_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "-o") && v) {
			out_path = v;
			i++;
		} else if (!strcmp(a, "--reps") && v) {
			if (tune_rep_filter_parse(v, &reps)) {
				fprintf(stderr, "ncclbpf tune: --reps '%s': want all, even, odd or N,M,..\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--alpha") && v && !parse_double_arg(v, 1e-12, 0.5, &o.alpha)) {
			i++;
		} else if (!strcmp(a, "--min-delta") && v && !parse_double_arg(v, -1, 1, &o.min_delta)) {
			i++;
		} else if (!strcmp(a, "--gain-small") && v && !parse_double_arg(v, 0, 1, &o.gain_small)) {
			i++;
		} else if (!strcmp(a, "--gain-large") && v && !parse_double_arg(v, 0, 1, &o.gain_large)) {
			i++;
		} else if (!strcmp(a, "--large-from") && v && !parse_double_arg(v, 0, 1e18, &d)) {
			o.large_from = (uint64_t)d;
			i++;
		} else if (!strcmp(a, "--min-samples") && v && !parse_double_arg(v, 2, 1e9, &d)) {
			o.min_samples = (size_t)d;
			i++;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ncclbpf tune: bad option or value: %s%s%s\n", a, v ? " " : "", v ? v : "");
			tune_usage(stderr);
			return 2;
		} else if (ninputs < 64) {
			inputs[ninputs++] = a;
		} else {
			fprintf(stderr, "ncclbpf tune: at most 64 input files\n");
			return 2;
		}
	}
	if (!ninputs) {
		tune_usage(stderr);
		return 2;
	}
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	int bad = 0;
	for (int k = 0; k < ninputs; k++) {
		char *buf = NULL;
		size_t len = 0;
		int rc = tune_read_file(inputs[k], TUNE_MAX_INPUT, &buf, &len);
		if (rc) {
			fprintf(stderr, "%s: error: %s\n", inputs[k], strerror(-rc));
			bad = 1;
			continue;
		}
		rc = tune_samples_parse(buf, len, inputs[k], &reps, &s, stderr);
		free(buf);
		if (rc == -ENOMEM) {
			fprintf(stderr, "ncclbpf tune: out of memory\n");
			tune_samples_free(&s);
			return 1;
		}
		if (rc)
			bad = 1;
	}
	if (bad) {
		tune_samples_free(&s);
		return 1;
	}
	if (s.skipped_policy)
		fprintf(stderr, "ncclbpf tune: skipped %zu rows measured under a tuner policy\n", s.skipped_policy);
	if (s.skipped_rep)
		fprintf(stderr, "ncclbpf tune: skipped %zu rows outside --reps\n", s.skipped_rep);
	if (!s.n) {
		fprintf(stderr, "ncclbpf tune: no samples to analyze\n");
		tune_samples_free(&s);
		return 1;
	}
	struct tune_range *ranges = NULL;
	size_t nranges = 0;
	int rc = tune_analyze(&s, &o, &ranges, &nranges);
	tune_samples_free(&s);
	if (rc) {
		fprintf(stderr, "ncclbpf tune: %s\n", strerror(-rc));
		return 1;
	}
	int status = 0;
	if (out_path) {
		struct tune_rule rules[TUNE_MAX_RULES];
		int n = tune_ranges_to_rules(ranges, nranges, rules, TUNE_MAX_RULES);
		char err[1024] = "";
		void *obj = NULL;
		size_t len = 0;
		if (n < 0) {
			fprintf(stderr, "ncclbpf tune: the decisions need more than %d rules (the table "
					"policy's capacity); tune fewer sizes or node counts per run\n", TUNE_MAX_RULES);
			status = 1;
		} else if ((rc = tune_object_build(ncclbpf_tuned_rules_template, ncclbpf_tuned_rules_template_len,
						   rules, (size_t)n, &obj, &len, err, sizeof(err))) ||
			   (rc = tune_write_atomic(out_path, obj, len, err, sizeof(err)))) {
			fprintf(stderr, "ncclbpf tune: %s\n", err);
			status = 1;
		} else {
			fprintf(stderr, "ncclbpf tune: %d rule%s -> %s (verified, checked rule by rule)\n", n,
				n == 1 ? "" : "s", out_path);
		}
		free(obj);
	}
	if (json)
		print_json(ranges, nranges);
	else if (!out_path)
		print_table(ranges, nranges);
	free(ranges);
	return status;
}
