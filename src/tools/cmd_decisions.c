/* ncclbpf decisions DIR|FILE...: checks NCCLBPF_DECISION_LOG files (docs/agreement.md).
 *
 * Reads every decisions-*.jsonl of the directories (and the files given), groups the lines
 * by communicator and collective sequence number, and compares the ranks' decisions.
 * Exit 0: every (comm, seq) that several ranks logged has one decision. Exit 3: the first
 * divergent (comm, seq) in (comm, seq) order is printed with each rank's decision. Exit 4:
 * no divergence, but decisions were dropped or lost by the writers (the logs say so): not
 * all collectives were checked. Exit 1: nothing to check (no log, no decision), an
 * unreadable file or a malformed line (file:line:col and what is wrong). Exit 2: usage.
 * --json: the same as one document (schema ncclbpf.decisions/1, in the help text). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/decision_src.h"
#include "tools/cli.h"

#define DECISIONS_EXIT_DIVERGENT 3
#define DECISIONS_EXIT_INCOMPLETE 4

struct drec {
	uint64_t comm, seq, bytes;
	int32_t rank, coll, algo, proto, channels;
	int32_t src; /* who decided (runtime/decision_src.h), -1 when the line has none */
	uint64_t tag; /* 0 = none logged */
	uint32_t file;
};

struct dset {
	struct drec *r;
	size_t n, cap;
	char **files;
	size_t n_files;
	uint64_t dropped; /* {"dropped":N}: the writer's ring was full */
	uint64_t lost;    /* {"lost":N,"reason":...}: the writer could not write them */
};

static const char *const coll_names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
					 "AllReduce"};
static const char *const algo_names[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
					 "NVLS", "NVLSTree", "PAT"};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

static int name_index(const char *s, size_t len, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !memcmp(s, names[i], len))
			return i;
	return -2;
}

/* ---- a strict parser for one flat JSON object per line ---- */

struct jp {
	const char *p;
	const char *err;
};

static void ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\r')
		j->p++;
}

/* String without escapes (the writer never emits any): returns start and length. */
static bool jstring(struct jp *j, const char **s, size_t *len)
{
	if (*j->p != '"') {
		j->err = "expected a string";
		return false;
	}
	const char *q = ++j->p;
	while (*q && *q != '"') {
		if (*q == '\\' || (unsigned char)*q < 0x20) {
			j->err = "unsupported character in a string";
			return false;
		}
		q++;
	}
	if (*q != '"') {
		j->err = "unterminated string";
		return false;
	}
	*s = j->p;
	*len = (size_t)(q - j->p);
	j->p = q + 1;
	return true;
}

static bool jint(struct jp *j, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(j->p, &end, 10);
	if (end == j->p || errno) {
		j->err = "expected an integer";
		return false;
	}
	j->p = end;
	*out = v;
	return true;
}

enum { K_COMM = 1, K_RANK = 2, K_SEQ = 4, K_COLL = 8, K_BYTES = 16, K_ALGO = 32, K_PROTO = 64,
       K_CHANNELS = 128, K_ALL = 255, K_SRC = 256, K_POLICY = 512, K_TAG = 1024 /* optional */ };

/* {"lost":N,"reason":"..."} after its first key: the count, then one string. */
static int parse_lost(struct jp *j, uint64_t *lost)
{
	int64_t v;
	const char *s;
	size_t sl;
	if (!jint(j, &v) || v < 0)
		return -1;
	*lost += (uint64_t)v;
	ws(j);
	if (*j->p == ',') {
		j->p++;
		ws(j);
		if (!jstring(j, &s, &sl))
			return -1;
		if (sl != 6 || memcmp(s, "reason", 6)) {
			j->err = "a lost line has the keys lost and reason";
			return -1;
		}
		ws(j);
		if (*j->p++ != ':') {
			j->err = "expected ':'";
			return -1;
		}
		ws(j);
		if (!jstring(j, &s, &sl))
			return -1;
		ws(j);
	}
	if (*j->p != '}') {
		j->err = "a lost line has the keys lost and reason";
		return -1;
	}
	j->p++;
	return 0;
}

