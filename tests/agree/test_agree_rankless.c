/* Members that cannot join their agreement group, in one process (docs/agreement.md
 * "Joining"). The multi-process view is tests/agree/run_agree.sh (no_profiler*, config_*);
 * here the tuner path alone. Each falls back from collective 0 - where the rest of its
 * group does, since nobody passes the join barrier without it - and never waits:
 *  - a multi-rank communicator whose rank NCCL never told (no profiler plugin);
 *  - a multi-rank communicator that finds all 256 registry slots taken;
 *  - (each in a child process: the configuration is read once per process) agreement off
 *    (NCCLBPF_AGREE=off), no rendezvous address, a rendezvous on another host without
 *    NCCLBPF_AGREE_SECRET. Before, such a rank read version 0 (zeros) and ran the policy
 *    while the others fell back (issue 23);
 *  - a one-rank communicator in the full registry: no state, version 0 (nothing to agree). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "test_util.h"

#define K 8 /* the agreed map's epoch: S_1 = 2 K */

static void expect_fallback_at_0(struct agree_comm *ac, const char *what)
{
	int bad = 0;
	for (uint64_t s = 0; s < 6 * K; s++) {
		enum agree_verdict want = AGREE_FALLBACK;
		if (agree_tuner_begin(ac, s) != want && bad++ < 3)
			fprintf(stderr, "%s: collective %llu: expected fallback\n", what,
				(unsigned long long)s);
		agree_tuner_end();
	}
	CHECK_EQ_U64(bad, 0);
}

static struct nb_map *agreed_map(void)
{
	char err[256];
	struct nb_map *m = NULL;
	struct nb_map_spec spec = {.name = "rl", .type = NB_MAP_TYPE_ARRAY, .key_size = 4,
				   .value_size = 8, .max_entries = 4,
				   .map_flags = NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 3)};
	CHECK(map_create(&spec, &m, err, sizeof(err)) == 0);
	return m;
}

/* A rank (rank 1 of 4, profiler present) under one agreement configuration, in a child:
 * exit 0 when it falls back from collective 0 without waiting. */
static int child_case(const char *agree, const char *secret)
{
	pid_t pid = fork();
	if (pid == 0) {
		unsetenv("MASTER_ADDR");
		unsetenv("MASTER_PORT");
		if (agree)
			setenv("NCCLBPF_AGREE", agree, 1);
		else
			unsetenv("NCCLBPF_AGREE");
		if (secret)
			setenv("NCCLBPF_AGREE_SECRET", secret, 1);
		else
			unsetenv("NCCLBPF_AGREE_SECRET");
		struct nb_map *m = agreed_map();
		agree_comm_profiler_open(0x61, 1, 4);
		struct agree_comm *ac = agree_comm_tuner_open(0x61, 4);
		int bad = 0;
		for (uint64_t s = 0; ac && s < 4 * K; s++) {
			bad += agree_tuner_begin(ac, s) != AGREE_FALLBACK;
			agree_tuner_end();
		}
		struct agree_stats st;
		agree_get_stats(&st);
		agree_comm_tuner_close(ac);
		agree_comm_profiler_close(0x61);
		map_free(m);
		_exit(!ac || bad || st.waits || st.fallbacks != 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

int main(void)
{
	CHECK_EQ_U64(child_case("off", NULL), 0);
	CHECK_EQ_U64(child_case(NULL, NULL), 0);             /* no address at all */
	CHECK_EQ_U64(child_case("192.0.2.1:29500", NULL), 0); /* another host, no secret */

	char addr[64];
	/* a port nobody answers on is fine: the hub is this process, no leader registers */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", 21000 + (int)(getpid() % 8000));
	setenv("NCCLBPF_AGREE", addr, 1);
	setenv("NCCLBPF_AGREE_WAIT_MS", "200", 1);
	unsetenv("NCCLBPF_DECISION_LOG");

	struct nb_map *m = agreed_map();

	/* no profiler: the rank stays unknown */
	struct agree_comm *ac = agree_comm_tuner_open(0x51, 4);
	CHECK(ac != NULL);
	expect_fallback_at_0(ac, "without a rank");
	agree_comm_tuner_close(ac);
	struct agree_stats st;
	agree_get_stats(&st);
	CHECK_EQ_U64(st.fallbacks, 1);
	CHECK_EQ_U64(st.waits, 0);

	/* the registry full of other communicators */
	for (uint64_t i = 0; i < AGREE_MAX_COMMS; i++)
		agree_comm_profiler_open(0x7000 + i, 0, 2);
	struct agree_comm *full = agree_comm_tuner_open(0x52, 4);
	CHECK(full != NULL);
	if (full)
		expect_fallback_at_0(full, "registry full");
	agree_comm_tuner_close(full);
	agree_get_stats(&st);
	CHECK_EQ_U64(st.fallbacks, 2);
	CHECK_EQ_U64(st.waits, 0);
	/* one rank: nobody to disagree with, no state needed (version 0, never a fallback) */
	struct agree_comm *one = agree_comm_tuner_open(0x53, 1);
	CHECK(one == NULL);
	for (uint64_t s = 0; s < 6 * K; s++) {
		CHECK(agree_tuner_begin(one, s) == AGREE_RUN);
		agree_tuner_end();
	}
	for (uint64_t i = 0; i < AGREE_MAX_COMMS; i++)
		agree_comm_profiler_close(0x7000 + i);
	agree_shutdown();
	map_free(m);
	TEST_DONE();
}
