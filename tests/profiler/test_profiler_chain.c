/* NCCLBPF_PROFILER_INNER through the mock host: every event reaches the fake native profiler
 * with its own handles as parents (never ncclbpf's tokens), in its own ABI layout (same
 * version, or v5/v6/v7 across each other), while ncclbpf's own timing keeps working; KernelCh
 * stays on for an inner plugin that asked for it; a failing init, erroring callbacks, an
 * incompatible ABI (v4 inner under a v6 host) and ncclbpf's own mode "off" are covered. */
#include <dlfcn.h>

#include "plugin/chain/chain.h"
#include "prof_test_util.h"
#include "test_util.h"

#define FAKE(n) NB_BUILD_DIR "/tests/fake_plugins/lib" n ".so"

struct fake_profiler_state {
	int inits, finalizes;
	int starts[16];
	int stops, records, kch_stop_records;
	int foreign_parent;
	int bad_handle;
	int kch_parent_not_coll;
	int coll_func_ok;
	uint64_t last_user_tag;
	int ctx_mismatch;
};

static struct obs ob;

static struct fake_profiler_state *fake(const char *path)
{
	/* the same link map as ncclbpf's dlopen of it (kept open: the handle leaks on purpose) */
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	return dl ? dlsym(dl, "fake_profiler_state") : NULL;
}

static void use_inner(const char *path, const char *mode)
{
	setenv("NCCLBPF_PROFILER_INNER", path, 1);
	chain_reset_for_tests();
	prof_set_mode(mode);
	unsetenv("NCCLBPF_PROFILE_SAMPLE"); /* default sampling */
}

/* n AllReduces through host version v; returns the fake's state after finalize. */
static struct fake_profiler_state run(const char *path, int v, const char *mode, int n,
				      int *completed)
{
	use_inner(path, mode);
	struct fake_profiler_state *st = fake(path);
	struct fake_profiler_state before;
	memset(&before, 0, sizeof(before));
	if (st)
		before = *st;
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0xc4a10000ull + (uint64_t)v, "chain", 1, 4, 0) == 0);
	bool inner_kch = st && strstr(path, "fail") == NULL &&
			 !(strstr(path, "_v4") && v != 4);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	for (int i = 0; i < n; i++) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 256 << (i % 3),
				    .algo = 1, .proto = 0, .n_channels = 2, .gpu_ns = 4000,
				    .user_tag = 100 + (uint64_t)i, .sym = i == n - 1};
		ph_coll_run(&c, &k);
		if (inner_kch)
			CHECK(k.task_mask & NB_PROF_KERNEL_CH); /* the inner asked for KernelCh */
	}
	*completed = atomic_load(&ob.n);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
	struct fake_profiler_state d;
	memset(&d, 0, sizeof(d));
	if (st) { /* the delta of this run */
		d = *st;
		d.inits -= before.inits;
		d.finalizes -= before.finalizes;
		for (int b = 0; b < 16; b++)
			d.starts[b] -= before.starts[b];
		d.stops -= before.stops;
		d.records -= before.records;
		d.kch_stop_records -= before.kch_stop_records;
		d.foreign_parent -= before.foreign_parent;
		d.bad_handle -= before.bad_handle;
		d.kch_parent_not_coll -= before.kch_parent_not_coll;
		d.coll_func_ok -= before.coll_func_ok;
		d.ctx_mismatch -= before.ctx_mismatch;
	}
	return d;
}

static void check_clean(const struct fake_profiler_state *d, int n, bool api)
{
	CHECK(d->inits == 1 && d->finalizes == 1);
	CHECK_EQ_U64(d->starts[1], n);      /* Coll */
	CHECK_EQ_U64(d->starts[6], 2 * n);  /* KernelCh: every collective, 2 channels */
	CHECK(d->starts[5] == n);           /* ProxyCtrl */
	if (api) {
		CHECK(d->starts[8] == n && d->starts[9] == n && d->starts[11] == n);
	}
	CHECK_EQ_U64(d->coll_func_ok, n);
	CHECK_EQ_U64(d->kch_stop_records, 2 * n);
	CHECK_EQ_U64(d->foreign_parent, 0);
	CHECK_EQ_U64(d->bad_handle, 0);
	CHECK_EQ_U64(d->kch_parent_not_coll, 0);
	CHECK_EQ_U64(d->ctx_mismatch, 0);
	int starts = 0;
	for (int b = 0; b < 16; b++)
		starts += d->starts[b];
	CHECK(d->stops == starts); /* every handle it gave was stopped, once */
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	const int n = 40;
	int done = 0;
	struct fake_profiler_state d;

	/* same version */
	d = run(FAKE("fake_profiler_v6"), 6, "coll", n, &done);
	check_clean(&d, n, true);
	CHECK(done == n); /* ncclbpf's own completion, unaffected */
	d = run(FAKE("fake_profiler_v4"), 4, "coll", n, &done);
	check_clean(&d, n, false);
	CHECK(done == n);
	/* across v5..v7: v7 host -> v5 inner, v5 host -> v7 inner (no tag there: 0), v7 -> v7 */
	d = run(FAKE("fake_profiler_v5"), 7, "coll", n, &done);
	check_clean(&d, n, true);
	d = run(FAKE("fake_profiler_v7"), 5, "coll", n, &done);
	check_clean(&d, n, true);
	CHECK_EQ_U64(fake(FAKE("fake_profiler_v7"))->last_user_tag, 0);
	d = run(FAKE("fake_profiler_v7"), 7, "full", n, &done);
	CHECK_EQ_U64(fake(FAKE("fake_profiler_v7"))->last_user_tag, 100 + n - 1);
	CHECK_EQ_U64(d.foreign_parent, 0);
	CHECK_EQ_U64(d.bad_handle, 0);
	CHECK(done == n);
	/* ncclbpf's own profiling off: the inner plugin still gets everything */
	d = run(FAKE("fake_profiler_v6"), 6, "off", n, &done);
	check_clean(&d, n, true);
	CHECK(done == 0);

	/* failures: ncclbpf keeps working, nothing crashes, counted */
	struct chain_counters c0, c1;
	chain_get_counters(&c0);
	d = run(FAKE("fake_profiler_fail"), 6, "coll", n, &done);
	chain_get_counters(&c1);
	CHECK(done == n);
	CHECK(c1.profiler_init_failures == c0.profiler_init_failures + 1);
	CHECK_EQ_U64(d.starts[1], 0);
	d = run(FAKE("fake_profiler_err"), 6, "coll", n, &done);
	chain_get_counters(&c1);
	CHECK(done == n);
	CHECK(c1.profiler_errors > c0.profiler_errors);
	CHECK_EQ_U64(d.bad_handle, 0); /* a garbage handle it returned with an error is dropped */
	/* v4 inner under a v6 host: layouts differ, the inner plugin is dropped */
	struct fake_profiler_state *f4 = fake(FAKE("fake_profiler_v4"));
	int inits4 = f4 ? f4->inits : -1;
	d = run(FAKE("fake_profiler_v4"), 6, "coll", n, &done);
	CHECK(done == n);
	CHECK(f4 && f4->inits == inits4);
	/* a missing library */
	d = run("/nonexistent/libnccl-profiler-x.so", 6, "coll", n, &done);
	CHECK(done == n);
	unsetenv("NCCLBPF_PROFILER_INNER");
	chain_reset_for_tests();
	TEST_DONE();
}