/* 1 = a decision, 0 = a "dropped" or "lost" line, -1 = error (j->err). */
static int parse_line(struct jp *j, struct drec *r, uint64_t *dropped, uint64_t *lost)
{
	unsigned seen = 0;
	ws(j);
	if (*j->p != '{') {
		j->err = "a line must be one JSON object";
		return -1;
	}
	j->p++;
	for (;;) {
		ws(j);
		const char *k;
		size_t kl;
		if (!jstring(j, &k, &kl))
			return -1;
		ws(j);
		if (*j->p++ != ':') {
			j->err = "expected ':'";
			return -1;
		}
		ws(j);
#define KEY(lit) (kl == sizeof(lit) - 1 && !memcmp(k, lit, kl))
		int64_t v = 0;
		const char *s;
		size_t sl;
		unsigned bit = 0;
		if (KEY("dropped")) {
			if (!jint(j, &v) || v < 0)
				return -1;
			*dropped += (uint64_t)v;
			ws(j);
			if (*j->p != '}') {
				j->err = "a dropped line has one key";
				return -1;
			}
			return 0;
		} else if (KEY("lost")) {
			if (seen) {
				j->err = "lost must be the first key";
				return -1;
			}
			return parse_lost(j, lost) < 0 ? -1 : 0;
		} else if (KEY("comm")) {
			bit = K_COMM;
			if (!jstring(j, &s, &sl))
				return -1;
			char buf[32];
			char *end;
			if (sl < 3 || sl > 18 || s[0] != '0' || s[1] != 'x') {
				j->err = "comm must be \"0x<hex>\"";
				return -1;
			}
			memcpy(buf, s, sl);
			buf[sl] = '\0';
			r->comm = strtoull(buf + 2, &end, 16);
			if (*end) {
				j->err = "comm must be \"0x<hex>\"";
				return -1;
			}
		} else if (KEY("rank") || KEY("seq") || KEY("bytes") || KEY("channels")) {
			if (!jint(j, &v))
				return -1;
			if (KEY("rank")) {
				bit = K_RANK;
				if (v < -1 || v > INT32_MAX) {
					j->err = "rank out of range";
					return -1;
				}
				r->rank = (int32_t)v;
			} else if (KEY("seq")) {
				bit = K_SEQ;
				if (v < 0) {
					j->err = "seq must be >= 0";
					return -1;
				}
				r->seq = (uint64_t)v;
			} else if (KEY("bytes")) {
				bit = K_BYTES;
				if (v < 0) {
					j->err = "bytes must be >= 0";
					return -1;
				}
				r->bytes = (uint64_t)v;
			} else {
				bit = K_CHANNELS;
				if (v < 0 || v > 64) {
					j->err = "channels must be 0..64";
					return -1;
				}
				r->channels = (int32_t)v;
			}
		} else if (KEY("tag")) {
			/* the application's per-call tag (NCCL 2.31+), when the plugin knew it: a
			 * full 64-bit unsigned value */
			bit = K_TAG;
			char *end;
			errno = 0;
			if (*j->p < '0' || *j->p > '9') {
				j->err = "tag must be an unsigned integer";
				return -1;
			}
			unsigned long long t = strtoull(j->p, &end, 10);
			if (errno) {
				j->err = "tag out of range";
				return -1;
			}
			j->p = end;
			r->tag = t;
		} else if (KEY("coll")) {
			bit = K_COLL;
			if (!jstring(j, &s, &sl))
				return -1;
			r->coll = name_index(s, sl, coll_names, 5);
			if (r->coll < 0) {
				j->err = "unknown collective name";
				return -1;
			}
		} else if (KEY("algo") || KEY("proto")) {
			bool is_algo = KEY("algo");
			bit = is_algo ? K_ALGO : K_PROTO;
			int32_t *dst = is_algo ? &r->algo : &r->proto;
			if (!strncmp(j->p, "null", 4)) {
				j->p += 4;
				*dst = -1;
			} else {
				if (!jstring(j, &s, &sl))
					return -1;
				*dst = is_algo ? name_index(s, sl, algo_names, 7)
					       : name_index(s, sl, proto_names, 3);
				if (*dst < 0) {
					j->err = is_algo ? "unknown algorithm name" : "unknown protocol name";
					return -1;
				}
			}
		} else if (KEY("src")) { /* provenance (optional: logs before issue 27 lack it) */
			bit = K_SRC;
			if (!jstring(j, &s, &sl))
				return -1;
			r->src = nb_dsrc_from_name(s, sl);
			if (r->src < 0) {
				j->err = "unknown decision source";
				return -1;
			}
		} else if (KEY("policy")) {
			bit = K_POLICY;
			if (!jstring(j, &s, &sl))
				return -1;
		} else {
			j->err = "unknown key";
			return -1;
		}
#undef KEY
		if (seen & bit) {
			j->err = "duplicate key";
			return -1;
		}
		seen |= bit;
		ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == '}') {
			j->p++;
			break;
		}
		j->err = "expected ',' or '}'";
		return -1;
	}
	ws(j);
	if (*j->p && *j->p != '\n') {
		j->err = "trailing characters after the object";
		return -1;
	}
	if ((seen & K_ALL) != K_ALL) {
		j->err = "missing key (comm, rank, seq, coll, bytes, algo, proto, channels)";
		return -1;
	}
	return 1;
}

