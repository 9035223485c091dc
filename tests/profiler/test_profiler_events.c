/* Profiler shim through the mock NCCL host, for every ABI version v1..v6: init in every
 * mode, NCCL's event order and nesting (a Coll completes only after its KernelCh children),
 * per-collective timing fields, NULL and stale handles, PXN events with a foreign pid and
 * garbage pointers, pool exhaustion (dropped and counted, the collective still completes),
 * and the latency statistics. */
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/comm_channels.h"
#include "prof_test_util.h"
#include "test_util.h"

static struct obs ob;

static void test_init_modes(int v)
{
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;

	prof_set_mode("off");
	h.mask = 0x7fff;
	CHECK(ph_comm_init(&h, &c, 0x1111, "off", 1, 2, 0) == 0);
	CHECK(h.mask == 0);
	void *eh = (void *)1;
	struct ph_ev e = {.type = NB_PROF_COLL, .func = "AllReduce", .dtype = "ncclFloat32",
			  .n_channels = 2};
	CHECK(ph_start_raw(&h, c.ctx, &eh, &e) == 0);
	CHECK(eh == NULL); /* disabled context: NULL handles */
	CHECK(ph_comm_finalize(&c) == 0);

	prof_set_mode("coll");
	CHECK(ph_comm_init(&h, &c, 0x2222, "coll", 1, 2, 0) == 0);
	uint32_t want = v >= 3 ? (NB_PROF_COLL | NB_PROF_KERNEL_CH) : NB_PROF_COLL;
	CHECK_EQ_U64(h.mask, want);
	CHECK(ph_comm_finalize(&c) == 0);

	prof_set_mode("full");
	CHECK(ph_comm_init(&h, &c, 0x3333, "full", 1, 2, 0) == 0);
	uint32_t all = v == 7 ? NB_PROF_ALL_V7 : v == 6 ? NB_PROF_ALL_V6 : v == 5 ? NB_PROF_ALL_V5 : v >= 3 ? NB_PROF_ALL_V3 : NB_PROF_ALL_V1;
	CHECK_EQ_U64(h.mask, all);
	CHECK(ph_comm_finalize(&c) == 0);

	/* init never fails, even with NULL pointers */
	if (v >= 5) {
		const struct nb_profiler_v5 *t5 = prof_table(5);
		CHECK(t5->init(NULL, 0, NULL, NULL, 0, 0, 0, NULL) == 0);
		void *ctx = NULL;
		CHECK(t5->init(&ctx, 7, NULL, NULL, 1, 1, 0, NULL) == 0);
		CHECK(ctx != NULL);
		CHECK(t5->finalize(ctx) == 0);
		CHECK(t5->finalize(ctx) == 0); /* double finalize: ignored */
	}
	/* unknown mode string: default (off here: no policy, no trace) and still success */
	setenv("NCCLBPF_PROFILE", "bogus", 1);
	profiler_reset_mode_for_tests();
	CHECK(ph_comm_init(&h, &c, 0x4444, "bogus", 1, 2, 0) == 0);
	CHECK(ph_comm_finalize(&c) == 0);
}

