/* Per-call cost of a policy decision on the CPU: native C vs interpreter vs JIT, in one
 * process, for three programs on a struct ncclbpf_tuner_ctx:
 *   noop         r0 = 0
 *   size-aware   16 instructions (15 + exit): pick algo/proto/channels from n_bytes and n_ranks
 *   two-lookups  two array-map lookups (thresholds, per-collective algo) + a decision
 * The native baselines are C functions doing the same work (map_lookup for the maps),
 * called through a function pointer like the JIT code. Timing: batches of BATCH calls
 * timed with clock_gettime, engines interleaved batch by batch so that noise from the
 * shared machine hits them alike; P50/P99 of the per-call average of each batch.
 *
 * Then the whole decision NCCL asks for (getCollInfo through ncclTunerPlugin_v5, the plugin
 * built into this binary, policies/noop.bpf.o and size_aware.bpf.o JIT-compiled) against the
 * native baseline shim (bench/native_tuner_shim.c: the same context, translation and
 * pinning around the native C policy), interleaved batch by batch on the same 16 tables.
 *
 *   bench_cpu_dispatch [batches=2000] [batch_calls=1000] [policy_dir=<exe>/../policies]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isa/insn_build.h"
#include <unistd.h>

#include "maps/map.h"
#include "native_tuner_shim.h"
#include "size_aware_insns.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/ncclbpf.h"
#include "plugin/tuner/tuner.h"
#include "runtime/runtime.h"
#include "vm/vm.h"

extern const struct nb_nccl_tuner_v5 ncclTunerPlugin_v5; /* src/plugin/tuner/tuner_v5.c */

#define NCTX 16
#define OFF(f) ((int16_t)offsetof(struct ncclbpf_tuner_ctx, f))

static struct ncclbpf_tuner_ctx ctxs[NCTX];
static struct nb_map *map_thresh, *map_algo;
static vm_helper_fn helpers[NB_HELPER_MAX];
static volatile uint64_t sink;

static uint64_t h_lookup(uint64_t map, uint64_t key, uint64_t c, uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)map,
					       (const void *)(uintptr_t)key);
}

/* ---- native baselines ---- */

static uint64_t c_noop(uint64_t a1, uint64_t a2)
{
	(void)a1, (void)a2;
	return 0;
}

static uint64_t c_size_aware(uint64_t a1, uint64_t a2)
{
	(void)a2;
	struct ncclbpf_tuner_ctx *c = (struct ncclbpf_tuner_ctx *)(uintptr_t)a1;
	uint64_t n = c->n_bytes;
	if (n <= 65536) {
		c->algo = NCCLBPF_ALGO_TREE;
		c->proto = NCCLBPF_PROTO_LL;
	} else if (n <= (1u << 22)) {
		c->algo = NCCLBPF_ALGO_RING;
		c->proto = NCCLBPF_PROTO_LL128;
	} else {
		c->algo = NCCLBPF_ALGO_RING;
		c->proto = NCCLBPF_PROTO_SIMPLE;
		if (c->n_ranks >= 8)
			c->n_channels = 32;
	}
	return 0;
}

static uint64_t c_two_lookups(uint64_t a1, uint64_t a2)
{
	(void)a2;
	struct ncclbpf_tuner_ctx *c = (struct ncclbpf_tuner_ctx *)(uintptr_t)a1;
	uint32_t k0 = 0, kc = c->coll_type;
	uint64_t *thr = map_lookup(map_thresh, &k0);
	if (!thr)
		return 0;
	uint64_t *algo = map_lookup(map_algo, &kc);
	if (!algo)
		return 0;
	if (c->n_bytes >= *thr)
		c->algo = (int32_t)*algo;
	return 0;
}

/* ---- the same programs in eBPF ---- */

static const struct bpf_insn prog_noop[] = { MOV64_K(0, 0), EXIT() };

static const struct bpf_insn prog_size_aware[] = { BENCH_SIZE_AWARE_INSNS };

static struct bpf_insn prog_two_lookups[32];
static size_t two_lookups_len;