static int read_file(struct dset *d, const char *path)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	if (!f) {
		fprintf(stderr, "ncclbpf decisions: %s: %s\n", path, strerror(errno));
		return CLI_EXIT_REFUSED;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		/* a directory reads as an empty file through stdio: not a log (nor a FIFO) */
		fprintf(stderr, "ncclbpf decisions: %s: not a regular file\n", path);
		fclose(f);
		return CLI_EXIT_REFUSED;
	}
	char **nf = realloc(d->files, (d->n_files + 1) * sizeof(*nf));
	if (!nf) {
		fclose(f);
		return CLI_EXIT_REFUSED;
	}
	d->files = nf;
	d->files[d->n_files] = strdup(path);
	uint32_t file = (uint32_t)d->n_files++;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned long lineno = 0;
	int rc = 0;
	errno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if ((size_t)len != strlen(line)) {
			fprintf(stderr, "%s:%lu: NUL byte in the line\n", path, lineno);
			rc = CLI_EXIT_REFUSED;
			break;
		}
		if (len == 0 || (len == 1 && line[0] == '\n'))
			continue;
		if (line[len - 1] != '\n' && feof(f)) {
			/* the writer emits whole lines: only a killed process leaves a partial one */
			fprintf(stderr, "%s:%lu: truncated last line ignored (was the process killed?)\n",
				path, lineno);
			break;
		}
		struct drec r = {.file = file, .src = -1};
		struct jp j = {.p = line};
		int k = parse_line(&j, &r, &d->dropped, &d->lost);
		if (k < 0) {
			fprintf(stderr, "%s:%lu:%ld: malformed decision line: %s\n", path, lineno,
				(long)(j.p - line) + 1, j.err);
			rc = CLI_EXIT_REFUSED;
			break;
		}
		if (k == 0)
			continue;
		if (d->n == d->cap) {
			size_t nc = d->cap ? d->cap * 2 : 4096;
			struct drec *nr = realloc(d->r, nc * sizeof(*nr));
			if (!nr) {
				fprintf(stderr, "ncclbpf decisions: out of memory\n");
				rc = CLI_EXIT_REFUSED;
				break;
			}
			d->r = nr;
			d->cap = nc;
		}
		d->r[d->n++] = r;
		errno = 0;
	}
	if (!rc && (ferror(f) || (len < 0 && errno && errno != EAGAIN))) {
		/* getline's -1 is also out of memory or a read error: never taken for the end */
		fprintf(stderr, "ncclbpf decisions: %s:%lu: %s\n", path, lineno + 1,
			strerror(errno ? errno : EIO));
		rc = CLI_EXIT_REFUSED;
	}
	free(line);
	fclose(f);
	return rc;
}

static int read_arg(struct dset *d, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "ncclbpf decisions: %s: %s\n", path, strerror(errno));
		return CLI_EXIT_REFUSED;
	}
	if (S_ISREG(st.st_mode))
		return read_file(d, path);
	if (!S_ISDIR(st.st_mode)) {
		/* a FIFO would block the open: refused before it */
		fprintf(stderr, "ncclbpf decisions: %s: not a regular file or directory\n", path);
		return CLI_EXIT_REFUSED;
	}
	DIR *dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "ncclbpf decisions: %s: %s\n", path, strerror(errno));
		return CLI_EXIT_REFUSED;
	}
	struct dirent *e;
	int rc = 0, n = 0;
	while (!rc && (e = readdir(dir))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "decisions-", 10) || l < 16 || strcmp(e->d_name + l - 6, ".jsonl"))
			continue;
		char full[4096];
		struct stat est;
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		if (lstat(full, &est) != 0 || !S_ISREG(est.st_mode)) {
			fprintf(stderr, "ncclbpf decisions: %s: not a regular file, skipped\n", full);
			continue;
		}
		rc = read_file(d, full);
		n++;
	}
	closedir(dir);
	if (!rc && n == 0) {
		fprintf(stderr, "ncclbpf decisions: %s: no decisions-*.jsonl files: nothing to "
			"check\n", path);
		rc = CLI_EXIT_REFUSED;
	}
	return rc;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct drec *x = a, *y = b;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