static void test_order_and_timing(int v, const char *mode)
{
	prof_set_mode(mode);
	comm_channels_reset();
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0xabc000 + (uint64_t)v;
	CHECK(ph_comm_init(&h, &c, comm, "t", 2, 4, 1) == 0);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);

	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 1 << 20,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_SIMPLE,
			    .n_channels = 4, .gpu_ns = 500000, .stagger_ns = 1000,
			    .network = !strcmp(mode, "full"), .steps = 2};
	ph_coll_app(&c, &k);
	CHECK(k.coll_handle != NULL);
	/* Coll stop only means enqueued: with KernelCh (or ProxyOp) enabled, not complete */
	/* v1/v2 have no KernelCh: completion is known at enqueue only (documented) */
	bool children = k.task_mask & NB_PROF_KERNEL_CH;
	CHECK(atomic_load(&ob.n) == (children ? 0 : 1));
	ph_coll_proxy(&c, &k);
	CHECK(atomic_load(&ob.n) == 1);
	struct ncclbpf_profiler_ctx *pc = &ob.last;
	CHECK_EQ_U64(pc->comm_id, comm);
	CHECK_EQ_U64(pc->seq, 0);
	CHECK_EQ_U64(pc->n_bytes, 4u << 20);
	CHECK_EQ_U64(pc->coll_type, NCCLBPF_COLL_ALLREDUCE);
	CHECK(pc->algo == NCCLBPF_ALGO_RING);
	CHECK(pc->proto == NCCLBPF_PROTO_SIMPLE);
	CHECK_EQ_U64(pc->n_channels, 4);
	CHECK_EQ_U64(pc->size_bucket, 22);
	if (v >= 4) {
		CHECK_EQ_U64(pc->rank, 1);
		CHECK_EQ_U64(pc->n_ranks, 4);
		CHECK_EQ_U64(pc->n_nodes, 2);
	}
	CHECK(pc->host_ns > 0);
	CHECK(pc->start_ns > 0 && pc->start_ns <= profiler_now_ns());
	if (v >= 4 && ph_enabled(&h, NB_PROF_KERNEL_CH))
		CHECK_EQ_U64(pc->gpu_ns, 500000); /* max stop - min start over channels */
	else
		CHECK_EQ_U64(pc->gpu_ns, 0); /* v1..v3: no GPU timestamps */
	CHECK_EQ_U64(comm_channels_get(comm), 4);

	/* a second collective: sequence numbers and statistics */
	struct ph_coll k2 = k;
	k2.gpu_ns = 300000;
	ph_coll_run(&c, &k2);
	CHECK(atomic_load(&ob.n) == 2);
	CHECK_EQ_U64(ob.last.seq, 1);
	struct ncclbpf_latency_stats st;
	CHECK(profiler_latency_get(comm, NCCLBPF_COLL_ALLREDUCE, 22, &st) == 0);
	CHECK_EQ_U64(st.count, 2);
	if (v >= 4 && ph_enabled(&h, NB_PROF_KERNEL_CH)) {
		CHECK_EQ_U64(st.last_ns, 300000);
		CHECK_EQ_U64(st.min_ns, 300000);
		CHECK_EQ_U64(st.ewma_ns, 500000 - 200000 / 8);
		/* p99 tracker: starts at the first sample, a lower one moves it down by d/100 */
		CHECK(st.p99_ns < 500000 && st.p99_ns >= 499000);
	}
	CHECK_EQ_U64(st.n_channels_last, 4);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

/* Where a completed collective stands (comm_seq: the communicator's collectives before it,
 * band_seq: those of its type and size band, counted as the tuner counts them), and its GPU
 * interval on the host clock. A reused context starts counting from 0 again. */
static void test_sequence_and_gpu_interval(int v)
{
	prof_set_mode("coll");
	for (int round = 0; round < 2; round++) {
		struct ph_host h;
		ph_open_table(&h, v, prof_table(v));
		struct ph_comm c;
		uint64_t comm = 0x5e9000 + (uint64_t)v;
		CHECK(ph_comm_init(&h, &c, comm, "t", 2, 2, 0) == 0);
		atomic_store(&ob.n, 0);
		profiler_set_observer(obs_fn, &ob);
		/* AllReduce 4 KiB, AllGather 4 KiB (2 x 512 floats: the same band, another type),
		 * AllReduce 4 KiB, AllReduce 8 KiB (the next band), AllReduce 4 KiB */
		static const struct { int coll; uint64_t count; uint64_t band_seq; } calls[] = {
			{NCCLBPF_COLL_ALLREDUCE, 1024, 0}, {NCCLBPF_COLL_ALLGATHER, 512, 0},
			{NCCLBPF_COLL_ALLREDUCE, 1024, 1}, {NCCLBPF_COLL_ALLREDUCE, 2048, 0},
			{NCCLBPF_COLL_ALLREDUCE, 1024, 2},
		};
		for (int i = 0; i < 5; i++) {
			struct ph_coll k = {.coll_type = calls[i].coll, .count = calls[i].count,
					    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
					    .n_channels = 2, .gpu_ns = 40000 + 1000 * (uint64_t)i,
					    .stagger_ns = 500};
			uint64_t before = profiler_now_ns();
			ph_coll_run(&c, &k);
			CHECK(atomic_load(&ob.n) == i + 1);
			const struct ncclbpf_profiler_ctx *pc = &ob.last;
			CHECK_EQ_U64(pc->comm_seq, (uint64_t)i);
			CHECK_EQ_U64(pc->band_seq, calls[i].band_seq);
			/* the application's call: its group's GroupApi start (v5+), before the Coll
			 * event's start */
			if (v >= 5)
				CHECK(pc->api_ns >= before && pc->api_ns <= pc->start_ns);
			else
				CHECK_EQ_U64(pc->api_ns, 0);
			if (pc->flags & NCCLBPF_PROF_F_GPU_TIMED) {
				/* the same offset converts both ends: exactly gpu_ns apart; the start
				 * no earlier than the host clock when the kernel was modelled to start
				 * (the offset over-estimates by the callback delay only) */
				CHECK_EQ_U64(pc->gpu_end_ns - pc->gpu_start_ns, pc->gpu_ns);
				CHECK_EQ_U64(pc->gpu_ns, 40000 + 1000 * (uint64_t)i);
				CHECK(pc->gpu_start_ns >= before && pc->gpu_start_ns <= profiler_now_ns());
			} else {
				CHECK_EQ_U64(pc->gpu_start_ns, 0);
				CHECK_EQ_U64(pc->gpu_end_ns, 0);
			}
		}
		CHECK(v < 4 || (ob.last.flags & NCCLBPF_PROF_F_GPU_TIMED));
		profiler_set_observer(NULL, NULL);
		CHECK(ph_comm_finalize(&c) == 0);
	}
}