static void build_two_lookups(void)
{
	const struct bpf_insn p[] = {
		MOV64_X(6, 1),
		ST(BPF_W, 10, -4, 0),
		LDDW(1, (uint64_t)(uintptr_t)map_thresh),
		MOV64_X(2, 10),
		ALU64_K(BPF_ADD, 2, -4),
		CALL(NB_HELPER_MAP_LOOKUP_ELEM),
		JMP_K(BPF_JEQ, 0, 0, 13),
		LDX(BPF_DW, 7, 0, 0),
		LDX(BPF_W, 2, 6, OFF(coll_type)),
		STX(BPF_W, 10, 2, -8),
		LDDW(1, (uint64_t)(uintptr_t)map_algo),
		MOV64_X(2, 10),
		ALU64_K(BPF_ADD, 2, -8),
		CALL(NB_HELPER_MAP_LOOKUP_ELEM),
		JMP_K(BPF_JEQ, 0, 0, 4),
		LDX(BPF_DW, 8, 0, 0),
		LDX(BPF_DW, 3, 6, OFF(n_bytes)),
		JMP_X(BPF_JLT, 3, 7, 1),
		STX(BPF_W, 6, 8, OFF(algo)),
		MOV64_K(0, 0),
		EXIT(),
	};
	two_lookups_len = sizeof(p) / sizeof(p[0]);
	memcpy(prog_two_lookups, p, sizeof(p));
}

/* ---- engines ---- */

/* E_API: the same JIT code through ncclbpf_program_run (verified, prepared by the runtime),
 * as the plugin calls it on every decision; budget: within +1 ns of E_JIT (raw entry). */
enum engine { E_NATIVE, E_INTERP, E_JIT, E_API, E_JIT_NOINLINE, E_COUNT };
static const char *const engine_name[] = { "native C", "interpreter", "JIT (raw entry)",
					   "ncclbpf_program_run", "JIT (helper call)" };

struct bench_case {
	const char *name;
	vm_jit_fn native;
	struct vm_program prog;
	vm_jit_fn jit, jit_noinline;
	struct vm_jit_image *img, *img_noinline;
	struct ncclbpf_object *obj; /* E_API: NULL when the case has no verifiable form */
	struct ncclbpf_program *api;
	double *samples[E_COUNT];
};

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double run_batch(struct bench_case *c, enum engine e, unsigned calls)
{
	uint64_t acc = 0;
	double t0 = now_ns();
	switch (e) {
	case E_NATIVE: {
		vm_jit_fn volatile fp = c->native; /* an indirect call, as for JIT code */
		vm_jit_fn f = fp;
		for (unsigned i = 0; i < calls; i++)
			acc += f((uint64_t)(uintptr_t)&ctxs[i % NCTX], sizeof(ctxs[0]));
		break;
	}
	case E_INTERP:
		for (unsigned i = 0; i < calls; i++) {
			uint64_t r0 = 0;
			vm_interp_run(&c->prog, (uint64_t)(uintptr_t)&ctxs[i % NCTX], sizeof(ctxs[0]),
				      &r0, NULL, NULL);
			acc += r0;
		}
		break;
	case E_API: {
		const struct ncclbpf_program *volatile pp = c->api;
		const struct ncclbpf_program *p = pp;
		for (unsigned i = 0; i < calls; i++) {
			uint64_t r0 = 0;
			ncclbpf_program_run(p, &ctxs[i % NCTX], sizeof(ctxs[0]), &r0, NULL, 0);
			acc += r0;
		}
		break;
	}
	case E_JIT:
	case E_JIT_NOINLINE: {
		vm_jit_fn volatile fp = e == E_JIT ? c->jit : c->jit_noinline;
		vm_jit_fn f = fp;
		for (unsigned i = 0; i < calls; i++)
			acc += f((uint64_t)(uintptr_t)&ctxs[i % NCTX], sizeof(ctxs[0]));
		break;
	}
	default:
		break;
	}
	double dt = now_ns() - t0;
	sink += acc;
	return dt / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, unsigned n, double p)
{
	size_t i = (size_t)(p * (n - 1) + 0.5);
	return v[i];
}

