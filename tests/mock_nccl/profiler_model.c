/* Mock NCCL latency model: see profiler_model.h. */
#include "profiler_model.h"

#include "ncclbpf/policy.h"

uint64_t pm_latency_ns(uint64_t bytes, int algo, int proto, int n_channels, double c)
{
	static const double base_us[2][3] = {{8, 12, 20}, {10, 15, 25}}; /* tree, ring */
	static const double bw_per_ch[3] = {0.5, 1.6, 2.0};              /* bytes per ns */
	if (n_channels < 1)
		n_channels = 1;
	if (c < 1)
		c = 1;
	int a = algo == NCCLBPF_ALGO_TREE ? 0 : 1;
	int p = proto >= 0 && proto < 3 ? proto : NCCLBPF_PROTO_SIMPLE;
	double eff = algo == NCCLBPF_ALGO_TREE ? 0.8 : 1.0;
	double ch = n_channels;
	double t = base_us[a][p] * 1000.0 + c * (double)bytes / (ch * bw_per_ch[p] * eff) +
		   7000.0 * ch + (c - 1.0) * 60000.0 * ch * ch;
	return (uint64_t)t;
}
