/* ncclbpf run OBJ...: asks a policy what it decides - what `bpftool prog run` is for the
 * kernel. The object's tuner programs run through the real plugin path: libncclbpf.so is
 * dlopen'ed and bound the way the chosen NCCL release binds it (src/host, the emulated NCCL
 * host), NCCLBPF_POLICY names the objects, and getCollInfo is called on a communicator of
 * --ranks on --nodes with the host's cost table for each collective and size. For every
 * size it prints what NCCL runs with the policy beside what it runs without (NCCL's
 * default from the same table), and who decided. The plugin's own per-reason counters
 * (ncclbpf_tuner_issue_counts) say when a request was not applied (unavailable, out of
 * range, clamped). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "loader/object.h"
#include "mock_nccl.h"
#include "ncclbpf/ncclbpf.h"
#include "ncclbpf/policy.h"
#include "tools/cli.h"

#define RUN_MAX_OBJS 16
#define RUN_MAX_SIZES 64
#define RUN_MAX_ISSUES 32

struct run_opts {
	const char *objs[RUN_MAX_OBJS];
	int nobj;
	const char *lib;
	int release, ranks, nodes, topo; /* topo -1: from ranks and nodes */
	unsigned colls;                  /* bit per NCCLBPF_COLL_* */
	unsigned long long sizes[RUN_MAX_SIZES];
	int nsizes;
	bool json;
};

struct run_row {
	int coll;
	unsigned long long bytes;
	int algo, proto, channels;    /* what NCCL runs with the policy */
	int dalgo, dproto, dchannels; /* ... and without it */
	bool changed;
	char issue[160]; /* "" or the reasons the plugin did not apply a request */
	char violation[200];
};

/* "64K", "1M", "8": bytes, K/M/G = 1024^n as nccl-tests reads -b/-e. */
static int parse_size(const char *s, unsigned long long *v)
{
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	unsigned long long x = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || *end || x > (1ull << 40) >> shift)
		return -1;
	*v = x << shift;
	return 0;
}

/* LIST "1K,64K,1M" or RANGE "MIN-MAX" (doubling) / "MIN-MAX:F" (times F). */
static int parse_bytes(const char *arg, struct run_opts *o)
{
	char buf[512];
	if (strlen(arg) >= sizeof(buf))
		return cli_usage_error("run", "--bytes: too long");
	snprintf(buf, sizeof(buf), "%s", arg);
	char *dash = strchr(buf, '-');
	o->nsizes = 0;
	if (dash) {
		unsigned long long lo, hi, f = 2;
		*dash = 0;
		char *colon = strchr(dash + 1, ':');
		if (colon) {
			*colon = 0;
			char *end;
			errno = 0;
			f = strtoull(colon + 1, &end, 10);
			if (errno || *end || f < 2 || f > 1024)
				return cli_usage_error("run", "--bytes %s: the factor after ':' is an "
						       "integer 2..1024", arg);
		}
		if (parse_size(buf, &lo) || parse_size(dash + 1, &hi) || lo > hi)
			return cli_usage_error("run", "--bytes %s: want MIN-MAX[:FACTOR] with MIN <= "
					       "MAX, sizes like 8, 64K, 1M, 1G (up to 1T)", arg);
		for (unsigned long long x = lo; x <= hi; x = x ? x * f : 1) {
			if (o->nsizes == RUN_MAX_SIZES)
				return cli_usage_error("run", "--bytes %s: more than %d sizes", arg,
						       RUN_MAX_SIZES);
			o->sizes[o->nsizes++] = x;
			if (x > hi / f)
				break;
		}
		return 0;
	}
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == RUN_MAX_SIZES)
			return cli_usage_error("run", "--bytes: more than %d sizes", RUN_MAX_SIZES);
		if (parse_size(t, &o->sizes[o->nsizes]))
			return cli_usage_error("run", "--bytes: '%s' is not a size (8, 64K, 1M, 1G; up "
					       "to 1T)", t);
		o->nsizes++;
	}
	return o->nsizes ? 0 : cli_usage_error("run", "--bytes: no size given");
}

