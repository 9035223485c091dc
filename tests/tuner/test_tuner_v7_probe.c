/* The v7 probe (issue 25): libncclbpf.so opened with dlopen(RTLD_NOW | RTLD_LOCAL) exactly as
 * NCCL 2.32 opens it, ncclTunerPlugin_v7 resolved, init'ed with 5-row tuning constants,
 * getCollInfo, getChunkSize, finalize - with every argument NCCL passes by pointer placed
 * against a PROT_NONE guard page (once ending at it, once starting right after one), and
 * the rest of its page filled with a canary. A read or write outside a struct faults or
 * changes a canary; the constants must change exactly where the tuner/init program wrote.
 * The same for ncclTunerPlugin_v6 with 4-row constants, and with an inner v6 plugin
 * (NCCLBPF_TUNER_INNER), which gets the 4-row view of the 5-row constants, as NCCL gives a
 * v6 plugin. Each scenario runs in its own process (the plugin reads NCCLBPF_POLICY once). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncclbpf/policy.h"
#include "plugin/tuner/nccl_tuner_abi.h"
#include "test_util.h"

#define LIB NB_BUILD_DIR "/libncclbpf.so"
#define CANARY 0xa5

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
		   ...)
{
	(void)flags, (void)file, (void)line;
	if (level > 2)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "NCCL WARN ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* One object of `size` bytes in a page between two PROT_NONE pages: at the page's end
 * (at_end) or start; the rest of the page is canary. */
struct guarded {
	unsigned char *map, *page, *obj;
	size_t size, pg;
};

