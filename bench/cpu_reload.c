/* bench_cpu_reload: the cost of hot reload.
 *
 *  1. chain swap: registry_publish of an already prepared chain (the atomic pointer store
 *     and the retire tag), as a reload does it after load + verify + JIT; P50/P99 over
 *     batches of 64 swaps alternating two chains (budget: <= 100 ns P50);
 *  2. reclamation: runtime_reclaim after a swap (membarrier + reader scan + free), off the
 *     decision path, on the control thread;
 *  3. end to end per shipped policy: `ctl reload` through this process's control socket
 *     (request, open + verify + JIT on the service thread, swap, reply), next to the same
 *     reload called in-process (runtime_reload) to separate the socket's share.
 *
 *   bench_cpu_reload [--rounds N] [--policy-dir DIR]    (run from the build directory)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "plugin/tuner/tuner.h"
#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/registry_internal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
	unsigned aux;
	return __rdtscp(&aux);
#else
	return now_ns();
#endif
}

static double ticks_per_ns(void)
{
#if defined(__x86_64__)
	uint64_t n0 = now_ns(), t0 = ticks();
	while (now_ns() - n0 < 50000000ull)
		;
	return (double)(ticks() - t0) / (double)(now_ns() - n0);
#else
	return 1.0;
#endif
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp_d);
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* A chain over the programs of an open object (no registry references: the benchmark
 * keeps the objects open itself). */
static struct nb_hook_chain *chain_of(struct ncclbpf_object *obj)
{
	struct nb_hook_chain *c = registry_chain_alloc(NB_HOOK_TUNER, obj->prog_cnt);
	for (size_t i = 0; c && i < obj->prog_cnt; i++)
		c->items[i] = (struct nb_attachment){&obj->progs[i], NULL, NULL};
	return c;
}

int main(int argc, char **argv)
{
	int rounds = 2000;
	const char *pdir = "policies";
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--policy-dir"))
			pdir = argv[i + 1];
	}
	if (rounds < 10)
		rounds = 10;
	setenv("NCCLBPF_CONTROL_DIR", "/tmp/nbbench-ctl", 0);
	double tpn = ticks_per_ns();
	char err[4096];
	struct ncclbpf_object *oa, *ob;
	if (ncclbpf_object_open_file("tests/progs/reload_a.bpf.o", &oa, err, sizeof(err)) ||
	    ncclbpf_object_open_file("tests/progs/reload_b.bpf.o", &ob, err, sizeof(err))) {
		fprintf(stderr, "bench_cpu_reload: %s (run from the build directory)\n", err);
		return 2;
	}
	for (size_t i = 0; i < oa->prog_cnt; i++)
		ncclbpf_program_prepare(&oa->progs[i], NCCLBPF_HOOK_AUTO, NULL, err, sizeof(err));
	for (size_t i = 0; i < ob->prog_cnt; i++)
		ncclbpf_program_prepare(&ob->progs[i], NCCLBPF_HOOK_AUTO, NULL, err, sizeof(err));

	/* 1 + 2: swap and reclamation */
	double *swap = calloc((size_t)rounds, sizeof(double));
	double *recl = calloc((size_t)rounds, sizeof(double));
	uint64_t version = 1000;
	for (int r = 0; r < rounds; r++) {
		struct nb_hook_chain *cs[64][NB_HOOK_COUNT];
		for (int k = 0; k < 64; k++) {
			memset(cs[k], 0, sizeof(cs[k]));
			cs[k][NB_HOOK_TUNER] = chain_of((r + k) % 2 ? oa : ob);
		}
		pthread_mutex_lock(&registry_lock);
		uint64_t t0 = ticks();
		for (int k = 0; k < 64; k++)
			registry_publish(cs[k], 1u << NB_HOOK_TUNER, ++version, false);
		uint64_t t1 = ticks();
		pthread_mutex_unlock(&registry_lock);
		swap[r] = (double)(t1 - t0) / tpn / 64.0;
		uint64_t t2 = ticks();
		runtime_reclaim();
		recl[r] = (double)(ticks() - t2) / tpn;
	}
	runtime_unload_policies();
	printf("hot reload cost, %d rounds (ns)\n", rounds);
	printf("  chain swap (publish, per swap, batches of 64)  P50 %8.1f  P99 %8.1f\n",
	       pct(swap, (size_t)rounds, 0.5), pct(swap, (size_t)rounds, 0.99));
	printf("  reclamation of the old chain (control thread)   P50 %8.1f  P99 %8.1f\n",
	       pct(recl, (size_t)rounds, 0.5), pct(recl, (size_t)rounds, 0.99));
	ncclbpf_object_close(oa);
	ncclbpf_object_close(ob);

	/* 3: end to end per shipped policy */
	static const char *const pols[] = {"noop", "size_aware", "nvlink_ring_mid",
					   "multinode_fix", "table_rules", "bad_channels",
					   "lookup_only", "lookup_update", "adaptive_channels",
					   "slo_enforcer"};
	void *comm = NULL;
	tuner_comm_open(6, 0xbe7c4, 8, 1, NULL, &comm); /* starts the control socket */
	char sock[256];
	snprintf(sock, sizeof(sock), "%s", runtime_control_path());
	if (!sock[0]) {
		fprintf(stderr, "bench_cpu_reload: no control socket\n");
		return 1;
	}
	char cwd[2048];
	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	int reps = rounds / 40 > 5 ? rounds / 40 : 5;
	printf("\nend-to-end reload per policy, %d reloads each, interleaved (us)\n", reps);
	printf("  %-18s %14s %14s %16s\n", "policy", "ctl reload P50", "in-process P50",
	       "socket share P50");
	char *msg = malloc(1 << 18);
	for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
		char spec[2300];
		snprintf(spec, sizeof(spec), "%s/%s/%s.bpf.o", cwd, pdir, pols[p]);
		double *e2e = calloc((size_t)reps, sizeof(double));
		double *inp = calloc((size_t)reps, sizeof(double));
		int ok = 1;
		for (int r = 0; r < reps && ok; r++) {
			const char *av[1] = {spec};
			char *reply = NULL;
			int status = -1;
			uint64_t t0 = now_ns();
			int rc = runtime_control_call(sock, NBC_OP_RELOAD, NBC_FLAG_FORCE, 1, av, 60000, &status,
						      &reply, NULL, err, sizeof(err));
			e2e[r] = (double)(now_ns() - t0) / 1000.0;
			if (rc || status) {
				const char *code = reply ? strstr(reply, "[E-") : NULL;
				printf("  %-18s rejected by the verifier: %.*s\n", pols[p],
				       code ? (int)strcspn(code, "\n") : 40, code ? code : err);
				ok = 0;
			}
			free(reply);
			t0 = now_ns();
			runtime_reload(spec, NB_HOOK_COUNT, RUNTIME_RELOAD_FORCE, msg, 1 << 18);
			inp[r] = (double)(now_ns() - t0) / 1000.0;
		}
		if (ok) {
			double a = pct(e2e, (size_t)reps, 0.5), b = pct(inp, (size_t)reps, 0.5);
			printf("  %-18s %14.1f %14.1f %16.1f\n", pols[p], a, b, a - b);
		}
		free(e2e);
		free(inp);
	}
	free(msg);
	tuner_comm_close(comm);
	free(swap);
	free(recl);
	return 0;
}
