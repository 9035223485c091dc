/* Our interpreter (vm_interp_run, unchecked: what runs with NCCLBPF_JIT=0) against DPDK's
 * librte_bpf interpreter (rte_bpf_exec) on the same instruction bytes, in one process.
 * Built and run by bench/interp_vs_dpdk.sh, which builds DPDK's lib/bpf from a source copy;
 * the DPDK side is bench/interp_vs_dpdk_rte.c (its own translation unit: DPDK's headers
 * define the same BPF_* names as ours).
 *
 * Programs (DPDK's validator refuses loops, so all four are loop-free, as clang emits them
 * after unrolling):
 *   noop        r0 = 0
 *   size-aware  16 instructions on a struct ncclbpf_tuner_ctx (bench/cpu_dispatch.c's)
 *   compute     ~100 ALU instructions (64/32-bit, mul, shifts, div/mod by constants, branches)
 *   memory-sum  sum of 32 64-bit words and 16 32-bit words of a 256-byte buffer
 * Both engines must return the same r0 and leave the same memory before anything is timed.
 *
 * Modes:
 *   interp_vs_dpdk check
 *       the two engines agree on every program and context (also done before `time`)
 *   interp_vs_dpdk time [rounds=300] [calls=20000]
 *       rounds alternate the order of the engines; per round and program the time per call
 *       of each and their ratio (ours / DPDK); prints the medians and the 10th/90th
 *       percentile of the ratio. The ratio is what to read on a shared machine.
 *   interp_vs_dpdk one ENGINE PROGRAM CALLS
 *       runs one engine only (ours|dpdk) for callgrind: instructions per call are then
 *       the inclusive count of vm_interp_run / rte_bpf_exec divided by CALLS. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isa/insn_build.h"
#include "ncclbpf/policy.h"
#include "vm/vm.h"
#include "size_aware_insns.h"

/* bench/interp_vs_dpdk_rte.c */
void *dpdk_load(const struct bpf_insn *insns, unsigned n, size_t ctx_size);
uint64_t dpdk_exec(void *h, void *ctx);

#define OFF(f) ((int16_t)offsetof(struct ncclbpf_tuner_ctx, f))
#define BUF_BYTES 256
#define NCTX 16

struct bench_prog {
	const char *name;
	struct bpf_insn insns[256];
	unsigned n;
	size_t ctx_size;
	void *dpdk;
	struct vm_program vm;
};

static struct ncclbpf_tuner_ctx tctx[NCTX];
static uint64_t bufs[NCTX][BUF_BYTES / 8];
static volatile uint64_t sink;

static void put(struct bench_prog *p, struct bpf_insn in)
{
	if (p->n >= sizeof(p->insns) / sizeof(p->insns[0])) {
		fprintf(stderr, "%s: too many instructions\n", p->name);
		exit(1);
	}
	p->insns[p->n++] = in;
}

static void build_noop(struct bench_prog *p)
{
	put(p, MOV64_K(0, 0));
	put(p, EXIT());
	p->ctx_size = sizeof(struct ncclbpf_tuner_ctx);
}

static void build_size_aware(struct bench_prog *p)
{
	const struct bpf_insn s[] = { BENCH_SIZE_AWARE_INSNS };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		put(p, s[i]);
	p->ctx_size = sizeof(struct ncclbpf_tuner_ctx);
}

