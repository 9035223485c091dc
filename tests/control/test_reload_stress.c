/* Hot-reload stress test: 8 threads make tuner decisions on 4 communicators through the
 * real decision path (tuner_get_coll_info, as NCCL calls it: one thread at a time per
 * communicator) while another thread reloads the tuner chain between two policies through
 * the process's own control socket (`ctl reload` exactly: load, verify and JIT on the
 * service thread, atomic swap, epoch reclamation).
 *
 * Checked:
 *  - no lost call: every decision is one of the two policies' (none fell through to NCCL),
 *    and the shared `calls` map (reused across reloads) counted every call of both chain
 *    programs: slot 0 == slot 1 == decisions;
 *  - no torn decision: each decision is exactly policy A's (Ring/Simple/7) or B's
 *    (Tree/LL/9): a chain mixing A's and B's programs would give 1 channel;
 *  - memory flat: resident set size after the last reload is within a bound of its size
 *    after the first 100 reloads, no retired chain is left once readers are idle, and at
 *    most one object is live.
 *
 * Default (CTest): 400 k decisions, 150 reloads. NCCLBPF_STRESS_FULL=1: >= 10 M decisions
 * and >= 1,000 reloads (the numbers; label `stress`). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/tuner/tuner.h"
#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define THREADS 8
#define COMMS 4

static void *comm_ctx[COMMS];
static pthread_mutex_t comm_lock[COMMS];
static atomic_long decisions, torn, passthrough, seen_a, seen_b;
static atomic_bool stop;
static long target_decisions;

static void *decider(void *arg)
{
	int id = (int)(long)arg;
	int c = id % COMMS;
	long local_a = 0, local_b = 0, local_torn = 0, local_pass = 0, n = 0;
	static const size_t sizes[] = {4096, 65536, 1u << 20};
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		float table[7 * 3];
		for (int i = 0; i < 21; i++)
			table[i] = 10.0f + (float)i;
		int nch = 0;
		pthread_mutex_lock(&comm_lock[c]);
		tuner_get_coll_info(comm_ctx[c], 4, sizes[n % 3], 1, (float **)table, 7, 3, 0, &nch);
		pthread_mutex_unlock(&comm_lock[c]);
		int zero = -1;
		for (int i = 0; i < 21; i++)
			if (table[i] == 0.0f)
				zero = zero < 0 ? i : 99;
		if (zero == 1 * 3 + 2 && nch == 7)
			local_a++;
		else if (zero == 0 * 3 + 0 && nch == 9)
			local_b++;
		else if (zero < 0 && nch == 0)
			local_pass++;
		else
			local_torn++;
		if (++n % 4096 == 0)
			atomic_fetch_add(&decisions, 4096);
	}
	atomic_fetch_add(&decisions, n % 4096);
	atomic_fetch_add(&seen_a, local_a);
	atomic_fetch_add(&seen_b, local_b);
	atomic_fetch_add(&torn, local_torn);
	atomic_fetch_add(&passthrough, local_pass);
	return NULL;
}

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void)
{
	bool full = getenv("NCCLBPF_STRESS_FULL") && !strcmp(getenv("NCCLBPF_STRESS_FULL"), "1");
	int reloads = full ? 1000 : 150;
	if (getenv("NCCLBPF_STRESS_RELOADS")) /* measurement knob: longer runs */
		reloads = atoi(getenv("NCCLBPF_STRESS_RELOADS"));
	target_decisions = full ? 10000000 : 400000;
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/nbstress-%d", (int)getpid());
	setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", "tests/progs/reload_a.bpf.o", 1);

	for (int c = 0; c < COMMS; c++) {
		pthread_mutex_init(&comm_lock[c], NULL);
		tuner_comm_open(6, 0x5000 + (uint64_t)c, 8, 1, NULL, &comm_ctx[c]);
		CHECK(comm_ctx[c] != NULL);
	}
	const char *sock = runtime_control_path();
	CHECK(sock[0] != '\0');
	char sock_copy[128];
	snprintf(sock_copy, sizeof(sock_copy), "%s", sock);

	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, decider, (void *)(long)i);

	char cwd[4096], spec_a[4200], spec_b[4200];
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(spec_a, sizeof(spec_a), "%s/tests/progs/reload_a.bpf.o", cwd);
	snprintf(spec_b, sizeof(spec_b), "%s/tests/progs/reload_b.bpf.o", cwd);
	long rss100 = 0;
	int failed = 0;
	for (int i = 0; i < reloads; i++) {
		const char *argv[1] = {i % 2 ? spec_a : spec_b};
		char *reply = NULL, err[256];
		int status = -1;
		/* forced: no agreement layer here, every "rank" is this process */
		int rc = runtime_control_call(sock_copy, NBC_OP_RELOAD, NBC_FLAG_FORCE, 1, argv, 60000,
					      &status, &reply, NULL, err, sizeof(err));
		if (rc || status) {
			if (failed++ < 3)
				fprintf(stderr, "reload %d failed: %s %s\n", i, err, reply ? reply : "");
		} else if (i == 0) {
			CHECK_STR_CONTAINS(reply, "map calls: reused (state kept)");
		}
		free(reply);
		if (i == 99) {
			runtime_reclaim();
			rss100 = rss_kib();
		}
	}
	CHECK_EQ_U64(failed, 0);
	/* keep deciding until the decision target is reached */
	while (atomic_load(&decisions) < target_decisions)
		usleep(1000);
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	runtime_reclaim();
	long rss_end = rss_kib();
	struct runtime_registry_stats rs;
	runtime_registry_stats(&rs);

	long total = atomic_load(&decisions);
	printf("%ld decisions (A %ld, B %ld, torn %ld, pass-through %ld) across %d reloads; RSS "
	       "after 100 reloads %ld KiB, at the end %ld KiB; retired chains %zu, live objects "
	       "%zu\n", total, atomic_load(&seen_a), atomic_load(&seen_b), atomic_load(&torn),
	       atomic_load(&passthrough), reloads, rss100, rss_end, rs.retired_pending,
	       rs.objects_live);
	CHECK(total >= target_decisions);
	CHECK_EQ_U64(atomic_load(&torn), 0);
	CHECK_EQ_U64(atomic_load(&passthrough), 0);
	CHECK_EQ_U64(atomic_load(&seen_a) + atomic_load(&seen_b), total);
	CHECK(atomic_load(&seen_a) > 0 && atomic_load(&seen_b) > 0);
	CHECK_EQ_U64(rs.reloads, (uint64_t)reloads);
	CHECK_EQ_U64(rs.retired_pending, 0);
	CHECK_EQ_U64(rs.objects_live, 1);
	/* memory: flat after the first hundred reloads (allowing allocator noise; sanitizer
	 * allocators keep freed memory in quarantine, so their bound is loose) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	CHECK(rss_end - rss100 < 64 * 1024);
#else
	CHECK(rss_end - rss100 < 2 * 1024);
#endif
	/* no lost call: the reused map counted every program run */
	struct ncclbpf_map *m = runtime_find_map("calls");
	CHECK(m != NULL);
	for (uint32_t k = 0; m && k < 2; k++) {
		uint64_t v = 0;
		CHECK(ncclbpf_map_lookup(m, &k, &v) == 0);
		CHECK_EQ_U64(v, (uint64_t)total);
	}
	for (int c = 0; c < COMMS; c++)
		tuner_comm_close(comm_ctx[c]);
	CHECK(access(sock_copy, F_OK) != 0);
	rmdir(dir);
	TEST_DONE();
}
