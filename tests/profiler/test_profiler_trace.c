/* Trace pipeline: two "ranks" (forked processes) run collectives through the profiler
 * with NCCLBPF_TRACE=DIR, `ncclbpf trace DIR -o trace.json` (cmd_trace) merges them, and
 * the result is checked against the Chrome trace event format: strict JSON, required
 * fields per phase, balanced B/E, complete events on one (pid, tid) strictly nested (never
 * partially overlapping: Perfetto drops those), every flow's start and finish bound to an
 * existing slice on its lane, one process per rank, GPU slices on the converted clock, and
 * the same collective linked across ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_mini.h"
#include "prof_test_util.h"
#include "test_util.h"

int cmd_trace(int argc, char **argv);

#define NCOLL 24
#define GPU_NS 250000ull

static void run_rank(const char *dir, int rank)
{
	setenv("NCCLBPF_TRACE", dir, 1);
	prof_set_mode("full");
	struct ph_host h;
	/* rank 0: profiler v7 (NCCL 2.31+: user tags, KernelPhase slices), rank 1: v5 */
	ph_open_table(&h, rank == 0 ? 7 : 5, prof_table(rank == 0 ? 7 : 5));
	struct ph_comm c, sub;
	if (ph_comm_init(&h, &c, 0xfeedull, "world", 1, 2, rank))
		exit(3);
	if (rank == 0 && ph_comm_init(&h, &sub, 0xbeefull, "sub \"quoted\"", 1, 1, 0))
		exit(3);
	for (int i = 0; i < NCOLL; i++) {
		struct ph_coll k = {.coll_type = i % 2 ? NCCLBPF_COLL_ALLREDUCE : NCCLBPF_COLL_ALLGATHER,
				    .count = 1024u << (i % 6), .algo = NCCLBPF_ALGO_RING,
				    .proto = NCCLBPF_PROTO_SIMPLE, .n_channels = 2 + i % 3,
				    .gpu_ns = GPU_NS, .stagger_ns = 1000, .network = i % 3 == 0,
				    .steps = 2, .user_tag = 500 + (uint64_t)i};
		ph_coll_run(&c, &k);
		if (rank == 0) {
			struct ph_coll s = k;
			s.network = false;
			ph_coll_app(&sub, &s);
			/* sub's proxy work overlaps the next collective of the world comm */
			ph_coll_proxy(&sub, &s);
		}
	}
	ph_comm_finalize(&c);
	if (rank == 0)
		ph_comm_finalize(&sub);
	exit(0); /* atexit flush */
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	if (b)
		b[n] = 0;
	fclose(f);
	return b;
}

struct xev {
	int pid, tid;
	double ts, dur;
	const char *cat, *name;
};

