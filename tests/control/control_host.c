/* control_host: a live mock NCCL host process for the control-plane tests. It loads the
 * plugin exactly as NCCL does (tests/mock_nccl), opens --comms communicators and keeps
 * making decisions on --threads threads (each thread serves its own communicators, as NCCL
 * serializes a communicator's calls), until its stdin closes. Then it finalizes every
 * communicator (the plugin removes its control socket) and exits 0.
 *
 *   control_host [--comms 4] [--threads 2] [--ranks 8] [--nccl 2.30] [--log FILE]
 *                [--pause-us 200]
 *
 * It prints "ready <pid>" once the communicators exist. --log FILE writes one line per
 * decision whose chosen (algo, proto, channels) differ from the previous one of that
 * communicator: "<comm> <seq> <algo> <proto> <channels>", for the multi-process tests. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_nccl.h"

#define MAX_COMMS 16

static struct mock_nccl nccl;
static struct mock_comm comms[MAX_COMMS];
static int n_comms = 4, n_threads = 2, pause_us = 200, n_ranks = 8;
static atomic_bool stop;
static atomic_ulong total_calls, failures;
static FILE *logf;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	static const size_t sizes[] = {1024, 65536, 4u << 20};
	struct {
		int algo, proto, nch;
		unsigned long seq;
	} last[MAX_COMMS];
	memset(last, 0xff, sizeof(last));
	for (int i = 0; i < MAX_COMMS; i++)
		last[i].seq = 0;
	while (!atomic_load(&stop)) {
		for (int c = id; c < n_comms; c += n_threads) {
			for (int k = 0; k < 16; k++) {
				float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
				size_t bytes = sizes[k % 3];
				mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, bytes, comms[c].n_ranks,
						comms[c].n_nodes);
				memcpy(t, before, sizeof(t));
				int nch = 0, a = -1, p = -1;
				char why[200];
				if (mock_comm_get_coll_info(&comms[c], 4, bytes, 1, 0, t, &nch) ||
				    mock_check_invariants(nccl.release, before, t, nch,
							  comms[c].nccl_channels, why, sizeof(why)))
					atomic_fetch_add(&failures, 1);
				mock_select(nccl.release, t, &a, &p);
				unsigned long seq = last[c].seq++;
				if (logf && bytes == 1024 &&
				    (a != last[c].algo || p != last[c].proto || nch != last[c].nch)) {
					pthread_mutex_lock(&log_lock);
					fprintf(logf, "0x%llx %lu %d %d %d\n",
						(unsigned long long)comms[c].comm_id, seq, a, p, nch);
					fflush(logf);
					pthread_mutex_unlock(&log_lock);
					last[c].algo = a;
					last[c].proto = p;
					last[c].nch = nch;
				}
				atomic_fetch_add(&total_calls, 1);
			}
		}
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int release = 230;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--comms"))
			n_comms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			n_threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--nccl"))
			release = mock_nccl_parse_release(argv[i + 1]);
		else if (!strcmp(argv[i], "--ranks"))
			n_ranks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pause-us"))
			pause_us = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--log"))
			logf = fopen(argv[i + 1], "w");
	}
	if (n_comms < 1 || n_comms > MAX_COMMS || n_threads < 1 || release < 0) {
		fprintf(stderr, "control_host: bad arguments\n");
		return 2;
	}
	if (mock_nccl_load_tuner(&nccl, release, "ncclbpf", 0)) {
		fprintf(stderr, "control_host: %s\n", nccl.err);
		return 2;
	}
	for (int c = 0; c < n_comms; c++) {
		/* the same commHash in every process of a job: the multi-process tests need it */
		if (mock_comm_init(&nccl, &comms[c], 0xc0117000ull + (uint64_t)c, n_ranks, 1)) {
			fprintf(stderr, "control_host: init of comm %d failed\n", c);
			return 2;
		}
	}
	pthread_t th[64];
	if (n_threads > 64)
		n_threads = 64;
	for (int i = 0; i < n_threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	atomic_store(&stop, true);
	for (int i = 0; i < n_threads; i++)
		pthread_join(th[i], NULL);
	for (int c = 0; c < n_comms; c++)
		mock_comm_finalize(&comms[c]);
	fprintf(stderr, "control_host: %lu calls, %lu invariant failures\n",
		atomic_load(&total_calls), atomic_load(&failures));
	if (logf)
		fclose(logf);
	return atomic_load(&failures) ? 1 : 0;
}
