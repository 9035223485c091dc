/* Members that cannot join their agreement group, in one process (docs/agreement.md "A rank
 * without the profiler plugin"). The multi-process view is tests/agree/run_agree.sh
 * (no_profiler, no_profiler_leader); here the tuner path alone:
 *  - a multi-rank communicator whose rank NCCL never told (no profiler plugin): version 0
 *    before S_1, NCCL's defaults from S_1 on - where the rest of its group falls back,
 *    since nothing commits without it - never waiting;
 *  - a multi-rank communicator that finds all 256 registry slots taken: the same (before,
 *    both read version 0 forever while the other ranks agreed or fell back);
 *  - a one-rank communicator in the full registry: no state, version 0 (nothing to agree). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "test_util.h"

#define K 8 /* the agreed map's epoch: S_1 = 2 K */

static void expect_fallback_at_s1(struct agree_comm *ac, const char *what)
{
	int bad = 0;
	for (uint64_t s = 0; s < 6 * K; s++) {
		enum agree_verdict want = s < 2 * K ? AGREE_RUN : AGREE_FALLBACK;
		if (agree_tuner_begin(ac, s) != want && bad++ < 3)
			fprintf(stderr, "%s: collective %llu: expected %s\n", what,
				(unsigned long long)s, want == AGREE_RUN ? "run" : "fallback");
		agree_tuner_end();
	}
	CHECK_EQ_U64(bad, 0);
}

int main(void)
{
	char addr[64];
	/* a port nobody answers on is fine: the hub is this process, no leader registers */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", 21000 + (int)(getpid() % 8000));
	setenv("NCCLBPF_AGREE", addr, 1);
	setenv("NCCLBPF_AGREE_WAIT_MS", "200", 1);
	unsetenv("NCCLBPF_DECISION_LOG");

	char err[256];
	struct nb_map *m = NULL;
	struct nb_map_spec spec = {.name = "rl", .type = NB_MAP_TYPE_ARRAY, .key_size = 4,
				   .value_size = 8, .max_entries = 4,
				   .map_flags = NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 3)};
	CHECK(map_create(&spec, &m, err, sizeof(err)) == 0);

	/* no profiler: the rank stays unknown */
	struct agree_comm *ac = agree_comm_tuner_open(0x51, 4);
	CHECK(ac != NULL);
	expect_fallback_at_s1(ac, "without a rank");
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
		expect_fallback_at_s1(full, "registry full");
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