/* A hash-like mix: the ALU work of a policy that scores candidates. */
static void build_compute(struct bench_prog *p)
{
	put(p, LDX(BPF_DW, 0, 1, 0));
	put(p, LDX(BPF_DW, 2, 1, 8));
	put(p, LDX(BPF_W, 5, 1, 16));
	for (int i = 0; i < 8; i++) {
		put(p, ALU64_K(BPF_MUL, 0, 0x9e3779b1));
		put(p, ALU64_X(BPF_XOR, 0, 2));
		put(p, MOV64_X(3, 0));
		put(p, ALU64_K(BPF_RSH, 3, 29));
		put(p, ALU64_X(BPF_ADD, 0, 3));
		put(p, ALU32_X(BPF_ADD, 2, 0));
		put(p, ALU64_K(BPF_LSH, 2, 7));
		put(p, MOV64_X(4, 0));
		put(p, ALU64_K(BPF_DIV, 4, 7 + i));
		put(p, ALU64_X(BPF_SUB, 0, 4));
		put(p, ALU32_K(BPF_AND, 5, 0xffff));
		put(p, ALU64_X(BPF_OR, 5, 3));
		put(p, JMP_K(BPF_JSET, 0, 1, 1));
		put(p, ALU64_K(BPF_XOR, 0, 0x55 + i));
		put(p, ALU64_K(BPF_MOD, 5, 1000 + i));
		put(p, ALU64_X(BPF_ADD, 0, 5));
	}
	put(p, ALU64_K(BPF_ARSH, 0, 3));
	put(p, EXIT());
	p->ctx_size = BUF_BYTES;
}

static void build_memory_sum(struct bench_prog *p)
{
	put(p, MOV64_K(0, 0));
	for (int i = 0; i < 32; i++) {
		put(p, LDX(BPF_DW, 2, 1, i * 8));
		put(p, ALU64_X(BPF_ADD, 0, 2));
	}
	for (int i = 0; i < 16; i++) {
		put(p, LDX(BPF_W, 3, 1, i * 4));
		put(p, ALU64_X(BPF_XOR, 0, 3));
	}
	put(p, STX(BPF_DW, 1, 0, 248)); /* the sum, so both engines must store alike */
	put(p, EXIT());
	p->ctx_size = BUF_BYTES;
}

static struct bench_prog progs[4];
static const unsigned nprogs = 4;

static void *ctx_of(const struct bench_prog *p, unsigned i)
{
	return p->ctx_size == BUF_BYTES ? (void *)bufs[i % NCTX] : (void *)&tctx[i % NCTX];
}