static bool same_decision(const struct drec *a, const struct drec *b)
{
	return a->coll == b->coll && a->bytes == b->bytes && a->algo == b->algo &&
	       a->proto == b->proto && a->channels == b->channels;
}

static void print_decision(const struct dset *d, const struct drec *r)
{
	printf("  rank %d (%s): %s %" PRIu64 " bytes algo %s proto %s channels %d%s%s", r->rank,
	       d->files[r->file], coll_names[r->coll], r->bytes,
	       r->algo >= 0 ? algo_names[r->algo] : "null",
	       r->proto >= 0 ? proto_names[r->proto] : "null", r->channels,
	       r->src >= 0 ? " decided by " : "", r->src >= 0 ? nb_dsrc_name((unsigned)r->src) : "");
	if (r->tag)
		printf(" tag %" PRIu64, r->tag);
	printf("\n");
}

static const char *algo_name(int32_t a)
{
	return a >= 0 ? algo_names[a] : NULL;
}

static const char *proto_name(int32_t p)
{
	return p >= 0 ? proto_names[p] : NULL;
}

/* One communicator's records d->r[begin, end) (sorted by seq, rank, file). */
struct comm_summary {
	uint64_t comm;
	int ranks, min_rank, max_rank;
	uint64_t seqs, full, partial, changed;
	/* the first divergent seq's records, [div_begin, div_end); div_end == 0: none */
	size_t div_begin, div_end;
};

static int summarize_comm(const struct dset *d, size_t begin, size_t end, struct comm_summary *c)
{
	memset(c, 0, sizeof(*c));
	c->comm = d->r[begin].comm;
	c->min_rank = INT32_MAX;
	c->max_rank = -1;
	int *seen = calloc(end - begin, sizeof(int));
	if (!seen)
		return -ENOMEM;
	for (size_t k = begin; k < end; k++) {
		if (d->r[k].rank < c->min_rank)
			c->min_rank = d->r[k].rank;
		if (d->r[k].rank > c->max_rank)
			c->max_rank = d->r[k].rank;
		int q = 0;
		while (q < c->ranks && seen[q] != d->r[k].rank)
			q++;
		if (q == c->ranks)
			seen[c->ranks++] = d->r[k].rank;
	}
	free(seen);
	size_t j = begin;
	while (j < end) {
		size_t k = j;
		int ranks = 0;
		bool agree = true;
		while (k < end && d->r[k].seq == d->r[j].seq) {
			agree &= same_decision(&d->r[k], &d->r[j]);
			if (k == j || d->r[k].rank != d->r[k - 1].rank)
				ranks++;
			k++;
		}
		if (!agree && !c->div_end) {
			c->div_begin = j;
			c->div_end = k;
		}
		c->seqs++;
		if (ranks == c->ranks)
			c->full++;
		else
			c->partial++;
		if (d->r[j].algo >= 0 || d->r[j].proto >= 0 || d->r[j].channels > 0)
			c->changed++;
		j = k;
	}
	return 0;
}

static void json_comm_id(struct cli_json *j, const char *key, uint64_t comm)
{
	char id[24];
	snprintf(id, sizeof(id), "0x%" PRIx64, comm);
	cli_json_str(j, key, id);
}

static void json_decision(struct cli_json *j, const struct dset *d, const struct drec *r)
{
	cli_json_object(j, NULL);
	cli_json_int(j, "rank", r->rank);
	cli_json_str(j, "file", d->files[r->file]);
	cli_json_str(j, "coll", coll_names[r->coll]);
	cli_json_uint(j, "bytes", r->bytes);
	cli_json_str(j, "algo", algo_name(r->algo));
	cli_json_str(j, "proto", proto_name(r->proto));
	cli_json_int(j, "channels", r->channels);
	cli_json_str(j, "src", r->src >= 0 ? nb_dsrc_name((unsigned)r->src) : NULL);
	if (r->tag)
		cli_json_uint(j, "tag", r->tag);
	cli_json_end(j);
}

