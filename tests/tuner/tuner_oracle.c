#include "tuner_oracle.h"

#include <float.h>

int oracle_pinned = 1;

void oracle_expect(int release, int coll, const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
		   int req_algo, int req_proto, int req_channels,
		   struct oracle_result *out)
{
	int da = -1, dp = -1;
	/* with tuner programs attached the shim pins NCCL's general choice (lowest index on
	 * exact ties, as <= 2.30 selects): under 2.31 that is what runs, too */
	mock_select(release >= 231 && oracle_pinned ? 230 : release, before, &da, &dp);
	out->algo = da;
	out->proto = dp;
	out->n_channels = 0;
	out->discarded = 0;

	int ok = req_algo >= -1 && req_algo < MOCK_NUM_ALGOS && req_proto >= -1 &&
		 req_proto < MOCK_NUM_PROTOS && req_channels >= 0;
	int a = -1, p = -1;
	if (ok && req_algo >= 0 && req_proto >= 0) {
		ok = before[req_algo][req_proto] >= 0.0f;
		a = req_algo;
		p = req_proto;
	} else if (ok && req_algo >= 0) {
		float best = FLT_MAX;
		for (int q = 0; q < MOCK_NUM_PROTOS; q++)
			if (before[req_algo][q] >= 0.0f && (p < 0 || before[req_algo][q] < best)) {
				best = before[req_algo][q];
				p = q;
			}
		ok = p >= 0;
		a = req_algo;
	} else if (ok && req_proto >= 0) {
		float best = FLT_MAX;
		for (int b = 0; b < MOCK_NUM_ALGOS; b++)
			if (before[b][req_proto] >= 0.0f && (a < 0 || before[b][req_proto] < best)) {
				best = before[b][req_proto];
				a = b;
			}
		ok = a >= 0;
		p = req_proto;
	}
	if (!ok) {
		out->discarded = 1;
		return;
	}
	if (a >= 0) {
		out->algo = a;
		out->proto = p;
	}
	/* channels: 1..64 on every rank; never when NCCL will run CollNet, nor for AllGather on
	 * 2.29/2.30 (batched broadcasts): NCCL uses the value unclamped there */
	if (req_channels > 0 && out->algo != 2 && out->algo != 3 &&
	    !(coll == 2 && (release == 229 || release == 230)))
		out->n_channels = req_channels > 64 ? 64 : req_channels;
}