/* NCCLBPF_PROFILE_MASK overrides the event mask NCCL gets: unknown bits are dropped, junk
 * keeps the mode's mask, and without KernelCh a collective completes at its Coll stop. */
static void test_mask_override(int v)
{
	struct ph_host h;
	struct ph_comm c;
	ph_open_table(&h, v, prof_table(v));
	uint32_t all = v == 7 ? NB_PROF_ALL_V7 : v == 6 ? NB_PROF_ALL_V6 : v == 5 ? NB_PROF_ALL_V5 : v >= 3 ? NB_PROF_ALL_V3 : NB_PROF_ALL_V1;
	uint32_t coll = v >= 3 ? (NB_PROF_COLL | NB_PROF_KERNEL_CH) : NB_PROF_COLL;

	setenv("NCCLBPF_PROFILE_MASK", "0x2", 1);
	prof_set_mode("coll");
	CHECK(ph_comm_init(&h, &c, 0x5551, "mask", 1, 2, 0) == 0);
	CHECK_EQ_U64(h.mask, NB_PROF_COLL);
	CHECK(ph_comm_finalize(&c) == 0);

	setenv("NCCLBPF_PROFILE_MASK", "0x80000042", 1);
	CHECK(ph_comm_init(&h, &c, 0x5552, "mask", 1, 2, 0) == 0);
	CHECK_EQ_U64(h.mask, 0x80000042u & all);
	CHECK(ph_comm_finalize(&c) == 0);

	setenv("NCCLBPF_PROFILE_MASK", "lots", 1);
	CHECK(ph_comm_init(&h, &c, 0x5553, "mask", 1, 2, 0) == 0);
	CHECK_EQ_U64(h.mask, coll);
	CHECK(ph_comm_finalize(&c) == 0);

	setenv("NCCLBPF_PROFILE_MASK", "0x2", 1);
	prof_set_mode("off"); /* an explicit off wins */
	CHECK(ph_comm_init(&h, &c, 0x5554, "mask", 1, 2, 0) == 0);
	CHECK_EQ_U64(h.mask, 0);
	CHECK(ph_comm_finalize(&c) == 0);

	/* Coll only: timed from enqueue to Coll stop, no GPU time, still recorded */
	test_order_and_timing(v, "coll");
	unsetenv("NCCLBPF_PROFILE_MASK");
}