static int parse_colls(const char *arg, unsigned *mask)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	*mask = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "all")) {
			*mask |= (1u << NCCLBPF_NUM_COLLS) - 1;
			continue;
		}
		int c = -1;
		for (int k = 0; k < NCCLBPF_NUM_COLLS; k++) {
			const char *n = mock_coll_name(k);
			if (!strcasecmp(t, n))
				c = k;
		}
		/* nccl-tests' names: all_reduce, all_gather, reduce_scatter */
		char squeezed[64];
		size_t j = 0;
		for (const char *p = t; *p && j + 1 < sizeof(squeezed); p++)
			if (*p != '_' && *p != '-')
				squeezed[j++] = *p;
		squeezed[j] = 0;
		for (int k = 0; c < 0 && k < NCCLBPF_NUM_COLLS; k++)
			if (!strcasecmp(squeezed, mock_coll_name(k)))
				c = k;
		if (c < 0)
			return cli_usage_error("run", "--coll '%s': want allreduce, allgather, "
					       "reducescatter, broadcast, reduce or all", t);
		*mask |= 1u << c;
	}
	return *mask ? 0 : cli_usage_error("run", "--coll: none given");
}

/* The path part of an NCCLBPF_POLICY entry (without ":prog", as the runtime splits it). */
static void entry_path(const char *entry, char *path, size_t len)
{
	snprintf(path, len, "%s", entry);
	char *colon = strrchr(path, ':');
	if (colon && !strchr(colon, '/'))
		*colon = 0;
}

/* Before the plugin sees it: a readable regular file, an object the loader accepts, with a
 * tuner program. Verification is the plugin's (it logs the diagnostic). */
