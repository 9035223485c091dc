/* Concurrent communicators: each has an application thread (API/Coll events) and a proxy
 * thread (KernelCh/ProxyOp/ProxyStep events of the same collectives, after the Coll stop),
 * all running at once against one process-wide profiler, in full mode. Checks that every
 * collective completes exactly once with its own fields, nothing is dropped, and the
 * statistics per communicator add up. Run it under the sanitizer build.
 * Usage: test_profiler_concurrency [collectives-per-comm] */
#include <pthread.h>
#include <sched.h>

#include "prof_test_util.h"
#include "test_util.h"

#define NCOMMS 6
#define RING 64

struct comm_run {
	struct ph_host host;
	struct ph_comm comm;
	int n;
	struct ph_coll ring[RING];
	_Atomic int head, tail; /* app produces at head, proxy consumes at tail */
	_Atomic uint64_t done;
	_Atomic uint64_t bad;
};

static struct comm_run runs[NCOMMS];

static void obs_count(const struct ncclbpf_profiler_ctx *pc, void *arg)
{
	(void)arg;
	for (int i = 0; i < NCOMMS; i++)
		if (runs[i].comm.comm_id == pc->comm_id) {
			atomic_fetch_add(&runs[i].done, 1);
			/* fields must belong to this comm's collectives */
			if (pc->n_channels != (uint32_t)(1 + i % 4) || pc->gpu_ns != 1000u * (uint64_t)(i + 1))
				atomic_fetch_add(&runs[i].bad, 1);
			return;
		}
}

static void *app_thread(void *arg)
{
	struct comm_run *r = arg;
	int i = (int)(r - runs);
	for (int k = 0; k < r->n; k++) {
		while (atomic_load(&r->head) - atomic_load(&r->tail) >= RING)
			sched_yield();
		struct ph_coll *c = &r->ring[atomic_load(&r->head) % RING];
		memset(c, 0, sizeof(*c));
		c->coll_type = k % 5;
		c->count = 256u << (k % 8);
		c->algo = NCCLBPF_ALGO_RING;
		c->proto = k % 3;
		c->n_channels = 1 + i % 4;
		c->gpu_ns = 1000u * (uint64_t)(i + 1);
		c->network = (k % 4) == 0;
		c->steps = 2;
		ph_coll_app(&r->comm, c);
		atomic_fetch_add(&r->head, 1);
	}
	return NULL;
}

static void *proxy_thread(void *arg)
{
	struct comm_run *r = arg;
	for (int k = 0; k < r->n; k++) {
		while (atomic_load(&r->tail) == atomic_load(&r->head))
			sched_yield();
		struct ph_coll *c = &r->ring[atomic_load(&r->tail) % RING];
		ph_coll_proxy(&r->comm, c);
		void *ctrl = NULL;
		struct ph_ev e = {.type = NB_PROF_PROXY_CTRL};
		ph_start(&r->comm, &ctrl, &e);
		if (ctrl) {
			ph_record(&r->host, ctrl, NB_PROF_ST_PROXY_CTRL_ACTIVE, 0);
			ph_stop(&r->host, ctrl);
		}
		atomic_fetch_add(&r->tail, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	unsetenv("NCCLBPF_TRACE");
	prof_set_mode("full");
	struct profiler_counters before, after;
	profiler_get_counters(&before);
	profiler_set_observer(obs_count, NULL);
	for (int i = 0; i < NCOMMS; i++) {
		struct comm_run *r = &runs[i];
		int v = 4 + i % 3; /* v4, v5, v6 side by side */
		ph_open_table(&r->host, v, prof_table(v));
		r->n = n;
		CHECK(ph_comm_init(&r->host, &r->comm, 0xc0ffee00u + (uint64_t)i, "conc", 1, NCOMMS, i) == 0);
	}
	pthread_t th[2 * NCOMMS];
	for (int i = 0; i < NCOMMS; i++) {
		pthread_create(&th[2 * i], NULL, app_thread, &runs[i]);
		pthread_create(&th[2 * i + 1], NULL, proxy_thread, &runs[i]);
	}
	for (int i = 0; i < 2 * NCOMMS; i++)
		pthread_join(th[i], NULL);
	profiler_get_counters(&after);
	uint64_t total = 0;
	for (int i = 0; i < NCOMMS; i++) {
		CHECK_EQ_U64(atomic_load(&runs[i].done), (uint64_t)n);
		CHECK_EQ_U64(atomic_load(&runs[i].bad), 0);
		uint64_t stat_total = 0;
		for (uint32_t t = 0; t < NCCLBPF_NUM_COLLS; t++)
			for (uint32_t b = 0; b <= 64; b++) {
				struct ncclbpf_latency_stats st;
				if (profiler_latency_get(runs[i].comm.comm_id, t, b, &st) == 0) {
					stat_total += st.count;
					CHECK_EQ_U64(st.min_ns, 1000u * (uint64_t)(i + 1));
				}
			}
		CHECK_EQ_U64(stat_total, (uint64_t)n);
		total += (uint64_t)n;
		/* every event slot came back */
		struct profiler_ctx *c = profiler_ctx_find(runs[i].comm.comm_id);
		CHECK(c != NULL);
		if (c)
			CHECK_EQ_U64(atomic_load(&c->pool.in_use), 0);
	}
	CHECK_EQ_U64(after.completed - before.completed, total);
	CHECK_EQ_U64(after.dropped_pool - before.dropped_pool, 0);
	CHECK_EQ_U64(after.stale_handles - before.stale_handles, 0);
	profiler_set_observer(NULL, NULL);
	for (int i = 0; i < NCOMMS; i++)
		CHECK(ph_comm_finalize(&runs[i].comm) == 0);
	TEST_DONE();
}