static int setup_case(struct bench_case *c, const char *name, vm_jit_fn native,
		      const struct bpf_insn *insns, size_t n, unsigned batches)
{
	char err[256];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->native = native;
	c->prog = (struct vm_program){ insns, n, helpers, NULL };
	struct nb_map *maps[] = { map_thresh, map_algo };
	struct vm_jit_options on = { .inline_array_lookup = true, .maps = maps, .map_cnt = 2 };
	struct vm_jit_options off = { .inline_array_lookup = false };
	if (vm_jit_compile(&c->prog, &on, &c->img, err, sizeof(err)) ||
	    vm_jit_compile(&c->prog, &off, &c->img_noinline, err, sizeof(err))) {
		fprintf(stderr, "%s: JIT failed: %s\n", name, err);
		return -1;
	}
	c->jit = vm_jit_entry(c->img);
	c->jit_noinline = vm_jit_entry(c->img_noinline);
	/* the runtime's own copy: verified for the tuner hook and JIT-compiled (programs
	 * without map handles: the two-lookups case embeds raw map addresses) */
	bool raw_maps = false;
	for (size_t i = 0; i < n; i++)
		raw_maps |= insns[i].code == BPF_LDDW;
	if (!raw_maps) {
		struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .exec_mode = NCCLBPF_EXEC_JIT,
						   .verify_mode = NCCLBPF_VERIFY_STRICT };
		if (runtime_object_from_insns(insns, n * sizeof(*insns), name, &c->obj, err,
					      sizeof(err)) ||
		    !(c->api = ncclbpf_object_program(c->obj, 0)) ||
		    ncclbpf_program_prepare(c->api, NCCLBPF_HOOK_TUNER, &po, err, sizeof(err))) {
			fprintf(stderr, "%s: runtime prepare failed: %s\n", name, err);
			return -1;
		}
	}
	for (int e = 0; e < E_COUNT; e++) {
		c->samples[e] = calloc(batches, sizeof(double));
		if (!c->samples[e])
			return -ENOMEM;
	}
	return 0;
}

/* Every engine must compute the same decisions before anything is timed. */
static int check_case(struct bench_case *c)
{
	for (int i = 0; i < NCTX; i++) {
		struct ncclbpf_tuner_ctx ref = ctxs[i], out[4];
		c->native((uint64_t)(uintptr_t)&ref, sizeof(ref));
		for (int e = 0; e < 4; e++) {
			out[e] = ctxs[i];
			uint64_t r0 = 0;
			if (e == 0)
				vm_interp_run(&c->prog, (uint64_t)(uintptr_t)&out[e], sizeof(out[e]), &r0,
					      NULL, NULL);
			else if (e == 3) {
				char err[256];
				if (c->api && ncclbpf_program_run(c->api, &out[e], sizeof(out[e]), &r0, err,
								  sizeof(err))) {
					fprintf(stderr, "%s: %s\n", c->name, err);
					return -1;
				}
				if (!c->api)
					out[e] = ref;
			} else
				(e == 1 ? c->jit : c->jit_noinline)((uint64_t)(uintptr_t)&out[e],
								    sizeof(out[e]));
			if (memcmp(&ref, &out[e], sizeof(ref))) {
				fprintf(stderr, "%s: engine %d disagrees with native on ctx %d\n",
					c->name, e, i);
				return -1;
			}
		}
	}
	return 0;
}

/* ---- the whole decision: getCollInfo, plugin vs native shim ---- */

#define N_TABLES 16
struct decision_work {
	int coll;
	size_t bytes;
	float table[NB_NCCL_NUM_ALGORITHMS][NB_NCCL_NUM_PROTOCOLS];
};

/* NCCL-like tables of an 8-GPU NVLink node: Tree, Ring, NVLS/Simple (AllReduce only),
 * CollNet and PAT unavailable; latency + size / bandwidth per (algorithm, protocol). */