static int precheck(const char *entry)
{
	char path[4096], err[1024];
	entry_path(entry, path, sizeof(path));
	struct ncclbpf_object *obj = NULL;
	if (ncclbpf_object_open_file(path, &obj, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: error: %s\n", path, err);
		return -1;
	}
	bool tuner = false;
	for (size_t i = 0; i < ncclbpf_object_program_count(obj); i++)
		tuner |= ncclbpf_program_section_hook(ncclbpf_object_program(obj, i)) ==
			 NCCLBPF_HOOK_TUNER;
	ncclbpf_object_close(obj);
	if (!tuner) {
		fprintf(stderr, "%s: error: no program in a SEC(\"tuner\") section: nothing decides "
				"an algorithm (`ncclbpf info %s` lists its programs)\n", path, path);
		return -1;
	}
	return 0;
}

/* The reasons whose counters moved during one call, "; "-separated. */
static void issue_delta(const uint64_t *before, const uint64_t *after, const char *const *names,
			int n, char *out, size_t len)
{
	size_t w = 0;
	out[0] = 0;
	for (int i = 0; i < n && i < RUN_MAX_ISSUES; i++)
		if (after[i] != before[i] && w < len)
			w += (size_t)snprintf(out + w, len - w, "%s%s", w ? "; " : "",
					      names[i] ? names[i] : "?");
}

/* One (collective, size): NCCL's table, its default, the plugin's call, NCCL's selection. */
static void run_one(struct mock_comm *c, int release, enum mock_topo topo, int n_issues,
		    const char *const *names, struct run_row *r)
{
	float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	uint64_t i0[RUN_MAX_ISSUES] = {0}, i1[RUN_MAX_ISSUES] = {0};
	mock_cost_table(before, topo, r->coll, (size_t)r->bytes, c->n_ranks, c->n_nodes);
	memcpy(after, before, sizeof(after));
	r->dalgo = r->dproto = r->algo = r->proto = -1;
	mock_select(release, before, &r->dalgo, &r->dproto);
	r->dchannels = c->nccl_channels;
	if (n_issues > 0)
		mock_nccl_issue_counts(c->nccl, i0, NULL, RUN_MAX_ISSUES);
	int nch = 0, rc;
	if (release >= 231) {
		/* 2.31 selection: candidates NCCL filled, ties to the highest index, nChannels a
		 * cap; no symmetric kernel competes here */
		struct mock_231_result res;
		rc = mock_collective_231(c, r->coll, (size_t)r->bytes, 0, before, -1.0f, 1, &res);
		r->algo = res.algo;
		r->proto = res.proto;
		r->channels = res.n_channels;
		nch = res.tuner_channels;
		if (!rc && res.negative_written)
			snprintf(r->violation, sizeof(r->violation),
				 "a negative time written into a candidate (NCCL 2.31 selects it)");
	} else {
		rc = mock_comm_get_coll_info(c, r->coll, (size_t)r->bytes, 1, 0, after, &nch);
		if (!rc)
			mock_check_invariants(release, before, after, nch, c->nccl_channels,
					      r->violation, sizeof(r->violation));
		if (!rc && mock_select(release, after, &r->algo, &r->proto))
			snprintf(r->violation, sizeof(r->violation), "the table selects nothing");
		r->channels = nch > 0 ? nch : c->nccl_channels;
	}
	if (rc && !r->violation[0])
		snprintf(r->violation, sizeof(r->violation), "getCollInfo returned %d", rc);
	if (n_issues > 0) {
		mock_nccl_issue_counts(c->nccl, i1, NULL, RUN_MAX_ISSUES);
		issue_delta(i0, i1, names, n_issues, r->issue, sizeof(r->issue));
	}
	r->changed = r->algo != r->dalgo || r->proto != r->dproto || r->channels != r->dchannels;
}

static const char *source_of(const struct run_row *r)
{
	if (r->violation[0])
		return "VIOLATION";
	if (r->changed)
		return r->issue[0] ? "policy (adjusted)" : "policy";
	return r->issue[0] ? "NCCL (not applied)" : "NCCL";
}

static int width(int w, const char *s)
{
	int n = (int)strlen(s);
	return n > w ? n : w;
}

static void print_table(const struct run_opts *o, const struct run_row *rows, int n)
{
	int wa = 4, wp = 5, ws = 6, wd = 12;
	for (int i = 0; i < n; i++) {
		char d[64];
		wa = width(wa, mock_algo_name(rows[i].algo));
		wp = width(wp, mock_proto_name(rows[i].proto));
		ws = width(ws, source_of(&rows[i]));
		snprintf(d, sizeof(d), "%s/%s/%d", mock_algo_name(rows[i].dalgo),
			 mock_proto_name(rows[i].dproto), rows[i].dchannels);
		wd = width(wd, d);
	}
	int coll = -1;
	for (int i = 0; i < n; i++) {
		const struct run_row *r = &rows[i];
		if (r->coll != coll) {
			coll = r->coll;
			printf("\n%s\n%13s  %-*s  %-*s  %8s  %-*s  %s\n", mock_coll_name(coll), "size (B)",
			       wa, "algo", wp, "proto", "channels", ws, "source", "NCCL default");
		}
		char d[64];
		snprintf(d, sizeof(d), "%s/%s/%d", mock_algo_name(r->dalgo), mock_proto_name(r->dproto),
			 r->dchannels);
		printf("%13llu  %-*s  %-*s  %8d  %-*s  %s", r->bytes, wa, mock_algo_name(r->algo), wp,
		       mock_proto_name(r->proto), r->channels, ws, source_of(r), d);
		if (r->violation[0])
			printf("  (%s)", r->violation);
		else if (r->issue[0])
			printf("  (%s)", r->issue);
		printf("\n");
	}
	(void)o;
	printf("\nsource: policy = what NCCL runs differs from its default because of the policy; "
	       "NCCL = the\npolicy kept NCCL's choice (or asked for what the plugin could not "
	       "apply: reason shown).\n");
}

static void print_json(const struct run_opts *o, const struct mock_nccl *m, const char *topo,
		       char (*attached)[512], int nattached, const struct run_row *rows, int n)
{
	struct cli_json j;
	char rel[16];
	snprintf(rel, sizeof(rel), "%d.%d", o->release / 100, o->release % 100);
	cli_json_init(&j, stdout);
	cli_json_object(&j, NULL);
	cli_json_str(&j, "schema", "ncclbpf.run/1");
	cli_json_array(&j, "objects");
	for (int i = 0; i < o->nobj; i++)
		cli_json_str(&j, NULL, o->objs[i]);
	cli_json_end(&j);
	cli_json_str(&j, "library", m->opened_as);
	cli_json_str(&j, "nccl", rel);
	cli_json_int(&j, "tuner_abi", m->tuner_version);
	cli_json_int(&j, "ranks", o->ranks);
	cli_json_int(&j, "nodes", o->nodes);
	cli_json_str(&j, "topo", topo);
	cli_json_array(&j, "attached");
	for (int i = 0; i < nattached; i++)
		cli_json_str(&j, NULL, attached[i]);
	cli_json_end(&j);
	cli_json_array(&j, "results");
	for (int i = 0; i < n; i++) {
		const struct run_row *r = &rows[i];
		cli_json_object(&j, NULL);
		cli_json_str(&j, "coll", mock_coll_name(r->coll));
		cli_json_uint(&j, "bytes", r->bytes);
		cli_json_str(&j, "algo", r->algo >= 0 ? mock_algo_name(r->algo) : NULL);
		cli_json_str(&j, "proto", r->proto >= 0 ? mock_proto_name(r->proto) : NULL);
		cli_json_int(&j, "channels", r->channels);
		cli_json_str(&j, "source", r->violation[0] ? "violation" : r->changed ? "policy" : "nccl");
		cli_json_str(&j, "issue", r->issue[0] ? r->issue : NULL);
		cli_json_str(&j, "violation", r->violation[0] ? r->violation : NULL);
		cli_json_object(&j, "default");
		cli_json_str(&j, "algo", r->dalgo >= 0 ? mock_algo_name(r->dalgo) : NULL);
		cli_json_str(&j, "proto", r->dproto >= 0 ? mock_proto_name(r->dproto) : NULL);
		cli_json_int(&j, "channels", r->dchannels);
		cli_json_end(&j);
		cli_json_end(&j);
	}
	cli_json_end(&j);
	cli_json_end(&j);
	cli_json_finish(&j);
}

static int cmd_run(int argc, char **argv)
{
	struct run_opts o = {.release = 230, .ranks = 8, .nodes = 1, .topo = -1,
			     .colls = 1u << NCCLBPF_COLL_ALLREDUCE};
	char dir[1024], lib[1100];
	cli_exe_dir(dir, sizeof(dir));
	snprintf(lib, sizeof(lib), "%s/libncclbpf.so", dir);
	o.lib = lib;
	parse_bytes("1K-1G:4", &o);
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		long long n;
		int r;
		if (!strcmp(argv[i], "--json")) {
			o.json = true;
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--coll", &v))) {
			if (r < 0 || parse_colls(v, &o.colls))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--bytes", &v))) {
			if (r < 0 || parse_bytes(v, &o))
				return CLI_EXIT_USAGE;
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--ranks", &v))) {
			if (r < 0 || cli_parse_range("run", "--ranks", v, 1, 65536, &n))
				return CLI_EXIT_USAGE;
			o.ranks = (int)n;
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--nodes", &v))) {
			if (r < 0 || cli_parse_range("run", "--nodes", v, 1, 65536, &n))
				return CLI_EXIT_USAGE;
			o.nodes = (int)n;
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--nccl", &v))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			o.release = mock_nccl_parse_release(v);
			if (o.release < 0)
				return cli_usage_error("run", "--nccl '%s': not an NCCL release the "
						       "emulated host knows (2.27 ...)", v);
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--topo", &v))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			o.topo = mock_topo_from_name(v);
			if (o.topo < 0)
				return cli_usage_error("run", "--topo '%s': want nvlink-node, multi-node, "
						       "single-rank, no-ll128 or ring-only", v);
		} else if ((r = cli_opt_value("run", argc, argv, &i, "--lib", &v))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			o.lib = v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error("run", "unknown option '%s'", argv[i]);
		} else if (o.nobj == RUN_MAX_OBJS) {
			return cli_usage_error("run", "at most %d objects", RUN_MAX_OBJS);
		} else if (!argv[i][0] || strchr(argv[i], ',')) {
			return cli_usage_error("run", "'%s': give each object as its own argument",
					       argv[i]);
		} else {
			o.objs[o.nobj++] = argv[i];
		}
	}
	if (!o.nobj)
		return cli_usage_error("run", "no object given");
	if (o.nodes > o.ranks)
		return cli_usage_error("run", "--nodes %d: more nodes than ranks (%d)", o.nodes,
				       o.ranks);
	enum mock_topo topo = o.topo < 0 ? mock_topo_default(o.ranks, o.nodes) : (enum mock_topo)o.topo;
	const char *why = mock_topo_mismatch(topo, o.ranks, o.nodes);
	if (why)
		return cli_usage_error("run", "--topo %s with %d ranks on %d node%s: %s",
				       mock_topo_name(topo), o.ranks, o.nodes, o.nodes == 1 ? "" : "s",
				       why);
	for (int i = 0; i < o.nobj; i++)
		if (precheck(o.objs[i]))
			return CLI_EXIT_REFUSED;

	/* The job's environment for this one question: these objects and nothing else. */
	char spec[8192] = "";
	for (int i = 0, w = 0; i < o.nobj; i++)
		w += snprintf(spec + w, sizeof(spec) - (size_t)w, "%s%s", i ? "," : "", o.objs[i]);
	setenv("NCCLBPF_POLICY", spec, 1);
	setenv("NCCLBPF_CONTROL", "off", 1); /* no socket for a process that lives a second */
	setenv("NCCLBPF_AGREE", "off", 1);   /* one process: no peers to agree with */
	unsetenv("NCCLBPF_WATCH");
	unsetenv("NCCLBPF_DECISION_LOG");
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_METRICS_FILE");
	unsetenv("NCCLBPF_TUNER_INNER");

	struct mock_nccl m;
	if (mock_nccl_load_tuner(&m, o.release, o.lib, 0)) {
		cli_error("run", "NCCL %d.%d could not load a tuner from %s: %s", o.release / 100,
			  o.release % 100, o.lib, m.err);
		return CLI_EXIT_REFUSED;
	}
	struct mock_comm c;
	int rc = mock_comm_init(&m, &c, 0x52554e0001ull, o.ranks, o.nodes);
	if (rc) {
		cli_error("run", "the tuner's init failed (%d): NCCL would fail the communicator", rc);
		mock_nccl_unload(&m);
		return CLI_EXIT_REFUSED;
	}
	/* what the plugin attached, from its own log lines */
	char (*attached)[512] = calloc(64, sizeof(*attached));
	int nattached = 0, ntuner = 0;
	char line[1024];
	for (int i = 0; attached &&
			(i = mock_log_find(i, 3, "ncclbpf: attached ", line, sizeof(line))) >= 0 &&
			nattached < 64;
	     i++) {
		snprintf(attached[nattached], 512, "%.500s", line + strlen("ncclbpf: attached "));
		ntuner += strstr(attached[nattached], " to hook tuner ") != NULL;
		nattached++;
	}
	if (!ntuner) {
		cli_error("run", "no tuner program of %s was attached (%s)", spec,
			  mock_log_count(" skipped: ") ? "the plugin's line above says why"
						       : "see NCCL_DEBUG=INFO");
		mock_comm_finalize(&c);
		mock_nccl_unload(&m);
		free(attached);
		return CLI_EXIT_REFUSED;
	}
	const char *names[RUN_MAX_ISSUES] = {0};
	uint64_t dummy[RUN_MAX_ISSUES];
	int n_issues = mock_nccl_issue_counts(&m, dummy, names, RUN_MAX_ISSUES);
	struct run_row *rows = calloc((size_t)NCCLBPF_NUM_COLLS * (size_t)o.nsizes, sizeof(*rows));
	int n = 0, violations = 0;
	for (int k = 0; rows && k < NCCLBPF_NUM_COLLS; k++) {
		/* the order nccl-tests users know: all_reduce first */
		int coll = (NCCLBPF_COLL_ALLREDUCE - k + NCCLBPF_NUM_COLLS) % NCCLBPF_NUM_COLLS;
		if (!(o.colls & (1u << coll)))
			continue;
		for (int s = 0; s < o.nsizes; s++) {
			struct run_row *r = &rows[n++];
			r->coll = coll;
			r->bytes = o.sizes[s];
			run_one(&c, o.release, topo, n_issues, names, r);
			violations += r->violation[0] != 0;
		}
	}
	mock_comm_finalize(&c);
	if (!rows) {
		cli_error("run", "out of memory");
		mock_nccl_unload(&m);
		free(attached);
		return CLI_EXIT_REFUSED;
	}
	if (o.json) {
		print_json(&o, &m, mock_topo_name(topo), attached, nattached, rows, n);
	} else {
		printf("NCCL %d.%d, emulated (no GPU): %s bound as ncclTunerPlugin_v%d; %d rank%s on "
		       "%d node%s;\nNCCL's default from the emulated host's cost model (%s: an "
		       "H100-class NVSwitch node,\n400G InfiniBand between nodes), not from this "
		       "machine\n",
		       o.release / 100, o.release % 100, m.opened_as, m.tuner_version, o.ranks,
		       o.ranks == 1 ? "" : "s", o.nodes, o.nodes == 1 ? "" : "s",
		       mock_topo_name(topo));
		for (int i = 0; i < nattached; i++)
			printf("  attached %s\n", attached[i]);
		print_table(&o, rows, n);
	}
	if (violations)
		cli_error("run", "%d decision%s broke NCCL's invariants (marked VIOLATION)", violations,
			  violations == 1 ? "" : "s");
	free(rows);
	free(attached);
	mock_nccl_unload(&m);
	return violations ? CLI_EXIT_REFUSED : CLI_EXIT_OK;
}

