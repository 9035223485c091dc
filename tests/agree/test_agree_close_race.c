/* Communicators closing while the agreement service drains the decision log
 * (NCCLBPF_DECISION_LOG): a tuner close (NCCL's thread) drains too, and the two used to take
 * the log's lock and the registry's in opposite orders - a close could wait forever on the
 * service thread, and NCCL with it (ThreadSanitizer: lock-order inversion, found on
 * test_tuner_mock's decision-log scenario). Threads open, decide on and close communicators
 * in a loop while the service detaches the closed ones; a watchdog fails the test instead
 * of letting a deadlock hang CI: when no worker finished a round for 60 s (a bound on the
 * total run time was a verdict on speed: under ASan with two busy loops the rounds took
 * 52 s, and a run with every check passed was cut at 60 s). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "runtime/decision_src.h"
#include "test_util.h"

#define THREADS 4
#define ROUNDS 400

/* communicators that got a log ring: when closed ones wait for the service to release
 * their registry slots, later ones may find none (and log nothing, as documented) */
static atomic_long logged_comms;
static atomic_long rounds_done; /* progress, for the watchdog */
static atomic_bool workers_done;

static void *worker(void *arg)
{
	long t = (long)arg;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t id = 0xc105e000ull + (uint64_t)t * 100000 + (uint64_t)r;
		struct agree_comm *ac = agree_comm_tuner_open(id, 8);
		if (ac && ac->log_ring)
			atomic_fetch_add(&logged_comms, 1);
		for (uint64_t s = 0; s < 8; s++)
			agree_log_decision(ac, s, 4, 4096, 1, 2, 0, NB_DSRC_POLICY, 0);
		agree_comm_tuner_close(ac);
		atomic_fetch_add(&rounds_done, 1);
		if (r % 16 == 0)
			usleep(200); /* let the service pass in between */
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	long last = -1;
	int still = 0;
	while (!atomic_load(&workers_done)) {
		sleep(1);
		long now = atomic_load(&rounds_done);
		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= 60) {
			fprintf(stderr, "test_agree_close_race: no round finished in 60 s "
				"(deadlock; %ld of %d done)\n", now, THREADS * ROUNDS);
			_exit(1);
		}
	}
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/nbclose-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	setenv("NCCLBPF_DECISION_LOG", dir, 1);
	unsetenv("NCCLBPF_AGREE");
	pthread_t wd, th[THREADS];
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_detach(wd);
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (long t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	atomic_store(&workers_done, true); /* what follows is bounded by CTest's timeout */
	/* every decision of a logged communicator reached the log (the closes drained them) */
	long want = atomic_load(&logged_comms) * 8;
	CHECK(want > 0);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "test $(cat %s/* | grep -c '\"seq\"') -eq %ld", dir, want);
	CHECK(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	TEST_DONE();
}