static void test_null_and_stale(int v)
{
	prof_set_mode("full");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x5150, "n", 1, 2, 0) == 0);
	struct profiler_counters before, after;
	profiler_get_counters(&before);
	CHECK(ph_stop(&h, NULL) == 0);
	CHECK(ph_record(&h, NULL, NB_PROF_ST_KERNEL_CH_STOP, 5) == 0);
	CHECK(ph_record(&h, NULL, NB_PROF_ST_PROXY_CTRL_IDLE, 0) == 0);
	profiler_get_counters(&after);
	CHECK_EQ_U64(after.null_handles - before.null_handles, 3);

	struct ph_ev e = {.type = NB_PROF_GROUP};
	CHECK(ph_start_raw(&h, c.ctx, NULL, &e) == 0); /* NULL eHandle pointer */
	void *eh = (void *)1;
	CHECK(ph_start_raw(&h, NULL, &eh, &e) == 0); /* NULL context */
	CHECK(eh == NULL);
	eh = (void *)1;
	CHECK(ph_start_raw(&h, (void *)0x7fffdeadbeef, &eh, &e) == 0); /* garbage context */
	CHECK(eh == NULL);

	/* stale handles: stop twice, record after stop, slot reuse (generation) */
	void *a = NULL, *b = NULL;
	CHECK(ph_start_raw(&h, c.ctx, &a, &e) == 0 && a);
	CHECK(ph_stop(&h, a) == 0);
	profiler_get_counters(&before);
	CHECK(ph_stop(&h, a) == 0);
	CHECK(ph_record(&h, a, NB_PROF_ST_PROXY_CTRL_IDLE, 0) == 0);
	profiler_get_counters(&after);
	CHECK_EQ_U64(after.stale_handles - before.stale_handles, 2);
	CHECK(ph_start_raw(&h, c.ctx, &b, &e) == 0 && b);
	CHECK(a != b); /* same slot (LIFO free list) but a new generation */
	CHECK(profiler_event_decode((uint64_t)(uintptr_t)a) == NULL);
	CHECK(profiler_event_decode((uint64_t)(uintptr_t)b) != NULL);
	CHECK(ph_stop(&h, a) == 0);      /* must not stop b */
	CHECK(profiler_event_decode((uint64_t)(uintptr_t)b) != NULL);
	CHECK(ph_stop(&h, b) == 0);
	/* garbage handles never fault */
	CHECK(ph_stop(&h, (void *)0x10) == 0);
	CHECK(ph_stop(&h, (void *)~(uintptr_t)0) == 0);
	CHECK(ph_record(&h, (void *)0x7fffdeadbee1, NB_PROF_ST_KERNEL_CH_STOP, 1) == 0);
	/* events after finalize: the context token no longer decodes */
	void *late = NULL;
	void *ctx = c.ctx;
	CHECK(ph_start_raw(&h, c.ctx, &late, &e) == 0 && late);
	CHECK(ph_comm_finalize(&c) == 0);
	CHECK(ph_stop(&h, late) == 0); /* swept at finalize: stale, ignored */
	void *after_fin = (void *)1;
	CHECK(ph_start_raw(&h, ctx, &after_fin, &e) == 0);
	CHECK(after_fin == NULL);
}

/* Under PXN another process's context arrives as an opaque token. A fresh process's first
 * context must not get a predictable token (it was index 1, generation 1 in every process,
 * so a foreign context decoded as local): run in a child that has no context yet. */
