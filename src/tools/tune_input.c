/* Parsers of the offline tuner's inputs; see tune_input.h. Hostile bytes are expected:
 * every field is checked, every line is bounded, nothing is kept from a bad buffer. */
#include "tools/tune_input.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/policy.h>

#define LINE_MAX_LEN 4096
#define MAX_FIELDS 32

static const char *const coll_names[NCCLBPF_NUM_COLLS] = {"Broadcast", "Reduce", "AllGather",
							  "ReduceScatter", "AllReduce"};
static const char *const algo_names[NCCLBPF_NUM_ALGOS] = {"Tree", "Ring", "CollNetDirect",
							  "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char *const proto_names[NCCLBPF_NUM_PROTOS] = {"LL", "LL128", "Simple"};

/* Case-insensitive comparison ignoring '_' and '-' ("collnet_direct" = "CollNetDirect"). */
static int name_eq(const char *a, const char *b)
{
	for (;;) {
		while (*a == '_' || *a == '-')
			a++;
		while (*b == '_' || *b == '-')
			b++;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return 0;
		if (!*a)
			return 1;
		a++;
		b++;
	}
}

static int lookup(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (name_eq(s, names[i]))
			return i;
	return -1;
}

int tune_coll_from_name(const char *s) { return lookup(s, coll_names, NCCLBPF_NUM_COLLS); }
int tune_algo_from_name(const char *s) { return lookup(s, algo_names, NCCLBPF_NUM_ALGOS); }
int tune_proto_from_name(const char *s) { return lookup(s, proto_names, NCCLBPF_NUM_PROTOS); }
const char *tune_coll_name(int c) { return c >= 0 && c < NCCLBPF_NUM_COLLS ? coll_names[c] : "?"; }
const char *tune_algo_name(int a)
{
	return a == TUNE_DEFAULT ? "default" : a >= 0 && a < NCCLBPF_NUM_ALGOS ? algo_names[a] : "?";
}
const char *tune_proto_name(int p)
{
	return p == TUNE_DEFAULT ? "default" : p >= 0 && p < NCCLBPF_NUM_PROTOS ? proto_names[p] : "?";
}

/* ---------------------------------------------------------------- lines and fields */

struct reader {
	const char *buf, *fname;
	size_t len, pos;
	unsigned line;
	int errors;
	FILE *err;
	char text[LINE_MAX_LEN + 1];
	char *field[MAX_FIELDS];
	int nfield;
};

__attribute__((format(printf, 2, 3))) static void report(struct reader *r, const char *fmt, ...)
{
	r->errors++;
	if (!r->err || r->errors > TUNE_MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(r->err, "%s:%u: error: ", r->fname, r->line);
	vfprintf(r->err, fmt, ap);
	fputc('\n', r->err);
	va_end(ap);
	if (r->errors == TUNE_MAX_ERRORS)
		fprintf(r->err, "%s: too many errors, stopping\n", r->fname);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	return s;
}

/* Next line split into fields. Returns 1 with a line (possibly blank: nfield 0), 0 at the
 * end, -1 for a line that was reported (too long, NUL, quote, too many fields). */
static int next_line(struct reader *r)
{
	if (r->pos >= r->len)
		return 0;
	r->line++;
	const char *start = r->buf + r->pos;
	const char *nl = memchr(start, '\n', r->len - r->pos);
	size_t n = nl ? (size_t)(nl - start) : r->len - r->pos;
	r->pos += n + (nl ? 1 : 0);
	if (n && start[n - 1] == '\r')
		n--;
	r->nfield = 0;
	if (n > LINE_MAX_LEN) {
		report(r, "line longer than %d bytes", LINE_MAX_LEN);
		return -1;
	}
	if (memchr(start, 0, n)) {
		report(r, "NUL byte in a text line");
		return -1;
	}
	memcpy(r->text, start, n);
	r->text[n] = 0;
	if (strchr(r->text, '"')) {
		report(r, "quoted fields are not supported");
		return -1;
	}
	char *t = trim(r->text);
	if (!*t || *t == '#')
		return 1;
	for (char *f = t;;) {
		char *comma = strchr(f, ',');
		if (comma)
			*comma = 0;
		if (r->nfield == MAX_FIELDS) {
			report(r, "more than %d fields", MAX_FIELDS);
			return -1;
		}
		r->field[r->nfield++] = trim(f);
		if (!comma)
			break;
		f = comma + 1;
	}
	return 1;
}

/* Strict decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi, long long *v)
{
	if (!*s || isspace((unsigned char)*s))
		return -1;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	if (!*s || !isdigit((unsigned char)*s))
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

/* ---------------------------------------------------------------- samples CSV */

int tune_rep_filter_parse(const char *s, struct tune_rep_filter *f)
{
	memset(f, 0, sizeof(*f));
	if (!strcmp(s, "all"))
		return 0;
	if (!strcmp(s, "even")) {
		f->mode = 1;
		return 0;
	}
	if (!strcmp(s, "odd")) {
		f->mode = 2;
		return 0;
	}
	f->mode = 3;
	char buf[512];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (f->nlist == 64 || parse_int(t, 0, 1000000, &v))
			return -EINVAL;
		f->list[f->nlist++] = (int)v;
	}
	return f->nlist ? 0 : -EINVAL;
}

int tune_rep_selected(const struct tune_rep_filter *f, int rep)
{
	if (!f || f->mode == 0)
		return 1;
	if (f->mode == 1)
		return rep >= 0 && rep % 2 == 0;
	if (f->mode == 2)
		return rep >= 0 && rep % 2 == 1;
	for (int i = 0; i < f->nlist; i++)
		if (f->list[i] == rep)
			return 1;
	return 0;
}

enum { C_COLL, C_BYTES, C_ALGO, C_PROTO, C_CHANNELS, C_NRANKS, C_NNODES, C_TIME, C_POLICY, C_REP, C_N };
static const char *const col_names[C_N] = {"coll", "bytes", "algo", "proto", "channels", "nranks",
					   "nnodes", "time_us", "policy", "rep"};
#define C_REQUIRED C_POLICY /* columns before this one are required */

int tune_samples_parse(const char *buf, size_t len, const char *fname,
		       const struct tune_rep_filter *reps, struct tune_samples *out, FILE *err)
{
	struct reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->buf = buf;
	r->len = len;
	r->fname = fname;
	r->err = err;
	size_t first = out->n;
	int col[C_N], ncols = 0, have_header = 0, rc;
	for (int i = 0; i < C_N; i++)
		col[i] = -1;
	while (r->errors < TUNE_MAX_ERRORS && (rc = next_line(r)) != 0) {
		if (rc < 0 || r->nfield == 0)
			continue;
		if (!have_header) {
			have_header = 1;
			ncols = r->nfield;
			for (int f = 0; f < r->nfield; f++)
				for (int c = 0; c < C_N; c++)
					if (!strcmp(r->field[f], col_names[c])) {
						if (col[c] >= 0)
							report(r, "column '%s' appears twice", col_names[c]);
						col[c] = f;
					}
			for (int c = 0; c < C_REQUIRED; c++)
				if (col[c] < 0)
					report(r, "header lacks column '%s' (need coll,bytes,algo,proto,channels,"
						  "nranks,nnodes,time_us)", col_names[c]);
			if (r->errors)
				break;
			continue;
		}
		if (r->nfield != ncols) {
			report(r, "%d fields, the header has %d", r->nfield, ncols);
			continue;
		}
		struct tune_sample s;
		memset(&s, 0, sizeof(s));
		const char *v;
		long long x;
		int c;
		if ((c = tune_coll_from_name(v = r->field[col[C_COLL]])) < 0) {
			report(r, "unknown collective '%s'", v);
			continue;
		}
		s.coll = (int8_t)c;
		if (parse_u64(v = r->field[col[C_BYTES]], &s.bytes) || s.bytes > (1ull << 50)) {
			report(r, "bytes '%s' is not a size in 0..2^50", v);
			continue;
		}
		v = r->field[col[C_ALGO]];
		if (name_eq(v, "default"))
			s.algo = TUNE_DEFAULT;
		else if ((c = tune_algo_from_name(v)) >= 0)
			s.algo = (int8_t)c;
		else {
			report(r, "unknown algorithm '%s' (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT, default)", v);
			continue;
		}
		v = r->field[col[C_PROTO]];
		if (name_eq(v, "default"))
			s.proto = TUNE_DEFAULT;
		else if ((c = tune_proto_from_name(v)) >= 0)
			s.proto = (int8_t)c;
		else {
			report(r, "unknown protocol '%s' (LL, LL128, Simple, default)", v);
			continue;
		}
		if (parse_int(v = r->field[col[C_CHANNELS]], 0, NCCLBPF_MAX_CHANNELS, &x)) {
			report(r, "channels '%s' is not in 0..%d", v, NCCLBPF_MAX_CHANNELS);
			continue;
		}
		s.channels = (uint8_t)x;
		if (parse_int(v = r->field[col[C_NRANKS]], 1, 1 << 20, &x)) {
			report(r, "nranks '%s' is not in 1..2^20", v);
			continue;
		}
		s.nranks = (uint32_t)x;
		if (parse_int(v = r->field[col[C_NNODES]], 1, s.nranks, &x)) {
			report(r, "nnodes '%s' is not in 1..nranks", v);
			continue;
		}
		s.nnodes = (uint32_t)x;
		char *end;
		v = r->field[col[C_TIME]];
		s.time_us = strtod(v, &end);
		if (!*v || *end || !isfinite(s.time_us) || s.time_us <= 0) {
			report(r, "time_us '%s' is not a positive finite number", v);
			continue;
		}
		s.rep = -1;
		if (col[C_REP] >= 0) {
			if (parse_int(v = r->field[col[C_REP]], 0, 1000000, &x)) {
				report(r, "rep '%s' is not in 0..1000000", v);
				continue;
			}
			s.rep = (int32_t)x;
		} else if (reps && reps->mode) {
			report(r, "--reps needs a 'rep' column");
			break;
		}
		if (col[C_POLICY] >= 0 && *r->field[col[C_POLICY]]) {
			out->skipped_policy++;
			continue;
		}
		if (!tune_rep_selected(reps, s.rep)) {
			out->skipped_rep++;
			continue;
		}
		if (out->n == out->cap) {
			size_t nc = out->cap ? 2 * out->cap : 1024;
			struct tune_sample *g = realloc(out->v, nc * sizeof(*g));
			if (!g) {
				free(r);
				return -ENOMEM;
			}
			out->v = g;
			out->cap = nc;
		}
		s.order = (uint32_t)out->n;
		out->v[out->n++] = s;
	}
	if (!have_header && !r->errors) {
		r->line = 1;
		report(r, "empty file: a header line is required");
	}
	int bad = r->errors;
	free(r);
	if (bad) {
		out->n = first;
		return -EINVAL;
	}
	return 0;
}

void tune_samples_free(struct tune_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ---------------------------------------------------------------- nccl_tuner.conf */

__attribute__((format(printf, 2, 3))) static void warn(struct reader *r, const char *fmt, ...)
{
	if (!r->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(r->err, "%s:%u: warning: ", r->fname, r->line);
	vfprintf(r->err, fmt, ap);
	fputc('\n', r->err);
	va_end(ap);
}

int tune_conf_parse(const char *buf, size_t len, const char *fname, struct tune_rule *rules,
		    size_t max_rules, FILE *err)
{
	return tune_conf_parse_regbuff(buf, len, fname, rules, max_rules, TUNE_REGBUFF_REFUSE, err);
}

int tune_conf_parse_regbuff(const char *buf, size_t len, const char *fname,
			    struct tune_rule *rules, size_t max_rules, int regbuff, FILE *err)
{
	struct reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->buf = buf;
	r->len = len;
	r->fname = fname;
	r->err = err;
	size_t n = 0;
	int rc, too_many = 0;
	while (r->errors < TUNE_MAX_ERRORS && (rc = next_line(r)) != 0) {
		if (rc < 0 || r->nfield == 0)
			continue;
		/* the column-header line NVIDIA's README suggests for spreadsheets */
		if (name_eq(r->field[0], "collective_type") || name_eq(r->field[0], "colltype"))
			continue;
		if (r->nfield < 8 || r->nfield > 10) {
			report(r, "%d fields; expected coll,min_bytes,max_bytes,algo,proto,channels,"
				  "nNodes,nRanks[,numPipeOps[,regBuff]]", r->nfield);
			continue;
		}
		struct tune_rule q;
		memset(&q, 0, sizeof(q));
		const char *v;
		long long x;
		int c;
		if ((c = tune_coll_from_name(v = r->field[0])) < 0) {
			report(r, "unknown collective '%s' (broadcast, reduce, allgather, reducescatter, allreduce)", v);
			continue;
		}
		q.coll_type = c;
		if (!strcmp(r->field[1], "-1"))
			q.min_bytes = 0;
		else if (parse_u64(v = r->field[1], &q.min_bytes)) {
			report(r, "min_bytes '%s' is not a byte count or -1", v);
			continue;
		}
		if (!strcmp(r->field[2], "-1"))
			q.max_bytes = UINT64_MAX;
		else if (parse_u64(v = r->field[2], &q.max_bytes)) {
			report(r, "max_bytes '%s' is not a byte count or -1", v);
			continue;
		}
		if (q.min_bytes > q.max_bytes) {
			report(r, "min_bytes %llu is above max_bytes %llu", (unsigned long long)q.min_bytes,
			       (unsigned long long)q.max_bytes);
			continue;
		}
		v = r->field[3];
		if (!strcmp(v, "-1") || name_eq(v, "default"))
			q.algo = NCCLBPF_ALGO_KEEP;
		else if ((q.algo = tune_algo_from_name(v)) < 0) {
			report(r, "unknown algorithm '%s' (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat)", v);
			continue;
		}
		v = r->field[4];
		if (!strcmp(v, "-1") || name_eq(v, "default"))
			q.proto = NCCLBPF_PROTO_KEEP;
		else if ((q.proto = tune_proto_from_name(v)) < 0) {
			report(r, "unknown protocol '%s' (ll, ll128, simple)", v);
			continue;
		}
		if (parse_int(v = r->field[5], -1, NCCLBPF_MAX_CHANNELS, &x)) {
			report(r, "channels '%s' is not -1 or 0..%d", v, NCCLBPF_MAX_CHANNELS);
			continue;
		}
		q.n_channels = x < 0 ? 0 : (int32_t)x;
		if (parse_int(v = r->field[6], -1, 1 << 20, &x) || x == 0) {
			report(r, "nNodes '%s' is not -1 or a node count", v);
			continue;
		}
		q.n_nodes = (int32_t)x;
		if (parse_int(v = r->field[7], -1, 1 << 20, &x) || x == 0) {
			report(r, "nRanks '%s' is not -1 or a rank count", v);
			continue;
		}
		q.n_ranks = (int32_t)x;
		q.num_pipe_ops = -1;
		if (r->nfield > 8) {
			if (parse_int(v = r->field[8], -1, 1 << 20, &x) || x == 0) {
				report(r, "numPipeOps '%s' is not -1 or a count", v);
				continue;
			}
			q.num_pipe_ops = (int32_t)x;
		}
		if (r->nfield > 9) {
			if (parse_int(v = r->field[9], -1, 1, &x)) {
				report(r, "regBuff '%s' is not -1, 0 or 1", v);
				continue;
			}
			/* buffer registration is per rank: a rule on it could make two ranks pick
			 * different algorithms for one collective, which hangs NCCL. Migrating such a
			 * file is an explicit choice (--regbuff), said once per row. */
			if (x != -1 && regbuff == TUNE_REGBUFF_IGNORE) {
				warn(r, "regBuff %lld ignored: the rule now applies to registered and "
					"unregistered buffers alike", x);
			} else if (x != -1 && regbuff == TUNE_REGBUFF_DROP) {
				warn(r, "regBuff %lld: rule dropped", x);
				continue;
			} else if (x != -1) {
				report(r, "regBuff %lld: buffer registration is rank-local, a rule on it can "
					  "make ranks decide differently; use -1, or migrate with "
					  "--regbuff ignore|drop", x);
				continue;
			}
		}
		if (n == max_rules) {
			if (!too_many)
				report(r, "more than %zu rules (the table policy's capacity)", max_rules);
			too_many = 1;
			continue;
		}
		rules[n++] = q;
	}
	int bad = r->errors;
	free(r);
	if (too_many && bad == 1)
		return -E2BIG;
	return bad ? -EINVAL : (int)n;
}