NCCLBPF_CLI_COMMAND(run, .name = "run", .run = cmd_run,
		    .synopsis = "[--coll C,..] [--bytes LIST|RANGE] [--ranks N] [--nodes M] "
				"[--nccl VER] [--topo TOPO] [--lib PATH] [--json] OBJ[:PROG]...",
		    .summary = "what a policy decides, per collective and size, beside NCCL's",
		    .help = "Asks a policy what it decides, without a GPU (`bpftool prog run` for "
			    "NCCL). Loads\nlibncclbpf.so the way the NCCL release --nccl does "
			    "(dlopen, its versioned\nncclTunerPlugin symbol) with NCCLBPF_POLICY = "
			    "the objects, opens a communicator\nof --ranks on --nodes and calls "
			    "getCollInfo for each collective and size with\nthe emulated host's "
			    "cost table. Prints, per size, what NCCL runs with the policy\n(algo, "
			    "proto, channels), who decided, and NCCL's default from the same "
			    "table.\nA request the plugin did not apply (marked unavailable by "
			    "NCCL, out of range,\nclamped) is shown with the plugin's reason. The "
			    "objects' tuner programs run in\norder, as in a job; maps start "
			    "empty and keep their state from size to size.\nThe control socket, "
			    "agreement, decision logs, traces and metrics are off.\n"
			    "\n"
			    "options:\n"
			    "  --coll C,..     collectives: allreduce (default), allgather, "
			    "reducescatter,\n"
			    "                  broadcast, reduce, all (nccl-tests' all_reduce "
			    "spellings too)\n"
			    "  --bytes SIZES   a list 1K,64K,1M or a range MIN-MAX (doubling) or "
			    "MIN-MAX:F\n"
			    "                  (times F); K/M/G are 1024^n; default 1K-1G:4\n"
			    "  --ranks N       ranks in the communicator, 1 to 65536 (default 8)\n"
			    "  --nodes M       nodes, 1 to ranks (default 1)\n"
			    "  --nccl VER      NCCL release to emulate (default 2.30; "
			    "`mock_nccl_host simulate\n"
			    "                  --help` lists them)\n"
			    "  --topo TOPO     cost-table shape: nvlink-node, multi-node, "
			    "single-rank,\n"
			    "                  no-ll128, ring-only (default: from ranks and "
			    "nodes)\n"
			    "  --lib PATH      the plugin library (default: libncclbpf.so next to "
			    "this program)\n"
			    "  --json          one JSON document (below)\n"
			    "\n"
			    "exit status: 0 every size decided; 1 an object that is not a readable "
			    "regular\nfile, does not load or has no tuner program, none attached "
			    "(verifier rejection:\nthe plugin's line says why), the library not "
			    "loadable, or a decision that broke\nNCCL's invariants; 2 usage.\n"
			    "\n"
			    "json (schema \"ncclbpf.run/1\"):\n"
			    "  {\"schema\", \"library\", \"nccl\", \"topo\": strings, \"objects\", "
			    "\"attached\": [strings],\n   \"tuner_abi\", \"ranks\", \"nodes\": "
			    "numbers, \"results\": [{\"coll\", \"algo\", \"proto\":\n   strings, "
			    "\"bytes\", \"channels\": numbers, \"source\": \"policy\" | \"nccl\" "
			    "|\n   \"violation\", \"issue\", \"violation\": string or null, "
			    "\"default\": {\"algo\",\n   \"proto\", \"channels\"}}]}\n");