/* not static: tests/agree/fuzz_decisions.c calls it */
int cmd_decisions(int argc, char **argv);
int cmd_decisions(int argc, char **argv)
{
	bool quiet = false, json = false;
	struct dset d = {0};
	struct comm_summary *sums = NULL;
	int rc = 0, inputs = 0;
	for (int i = 1; i < argc && !rc; i++) {
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = true;
			continue;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			rc = cli_usage_error("decisions", "unknown option '%s'", argv[i]);
			break;
		}
		rc = read_arg(&d, argv[i]);
		inputs++;
	}
	if (!rc && inputs == 0)
		rc = cli_usage_error("decisions", "no log directory or file given");
	if (!rc && d.n == 0) {
		/* fail closed: "consistent" about nothing would pass any check */
		fprintf(stderr, "ncclbpf decisions: no decision in %zu file(s): nothing to check%s\n",
			d.n_files, d.dropped || d.lost ? " (the writers dropped or lost them all)" : "");
		rc = CLI_EXIT_REFUSED;
	}
	if (rc)
		goto out;
	if (d.n) /* qsort(NULL, 0) is undefined (found by fuzz_decisions) */
		qsort(d.r, d.n, sizeof(*d.r), cmp_rec);
	size_t n_comms = 0;
	for (size_t i = 0; i < d.n; i++)
		n_comms += i == 0 || d.r[i].comm != d.r[i - 1].comm;
	sums = calloc(n_comms ? n_comms : 1, sizeof(*sums));
	if (!sums) {
		fprintf(stderr, "ncclbpf decisions: out of memory\n");
		rc = CLI_EXIT_REFUSED;
		goto out;
	}
	const struct comm_summary *div = NULL;
	for (size_t i = 0, c = 0; i < d.n; c++) {
		size_t end = i;
		while (end < d.n && d.r[end].comm == d.r[i].comm)
			end++;
		if (summarize_comm(&d, i, end, &sums[c])) {
			fprintf(stderr, "ncclbpf decisions: out of memory\n");
			rc = CLI_EXIT_REFUSED;
			goto out;
		}
		if (sums[c].div_end && !div)
			div = &sums[c];
		i = end;
	}
	bool complete = !d.dropped && !d.lost;
	if (div)
		rc = DECISIONS_EXIT_DIVERGENT;
	else if (!complete)
		rc = DECISIONS_EXIT_INCOMPLETE;
	if (json) {
		struct cli_json j;
		cli_json_init(&j, stdout);
		cli_json_object(&j, NULL);
		cli_json_str(&j, "schema", "ncclbpf.decisions/1");
		cli_json_uint(&j, "files", d.n_files);
		cli_json_uint(&j, "decisions", d.n);
		cli_json_uint(&j, "dropped", d.dropped);
		cli_json_uint(&j, "lost", d.lost);
		cli_json_bool(&j, "complete", complete);
		cli_json_array(&j, "communicators");
		for (size_t c = 0; c < n_comms; c++) {
			const struct comm_summary *s = &sums[c];
			cli_json_object(&j, NULL);
			json_comm_id(&j, "comm", s->comm);
			cli_json_int(&j, "ranks", s->ranks);
			cli_json_int(&j, "min_rank", s->min_rank);
			cli_json_int(&j, "max_rank", s->max_rank);
			cli_json_uint(&j, "collectives", s->seqs);
			cli_json_uint(&j, "logged_by_all", s->full);
			cli_json_uint(&j, "logged_by_fewer", s->partial);
			cli_json_uint(&j, "changed", s->changed);
			cli_json_bool(&j, "consistent", !s->div_end);
			cli_json_end(&j);
		}
		cli_json_end(&j);
		cli_json_bool(&j, "consistent", !div && complete);
		if (div) {
			cli_json_object(&j, "divergence");
			json_comm_id(&j, "comm", div->comm);
			cli_json_uint(&j, "seq", d.r[div->div_begin].seq);
			cli_json_array(&j, "decisions");
			for (size_t q = div->div_begin; q < div->div_end; q++)
				json_decision(&j, &d, &d.r[q]);
			cli_json_end(&j);
			cli_json_end(&j);
		} else {
			cli_json_null(&j, "divergence");
		}
		cli_json_end(&j);
		cli_json_finish(&j);
		goto out;
	}
	for (size_t c = 0; c < n_comms; c++) {
		const struct comm_summary *s = &sums[c];
		if (s == div) {
			/* text: the summaries up to the first divergent communicator, then it */
			printf("DIVERGENT: comm 0x%" PRIx64 " seq %" PRIu64
			       ": the ranks decided differently\n",
			       s->comm, d.r[s->div_begin].seq);
			for (size_t q = s->div_begin; q < s->div_end; q++)
				print_decision(&d, &d.r[q]);
			goto out;
		}
		if (!quiet)
			printf("comm 0x%" PRIx64 ": %d rank(s) (%d..%d), %" PRIu64 " collectives, %" PRIu64
			       " logged by all %d, %" PRIu64 " by fewer (a rank started late or "
			       "stopped early), %" PRIu64 " changed by policy: all ranks agree\n",
			       s->comm, s->ranks, s->min_rank, s->max_rank, s->seqs, s->full, s->ranks,
			       s->partial, s->changed);
	}
	if (!complete) {
		/* said also with -q: it is the verdict */
		printf("INCOMPLETE: %zu file(s), %zu decisions, %zu communicator(s) agree, but ",
		       d.n_files, d.n, n_comms);
		if (d.dropped)
			printf("%" PRIu64 " decision(s) were dropped by the writers (log ring full)%s",
			       d.dropped, d.lost ? " and " : "");
		if (d.lost)
			printf("%" PRIu64 " could not be written (disk full or file size limit; "
			       "\"lost\" lines)", d.lost);
		printf(": those collectives were not checked\n");
	} else if (!quiet) {
		printf("%zu file(s), %zu decisions, %zu communicator(s): consistent\n", d.n_files, d.n,
		       n_comms);
	}
