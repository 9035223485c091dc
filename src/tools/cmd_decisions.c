/* ncclbpf decisions DIR|FILE...: checks NCCLBPF_DECISION_LOG files (docs/agreement.md).
 *
 * Reads every decisions-*.jsonl of the directories (and the files given), groups the lines
 * by communicator and collective sequence number, and compares the ranks' decisions.
 * Exit 0: every (comm, seq) that several ranks logged has one decision. Exit 3: the first
 * divergent (comm, seq) in (comm, seq) order is printed with each rank's decision. Exit 1:
 * an unreadable file or a malformed line (file:line:col and what is wrong). Exit 2: usage. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"

#define DECISIONS_EXIT_DIVERGENT 3

struct drec {
	uint64_t comm, seq, bytes;
	int32_t rank, coll, algo, proto, channels;
	uint32_t file;
};

struct dset {
	struct drec *r;
	size_t n, cap;
	char **files;
	size_t n_files;
	uint64_t dropped;
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
       K_CHANNELS = 128, K_ALL = 255 };

/* 1 = a decision, 0 = a "dropped" line, -1 = error (j->err). */
static int parse_line(struct jp *j, struct drec *r, uint64_t *dropped)
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
	if (seen != K_ALL) {
		j->err = "missing key (comm, rank, seq, coll, bytes, algo, proto, channels)";
		return -1;
	}
	return 1;
}

static int read_file(struct dset *d, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ncclbpf decisions: %s: %s\n", path, strerror(errno));
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
		struct drec r = {.file = file};
		struct jp j = {.p = line};
		int k = parse_line(&j, &r, &d->dropped);
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
	if (!S_ISDIR(st.st_mode))
		return read_file(d, path);
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
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		rc = read_file(d, full);
		n++;
	}
	closedir(dir);
	if (!rc && n == 0)
		fprintf(stderr, "ncclbpf decisions: %s: no decisions-*.jsonl files\n", path);
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
	printf("  rank %d (%s): %s %" PRIu64 " bytes algo %s proto %s channels %d\n", r->rank,
	       d->files[r->file], coll_names[r->coll], r->bytes,
	       r->algo >= 0 ? algo_names[r->algo] : "null",
	       r->proto >= 0 ? proto_names[r->proto] : "null", r->channels);
}

int cmd_decisions(int argc, char **argv)
{
	bool quiet = false;
	struct dset d = {0};
	int rc = 0, inputs = 0;
	for (int i = 1; i < argc && !rc; i++) {
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = true;
			continue;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: ncclbpf decisions [-q] DIR|FILE...\n");
			return CLI_EXIT_OK;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "ncclbpf decisions: unknown option '%s'\n", argv[i]);
			rc = CLI_EXIT_USAGE;
			break;
		}
		rc = read_arg(&d, argv[i]);
		inputs++;
	}
	if (!rc && inputs == 0) {
		fprintf(stderr, "usage: ncclbpf decisions [-q] DIR|FILE...\n");
		rc = CLI_EXIT_USAGE;
	}
	if (rc)
		goto out;
	if (d.n) /* qsort(NULL, 0) is undefined (found by fuzz_decisions) */
		qsort(d.r, d.n, sizeof(*d.r), cmp_rec);
	size_t i = 0;
	uint64_t comms = 0;
	while (i < d.n) {
		uint64_t comm = d.r[i].comm;
		size_t end = i;
		while (end < d.n && d.r[end].comm == comm)
			end++;
		/* distinct ranks of this communicator */
		int n_ranks = 0, min_rank = INT32_MAX, max_rank = -1;
		for (size_t k = i; k < end; k++) {
			if (d.r[k].rank < min_rank)
				min_rank = d.r[k].rank;
			if (d.r[k].rank > max_rank)
				max_rank = d.r[k].rank;
		}
		{
			int *seen = calloc((size_t)(end - i), sizeof(int));
			if (!seen) {
				rc = CLI_EXIT_REFUSED;
				goto out;
			}
			for (size_t k = i; k < end; k++) {
				int q = 0;
				while (q < n_ranks && seen[q] != d.r[k].rank)
					q++;
				if (q == n_ranks)
					seen[n_ranks++] = d.r[k].rank;
			}
			free(seen);
		}
		uint64_t seqs = 0, full = 0, partial = 0, changed = 0;
		size_t j = i;
		while (j < end) {
			size_t k = j;
			int ranks = 0;
			while (k < end && d.r[k].seq == d.r[j].seq) {
				if (!same_decision(&d.r[k], &d.r[j])) {
					printf("DIVERGENT: comm 0x%" PRIx64 " seq %" PRIu64
					       ": the ranks decided differently\n", comm, d.r[j].seq);
					for (size_t q = j; q < end && d.r[q].seq == d.r[j].seq; q++)
						print_decision(&d, &d.r[q]);
					rc = DECISIONS_EXIT_DIVERGENT;
					goto out;
				}
				if (k == j || d.r[k].rank != d.r[k - 1].rank)
					ranks++;
				k++;
			}
			seqs++;
			if (ranks == n_ranks)
				full++;
			else
				partial++;
			if (d.r[j].algo >= 0 || d.r[j].proto >= 0 || d.r[j].channels > 0)
				changed++;
			j = k;
		}
		int max_ranks = n_ranks;
		comms++;
		if (!quiet)
			printf("comm 0x%" PRIx64 ": %d rank(s) (%d..%d), %" PRIu64 " collectives, %" PRIu64
			       " logged by all %d, %" PRIu64 " by fewer (a rank started late or "
			       "stopped early), %" PRIu64 " changed by policy: all ranks agree\n",
			       comm, max_ranks, min_rank, max_rank, seqs, full, max_ranks, partial,
			       changed);
		i = end;
	}
	if (d.dropped)
		printf("WARNING: %" PRIu64 " decisions were dropped by the writers (log ring full): "
		       "those collectives were not checked\n", d.dropped);
	if (!quiet)
		printf("%zu file(s), %zu decisions, %" PRIu64 " communicator(s): consistent\n",
		       d.n_files, d.n, comms);
out:
	for (size_t f = 0; f < d.n_files; f++)
		free(d.files[f]);
	free(d.files);
	free(d.r);
	return rc;
}

NCCLBPF_CLI_COMMAND(decisions, .name = "decisions", .run = cmd_decisions,
		    .synopsis = "[-q] DIR|FILE...",
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
			    "\n"
			    "exit status: 0 all ranks agree; 3 a divergence (the first divergent\n"
			    "communicator and seq, with each rank's decision); 1 an unreadable file or\n"
			    "a malformed line (file:line:col: what is wrong; a partial last line, as a\n"
			    "killed process leaves, is reported and ignored); 2 usage.\n");