static void decision_tables(struct decision_work *w)
{
	static const float lat[3] = { 6.8f, 14.0f, 22.0f };   /* LL, LL128, Simple, µs */
	static const float bw[3] = { 20.f, 90.f, 180.f };     /* GB/s */
	static const int colls[N_TABLES] = { 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 3, 3, 0, 1 };
	for (int i = 0; i < N_TABLES; i++) {
		w[i].coll = colls[i];
		w[i].bytes = (size_t)8 << (i * 2 % 28);
		for (int a = 0; a < NB_NCCL_NUM_ALGORITHMS; a++)
			for (int p = 0; p < NB_NCCL_NUM_PROTOCOLS; p++) {
				bool avail = a == 1 || (a == 0 && w[i].coll == 4) ||
					     (a == 4 && p == 2 && w[i].coll == 4);
				float f = a == 0 ? 1.4f : a == 4 ? 0.7f : 1.0f;
				w[i].table[a][p] = avail ? f * (lat[p] + (float)w[i].bytes /
								       (bw[p] * 1e3f))
							 : NB_NCCL_ALGO_PROTO_IGNORE;
			}
	}
}

struct decision_engine {
	const char *name;
	const struct nb_nccl_tuner_v5 *t;
	void *ctx;
	double *samples;
};

static double decision_batch(struct decision_engine *e, const struct decision_work *w,
			     unsigned calls)
{
	float table[NB_NCCL_NUM_ALGORITHMS][NB_NCCL_NUM_PROTOCOLS];
	int (*volatile fp)(void *, int, size_t, int, float **, int, int, int, int *) =
		e->t->get_coll_info;
	int (*f)(void *, int, size_t, int, float **, int, int, int, int *) = fp;
	int nch = 0;
	double t0 = now_ns();
	for (unsigned i = 0; i < calls; i++) {
		const struct decision_work *x = &w[i % N_TABLES];
		memcpy(table, x->table, sizeof(table)); /* NCCL builds a fresh table per call */
		nch = 0;
		f(e->ctx, x->coll, x->bytes, 1, (float **)table, NB_NCCL_NUM_ALGORITHMS,
		  NB_NCCL_NUM_PROTOCOLS, 0, &nch);
	}
	double dt = now_ns() - t0;
	sink += (uint64_t)nch;
	return dt / calls;
}

/* One policy: native shim vs the plugin (fresh communicators), same tables, interleaved.
 * The plugin's decisions are checked against the shim's first. Returns 0 or -1. */