out:
	for (size_t f = 0; f < d.n_files; f++)
		free(d.files[f]);
	free(d.files);
	free(d.r);
	free(sums);
	return rc;
}

NCCLBPF_CLI_COMMAND(decisions, .name = "decisions", .run = cmd_decisions,
		    .synopsis = "[-q | --json] DIR|FILE...",
		    .summary = "check NCCLBPF_DECISION_LOG files: did every rank decide the same?",
		    .help = "Reads the decision logs that NCCLBPF_DECISION_LOG=DIR makes every process "
			    "write\n(decisions-<host>-<pid>.jsonl; every decisions-*.jsonl of a "
			    "directory, or the\nfiles given), groups the decisions by communicator "
			    "and collective sequence\nnumber, and compares the ranks'. Prints per "
			    "communicator the ranks, collectives,\nhow many every rank logged and how "
			    "many the policy changed\n(docs/agreement.md).\n"
			    "\n"
			    "options:\n"
			    "  -q, --quiet   print only a divergence\n"
			    "  --json        one JSON document on stdout (below), also on a divergence\n"
			    "\n"
			    "exit status: 0 all ranks agree, nothing missing; 3 a divergence (the first\n"
			    "divergent communicator and seq, with each rank's decision); 4 no divergence,\n"
			    "but the logs are incomplete: decisions were dropped (the writer's ring was\n"
			    "full: {\"dropped\":N} lines) or lost (not written: disk full, file size limit:\n"
			    "{\"lost\":N,\"reason\":...} lines), so some collectives were not checked;\n"
			    "1 nothing to check (no decisions-*.jsonl file, no decision), a file that is\n"
			    "not a regular file, unreadable, or a malformed line (file:line:col: what is\n"
			    "wrong; a partial last line, as a killed process leaves, is reported and\n"
			    "ignored; nothing on stdout); 2 usage.\n"
			    "\n"
			    "json (schema \"ncclbpf.decisions/1\"):\n"
			    "  {\"schema\", \"files\": number of files read, \"decisions\": decision lines,\n"
			    "   \"dropped\": decisions the writers dropped, \"lost\": decisions they could not\n"
			    "   write (neither checked), \"complete\": bool (both 0),\n"
			    "   \"communicators\": [{\"comm\": \"0x<hex>\", \"ranks\": distinct ranks,\n"
			    "     \"min_rank\", \"max_rank\", \"collectives\": sequence numbers logged,\n"
			    "     \"logged_by_all\", \"logged_by_fewer\": of those, by every rank / by\n"
			    "     fewer, \"changed\": collectives the policy changed, \"consistent\": bool}]\n"
			    "     (in communicator order; all of them, also after a divergence),\n"
			    "   \"consistent\": bool (exit 0: no divergence and complete), \"divergence\":\n"
			    "   null or the first divergent\n"
			    "   collective {\"comm\", \"seq\", \"decisions\": [{\"rank\", \"file\", \"coll\",\n"
			    "     \"bytes\", \"algo\", \"proto\": names or null (NCCL's choice),\n"
			    "     \"channels\", \"src\": who decided, or null for a log without it,\n"
			    "     \"tag\" when logged}] (one per rank and file, in rank order)}}\n"
			    "A line may carry \"tag\": the application's per-call userProfilerTag\n"
			    "(NCCL 2.31+), shown with a divergence, never compared.\n");
