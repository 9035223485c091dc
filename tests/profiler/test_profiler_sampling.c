/* KernelCh sampling and mask-robust completion (issue 15), through the mock NCCL host, which
 * keeps each task's mask as NCCL does (read at the API call, used for all its events):
 *  - adaptive 1-in-N: at a high collective rate only a small fraction of collectives carry
 *    KernelCh, yet every size band of a repeating pattern gets GPU-timed samples, nothing
 *    stays pending (no stale reclaim), and un-instrumented collectives do not enter the
 *    latency statistics;
 *  - bounded delay: a rare band is sampled once its delay has passed even with a huge N;
 *  - the mask NCCL used, not the one we asked for: KernelCh removed from the mask after
 *    init (RAS, another communicator) -> the collective completes at its Coll stop, for
 *    v4 (no API events: read at Coll start) and v5/v6 (read back at GroupApi start);
 *    KernelCh added back mid-flight -> the collective still waits for its KernelCh events;
 *  - several contexts share NCCL's one mask int: no context clears the bit under another,
 *    and finalize returns every request. */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "maps/map.h"
#include "prof_test_util.h"
#include "test_util.h"

static struct obs ob;

static void set_sampling(const char *n)
{
	prof_set_mode("coll");
	if (n)
		setenv("NCCLBPF_PROFILE_SAMPLE", n, 1);
	else
		unsetenv("NCCLBPF_PROFILE_SAMPLE");
}

static struct ph_coll coll_of(uint64_t count)
{
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = count,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
			    .n_channels = 2, .gpu_ns = 7000};
	return k;
}

static void test_adaptive(int v)
{
	set_sampling(NULL); /* default: adaptive */
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0x5a000 + (uint64_t)v;
	CHECK(ph_comm_init(&h, &c, comm, "sample", 1, 2, 0) == 0);
	struct profiler_ctx *pctx = profiler_ctx_find(comm);
	CHECK(pctx && pctx->sampler.on);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	/* a "training step": three sizes (three bands) over and over, at memory speed */
	const uint64_t counts[3] = {2, 1024, 65536};
	int total = 30000, kch = 0;
	for (int i = 0; i < total; i++) {
		struct ph_coll k = coll_of(counts[i % 3]);
		ph_coll_run(&c, &k);
		if (k.task_mask & NB_PROF_KERNEL_CH)
			kch++;
	}
	CHECK(atomic_load(&ob.n) == total); /* every collective completed, none left pending */
	CHECK_EQ_U64(atomic_load(&pctx->pool.in_use), 0);
	CHECK_EQ_U64(atomic_load(&pctx->sampler.total), (uint64_t)total);
	CHECK_EQ_U64(atomic_load(&pctx->sampler.instrumented), (uint64_t)kch);
	printf("v%d adaptive: %d of %d collectives carried KernelCh (N now %u)\n", v, kch, total,
	       pctx->sampler.n);
	CHECK(kch >= 3);              /* each band at least once */
	CHECK(kch * 10 < total);      /* and far from every collective at this rate */
	for (int b = 0; b < 3; b++) {
		struct ncclbpf_latency_stats st;
		uint32_t band = ncclbpf_size_bucket(counts[b] * 4);
		CHECK(profiler_latency_get(comm, NCCLBPF_COLL_ALLREDUCE, band, &st) == 0);
		CHECK(st.count >= 1);
		CHECK(st.count < (uint64_t)total / 3); /* only instrumented ones */
		CHECK_EQ_U64(st.last_ns, 7000);         /* GPU time, never an enqueue time */
	}
	int timed = 0;
	for (int i = 0; i < OBS_MAX && i < total; i++)
		if (ob.all[i].flags & NCCLBPF_PROF_F_GPU_TIMED)
		{
			timed++;
			CHECK_EQ_U64(ob.all[i].gpu_ns, 7000);
		}
	CHECK(timed >= 1);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
	CHECK(profiler_sample_requests() == 0);
}

/* 1 in N means 1 in N: the band's next collective is the (since + 1)-th after its last
 * sample (regression: it used to be 1 in N + 1, so N = 1 in auto mode at a low collective
 * rate gave every other collective, and the bandit's reward saw half its samples untimed). */
