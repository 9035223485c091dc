/* Independent statement of what NCCL must end up running after the tuner shim applied a
 * policy's request (the rules of src/plugin/tuner.h, re-derived from the table NCCL built
 * and its selection rule, without the plugin's code). */
#ifndef NCCLBPF_TESTS_TUNER_ORACLE_H
#define NCCLBPF_TESTS_TUNER_ORACLE_H

#include "mock_nccl.h"

struct oracle_result {
	int algo, proto; /* what NCCL selects */
	int n_channels;  /* what *nChannels must hold (0 = NCCL's) */
	int discarded;   /* the request was invalid/unavailable */
};

/* 1 (default): tuner programs are attached and NCCLBPF_TUNER_SYM=pin, so a KEEP decision
 * pins NCCL's choice; 0: pass-through (no program), the table is untouched. */
extern int oracle_pinned;

/* coll: the collective type (the channel count of AllGather is never applied on NCCL
 * 2.29/2.30, which may use it unclamped for batched broadcasts). */
void oracle_expect(int release, int coll, const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
		   int req_algo, int req_proto, int req_channels,
		   struct oracle_result *out);

#endif
