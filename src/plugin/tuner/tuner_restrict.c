/* Who restricted NCCL's choice, as far as the tuner can tell (issue 25).
 *
 * NCCL hands the tuner only a cost table. An algorithm/protocol it will not run is -1 there,
 * whatever the reason: the topology, NCCL_ALGO/NCCL_PROTO (2.27+), or - NCCL 2.31+ - the
 * application's per-call ncclCollConfig_t.algSelection. In 2.31 (src/enqueue.cc
 * ncclGetAlgoInfo, src/tuning/tuning.cc ncclTuningCompute / ncclTuningComputeAllTunings)
 * the per-call selection narrows the tuning mask before the candidates are computed, so a
 * candidate outside it is never filled in: its cell stays NCCL_TUNING_IGNORE (-1). An
 * environment-forced function (comm->tuningContext.forced) ignores the per-call selection;
 * the environment's exclusions are -1 cells too. The shim never raises a -1 cell, so a
 * policy can never override either; this file only tells which one kept a request out:
 * the environment when NCCL_ALGO/NCCL_PROTO (parsed like NCCL: per-function sections,
 * '^' exclusion lists, case-insensitive names) exclude it, else the table (the topology or
 * a per-call selection, which the tuner cannot tell apart).
 *
 * Parsed once per communicator at init (getenv; never on the decision path). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugin/env/env_plugin.h"
#include "plugin/tuner/tuner.h"

static const char *const algo_names[NCCLBPF_NUM_ALGOS] = {
	"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT",
};
static const char *const proto_names[NCCLBPF_NUM_PROTOS] = { "LL", "LL128", "Simple" };
static const char *const coll_names[NCCLBPF_NUM_COLLS] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
};

/* Bits of the names in tok (a comma list, optionally '^'-negated); -1 when a name is
 * unknown (NCCL then rejects the variable: treated as not restricting). */
static int name_bits(const char *tok, const char *const *names, int count, bool algo)
{
	bool neg = *tok == '^';
	if (neg)
		tok++;
	int bits = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", tok);
	for (char *save, *n = strtok_r(buf, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		while (*n == ' ')
			n++;
		int i;
		for (i = 0; i < count; i++)
			if (!strcasecmp(n, names[i]))
				break;
		if (i < count) {
			bits |= 1 << i;
		} else if (algo && !strcasecmp(n, "CollNet")) {
			bits |= 1 << NCCLBPF_ALGO_COLLNET_DIRECT | 1 << NCCLBPF_ALGO_COLLNET_CHAIN;
		} else if (*n) {
			return -1;
		}
	}
	int all = (1 << count) - 1;
	return neg ? all & ~bits : bits;
}

int tuner_env_allowed(const char *value, bool algo, uint32_t out[NCCLBPF_NUM_COLLS])
{
	int count = algo ? NCCLBPF_NUM_ALGOS : NCCLBPF_NUM_PROTOS;
	const char *const *names = algo ? algo_names : proto_names;
	uint32_t all = (1u << count) - 1;
	for (int c = 0; c < NCCLBPF_NUM_COLLS; c++)
		out[c] = all;
	if (!value || !*value)
		return 0;
	char buf[512];
	if (strlen(value) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", value);
	bool any = false;
	/* "list" for every function, or "func:list;func:list" sections */
	for (char *save, *sec = strtok_r(buf, ";", &save); sec; sec = strtok_r(NULL, ";", &save)) {
		char *colon = strchr(sec, ':');
		int target = -1;
		if (colon) {
			*colon = '\0';
			for (target = 0; target < NCCLBPF_NUM_COLLS; target++)
				if (!strcasecmp(sec, coll_names[target]))
					break;
			if (target == NCCLBPF_NUM_COLLS)
				continue; /* a function the tuner never sees (SendRecv, ...) */
		}
		int bits = name_bits(colon ? colon + 1 : sec, names, count, algo);
		if (bits < 0)
			return -1;
		for (int c = 0; c < NCCLBPF_NUM_COLLS; c++)
			if (target < 0 || target == c)
				out[c] = (uint32_t)bits;
		any = true;
	}
	return any ? 1 : 0;
}

void tuner_restrict_open(struct tuner_comm *tc)
{
	uint32_t a[NCCLBPF_NUM_COLLS], p[NCCLBPF_NUM_COLLS];
	/* as NCCL reads them: through the env plugin when it answers */
	int ra = tuner_env_allowed(env_plugin_lookup("NCCL_ALGO"), true, a);
	int rp = tuner_env_allowed(env_plugin_lookup("NCCL_PROTO"), false, p);
	for (int c = 0; c < NCCLBPF_NUM_COLLS; c++) {
		tc->env_algos[c] = ra > 0 ? a[c] : (1u << NCCLBPF_NUM_ALGOS) - 1;
		tc->env_protos[c] = rp > 0 ? p[c] : (1u << NCCLBPF_NUM_PROTOS) - 1;
	}
	tc->env_forced = ra > 0 || rp > 0;
}

enum tuner_restriction tuner_restriction_of(const struct tuner_comm *tc, int coll_type,
					    int algo, int proto)
{
	if (!tc || coll_type < 0 || coll_type >= NCCLBPF_NUM_COLLS)
		return TUNER_RESTRICT_TABLE;
	if (tc->env_forced &&
	    ((algo >= 0 && algo < NCCLBPF_NUM_ALGOS && !(tc->env_algos[coll_type] >> algo & 1)) ||
	     (proto >= 0 && proto < NCCLBPF_NUM_PROTOS &&
	      !(tc->env_protos[coll_type] >> proto & 1))))
		return TUNER_RESTRICT_ENV;
	return TUNER_RESTRICT_TABLE;
}

const char *tuner_restriction_name(enum tuner_restriction r)
{
	switch (r) {
	case TUNER_RESTRICT_ENV: return "NCCL_ALGO/NCCL_PROTO";
	case TUNER_RESTRICT_TABLE:
		return "unavailable in NCCL's table (topology, or the application's per-call "
		       "algSelection on NCCL 2.31+)";
	default: return "none";
	}
}

bool tuner_call_restricted(struct tuner_comm *tc, int coll_type, uint64_t n_bytes,
			   uint32_t avail_mask)
{
	if (!tc || coll_type < 0 || coll_type >= NCCLBPF_NUM_COLLS)
		return false;
	/* per-call configuration exists from 2.31 (tuner v7 implies 2.32) */
	if (!(tc->nccl_version >= 23100 || tc->abi_version >= 7))
		return false;
	/* ncclbpf_size_bucket (floor(log2), 0 for 0) in one instruction: the branch-free
	 * BPF version cost ~50 instructions per decision here */
	unsigned band = n_bytes > 1 ? 63u - (unsigned)__builtin_clzll(n_bytes) : 0u;
	uint32_t *seen = &tc->band_offered[coll_type][band];
	bool narrower = *seen && (avail_mask & ~*seen) == 0 && avail_mask != *seen;
	*seen |= avail_mask;
	return narrower;
}