static int bench_decision(const char *policy, native_policy_fn fn, unsigned batches,
			  unsigned calls)
{
	struct decision_work w[N_TABLES];
	decision_tables(w);
	native_shim_policy = fn;
	struct nb_nccl_nvl_domain_info_v5 nvl = { 1, 8, 8 };
	double constants[144] = { 0 };
	struct decision_engine e[2] = { { "native shim", &native_tuner_shim, NULL, NULL },
					{ "plugin (JIT)", &ncclTunerPlugin_v5, NULL, NULL } };
	for (int k = 0; k < 2; k++) {
		if (e[k].t->init(&e[k].ctx, 0xbe7c4ull + (uint64_t)k, 8, 1, NULL, &nvl,
				 (struct nb_nccl_tuner_constants_v5 *)constants) || !e[k].ctx) {
			fprintf(stderr, "%s: init failed\n", e[k].name);
			return -1;
		}
		e[k].samples = calloc(batches, sizeof(double));
		if (!e[k].samples)
			return -1;
	}
	for (int i = 0; i < N_TABLES; i++) { /* the same decisions */
		float t0[NB_NCCL_NUM_ALGORITHMS][NB_NCCL_NUM_PROTOCOLS];
		float t1[NB_NCCL_NUM_ALGORITHMS][NB_NCCL_NUM_PROTOCOLS];
		int n0 = 0, n1 = 0;
		memcpy(t0, w[i].table, sizeof(t0));
		memcpy(t1, w[i].table, sizeof(t1));
		e[0].t->get_coll_info(e[0].ctx, w[i].coll, w[i].bytes, 1, (float **)t0, 7, 3, 0, &n0);
		e[1].t->get_coll_info(e[1].ctx, w[i].coll, w[i].bytes, 1, (float **)t1, 7, 3, 0, &n1);
		if (memcmp(t0, t1, sizeof(t0)) || n0 != n1) {
			fprintf(stderr, "%s: the plugin and the native shim decide differently on table "
				"%d\n", policy, i);
			return -1;
		}
	}
	const struct tuner_comm *tc = e[1].ctx;
	uint64_t general0 = atomic_load(&tc->stats.general);
	for (int k = 0; k < 2; k++)
		decision_batch(&e[k], w, calls); /* warm-up */
	for (unsigned b = 0; b < batches; b++)
		for (int k = 0; k < 2; k++)
			e[k].samples[b] = decision_batch(&e[k], w, calls);
	uint64_t general = atomic_load(&tc->stats.general) - general0;
	double p50[2];
	for (int k = 0; k < 2; k++) {
		qsort(e[k].samples, batches, sizeof(double), cmp_double);
		p50[k] = pct(e[k].samples, batches, 0.50);
		printf("%-24s %-18s %8.2f %8.2f\n", policy, e[k].name, p50[k],
		       pct(e[k].samples, batches, 0.99));
	}
	printf("%s: plugin - native shim = %+.2f ns (P50); decisions on the general path: %llu\n",
	       policy, p50[1] - p50[0], (unsigned long long)general);
	for (int k = 0; k < 2; k++) {
		e[k].t->finalize(e[k].ctx);
		free(e[k].samples);
	}
	return 0;
}

static void policy_dir_default(char *buf, size_t len)
{
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf, len, "%s/../policies", n > 0 ? exe : ".");
}

