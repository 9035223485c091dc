/* nccl-tests output (all_reduce_perf, all_gather_perf, ...) as samples for the offline
 * tuner (tune_input.h). What a run prints, and what is taken from it:
 *
 *   # Collective test starting: all_reduce_perf     -> the collective (else the file name)
 *   #  Rank  0 Group  0 Pid 123 on host-a device 0  -> ranks (one line each), nodes (hosts)
 *   ... NCCL INFO NCCL_ALGO set by environment to Ring     (NCCL_DEBUG=INFO) -> algo,
 *   ... NCCL_PROTO ... to LL128, NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS equal -> channels;
 *       without them the row is NCCL's own choice ("default")
 *   #       size  count  type  redop  root  time  algbw  busbw  #wrong  time ...  (header)
 *          1048576  262144  float  sum  -1  105.9  9.90  17.33  0  105.7  ...     (rows)
 *
 * Every data row gives two samples: the out-of-place and the in-place time (µs). A repeated
 * table (-N cycles, or files concatenated) starts a new repetition (`rep`). Rows with wrong
 * elements are refused: a run that computed wrong results is not a measurement. Lines may
 * carry mpirun's "[1,0]<stdout>:" prefix. Everything is bounds-checked (fuzzed with the
 * other parsers: tests/tune/fuzz_tune_input.c). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/policy.h>

#include "tools/tune_input.h"

#define NT_LINE_MAX 4096
#define NT_MAX_TOKENS 48
#define NT_MAX_HOSTS 4096

struct nt {
	const char *fname;
	FILE *err;
	unsigned line;
	int errors;
};

__attribute__((format(printf, 2, 3))) static void nt_report(struct nt *t, const char *fmt, ...)
{
	t->errors++;
	if (!t->err || t->errors > TUNE_MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (t->line)
		fprintf(t->err, "%s:%u: error: ", t->fname, t->line);
	else
		fprintf(t->err, "%s: error: ", t->fname);
	vfprintf(t->err, fmt, ap);
	fputc('\n', t->err);
	va_end(ap);
}

/* Splits s (modified) at blanks; returns the token count (at most max). */
static int tokens(char *s, char **tok, int max)
{
	int n = 0;
	for (char *p = s; *p && n < max;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		tok[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = 0;
	}
	return n;
}

/* mpirun --tag-output: "[1,0]<stdout>:" before the text */
static char *strip_tag(char *s)
{
	if (*s == '[') {
		char *e = strstr(s, "]<stdout>:");
		if (e && e - s < 32)
			return e + 10;
	}
	return s;
}

bool tune_input_is_nccltests(const char *buf, size_t len)
{
	static const char *const marks[] = {"# nThread ", "# Collective test starting:",
					    "out-of-place", "# Using devices"};
	size_t n = len < 65536 ? len : 65536; /* the header comes first */
	for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
		size_t m = strlen(marks[k]);
		for (size_t i = 0; i + m <= n; i++)
			if (!memcmp(buf + i, marks[k], m))
				return true;
	}
	return false;
}

/* "all_reduce_perf" (or a file name holding it) -> NCCLBPF_COLL_*, -1 if none. */
static int coll_from_test(const char *s)
{
	static const struct {
		const char *a, *b;
		int coll;
	} names[] = {
		{"all_reduce", "allreduce", NCCLBPF_COLL_ALLREDUCE},
		{"all_gather", "allgather", NCCLBPF_COLL_ALLGATHER},
		{"reduce_scatter", "reducescatter", NCCLBPF_COLL_REDUCESCATTER},
		{"broadcast", "broadcast", NCCLBPF_COLL_BROADCAST},
		{"reduce_perf", "reduce_perf", NCCLBPF_COLL_REDUCE}, /* after the three above */
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(s, names[i].a) || strstr(s, names[i].b))
			return names[i].coll;
	return -1;
}

/* The value NCCL logs for "NAME set by environment to VALUE" on this line, or NULL. */
static const char *env_value(char *line, const char *name)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "%s set by environment to ", name);
	char *p = strstr(line, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	size_t n = strcspn(p, " \t.");
	p[n] = 0;
	return p;
}

static int parse_time(const char *s, double *v)
{
	char *end;
	*v = strtod(s, &end);
	return *s && !*end && isfinite(*v) && *v > 0 ? 0 : -1;
}