static void test_first_token_unpredictable(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		prof_set_mode("coll");
		struct ph_host h;
		struct ph_comm c;
		ph_open_table(&h, 5, prof_table(5));
		if (ph_comm_init(&h, &c, 0x7070, "first", 1, 2, 0) != 0)
			_exit(2);
		uint64_t t = (uint64_t)(uintptr_t)c.ctx;
		_exit(t == (3u | (1ull << 22) | (1ull << 34)) ? 1 : 0);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_pxn(int v)
{
	prof_set_mode("full");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x9090, "pxn", 2, 2, 0) == 0);
	struct profiler_counters before, after;
	profiler_get_counters(&before);
	/* a proxy op posted by another process: its context and parent are that process's
	 * pointers. Unmapped garbage here: any dereference would fault (and ASan would say). */
	void *foreign_ctx = (void *)0x00007f0000001000ull;
	void *op = NULL, *step = NULL, *np = NULL;
	struct ph_ev o = {.type = NB_PROF_PROXY_OP, .parent = (void *)0x00007f0000002000ull,
			  .pid = getpid() + 100000, .channel = 3, .peer = 1};
	CHECK(ph_start_raw(&h, foreign_ctx, &op, &o) == 0);
	CHECK(op != NULL);
	CHECK(ph_record(&h, op, NB_PROF_ST_PROXY_OP_IN_PROGRESS_V4, 0) == 0);
	struct ph_ev s = {.type = NB_PROF_PROXY_STEP, .parent = op, .step = 0};
	CHECK(ph_start_raw(&h, foreign_ctx, &step, &s) == 0);
	CHECK(step != NULL);
	CHECK(ph_record(&h, step, NB_PROF_ST_PROXY_STEP_SEND_WAIT, 4096) == 0);
	if (v >= 3) {
		struct ph_ev n = {.type = NB_PROF_NET_PLUGIN, .parent = step};
		CHECK(ph_start_raw(&h, foreign_ctx, &np, &n) == 0);
		CHECK(np != NULL);
		CHECK(ph_stop(&h, np) == 0);
	}
	CHECK(ph_stop(&h, step) == 0);
	CHECK(ph_stop(&h, op) == 0);
	profiler_get_counters(&after);
	CHECK_EQ_U64(after.detached - before.detached, v >= 3 ? 3 : 2);
	struct profiler_event *pe = profiler_event_decode((uint64_t)(uintptr_t)op);
	CHECK(pe == NULL); /* freed */

	/* a local proxy op whose collective is ours still counts toward completion */
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLGATHER, .count = 1024,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
			    .n_channels = 2, .gpu_ns = 10000, .network = true, .steps = 3};
	ph_coll_run(&c, &k);
	CHECK(atomic_load(&ob.n) == 1);
	/* AllGather: count x type x ranks (v1..v3 init has no rank count) */
	CHECK_EQ_U64(ob.last.n_bytes, v >= 4 ? 1024 * 4 * 2 : 1024 * 4);
	/* the same collective with PXN ops executed for another process: still completes */
	struct ph_coll k2 = k;
	k2.proxy_pid = getpid() + 100000;
	ph_coll_run(&c, &k2);
	CHECK(atomic_load(&ob.n) == 2);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

static void test_pool_exhaustion(int v)
{
	prof_set_mode("full");
	setenv("NCCLBPF_PROFILE_POOL", "16", 1);
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x7777 + (uint64_t)v, "pool", 1, 2, 0) == 0);
	unsetenv("NCCLBPF_PROFILE_POOL");
	struct profiler_counters before, after;
	profiler_get_counters(&before);
	void *hs[24];
	struct ph_ev e = {.type = NB_PROF_GROUP};
	int got = 0;
	for (int i = 0; i < 24; i++) {
		hs[i] = NULL;
		CHECK(ph_start_raw(&h, c.ctx, &hs[i], &e) == 0);
		got += hs[i] != NULL;
	}
	profiler_get_counters(&after);
	CHECK(got <= 16);
	CHECK_EQ_U64(after.dropped_pool - before.dropped_pool, (uint64_t)(24 - got));
	for (int i = 0; i < 24; i++)
		CHECK(ph_stop(&h, hs[i]) == 0); /* NULL for the dropped ones: accepted */
	/* a collective with more channels than the pool has slots: children dropped, the
	 * collective still completes (a dropped child counts as arrived) */
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 4096,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
			    .n_channels = 32, .gpu_ns = 20000};
	ph_coll_app(&c, &k);
	/* keep every KernelCh open: the pool runs dry mid-collective */
	void *kch[32];
	int opened = 0;
	for (int ch = 0; ch < 32; ch++) {
		struct ph_ev ke = {.type = NB_PROF_KERNEL_CH, .parent = k.coll_handle,
				   .channel = ch, .ptimer = k.gpu_start};
		kch[ch] = NULL;
		ph_start(&c, &kch[ch], &ke);
		opened += kch[ch] != NULL;
	}
	if (ph_enabled(&h, NB_PROF_KERNEL_CH)) {
		CHECK(opened < 32);
		CHECK(atomic_load(&ob.n) == 0);
	}
	for (int ch = 0; ch < 32; ch++)
		if (kch[ch]) {
			ph_record(&h, kch[ch], NB_PROF_ST_KERNEL_CH_STOP, k.gpu_start + 20000);
			ph_stop(&h, kch[ch]);
		}
	CHECK(atomic_load(&ob.n) == 1);

	/* a collective whose promised KernelCh events never all come (4 promised, 1 sent)
	 * holds its slot until the pool runs dry; then it is completed and reclaimed */
	if (ph_enabled(&h, NB_PROF_KERNEL_CH)) {
		profiler_set_stale_ns(0);
		struct ph_coll s = k;
		s.n_channels = 4;
		ph_coll_app(&c, &s);
		void *one = NULL;
		struct ph_ev ke = {.type = NB_PROF_KERNEL_CH, .parent = s.coll_handle,
				   .channel = 0, .ptimer = s.gpu_start};
		ph_start(&c, &one, &ke);
		ph_record(&h, one, NB_PROF_ST_KERNEL_CH_STOP, s.gpu_start + 5000);
		ph_stop(&h, one);
		CHECK(atomic_load(&ob.n) == 1); /* still pending */
		CHECK(s.coll_handle != NULL && one != NULL);
		void *fill[16];
		int n_fill = 0;
		for (int i = 0; i < 16; i++) {
			fill[i] = NULL;
			ph_start_raw(&h, c.ctx, &fill[i], &e);
			n_fill += fill[i] != NULL;
		}
		CHECK(atomic_load(&ob.n) == 2); /* reclaimed when the pool ran dry */
		CHECK_EQ_U64(ob.last.gpu_ns, v >= 4 ? 5000 : 0); /* v3: no timestamps */
		CHECK(n_fill == 16);
		for (int i = 0; i < 16; i++)
			ph_stop(&h, fill[i]);

		/* the scan that reclaims runs at most once per min(stale age, 10 ms): a dry pool
		 * must not cost a full pool scan on every start event */
		profiler_set_stale_ns(20000000ull); /* 20 ms: interval 10 ms */
		struct profiler_ctx *pc = profiler_ctx_decode((uint64_t)(uintptr_t)c.ctx);
		CHECK(pc != NULL);
		if (pc) {
			/* a scan at t0 (well after the previous one) finds nothing stale */
			uint64_t t0 = profiler_now_ns() + 50000000ull;
			CHECK(profiler_reclaim_stale(pc, t0) == 0);
			struct ph_coll s2 = k;
			s2.n_channels = 4;
			ph_coll_app(&c, &s2); /* pending: its KernelCh events never come */
			/* stale (older than 20 ms) at t0 + 5 ms, but within 10 ms of the last scan */
			CHECK(profiler_reclaim_stale(pc, t0 + 5000000ull) == 0);
			CHECK(atomic_load(&ob.n) == 2);
			CHECK(profiler_reclaim_stale(pc, t0 + 11000000ull) == 1); /* next scan */
			CHECK(atomic_load(&ob.n) == 3);
		}
		profiler_set_stale_ns(5000000000ull);
	}
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

