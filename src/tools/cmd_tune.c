/* ncclbpf tune: the offline tuner. Reads sample CSVs (scripts/emulate-nodes.sh,
 * ncclbpf-gpubench --samples), decides per (collective, nranks, nnodes, size) whether a
 * measured config beats NCCL's default through five gates, merges sizes into ranges, and
 * prints them (table or --json) and/or writes a verified table policy (-o). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/tune_analyze.h"
#include "tools/tune_input.h"
#include "tools/tune_object.h"

/* per input file; the loader's limit for objects too (a runaway file or device is refused) */
#define TUNE_MAX_INPUT (256u << 20)
#define TUNE_MAX_FILES 64

static void json_num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("null");
}

/* One range per line (the fields docs/tuning.md documents), inside the versioned
 * document every --json command prints. */
static void print_json(const struct tune_range *r, size_t n)
{
	printf("{\"schema\":\"ncclbpf.tune/1\",\"ranges\":[\n");
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
	printf("]}\n");
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

/* A real number in [lo, hi]; a usage error (-1) otherwise. */
static int parse_double_arg(const char *opt, const char *s, double lo, double hi, double *v)
{
	char *end;
	double x = strtod(s, &end);
	if (!*s || *end || !(x >= lo && x <= hi)) {
		cli_usage_error("tune", "%s: '%s' is not a number from %g to %g", opt, s, lo, hi);
		return -1;
	}
	*v = x;
	return 0;
}

static int cmd_tune(int argc, char **argv)
{
	struct tune_opts o;
	tune_opts_default(&o);
	struct tune_rep_filter reps;
	tune_rep_filter_parse("all", &reps);
	const char *out_path = NULL;
	int json = 0, ninputs = 0;
	const char *inputs[TUNE_MAX_FILES];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		long long n;
		int r;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "-o", &v)) ||
			   (r = cli_opt_value("tune", argc, argv, &i, "--output", &v))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			out_path = v;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--reps", &v))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			if (tune_rep_filter_parse(v, &reps))
				return cli_usage_error("tune", "--reps '%s': want all, even, odd or N,M,..", v);
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--alpha", &v))) {
			if (r < 0 || parse_double_arg("--alpha", v, 1e-12, 0.5, &o.alpha))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--min-delta", &v))) {
			if (r < 0 || parse_double_arg("--min-delta", v, -1, 1, &o.min_delta))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--gain-small", &v))) {
			if (r < 0 || parse_double_arg("--gain-small", v, 0, 1, &o.gain_small))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--gain-large", &v))) {
			if (r < 0 || parse_double_arg("--gain-large", v, 0, 1, &o.gain_large))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--large-from", &v))) {
			if (r < 0 ||
			    cli_parse_range("tune", "--large-from", v, 0, 1000000000000000000ll, &n))
				return CLI_EXIT_USAGE;
			o.large_from = (uint64_t)n;
		} else if ((r = cli_opt_value("tune", argc, argv, &i, "--min-samples", &v))) {
			if (r < 0 || cli_parse_range("tune", "--min-samples", v, 2, 1000000000, &n))
				return CLI_EXIT_USAGE;
			o.min_samples = (size_t)n;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error("tune", "unknown option '%s'", a);
		} else if (ninputs < TUNE_MAX_FILES) {
			inputs[ninputs++] = a;
		} else {
			return cli_usage_error("tune", "at most %d input files", TUNE_MAX_FILES);
		}
	}
	if (!ninputs)
		return cli_usage_error("tune", "no sample file given");
	for (int k = 0; out_path && k < ninputs; k++)
		if (cli_same_file(inputs[k], out_path))
			return cli_usage_error("tune", "-o %s is one of the inputs", out_path);
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	int bad = 0;
	for (int k = 0; k < ninputs; k++) {
		char *buf = NULL;
		size_t len = 0;
		if (cli_read_file(inputs[k], TUNE_MAX_INPUT, &buf, &len)) {
			bad = 1;
			continue;
		}
		/* nccl-tests output (all_reduce_perf ...) or the CSV: the content says which */
		int rc = tune_input_is_nccltests(buf, len)
				 ? tune_nccltests_parse(buf, len, inputs[k], &reps, &s, stderr)
				 : tune_samples_parse(buf, len, inputs[k], &reps, &s, stderr);
		free(buf);
		if (rc == -ENOMEM) {
			fprintf(stderr, "ncclbpf tune: out of memory\n");
			tune_samples_free(&s);
			return CLI_EXIT_REFUSED;
		}
		if (rc)
			bad = 1;
	}
	if (bad) {
		tune_samples_free(&s);
		return CLI_EXIT_REFUSED;
	}
	if (s.skipped_policy)
		fprintf(stderr, "ncclbpf tune: skipped %zu rows measured under a tuner policy\n", s.skipped_policy);
	if (s.skipped_rep)
		fprintf(stderr, "ncclbpf tune: skipped %zu rows outside --reps\n", s.skipped_rep);
	if (!s.n) {
		fprintf(stderr, "ncclbpf tune: no samples to analyze\n");
		tune_samples_free(&s);
		return CLI_EXIT_REFUSED;
	}
	struct tune_range *ranges = NULL;
	size_t nranges = 0;
	int rc = tune_analyze(&s, &o, &ranges, &nranges);
	tune_samples_free(&s);
	if (rc) {
		fprintf(stderr, "ncclbpf tune: %s\n", strerror(-rc));
		return CLI_EXIT_REFUSED;
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

NCCLBPF_CLI_COMMAND(tune, .name = "tune", .run = cmd_tune,
		    .synopsis = "[--json] [-o OUT] [--reps SEL] [GATE OPTIONS] SAMPLES...",
		    .summary = "offline tuner: measured samples -> gated decisions, table policy",
		    .help = "Reads sample CSVs (scripts/emulate-nodes.sh, ncclbpf-gpubench "
			    "--samples) or\nnccl-tests output (all_reduce_perf ...) and decides, "
			    "per (collective, nranks,\nnnodes, size), whether a measured config "
			    "(algo, proto, channels) beats NCCL's\ndefault through five gates: IQR "
			    "trimming, one-sided Mann-Whitney p < alpha,\nCliff's delta > "
			    "min-delta, split-half agreement and a gain above a threshold.\n"
			    "Adjacent sizes with the same winner merge into ranges. Prints them as "
			    "a table\n(or --json) and/or writes the verified table policy "
			    "(policies/tuned_rules.bpf.c\nwith the rules in .rodata; "
			    "no compiler needed). See docs/tuning.md.\n"
			    "\n"
			    "options:\n"
			    "  --json               one JSON document on stdout (below)\n"
			    "  -o, --output OUT     write the table policy (at most 32 rules), "
			    "verified and\n"
			    "                       checked rule by rule first; written atomically\n"
			    "  --reps SEL           train on these repetitions (`rep` column): all "
			    "(default),\n"
			    "                       even, odd or a list N,M,..\n"
			    "  --alpha P            Mann-Whitney significance, 1e-12..0.5 "
			    "(default 0.01)\n"
			    "  --min-delta D        Cliff's delta to exceed, -1..1 (default 0.33)\n"
			    "  --gain-small G       gain to exceed below --large-from, 0..1 "
			    "(default 0.05)\n"
			    "  --gain-large G       gain to exceed from --large-from, 0..1 "
			    "(default 0.10)\n"
			    "  --large-from BYTES   size from which the large gain applies "
			    "(default 64 MiB)\n"
			    "  --min-samples N      samples per side after trimming, 2..1e9 "
			    "(default 6)\n"
			    "\n"
			    "input: CSV with a header naming at least coll,bytes,algo,proto,"
			    "channels,nranks,\nnnodes,time_us (any order; algo/proto `default` = "
			    "NCCL's choice); optional rep\n(for --reps) and policy (rows with a "
			    "policy are skipped: not NCCL configs).\nOr nccl-tests output "
			    "(all_reduce_perf, all_gather_perf, ... as printed): two\nsamples per "
			    "row (out-of-place, in-place time), the collective from its \"#\n"
			    "Collective test starting:\" line or the file name, ranks and nodes "
			    "from the\n\"#  Rank N ... on HOST\" lines, the configuration from "
			    "NCCL_DEBUG=INFO's\n\"NCCL_ALGO / NCCL_PROTO set by environment to "
			    "X\" lines (none: NCCL's default);\none run per configuration, -N "
			    "cycles or runs concatenated for repetitions\n(a repeated table is the "
			    "next rep). Rows with wrong elements are refused.\nA bad row is "
			    "reported as FILE:LINE: error: ... and nothing is produced.\n"
			    "\n"
			    "exit status: 0 done; 1 an unreadable file or a bad row, no samples, "
			    "or the\npolicy could not be built (more than 32 rules, verification); "
			    "2 usage.\n"
			    "\n"
			    "json (schema \"ncclbpf.tune/1\"):\n"
			    "  {\"schema\", \"ranges\": [one object per range and line, ranges "
			    "where default\n   stays included: {\"coll\", \"nranks\", \"nnodes\", "
			    "\"min_bytes\", \"max_bytes\"\n   (what the policy covers), "
			    "\"measured_min\", \"measured_max\", \"sizes\", \"algo\",\n   "
			    "\"proto\", \"channels\" (the decision), \"note\" (only without "
			    "default samples),\n   \"candidate\": {\"algo\", \"proto\", "
			    "\"channels\"}, \"gates\": null or {\"iqr\": {\"kept\",\n   "
			    "\"trimmed\", \"default_kept\", \"default_trimmed\"}, \"u\", \"p\", "
			    "\"exact\",\n   \"cliffs_delta\", \"split_half\", \"gain\", "
			    "\"threshold\", \"median_us\",\n   \"default_median_us\", "
			    "\"passed\"}}]}   (docs/tuning.md: the gates)\n");