int tune_nccltests_parse(const char *buf, size_t len, const char *fname,
			 const struct tune_rep_filter *reps, struct tune_samples *out, FILE *err)
{
	struct nt t = {.fname = fname, .err = err};
	char *line = malloc(NT_LINE_MAX + 1);
	char(*hosts)[64] = calloc(NT_MAX_HOSTS, sizeof(*hosts));
	if (!line || !hosts) {
		free(line);
		free(hosts);
		return -ENOMEM;
	}
	size_t first = out->n, pos = 0;
	int coll = coll_from_test(fname), nranks = 0, nhosts = 0, algo = TUNE_DEFAULT;
	int proto = TUNE_DEFAULT, min_ch = -1, max_ch = -1, rep = -1, rows = 0, oom = 0;
	/* column positions from the header: size, the two times, the two #wrong */
	int c_size = -1, c_t1 = -1, c_t2 = -1, c_w1 = -1, c_w2 = -1, ncols = 0;
	unsigned long long last_size = 0;
	while (pos < len && t.errors < TUNE_MAX_ERRORS && !oom) {
		const char *start = buf + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl ? 1 : 0);
		t.line++;
		if (n && start[n - 1] == '\r')
			n--;
		if (n > NT_LINE_MAX || memchr(start, 0, n)) {
			nt_report(&t, "not a text line of nccl-tests output (too long or a NUL byte)");
			continue;
		}
		memcpy(line, start, n);
		line[n] = 0;
		char *s = strip_tag(line);
		const char *v;
		if ((v = env_value(s, "NCCL_ALGO"))) {
			if ((algo = tune_algo_from_name(v)) < 0)
				nt_report(&t, "NCCL_ALGO=%s is not one algorithm: tune needs one "
					      "configuration per run", v);
			continue;
		}
		if ((v = env_value(s, "NCCL_PROTO"))) {
			if ((proto = tune_proto_from_name(v)) < 0)
				nt_report(&t, "NCCL_PROTO=%s is not one protocol: tune needs one "
					      "configuration per run", v);
			continue;
		}
		if ((v = env_value(s, "NCCL_MIN_NCHANNELS")) || (v = env_value(s, "NCCL_MAX_NCHANNELS"))) {
			int x = atoi(v);
			if (strstr(s, "NCCL_MIN_NCHANNELS"))
				min_ch = x;
			else
				max_ch = x;
			continue;
		}
		char *tok[NT_MAX_TOKENS];
		if (!strncmp(s, "# Collective test starting:", 27)) {
			int c = coll_from_test(s + 27);
			if (c < 0)
				nt_report(&t, "unknown collective test '%s'", s + 27);
			coll = c;
			continue;
		}
		if (s[0] == '#') {
			int k = tokens(s + 1, tok, NT_MAX_TOKENS);
			if (k >= 4 && !strcmp(tok[0], "Rank")) {
				nranks++;
				for (int i = 1; i + 1 < k; i++)
					if (!strcmp(tok[i], "on")) {
						int h;
						for (h = 0; h < nhosts; h++)
							if (!strncmp(hosts[h], tok[i + 1], 63))
								break;
						if (h == nhosts && nhosts < NT_MAX_HOSTS)
							snprintf(hosts[nhosts++], 64, "%.63s", tok[i + 1]);
						break;
					}
			} else if (k >= 6 && !strcmp(tok[0], "size") && !strcmp(tok[1], "count")) {
				ncols = k;
				c_size = 0;
				c_t1 = c_t2 = c_w1 = c_w2 = -1;
				for (int i = 2; i < k; i++) {
					bool w = !strcmp(tok[i], "#wrong") || !strcmp(tok[i], "error");
					if (!strcmp(tok[i], "time"))
						*(c_t1 < 0 ? &c_t1 : &c_t2) = i;
					else if (w)
						*(c_w1 < 0 ? &c_w1 : &c_w2) = i;
				}
				if (c_t1 < 0)
					nt_report(&t, "table header without a time column");
			}
			continue;
		}
		int k = tokens(s, tok, NT_MAX_TOKENS);
		if (!k || !isdigit((unsigned char)tok[0][0]) || ncols == 0)
			continue; /* NCCL's own log lines, blank lines, text before the table */
		if (k != ncols) {
			nt_report(&t, "%d columns, the table header has %d", k, ncols);
			continue;
		}
		char *end;
		errno = 0;
		unsigned long long bytes = strtoull(tok[c_size], &end, 10);
		if (errno || *end || bytes > (1ull << 50)) {
			nt_report(&t, "size '%s' is not a byte count", tok[c_size]);
			continue;
		}
		if (rep < 0 || bytes <= last_size)
			rep++; /* a new table (-N cycles, concatenated runs) */
		last_size = bytes;
		int wrong = 0;
		for (int w = 0; w < 2; w++) {
			int c = w ? c_w2 : c_w1;
			if (c >= 0 && strcmp(tok[c], "0") && strcmp(tok[c], "N/A") &&
			    strcmp(tok[c], "0e+00"))
				wrong = 1;
		}
		if (wrong) {
			nt_report(&t, "%llu bytes: wrong elements reported (%s): a run with wrong results "
				      "is not a measurement", bytes, tok[c_w1]);
			continue;
		}
		if (coll < 0 || nranks == 0) {
			if (coll < 0)
				nt_report(&t, "which collective? no '# Collective test starting:' line "
					      "and the file name does not say (e.g. all_reduce_perf.txt)");
			else
				nt_report(&t, "no '#  Rank N ... on HOST' lines before the table: the "
					      "rank and node counts are unknown");
			break;
		}
		for (int w = 0; w < 2; w++) {
			int c = w ? c_t2 : c_t1;
			double us;
			if (c < 0)
				continue;
			if (parse_time(tok[c], &us)) {
				nt_report(&t, "time '%s' is not a positive number of µs", tok[c]);
				break;
			}
			struct tune_sample x = {.bytes = bytes, .time_us = us, .nranks = (uint32_t)nranks,
						.nnodes = (uint32_t)(nhosts ? nhosts : 1), .rep = rep,
						.coll = (int8_t)coll, .algo = (int8_t)algo,
						.proto = (int8_t)proto};
			if (min_ch > 0 && min_ch == max_ch && min_ch <= NCCLBPF_MAX_CHANNELS)
				x.channels = (uint8_t)min_ch;
			if (!tune_rep_selected(reps, rep)) {
				out->skipped_rep++;
				continue;
			}
			if (out->n == out->cap) {
				size_t nc = out->cap ? 2 * out->cap : 1024;
				struct tune_sample *g = realloc(out->v, nc * sizeof(*g));
				if (!g) {
					oom = 1;
					break;
				}
				out->v = g;
				out->cap = nc;
			}
			x.order = (uint32_t)out->n;
			out->v[out->n++] = x;
		}
		rows++;
	}
	free(line);
	free(hosts);
	if (oom) {
		out->n = first;
		return -ENOMEM;
	}
	if (!t.errors && !rows) {
		t.line = 0;
		nt_report(&t, "no result rows (nccl-tests output needs its size/count/time table)");
	}
	if (t.errors) {
		out->n = first;
		return -EINVAL;
	}
	return 0;
}