static void test_ce_events(void)
{
	prof_set_mode("full");
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0xce, "ce", 1, 8, 0) == 0);
	void *api = NULL, *ce = NULL, *sync = NULL, *batch = NULL;
	struct ph_ev a = {.type = NB_PROF_COLL_API, .func = "AllGather", .count = 8,
			  .dtype = "ncclFloat32"};
	CHECK(ph_start(&c, &api, &a) == 0 && api);
	struct ph_ev e = {.type = NB_PROF_CE_COLL, .parent = api, .func = "AllGather",
			  .count = 8, .dtype = "ncclFloat32", .seq = 3};
	CHECK(ph_start(&c, &ce, &e) == 0 && ce);
	struct ph_ev s = {.type = NB_PROF_CE_SYNC, .parent = ce};
	struct ph_ev b = {.type = NB_PROF_CE_BATCH, .parent = ce};
	CHECK(ph_start(&c, &sync, &s) == 0 && sync);
	CHECK(ph_start(&c, &batch, &b) == 0 && batch);
	CHECK(ph_stop(&h, batch) == 0);
	CHECK(ph_stop(&h, sync) == 0);
	CHECK(ph_stop(&h, ce) == 0);
	CHECK(ph_stop(&h, api) == 0);
	CHECK(ph_comm_finalize(&c) == 0);
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	test_first_token_unpredictable(); /* first: needs a process without contexts */
	for (int v = 1; v <= 7; v++) {
		test_init_modes(v);
		test_order_and_timing(v, "coll");
		test_mask_override(v);
		test_order_and_timing(v, "full");
		test_sequence_and_gpu_interval(v);
		test_null_and_stale(v);
		test_pxn(v);
		test_pool_exhaustion(v);
	}
	test_ce_events();
	TEST_DONE();
}
