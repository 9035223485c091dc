/* CPU cost per profiler callback, coll and full modes (issue 6). The mock NCCL host drives
 * the linked-in ncclProfiler_v6 table with NCCL's event order for small AllReduces
 * (4 channels; full mode adds ProxyOp/ProxyStep/NetPlugin and the API events). The same
 * sequence against a do-nothing table in the same process is the baseline: the difference
 * is what the shim costs per callback. With KernelCh sampling (issue 15) the mask differs
 * per collective: the baseline replays the masks of the real run, and the fraction of
 * collectives that carried KernelCh is printed. Performance is printed, never asserted.
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

/* Counts the callbacks the real shim gets (forwarding to it). */
static nb_nccl_result_t cnt_start(void *ctx, void **h, struct nb_prof_descr_v6 *d)
{
	calls++;
	return ncclProfiler_v6.startEvent(ctx, h, d);
}
static nb_nccl_result_t cnt_stop(void *h)
{
	calls++;
	return ncclProfiler_v6.stopEvent(h);
}
static nb_nccl_result_t cnt_record(void *h, nb_prof_state_t s, union nb_prof_state_args_v4 *a)
{
	calls++;
	return ncclProfiler_v6.recordEventState(h, s, a);
}
static struct nb_profiler_v6 counting_table;

/* The task mask of every timed collective of the last real run, replayed into the nop
 * table so that the baseline makes exactly the same NCCL-side calls. */
static int *masks;

struct result {
	double ns_per_coll;
	double kch_fraction;
};

static struct result run(const void *table, bool replay, const char *mode, const char *sample,
			 int n, bool network)
{
	struct ph_host h;
	ph_open_table(&h, 6, table);
	struct ph_comm c;
	setenv("NCCLBPF_PROFILE", mode, 1);
	setenv("NCCLBPF_PROFILE_SAMPLE", sample, 1);
	profiler_reset_mode_for_tests();
	ph_comm_init(&h, &c, 0xbe4c4ull, "bench", 2, 16, 0);
	struct ph_coll k = {.coll_type = 4, .count = 1024, .algo = 1, .proto = 0,
			    .n_channels = 4, .gpu_ns = 8000, .network = network, .steps = 2};
	int full_mask = h.mask;
	for (int i = 0; i < n / 10; i++) { /* warm up */
		if (replay)
			h.mask = full_mask;
		ph_coll_app(&c, &k), ph_coll_proxy(&c, &k);
	}
	calls = 0;
	int kch = 0;
	uint64_t t0 = ph_now_ns();
	for (int i = 0; i < n; i++) {
		if (replay)
			h.mask = masks[i];
		ph_coll_app(&c, &k);
		ph_coll_proxy(&c, &k);
		if (!replay)
			masks[i] = k.task_mask;
		kch += (k.task_mask & NB_PROF_KERNEL_CH) != 0;
	}
	uint64_t t1 = ph_now_ns();
	ph_comm_finalize(&c);
	struct result r = {(double)(t1 - t0) / n, (double)kch / n};
	return r;
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
	masks = calloc((size_t)n, sizeof(*masks));
	counting_table = ncclProfiler_v6;
	counting_table.startEvent = cnt_start;
	counting_table.stopEvent = cnt_stop;
	counting_table.recordEventState = cnt_record;
	/* coll with KernelCh on every collective (the pre-sampling default), coll with the
	 * adaptive sampling (default), full. Each row: real shim vs a do-nothing table fed the
	 * identical per-collective masks, best of 3 interleaved repetitions. */
	const struct {
		const char *name, *mode, *sample;
		bool network;
	} cfg[] = {{"coll-every", "coll", "1", false},
		   {"coll-sampled", "coll", "auto", false},
		   {"full", "full", "1", true}};
	printf("%-13s %9s %10s %12s %12s %12s %14s\n", "mode", "KernelCh", "cb/coll", "ns/coll",
	       "base ns/coll", "ns/callback", "shim ns/cb");
	for (size_t m = 0; m < sizeof(cfg) / sizeof(cfg[0]); m++) {
		double best_real = 1e30, best_base = 1e30, frac = 0, cb = 0;
		for (int rep = 0; rep < 3; rep++) {
			struct result r = run(&counting_table, false, cfg[m].mode, cfg[m].sample, n,
					      cfg[m].network);
			cb = (double)calls / n;
			frac = r.kch_fraction;
			struct result b = run(&nop_table, true, cfg[m].mode, cfg[m].sample, n,
					      cfg[m].network);
			if (r.ns_per_coll < best_real)
				best_real = r.ns_per_coll;
			if (b.ns_per_coll < best_base)
				best_base = b.ns_per_coll;
		}
		printf("%-13s %8.2f%% %10.1f %12.1f %12.1f %12.1f %14.1f\n", cfg[m].name,
		       100.0 * frac, cb, best_real, best_base, best_real / cb,
		       (best_real - best_base) / cb);
	}
	struct profiler_counters pc;
	profiler_get_counters(&pc);
	printf("collectives completed %llu, dropped (pool) %llu\n", (unsigned long long)pc.completed,
	       (unsigned long long)pc.dropped_pool);
	free(masks);
	return 0;
}