static void test_fixed_n(int n)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "%d", n);
	set_sampling(buf);
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	uint64_t comm = 0x5c000 + (uint64_t)n;
	CHECK(ph_comm_init(&h, &c, comm, "fixed", 1, 2, 0) == 0);
	struct profiler_ctx *pctx = profiler_ctx_find(comm);
	CHECK(pctx && pctx->sampler.on && pctx->sampler.n == (uint32_t)n);
	int kch = 0, total = 60 * n;
	for (int i = 0; i < total + 8; i++) {
		struct ph_coll k = coll_of(1024);
		ph_coll_run(&c, &k);
		if (i >= 8)
			kch += (k.task_mask & NB_PROF_KERNEL_CH) != 0;
	}
	printf("NCCLBPF_PROFILE_SAMPLE=%d: %d of %d collectives carried KernelCh\n", n, kch, total);
	CHECK(kch == total / n);
	CHECK(ph_comm_finalize(&c) == 0);
}

/* A policy's request in "ncclbpf_sample_ctl" (policy.h NCCLBPF_SAMPLE_BURST): the first B of
 * every N collectives of the band carry KernelCh, and so do the collectives before and after
 * each (a program timing completion to completion, or start to start, needs both ends); 0
 * gives the band back to the default sampler. */
static void test_steered(void)
{
	set_sampling("1000"); /* default: almost nothing */
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	uint64_t comm = 0x5d000;
	CHECK(ph_comm_init(&h, &c, comm, "steer", 1, 2, 0) == 0);
	struct profiler_ctx *pctx = profiler_ctx_find(comm);
	CHECK(pctx && pctx->sampler.on && pctx->sampler.ctl);
	uint32_t band = ncclbpf_size_bucket(1024 * 4), v = NCCLBPF_SAMPLE_BURST(8, 3);
	CHECK(map_update(pctx->sampler.ctl, &band, &v, 0) == 0);
	int bad = 0, kch = 0;
	for (int i = 0; i < 8 * 20; i++) {
		struct ph_coll k = coll_of(1024);
		ph_coll_run(&c, &k);
		/* the burst, its predecessor and its successor */
		int want = i % 8 < 3 || (i + 1) % 8 < 3 || (i + 7) % 8 < 3;
		int got = (k.task_mask & NB_PROF_KERNEL_CH) != 0;
		if (i >= 8) {
			bad += got != want;
			kch += got;
		}
	}
	printf("steered burst 3 of 8: %d of %d collectives carried KernelCh, %d off the pattern\n", kch,
	       8 * 19, bad);
	CHECK(bad == 0);
	/* every collective */
	v = NCCLBPF_SAMPLE_EVERY;
	CHECK(map_update(pctx->sampler.ctl, &band, &v, 0) == 0);
	kch = 0;
	for (int i = 0; i < 50; i++) {
		struct ph_coll k = coll_of(1024);
		ph_coll_run(&c, &k);
		kch += i >= 1 && (k.task_mask & NB_PROF_KERNEL_CH);
	}
	CHECK(kch == 49);
	/* back to the default (1 in 1000): at most the first one after the switch */
	v = 0;
	CHECK(map_update(pctx->sampler.ctl, &band, &v, 0) == 0);
	kch = 0;
	for (int i = 0; i < 50; i++) {
		struct ph_coll k = coll_of(1024);
		ph_coll_run(&c, &k);
		kch += i >= 1 && (k.task_mask & NB_PROF_KERNEL_CH);
	}
	CHECK(kch <= 1);
	/* the predecessor of a steered band's burst is instrumented even in another band */
	uint32_t small = ncclbpf_size_bucket(2 * 4);
	v = NCCLBPF_SAMPLE_BURST(4, 1);
	CHECK(map_update(pctx->sampler.ctl, &band, &v, 0) == 0);
	int pred_timed = 0, pred_total = 0;
	for (int i = 0; i < 80; i++) {
		struct ph_coll k = coll_of(i % 2 ? 1024 : 2); /* small, big, small, big, ... */
		ph_coll_run(&c, &k);
		if (i >= 8 && i % 2 == 0 && i + 1 < 80) {
			/* the big one after this small one is the (i / 2)-th big collective */
			int big_due = ((i / 2) % 4) == 0;
			pred_total += big_due;
			pred_timed += big_due && (k.task_mask & NB_PROF_KERNEL_CH);
		}
	}
	printf("steered: %d of %d predecessors (another band) carried KernelCh\n", pred_timed, pred_total);
	CHECK(pred_total > 0 && pred_timed == pred_total);
	/* and its successor, also in another band */
	int succ_timed = 0, succ_total = 0, other = 0;
	for (int i = 0; i < 80; i++) {
		struct ph_coll k = coll_of(i % 2 ? 1024 : 2);
		ph_coll_run(&c, &k);
		if (i >= 8 && i % 2 == 0) {
			/* the big one before this small one was the (i / 2 - 1)-th big collective */
			int after_due = ((i / 2 - 1) % 4) == 0, before_due = ((i / 2) % 4) == 0;
			succ_total += after_due;
			succ_timed += after_due && (k.task_mask & NB_PROF_KERNEL_CH);
			other += !after_due && !before_due && (k.task_mask & NB_PROF_KERNEL_CH);
		}
	}
	printf("steered: %d of %d successors (another band) carried KernelCh, %d other small ones\n",
	       succ_timed, succ_total, other);
	CHECK(succ_total > 0 && succ_timed == succ_total && other == 0);
	v = 0;
	CHECK(map_update(pctx->sampler.ctl, &band, &v, 0) == 0);
	(void)small;
	CHECK(ph_comm_finalize(&c) == 0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void test_bounded_delay(void)
{
	set_sampling("100000"); /* N far beyond this test's collectives */
	setenv("NCCLBPF_PROFILE_SAMPLE_DELAY_MS", "2", 1);
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	uint64_t comm = 0x5b000;
	CHECK(ph_comm_init(&h, &c, comm, "delay", 1, 2, 0) == 0);
	uint32_t band = ncclbpf_size_bucket(4096 * 4);
	struct ncclbpf_latency_stats st;
	/* the band's first collective is instrumented, then nothing for a while */
	for (int i = 0; i < 50; i++) {
		struct ph_coll k = coll_of(4096);
		ph_coll_run(&c, &k);
	}
	CHECK(profiler_latency_get(comm, NCCLBPF_COLL_ALLREDUCE, band, &st) == 0);
	uint64_t before = st.count;
	CHECK(before >= 1 && before <= 3);
	sleep_ms(5); /* > 2 ms: the band is due again, at its next index on the delay grid
		       * (a multiple of min(N, PROFILER_SAMPLE_DELAY_GRID)), the same on every rank */
	for (int i = 0; i < (int)PROFILER_SAMPLE_DELAY_GRID + 2; i++) {
		struct ph_coll k = coll_of(4096);
		ph_coll_run(&c, &k);
	}
	CHECK(profiler_latency_get(comm, NCCLBPF_COLL_ALLREDUCE, band, &st) == 0);
	CHECK(st.count > before);
	CHECK(ph_comm_finalize(&c) == 0);
	unsetenv("NCCLBPF_PROFILE_SAMPLE_DELAY_MS");
}

/* KernelCh leaves the mask after init: no KernelCh will come, completion at Coll stop. */
static void test_mask_removed(int v)
{
	set_sampling("1");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0x5c000 + (uint64_t)v;
	CHECK(ph_comm_init(&h, &c, comm, "ras", 1, 2, 0) == 0);
	CHECK(h.mask & NB_PROF_KERNEL_CH);
	h.mask &= ~(int)NB_PROF_KERNEL_CH; /* RAS override, job-wide */
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll k = coll_of(1024);
	ph_coll_app(&c, &k);
	CHECK(!(k.task_mask & NB_PROF_KERNEL_CH));
	CHECK(atomic_load(&ob.n) == 1); /* completed at its Coll stop, not after 5 s */
	CHECK_EQ_U64(ob.last.gpu_ns, 0);
	CHECK(!(ob.last.flags & NCCLBPF_PROF_F_GPU_TIMED));
	ph_coll_proxy(&c, &k); /* emits nothing: the task had no KernelCh */
	struct profiler_ctx *pctx = profiler_ctx_find(comm);
	CHECK_EQ_U64(atomic_load(&pctx->pool.in_use), 0);

	/* KernelCh back between the API call and the kernel: this task still has none */
	struct ph_coll k2 = coll_of(1024);
	ph_coll_app(&c, &k2);
	h.mask |= (int)NB_PROF_KERNEL_CH;
	ph_coll_proxy(&c, &k2);
	CHECK(atomic_load(&ob.n) == 2);
	/* and a task that had it waits for its KernelCh although the mask lost it meanwhile */
	struct ph_coll k3 = coll_of(1024);
	ph_coll_app(&c, &k3);
	CHECK(k3.task_mask & NB_PROF_KERNEL_CH);
	h.mask &= ~(int)NB_PROF_KERNEL_CH;
	CHECK(atomic_load(&ob.n) == 2);
	ph_coll_proxy(&c, &k3);
	CHECK(atomic_load(&ob.n) == 3);
	CHECK_EQ_U64(ob.last.gpu_ns, 7000);
	CHECK_EQ_U64(atomic_load(&pctx->pool.in_use), 0);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

/* Two communicators on NCCL's one mask int: a sampling context never clears KernelCh while
 * another one is due, and finalize hands every request back. */
static void test_shared_mask(void)
{
	set_sampling("50");
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm a, b;
	CHECK(ph_comm_init(&h, &a, 0x5d001, "a", 1, 2, 0) == 0);
	CHECK(ph_comm_init(&h, &b, 0x5d002, "b", 1, 2, 0) == 0);
	int kch_a = 0, kch_b = 0;
	for (int i = 0; i < 2000; i++) {
		struct ph_coll ka = coll_of(256), kb = coll_of(1 << 20);
		ph_coll_run(&a, &ka);
		ph_coll_run(&b, &kb);
		kch_a += !!(ka.task_mask & NB_PROF_KERNEL_CH);
		kch_b += !!(kb.task_mask & NB_PROF_KERNEL_CH);
	}
	printf("shared mask, 1-in-50: comm a %d, comm b %d of 2000 instrumented\n", kch_a, kch_b);
	/* both get samples (no starvation), and far fewer than every collective */
	CHECK(kch_a >= 2000 / 50 / 2 && kch_b >= 2000 / 50 / 2);
	CHECK(kch_a < 2000 / 4 && kch_b < 2000 / 4);
	CHECK(ph_comm_finalize(&a) == 0);
	CHECK(ph_comm_finalize(&b) == 0);
	CHECK(profiler_sample_requests() == 0);
	CHECK(!(h.mask & NB_PROF_KERNEL_CH));

	/* a full-mode (every collective) context holds KernelCh on for its whole life */
	set_sampling("10");
	CHECK(ph_comm_init(&h, &a, 0x5d003, "a", 1, 2, 0) == 0);
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1);
	CHECK(ph_comm_init(&h, &b, 0x5d004, "b", 1, 2, 0) == 0);
	for (int i = 0; i < 200; i++) {
		struct ph_coll ka = coll_of(256), kb = coll_of(256);
		ph_coll_run(&a, &ka);
		ph_coll_run(&b, &kb);
		CHECK(kb.task_mask & NB_PROF_KERNEL_CH);
	}
	CHECK(ph_comm_finalize(&b) == 0);
	CHECK(ph_comm_finalize(&a) == 0);
	CHECK(profiler_sample_requests() == 0);
}

static void test_parse(void)
{
	CHECK(profiler_sample_parse(NULL) == 0);
	CHECK(profiler_sample_parse("auto") == 0);
	CHECK(profiler_sample_parse("1") == 1);
	CHECK(profiler_sample_parse("64") == 64);
	CHECK(profiler_sample_parse("0") == -1);
	CHECK(profiler_sample_parse("-3") == -1);
	CHECK(profiler_sample_parse("12x") == -1);
}

/* NCCLBPF_PROFILE_NULL (read once per process: a child): the mode's events are requested
 * from NCCL, every callback returns at once, nothing is recorded, nothing is sampled. */
static void test_null_mode(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("NCCLBPF_PROFILE_NULL", "1", 1);
		set_sampling(NULL);
		struct ph_host h;
		ph_open_table(&h, 6, prof_table(6));
		struct ph_comm c;
		int bad = ph_comm_init(&h, &c, 0x5e000, "null", 1, 2, 0) != 0;
		bad |= h.mask != (int)(NB_PROF_COLL | NB_PROF_KERNEL_CH);
		atomic_store(&ob.n, 0);
		profiler_set_observer(obs_fn, &ob);
		for (int i = 0; i < 100; i++) {
			struct ph_coll k = coll_of(1024);
			ph_coll_run(&c, &k);
			bad |= k.coll_handle != NULL || !(k.task_mask & NB_PROF_KERNEL_CH);
		}
		bad |= atomic_load(&ob.n) != 0;
		bad |= ph_comm_finalize(&c) != 0;
		_exit(bad);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	unsetenv("NCCLBPF_PROFILE_MASK");
	test_null_mode(); /* first: the mode is read once per process (fork before any event) */
	test_parse();
	test_adaptive(5);
	test_adaptive(6);
	test_bounded_delay();
	test_fixed_n(2);
	test_fixed_n(3);
	test_steered();
	test_mask_removed(4);
	test_mask_removed(5);
	test_mask_removed(6);
	test_shared_mask();
	TEST_DONE();
}
