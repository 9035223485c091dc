/* CPU cost per profiler callback, coll and full modes (issue 6). The mock NCCL host drives
 * the linked-in ncclProfiler_v6 table with NCCL's event order for small AllReduces
 * (4 channels; full mode adds ProxyOp/ProxyStep/NetPlugin and the API events). The same
 * sequence against a do-nothing table in the same process is the baseline: the difference
 * is what the shim costs per callback. Performance is printed, never asserted.
 * Usage: bench_cpu_profiler [collectives] [--trace DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"
#include "profiler_host.h"

static unsigned long long calls;

static int nop_init(void **ctx, uint64_t id, int *mask, const char *n, int a, int b, int c,
		    nb_nccl_logger_t l)
{
	(void)id, (void)n, (void)a, (void)b, (void)c, (void)l;
	*ctx = (void *)1;
	(void)mask; /* the caller sets the mask to mirror the real run */
	return 0;
}
static int nop_start(void *ctx, void **h, struct nb_prof_descr_v6 *d)
{
	(void)ctx, (void)d;
	calls++;
	*h = (void *)3;
	return 0;
}
static int nop_stop(void *h)
{
	(void)h;
	calls++;
	return 0;
}
static int nop_record(void *h, nb_prof_state_t s, union nb_prof_state_args_v4 *a)
{
	(void)h, (void)s, (void)a;
	calls++;
	return 0;
}
static int nop_fin(void *c)
{
	(void)c;
	return 0;
}
static const struct nb_profiler_v6 nop_table = {"nop", nop_init, nop_start, nop_stop,
						nop_record, nop_fin};

static double run(const void *table, int mask_override, const char *mode, int n, bool network,
		  int *mask_out)
{
	struct ph_host h;
	ph_open_table(&h, 6, table);
	struct ph_comm c;
	setenv("NCCLBPF_PROFILE", mode, 1);
	profiler_reset_mode_for_tests();
	ph_comm_init(&h, &c, 0xbe4c4ull, "bench", 2, 16, 0);
	if (mask_override >= 0)
		h.mask = mask_override;
	*mask_out = h.mask;
	struct ph_coll k = {.coll_type = 4, .count = 1024, .algo = 1, .proto = 0,
			    .n_channels = 4, .gpu_ns = 8000, .network = network, .steps = 2};
	for (int i = 0; i < n / 10; i++) /* warm up */
		ph_coll_app(&c, &k), ph_coll_proxy(&c, &k);
	uint64_t t0 = ph_now_ns();
	for (int i = 0; i < n; i++) {
		ph_coll_app(&c, &k);
		ph_coll_proxy(&c, &k);
	}
	uint64_t t1 = ph_now_ns();
	ph_comm_finalize(&c);
	return (double)(t1 - t0) / n;
}

int main(int argc, char **argv)
{
	int n = 200000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--trace") && i + 1 < argc)
			setenv("NCCLBPF_TRACE", argv[++i], 1);
		else
			n = atoi(argv[i]);
	}
	if (n < 100)
		n = 100;
	const char *modes[] = {"coll", "full"};
	printf("%-6s %9s %12s %12s %12s %14s\n", "mode", "cb/coll", "ns/coll", "base ns/coll",
	       "ns/callback", "shim ns/cb");
	for (int m = 0; m < 2; m++) {
		bool full = m == 1;
		int mask = 0;
		double real = run(&ncclProfiler_v6, -1, modes[m], n, full, &mask);
		/* baseline: the same events (same mask) into a table that does nothing */
		calls = 0;
		int dummy;
		double base = run(&nop_table, mask, modes[m], n, full, &dummy);
		double cb = (double)calls / (n + n / 10);
		printf("%-6s %9.1f %12.1f %12.1f %12.1f %14.1f\n", modes[m], cb, real, base, real / cb,
		       (real - base) / cb);
	}
	struct profiler_counters pc;
	profiler_get_counters(&pc);
	printf("collectives completed %llu, dropped (pool) %llu\n", (unsigned long long)pc.completed,
	       (unsigned long long)pc.dropped_pool);
	return 0;
}