int main(int argc, char **argv)
{
	unsigned batches = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	unsigned calls = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
	char err[256];
	if (!batches || !calls)
		return 2;
	if (!vm_jit_available()) {
		printf("no JIT on this architecture\n");
		return 0;
	}
	helpers[NB_HELPER_MAP_LOOKUP_ELEM] = h_lookup;
	struct nb_map_spec s1 = { "thresh", NB_MAP_TYPE_ARRAY, 4, 8, 1, 0 };
	struct nb_map_spec s2 = { "algo", NB_MAP_TYPE_ARRAY, 4, 8, NCCLBPF_NUM_COLLS, 0 };
	if (map_create(&s1, &map_thresh, err, sizeof(err)) ||
	    map_create(&s2, &map_algo, err, sizeof(err))) {
		fprintf(stderr, "map_create: %s\n", err);
		return 1;
	}
	uint32_t k = 0;
	uint64_t thr = 1 << 20;
	map_update(map_thresh, &k, &thr, NB_ANY);
	for (k = 0; k < NCCLBPF_NUM_COLLS; k++) {
		uint64_t a = k % 2 ? NCCLBPF_ALGO_RING : NCCLBPF_ALGO_TREE;
		map_update(map_algo, &k, &a, NB_ANY);
	}
	for (int i = 0; i < NCTX; i++) {
		ctxs[i].n_bytes = 1ull << (6 + i * 2 % 26);
		ctxs[i].coll_type = (uint32_t)(i % NCCLBPF_NUM_COLLS);
		ctxs[i].n_ranks = (uint32_t)(1 + i);
		ctxs[i].algo = NCCLBPF_ALGO_KEEP;
		ctxs[i].proto = NCCLBPF_PROTO_KEEP;
	}
	build_two_lookups();

	struct bench_case cases[3];
	if (setup_case(&cases[0], "noop", c_noop, prog_noop, 2, batches) ||
	    setup_case(&cases[1], "size-aware (16 insns)", c_size_aware, prog_size_aware,
		       sizeof(prog_size_aware) / sizeof(prog_size_aware[0]), batches) ||
	    setup_case(&cases[2], "two map lookups", c_two_lookups, prog_two_lookups,
		       two_lookups_len, batches))
		return 1;
	for (int c = 0; c < 3; c++)
		if (check_case(&cases[c]))
			return 1;

	/* warm up, then interleave engines batch by batch */
	for (int c = 0; c < 3; c++)
		for (int e = 0; e < E_COUNT; e++)
			if (e != E_API || cases[c].api)
				run_batch(&cases[c], (enum engine)e, calls);
	for (unsigned b = 0; b < batches; b++)
		for (int c = 0; c < 3; c++)
			for (int e = 0; e < E_COUNT; e++)
				if (e != E_API || cases[c].api)
					cases[c].samples[e][b] = run_batch(&cases[c], (enum engine)e,
								   e == E_INTERP ? (calls + 9) / 10 : calls);

	printf("bench_cpu_dispatch: %u batches x %u calls (interpreter: %u), ns per call\n",
	       batches, calls, (calls + 9) / 10);
	printf("%-24s %-18s %8s %8s %12s\n", "program", "engine", "P50", "P99", "P50/native");
	for (int c = 0; c < 3; c++) {
		double native_p50 = 0;
		for (int e = 0; e < E_COUNT; e++) {
			if (c < 2 && e == E_JIT_NOINLINE)
				continue; /* identical to JIT without map lookups */
			if (e == E_API && !cases[c].api)
				continue;
			qsort(cases[c].samples[e], batches, sizeof(double), cmp_double);
			double p50 = pct(cases[c].samples[e], batches, 0.50);
			double p99 = pct(cases[c].samples[e], batches, 0.99);
			if (e == E_NATIVE)
				native_p50 = p50;
			printf("%-24s %-18s %8.2f %8.2f %11.2fx\n", cases[c].name, engine_name[e], p50,
			       p99, native_p50 > 0 ? p50 / native_p50 : 0.0);
		}
	}
	printf("JIT code sizes: noop %zu B, size-aware %zu B, two lookups %zu B (inlined) / %zu B\n",
	       vm_jit_code_size(cases[0].img), vm_jit_code_size(cases[1].img),
	       vm_jit_code_size(cases[2].img), vm_jit_code_size(cases[2].img_noinline));
	for (int c = 0; c < 2; c++) /* the budget: the API within +1 ns of the raw entry */
		printf("%s: ncclbpf_program_run - raw JIT entry = %+.2f ns (P50)\n", cases[c].name,
		       pct(cases[c].samples[E_API], batches, 0.50) -
			       pct(cases[c].samples[E_JIT], batches, 0.50));
	for (int c = 0; c < 3; c++) {
		ncclbpf_object_close(cases[c].obj);
		vm_jit_free(cases[c].img);
		vm_jit_free(cases[c].img_noinline);
		for (int e = 0; e < E_COUNT; e++)
			free(cases[c].samples[e]);
	}
	map_free(map_thresh);
	map_free(map_algo);

	/* the whole decision: each policy attached alone in turn (runtime_load_policies
	 * replaces the chain), a fresh communicator pair per policy */
	char dir[1100], spec[2400];
	if (argc > 3)
		snprintf(dir, sizeof(dir), "%s", argv[3]);
	else
		policy_dir_default(dir, sizeof(dir));
	printf("\ngetCollInfo (ncclTunerPlugin_v5, 8 ranks, 1 node), ns per call:\n");
	static const struct {
		const char *name;
		native_policy_fn fn;
	} pols[] = { { "noop", native_noop }, { "size_aware", native_size_aware } };
	for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++) {
		snprintf(spec, sizeof(spec), "%s/%s.bpf.o", dir, pols[i].name);
		if (access(spec, R_OK) != 0) {
			fprintf(stderr, "%s: %s (pass the policy directory as the third argument)\n",
				spec, strerror(errno));
			return 1;
		}
		if (runtime_load_policies(spec) != 1) {
			fprintf(stderr, "%s: not attached\n", spec);
			return 1;
		}
		if (bench_decision(pols[i].name, pols[i].fn, batches, calls))
			return 1;
	}
	runtime_unload_policies();
	return 0;
}
