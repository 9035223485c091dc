/* Inputs of the offline tuner and of `ncclbpf rules compile`:
 *   - the samples CSV (`coll,bytes,algo,proto,channels,nranks,nnodes,time_us` + optional
 *     `policy`, `rep` and other columns), written by the testbed and the GPU harness;
 *   - NCCL's example-tuner rule file (nccl_tuner.conf):
 *     `coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks[,numPipeOps[,regBuff]]`.
 * Both parsers work on a memory buffer (fuzzed: tests/tune/fuzz_tune_input.c) and report
 * every bad line as `file:line: error: ...` on the given stream (NULL: silent). */
#ifndef NCCLBPF_TUNE_INPUT_H
#define NCCLBPF_TUNE_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TUNE_DEFAULT (-1) /* algo/proto "default": NCCL's own choice */
#define TUNE_MAX_ERRORS 20 /* parsers stop reporting (and parsing) after this many */

struct tune_sample {
	uint64_t bytes;
	double time_us;
	uint32_t nranks, nnodes;
	int32_t rep;      /* -1 without a rep column */
	int8_t coll;      /* NCCLBPF_COLL_* */
	int8_t algo;      /* NCCLBPF_ALGO_* or TUNE_DEFAULT */
	int8_t proto;     /* NCCLBPF_PROTO_* or TUNE_DEFAULT */
	uint8_t channels; /* 0 = NCCL's */
	uint32_t order;   /* row order among the kept samples (split-half uses it) */
};

struct tune_samples {
	struct tune_sample *v;
	size_t n, cap;
	size_t skipped_policy; /* rows measured under a tuner policy: not training data */
	size_t skipped_rep;    /* rows outside the --reps selection */
};

/* Which repetitions to keep: all, even, odd, or a list. */
struct tune_rep_filter {
	int mode; /* 0 all, 1 even, 2 odd, 3 list */
	int list[64];
	int nlist;
};
/* Parses "all", "even", "odd" or "0,2,5". Returns 0 or -EINVAL. */
int tune_rep_filter_parse(const char *s, struct tune_rep_filter *f);

/* Appends the samples of buf to out. Returns 0, or -EINVAL after reporting the bad lines
 * (nothing of this buffer is kept then), or -ENOMEM. */
int tune_samples_parse(const char *buf, size_t len, const char *fname,
		       const struct tune_rep_filter *reps, struct tune_samples *out, FILE *err);
void tune_samples_free(struct tune_samples *s);
/* Whether repetition rep passes the filter (NULL: every one). */
int tune_rep_selected(const struct tune_rep_filter *f, int rep);

/* nccl-tests output (all_reduce_perf & co., tune_nccltests.c): whether buf looks like it,
 * and its result rows appended to out as samples - two per row (out-of-place and in-place
 * time), the collective from "# Collective test starting:" or the file name, ranks and
 * nodes from the "#  Rank N ... on HOST" lines, the configuration from NCCL's "NCCL_ALGO /
 * NCCL_PROTO set by environment to X" lines (NCCL_DEBUG=INFO; none: NCCL's default), a
 * repeated table a new `rep`. Same contract as tune_samples_parse. */
#include <stdbool.h>
bool tune_input_is_nccltests(const char *buf, size_t len);
int tune_nccltests_parse(const char *buf, size_t len, const char *fname,
			 const struct tune_rep_filter *reps, struct tune_samples *out, FILE *err);

/* One rule of the table policy (policies/tuned_rules.bpf.c); same layout as its .rodata. */
struct tune_rule {
	uint64_t min_bytes, max_bytes; /* inclusive */
	int32_t coll_type, n_nodes, n_ranks, num_pipe_ops; /* -1 = any */
	int32_t algo, proto;           /* -1 = keep NCCL's */
	int32_t n_channels;            /* 0 = keep NCCL's */
	int32_t pad;
};
#define TUNE_MAX_RULES 32

/* Parses an nccl_tuner.conf. Returns the rule count (>= 0), or -EINVAL after reporting
 * bad lines, or -E2BIG (more than TUNE_MAX_RULES rules), -ENOMEM. */
int tune_conf_parse(const char *buf, size_t len, const char *fname, struct tune_rule *rules,
		    size_t max_rules, FILE *err);
/* The same, choosing what happens to a regBuff of 0 or 1 (rank-local, so never a rule
 * field): refused (an error, as tune_conf_parse does), ignored (the rule applies to every
 * buffer) or the row dropped; the last two print "file:line: warning: ..." per row. A line
 * whose first field is `collective_type` (the spreadsheet header) is skipped. */
enum { TUNE_REGBUFF_REFUSE, TUNE_REGBUFF_IGNORE, TUNE_REGBUFF_DROP };
int tune_conf_parse_regbuff(const char *buf, size_t len, const char *fname,
			    struct tune_rule *rules, size_t max_rules, int regbuff, FILE *err);

/* Names: NCCL's spellings, case-insensitive, '_' and '-' ignored. -1 if unknown. */
int tune_coll_from_name(const char *s);
int tune_algo_from_name(const char *s);
int tune_proto_from_name(const char *s);
const char *tune_coll_name(int coll);   /* "AllReduce" */
const char *tune_algo_name(int algo);   /* "Tree"; "default" for TUNE_DEFAULT */
const char *tune_proto_name(int proto); /* "Simple"; "default" for TUNE_DEFAULT */

#endif