static int cmp_x(const void *a, const void *b)
{
	const struct xev *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid - y->pid;
	if (x->tid != y->tid)
		return x->tid - y->tid;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static bool is_int(const struct jm *v)
{
	return v && v->type == JM_NUM && v->num == (double)(long long)v->num;
}

static bool inside_slice(const struct xev *xs, size_t nx, int pid, int tid, double ts)
{
	for (size_t i = 0; i < nx; i++)
		if (xs[i].pid == pid && xs[i].tid == tid && xs[i].ts <= ts + 1e-6 &&
		    ts <= xs[i].ts + xs[i].dur + 1e-6)
			return true;
	return false;
}

static void validate(const char *path)
{
	char *text = slurp(path);
	CHECK(text != NULL);
	if (!text)
		return;
	char err[128] = "";
	struct jm *root = jm_parse(text, err, sizeof(err));
	if (!root)
		fprintf(stderr, "trace.json is not JSON: %s\n", err);
	CHECK(root != NULL);
	free(text);
	if (!root)
		return;
	CHECK(root->type == JM_OBJ);
	const struct jm *evs = jm_get(root, "traceEvents");
	CHECK(evs && evs->type == JM_ARR);
	const struct jm *unit = jm_get(root, "displayTimeUnit");
	CHECK(unit && unit->type == JM_STR);
	if (!evs || evs->type != JM_ARR) {
		jm_free(root);
		return;
	}
	struct xev *xs = calloc(evs->n, sizeof(*xs));
	size_t nx = 0;
	int procs = 0, begins = 0, ends = 0, coll_slices = 0, coll_flows = 0, parent_flows = 0;
	int bad_fields = 0, gpu_slices = 0, gpu_exact = 0, tagged = 0, phased = 0, phase_slices = 0;
	bool lane_api = false, lane_gpu = false, lane_proxy = false, lane_enq = false, lane_coll = false;
	/* flows by id: index of s and f */
	size_t nflow = 0;
	struct flow {
		double id;
		int s, f;
		int spid, stid, fpid, ftid;
		double sts, fts;
	} *flows = calloc(evs->n, sizeof(*flows));
	for (size_t i = 0; i < evs->n; i++) {
		const struct jm *e = evs->items[i];
		const struct jm *ph = jm_get(e, "ph"), *pid = jm_get(e, "pid"), *tid = jm_get(e, "tid"),
				*name = jm_get(e, "name"), *ts = jm_get(e, "ts");
		if (e->type != JM_OBJ || !ph || ph->type != JM_STR || !is_int(pid) || !is_int(tid) ||
		    !name || name->type != JM_STR) {
			bad_fields++;
			continue;
		}
		char p = ph->str[0];
		if (p == 'M') {
			const struct jm *args = jm_get(e, "args");
			const struct jm *an = jm_get(args, "name");
			if (!strcmp(name->str, "process_name"))
				procs++;
			if (!strcmp(name->str, "thread_name") && an && an->type == JM_STR) {
				lane_api |= !strncmp(an->str, "API", 3);
				lane_gpu |= !strncmp(an->str, "GPU ch", 6);
				lane_proxy |= !strncmp(an->str, "proxy", 5);
				lane_enq |= !strncmp(an->str, "enqueue", 7);
				lane_coll |= !strncmp(an->str, "collectives", 11);
			}
			if (!args || args->type != JM_OBJ)
				bad_fields++;
			continue;
		}
		if (!ts || ts->type != JM_NUM || ts->num < 0) {
			bad_fields++;
			continue;
		}
		if (p == 'X') {
			const struct jm *dur = jm_get(e, "dur"), *cat = jm_get(e, "cat"),
					*args = jm_get(e, "args");
			if (!dur || dur->type != JM_NUM || dur->num < 0 || !cat || cat->type != JM_STR ||
			    !args || args->type != JM_OBJ) {
				bad_fields++;
				continue;
			}
			xs[nx++] = (struct xev){(int)pid->num, (int)tid->num, ts->num, dur->num,
						cat->str, name->str};
			if (!strcmp(cat->str, "coll")) {
				coll_slices++;
				const struct jm *tg = jm_get(args, "userTag");
				tagged += tg && tg->type == JM_NUM && tg->num >= 500;
				phased += jm_get(args, "compute_us") != NULL;
			}
			if (!strcmp(cat->str, "KernelPhase")) {
				const struct jm *ph = jm_get(args, "phase");
				phase_slices += ph && ph->type == JM_STR &&
						(!strcmp(ph->str, "initial_sync") ||
						 !strcmp(ph->str, "compute") || !strcmp(ph->str, "final_sync"));
			}
			if (!strcmp(cat->str, "KernelCh")) {
				gpu_slices++;
				const struct jm *ch = jm_get(args, "channel");
				/* channel 0 runs exactly GPU_NS on the GPU clock */
				if (ch && ch->num == 0 && dur->num > GPU_NS / 1000.0 - 1e-6 &&
				    dur->num < GPU_NS / 1000.0 + 1e-6)
					gpu_exact++;
			}
		} else if (p == 'B') {
			begins++;
		} else if (p == 'E') {
			ends++;
		} else if (p == 's' || p == 'f') {
			const struct jm *id = jm_get(e, "id"), *cat = jm_get(e, "cat");
			if (!is_int(id) || !cat || cat->type != JM_STR) {
				bad_fields++;
				continue;
			}
			if (p == 'f') {
				const struct jm *bp = jm_get(e, "bp");
				if (!bp || bp->type != JM_STR || strcmp(bp->str, "e"))
					bad_fields++;
			}
			size_t k;
			for (k = 0; k < nflow && flows[k].id != id->num; k++)
				;
			if (k == nflow) {
				flows[nflow].id = id->num;
				nflow++;
			}
			if (p == 's') {
				flows[k].s++;
				flows[k].spid = (int)pid->num;
				flows[k].stid = (int)tid->num;
				flows[k].sts = ts->num;
				if (!strcmp(cat->str, "coll"))
					coll_flows++;
				else
					parent_flows++;
			} else {
				flows[k].f++;
				flows[k].fpid = (int)pid->num;
				flows[k].ftid = (int)tid->num;
				flows[k].fts = ts->num;
			}
		} else {
			bad_fields++;
		}
	}
	CHECK_EQ_U64(bad_fields, 0);
	CHECK_EQ_U64(procs, 2);
	CHECK_EQ_U64(begins, ends);
	CHECK(lane_api && lane_gpu && lane_proxy && lane_enq && lane_coll);
	CHECK_EQ_U64(coll_slices, 3 * NCOLL); /* 2 ranks of "world" + rank 0's sub comm */
	CHECK_EQ_U64(coll_flows, NCOLL);      /* world collective seq k: rank a -> rank b */
	CHECK(parent_flows > 0);
	CHECK(gpu_slices > 0);
	CHECK_EQ_U64(gpu_exact, 3 * NCOLL);
	/* v7 (rank 0): the application's tag on its collectives (world and sub comm), the
	 * kernel phases of every channel as slices inside KernelCh and as durations in the
	 * collective's args; v5 (rank 1) has neither */
	CHECK_EQ_U64(tagged, 2 * NCOLL);
	CHECK_EQ_U64(phased, 2 * NCOLL);
	CHECK(phase_slices >= 3 * 2 * 2 * NCOLL);

	/* complete events on one lane nest strictly */
	qsort(xs, nx, sizeof(*xs), cmp_x);
	int overlaps = 0;
	double *stack = calloc(nx + 1, sizeof(double));
	size_t sp = 0;
	for (size_t i = 0; i < nx; i++) {
		if (i == 0 || xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid)
			sp = 0;
		double end = xs[i].ts + xs[i].dur;
		while (sp && stack[sp - 1] <= xs[i].ts + 1e-9)
			sp--;
		if (sp && end > stack[sp - 1] + 1e-9) {
			if (overlaps++ < 3)
				fprintf(stderr, "overlap on pid %d tid %d: %s at %.3f\n", xs[i].pid,
					xs[i].tid, xs[i].name, xs[i].ts);
		}
		stack[sp++] = end;
	}
	free(stack);
	CHECK_EQ_U64(overlaps, 0);

	/* flows: one start and one finish, both bound to slices of their lanes, forward */
	int bad_flows = 0;
	for (size_t k = 0; k < nflow; k++) {
		struct flow *f = &flows[k];
		if (f->s != 1 || f->f != 1 || f->fts + 1e-9 < f->sts ||
		    !inside_slice(xs, nx, f->spid, f->stid, f->sts) ||
		    !inside_slice(xs, nx, f->fpid, f->ftid, f->fts)) {
			if (bad_flows++ < 3)
				fprintf(stderr, "bad flow %.0f: s=%d f=%d %d/%d@%.3f -> %d/%d@%.3f\n",
					f->id, f->s, f->f, f->spid, f->stid, f->sts, f->fpid, f->ftid,
					f->fts);
		}
	}
	CHECK_EQ_U64(bad_flows, 0);
	free(flows);
	free(xs);
	jm_free(root);
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-trace-test-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	pid_t kids[2];
	for (int r = 0; r < 2; r++) {
		kids[r] = fork();
		if (kids[r] == 0)
			run_rank(dir, r);
	}
	for (int r = 0; r < 2; r++) {
		int st = 0;
		CHECK(waitpid(kids[r], &st, 0) == kids[r]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	char out[600];
	snprintf(out, sizeof(out), "%s/trace.json", dir);
	char *argv[] = {"trace", dir, "-o", out, NULL};
	CHECK(cmd_trace(4, argv) == 0);
	validate(out);
	/* bad input gets an error, never a crash */
	char *bad1[] = {"trace", NULL};
	CHECK(cmd_trace(1, bad1) != 0);
	char *bad2[] = {"trace", "/nonexistent/dir", NULL};
	CHECK(cmd_trace(2, bad2) != 0);
	char junk[700];
	snprintf(junk, sizeof(junk), "%s/junk.jsonl", dir);
	FILE *j = fopen(junk, "w");
	if (j) {
		fputs("{\"ev\":\"start\",\"id\":\n not json\n{\"ev\":\"stop\",\"id\":\"0x5\",\"t\":1}\n", j);
		fclose(j);
	}
	CHECK(cmd_trace(4, argv) == 0);
	validate(out);
	if (!getenv("NCCLBPF_KEEP_TRACE")) {
		char cmd[700];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	} else {
		printf("trace kept in %s\n", out);
	}
	TEST_DONE();
}