static void *guard_alloc(struct guarded *g, size_t size, int at_end)
{
	g->pg = (size_t)sysconf(_SC_PAGESIZE);
	g->size = size;
	g->map = mmap(NULL, 3 * g->pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		return NULL;
	mprotect(g->map, g->pg, PROT_NONE);
	mprotect(g->map + 2 * g->pg, g->pg, PROT_NONE);
	g->page = g->map + g->pg;
	memset(g->page, CANARY, g->pg);
	g->obj = at_end ? g->page + g->pg - size : g->page;
	return g->obj;
}

/* Bytes of the page outside the object that are no longer the canary. */
static size_t guard_damage(const struct guarded *g)
{
	size_t bad = 0;
	for (size_t i = 0; i < g->pg; i++) {
		const unsigned char *p = g->page + i;
		if ((p < g->obj || p >= g->obj + g->size) && *p != CANARY)
			bad++;
	}
	return bad;
}

static void guard_free(struct guarded *g)
{
	munmap(g->map, 3 * g->pg);
}

/* NCCL's default-like constants: latencies, then 5 tables x rows x 3 scales. */
static void defaults(double *k, int rows)
{
	for (int i = 0; i < 84; i++)
		k[i] = 1.0 + 0.25 * i;
	for (int t = 0; t < 5; t++)
		for (int r = 0; r < rows; r++)
			for (int s = 0; s < 3; s++)
				k[84 + (t * rows + r) * 3 + s] = 100.0 * (t + 1) + 10.0 * r + s;
}

static int bw(int rows, int t, int r, int s)
{
	return 84 + (t * rows + r) * 3 + s;
}

/* version 6 or 7; inner: NCCLBPF_TUNER_INNER edits the last 4-row constant (7.5) */
static void probe(int version, int at_end, int inner)
{
	void *h = dlopen(LIB, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return;
	}
	const struct nb_nccl_tuner_v7 *t =
		dlsym(h, version == 7 ? NB_NCCL_TUNER_SYMBOL_V7 : NB_NCCL_TUNER_SYMBOL_V6);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(t->init && t->get_coll_info && t->finalize && t->get_chunk_size);
	int rows = version == 7 ? 5 : 4, n = 84 + 15 * rows;
	struct guarded gk, gn, gt, gc, gz;
	double *k = guard_alloc(&gk, (size_t)n * sizeof(double), at_end);
	struct nb_nccl_nvl_domain_info_v5 *nvl = guard_alloc(&gn, sizeof(*nvl), at_end);
	float *table = guard_alloc(&gt, 7 * 3 * sizeof(float), at_end);
	int *nch = guard_alloc(&gc, sizeof(int), at_end);
	size_t *chunk = guard_alloc(&gz, sizeof(size_t), at_end);
	CHECK(k && nvl && table && nch && chunk);
	if (!k || !nvl || !table || !nch || !chunk)
		return;
	double want[159];
	defaults(k, rows);
	defaults(want, rows);
	nvl->n_nvl_domains = 1;
	nvl->min_ranks_per_nvl_domain = nvl->max_ranks_per_nvl_domain = 8;
	void *ctx = NULL;
	CHECK(t->init(&ctx, 0x7a7e0000ull + (uint64_t)version, 8, 1, logger, nvl,
		      (struct nb_nccl_tuner_constants_v7 *)(void *)k) == 0);
	CHECK(ctx != NULL);
	/* tests/tuner/progs/probes.bpf.c init_rows: row 3 of the tree table = 33.333; v7 only:
	 * row 4 of the tree table = 5 * 11.111, row 4 of the LL table scale 0 = 0.5 */
	want[bw(rows, NCCLBPF_BW_TREE, 3, 2)] = 33.333;
	if (rows == 5) {
		want[bw(5, NCCLBPF_BW_TREE, 4, 2)] = 55.555;
		want[bw(5, NCCLBPF_BW_LL_MAX, 4, 0)] = 0.5;
	}
	/* the inner v6 plugin wrote its last constant (row 3), not the 5-row struct's */
	if (inner)
		want[bw(rows, NCCLBPF_BW_NVLS_TREE, 3, 2)] = 7.5;
	int diff = 0;
	for (int i = 0; i < n; i++)
		if (k[i] != want[i] && diff++ < 4)
			fprintf(stderr, "v%d constant %d: %g, want %g\n", version, i, k[i], want[i]);
	CHECK(diff == 0);
	CHECK(nvl->n_nvl_domains == 1 && nvl->max_ranks_per_nvl_domain == 8);

	for (int a = 0; a < 7; a++)
		for (int p = 0; p < 3; p++)
			table[a * 3 + p] = a == 1 || (a == 0) ? 10.0f + (float)(a * 3 + p) : -1.0f;
	for (int coll = 0; coll < 5; coll++) {
		*nch = 0;
		CHECK(t->get_coll_info(ctx, coll, 1 << 20, 1, (float **)table, 7, 3, 0, nch) == 0);
		CHECK(*nch >= 0 && *nch <= 64);
	}
	*chunk = 131072;
	CHECK(t->get_chunk_size(ctx, 4, 1 << 20, 1, 2, 1, chunk) == 0);
	CHECK(t->finalize(ctx) == 0);

	CHECK(guard_damage(&gk) == 0);
	CHECK(guard_damage(&gn) == 0);
	CHECK(guard_damage(&gt) == 0);
	CHECK(guard_damage(&gc) == 0);
	CHECK(guard_damage(&gz) == 0);
	guard_free(&gk);
	guard_free(&gn);
	guard_free(&gt);
	guard_free(&gc);
	guard_free(&gz);
}

/* Each scenario in a child: a fault there (a guard page hit) is a failed scenario. */
static void scenario(const char *name, int version, int at_end, const char *inner)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		test_checks = test_failures = 0; /* this scenario's own */
		setenv("NCCLBPF_POLICY",
		       NB_BUILD_DIR "/tests/tuner/progs/probes.bpf.o:init_rows," NB_BUILD_DIR
				    "/policies/size_aware.bpf.o",
		       1);
		if (inner)
			setenv("NCCLBPF_TUNER_INNER", inner, 1);
		probe(version, at_end, inner != NULL);
		printf("  %-52s %d checks, %d failed\n", name, test_checks, test_failures);
		fflush(NULL);
		_exit(test_failures ? 1 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st))
		fprintf(stderr, "scenario %s: killed by signal %d (guard page?)\n", name,
			WTERMSIG(st));
}

int main(void)
{
	scenario("v7, 159 constants at a guard page's edge", 7, 1, NULL);
	scenario("v7, 159 constants after a guard page", 7, 0, NULL);
	scenario("v6, 144 constants at a guard page's edge", 6, 1, NULL);
	scenario("v6, 144 constants after a guard page", 6, 0, NULL);
	scenario("v7 + inner v6 plugin (4-row view)", 7, 1,
		 NB_BUILD_DIR "/tests/fake_plugins/libfake_tuner_edit.so");
	scenario("v6 + inner v6 plugin", 6, 1,
		 NB_BUILD_DIR "/tests/fake_plugins/libfake_tuner_edit.so");
	TEST_DONE();
}