static void setup(void)
{
	void (*build[4])(struct bench_prog *) = { build_noop, build_size_aware, build_compute,
						  build_memory_sum };
	const char *names[4] = { "noop", "size-aware", "compute", "memory-sum" };
	for (int i = 0; i < NCTX; i++) {
		memset(&tctx[i], 0, sizeof(tctx[i]));
		tctx[i].n_bytes = (uint64_t)1 << (i * 2 + 3);
		tctx[i].n_ranks = 2u << (i % 4);
		tctx[i].algo = tctx[i].proto = tctx[i].n_channels = -1;
		for (int k = 0; k < BUF_BYTES / 8; k++)
			bufs[i][k] = 0x0123456789abcdefull * (uint64_t)(i * 37 + k + 1);
	}
	for (unsigned k = 0; k < nprogs; k++) {
		struct bench_prog *p = &progs[k];
		p->name = names[k];
		build[k](p);
		char err[256];
		if (isa_validate(p->insns, p->n, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", p->name, err);
			exit(1);
		}
		p->vm = (struct vm_program){ p->insns, p->n, NULL, NULL };
		p->dpdk = dpdk_load(p->insns, p->n, p->ctx_size);
		if (!p->dpdk) {
			fprintf(stderr, "%s: DPDK's rte_bpf_load refused the program\n", p->name);
			exit(1);
		}
	}
}

static uint64_t run_ours(struct bench_prog *p, void *ctx)
{
	uint64_t r0 = 0;
	if (vm_interp_run(&p->vm, (uint64_t)(uintptr_t)ctx, p->ctx_size, &r0, NULL, NULL)) {
		fprintf(stderr, "%s: our interpreter faulted\n", p->name);
		exit(1);
	}
	return r0;
}

/* Same r0 and memory from both engines on every context. */
static void check_same(void)
{
	for (unsigned k = 0; k < nprogs; k++) {
		struct bench_prog *p = &progs[k];
		for (unsigned i = 0; i < NCTX; i++) {
			uint8_t a[BUF_BYTES], b[BUF_BYTES], *c = ctx_of(p, i);
			memcpy(a, c, p->ctx_size);
			uint64_t r_ours = run_ours(p, c);
			memcpy(b, c, p->ctx_size);
			memcpy(c, a, p->ctx_size);
			uint64_t r_dpdk = dpdk_exec(p->dpdk, c);
			if (r_ours != r_dpdk || memcmp(b, c, p->ctx_size)) {
				fprintf(stderr, "%s: engines differ on context %u (r0 %llu vs %llu)\n",
					p->name, i, (unsigned long long)r_ours,
					(unsigned long long)r_dpdk);
				exit(1);
			}
			memcpy(c, a, p->ctx_size);
		}
	}
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double batch(struct bench_prog *p, int dpdk, unsigned calls)
{
	uint64_t acc = 0;
	double t0 = now_ns();
	if (dpdk)
		for (unsigned i = 0; i < calls; i++)
			acc += dpdk_exec(p->dpdk, ctx_of(p, i));
	else
		for (unsigned i = 0; i < calls; i++)
			acc += run_ours(p, ctx_of(p, i));
	double dt = now_ns() - t0;
	sink += acc;
	return dt / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, unsigned n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(size_t)(q * (n - 1) + 0.5)];
}

static int mode_time(unsigned rounds, unsigned calls)
{
	double *t[4][2], *ratio[4];
	for (unsigned k = 0; k < nprogs; k++) {
		t[k][0] = calloc(rounds, sizeof(double));
		t[k][1] = calloc(rounds, sizeof(double));
		ratio[k] = calloc(rounds, sizeof(double));
		if (!t[k][0] || !t[k][1] || !ratio[k])
			return 1;
		batch(&progs[k], 0, calls); /* warm both */
		batch(&progs[k], 1, calls);
	}
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned k = 0; k < nprogs; k++) {
			int first = (int)(r & 1);
			t[k][first][r] = batch(&progs[k], first, calls);
			t[k][!first][r] = batch(&progs[k], !first, calls);
			ratio[k][r] = t[k][0][r] / t[k][1][r];
		}
	}
	printf("%-11s %6s %12s %12s %14s %18s\n", "program", "insns", "ours ns", "DPDK ns",
	       "ours/DPDK", "ratio P10..P90");
	for (unsigned k = 0; k < nprogs; k++) {
		double o = pct(t[k][0], rounds, 0.5), d = pct(t[k][1], rounds, 0.5);
		double m = pct(ratio[k], rounds, 0.5), lo = pct(ratio[k], rounds, 0.1),
		       hi = pct(ratio[k], rounds, 0.9);
		printf("%-11s %6u %12.2f %12.2f %13.3fx %8.3f..%.3f\n", progs[k].name, progs[k].n, o,
		       d, m, lo, hi);
	}
	return 0;
}

static int mode_one(const char *engine, const char *prog, unsigned calls)
{
	int dpdk = !strcmp(engine, "dpdk");
	if (!dpdk && strcmp(engine, "ours")) {
		fprintf(stderr, "engine: ours or dpdk\n");
		return 2;
	}
	for (unsigned k = 0; k < nprogs; k++)
		if (!strcmp(progs[k].name, prog)) {
			batch(&progs[k], dpdk, calls);
			return 0;
		}
	fprintf(stderr, "unknown program '%s'\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	setup();
	if (argc == 5 && !strcmp(argv[1], "one")) /* nothing else runs: clean counts */
		return mode_one(argv[2], argv[3], (unsigned)strtoul(argv[4], NULL, 0));
	if (argc < 2 || (strcmp(argv[1], "time") && strcmp(argv[1], "check"))) {
		fprintf(stderr, "usage: %s check | time [rounds] [calls] | one ours|dpdk PROGRAM "
			"CALLS\n", argv[0]);
		return 2;
	}
	check_same();
	if (!strcmp(argv[1], "check")) {
		printf("interp_vs_dpdk: both engines agree on %u programs x %d contexts\n", nprogs,
		       NCTX);
		return 0;
	}
	unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 300;
	unsigned calls = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20000;
	if (rounds < 3 || calls < 1) {
		fprintf(stderr, "rounds >= 3, calls >= 1\n");
		return 2;
	}
	printf("interp_vs_dpdk: %u rounds x %u calls per program and engine, engines "
	       "alternating\n", rounds, calls);
	return mode_time(rounds, calls);
}
