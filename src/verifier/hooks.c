/* Hook tables: for each hook type the context layout (offset, size, read/write, variance),
 * the helpers it may call and its limits. Offsets mirror include/ncclbpf/policy.h; the
 * static asserts below keep the two in step.
 */
#include <stddef.h>
#include <string.h>

#include "ncclbpf/policy.h"
#include "verifier/hooks.h"

#define RO(n, t, v) { #n, offsetof(t, n), sizeof(((t *)0)->n), true, false, v }
#define RW(n, t, v) { #n, offsetof(t, n), sizeof(((t *)0)->n), true, true, v }
#define INV NB_RANK_INVARIANT
#define LOC NB_RANK_LOCAL

_Static_assert(sizeof(struct ncclbpf_tuner_ctx) == 192, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, band_seq) == 176, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, algo) == 140, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, comm_seq) == 152, "tuner ctx layout");
_Static_assert(sizeof(struct ncclbpf_chunk_ctx) == 40, "chunk ctx layout");
_Static_assert(sizeof(struct ncclbpf_profiler_ctx) == 160, "profiler ctx layout");
_Static_assert(offsetof(struct ncclbpf_profiler_ctx, comm_seq) == 96, "profiler ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, nccl_version) == 184, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_profiler_ctx, phase_ns) == 136, "profiler ctx layout");
_Static_assert(sizeof(struct ncclbpf_net_ctx) == 88, "net ctx layout");
_Static_assert(sizeof(struct ncclbpf_env_ctx) == 168, "env ctx layout");

#define TCTX struct ncclbpf_tuner_ctx
static const struct nb_ctx_field tuner_fields[] = {
	RO(comm_id, TCTX, INV),     RO(n_bytes, TCTX, INV),      RO(seq, TCTX, INV),
	RO(coll_type, TCTX, INV),   RO(n_ranks, TCTX, INV),      RO(n_nodes, TCTX, INV),
	RO(num_pipe_ops, TCTX, INV), RO(reg_buff, TCTX, LOC),    RO(max_channels, TCTX, LOC),
	RO(avail_mask, TCTX, INV),  RO(abi_version, TCTX, INV),  RO(cost, TCTX, INV),
	RO(comm_seq, TCTX, INV),
	/* outputs: the decision must be the same on every rank (hook_output_rank_invariant:
	 * the verifier rejects one derived from rank-local data) */
	RW(algo, TCTX, INV),        RW(proto, TCTX, INV),        RW(n_channels, TCTX, INV),
	/* appended (issue 15): NVLink-domain info and shape from tuner init */
	RO(n_nvl_domains, TCTX, INV), RO(min_ranks_per_nvl_domain, TCTX, INV),
	RO(max_ranks_per_nvl_domain, TCTX, INV), RO(ranks_per_node, TCTX, INV),
	RO(band_seq, TCTX, INV), /* appended (issue 22) */
	/* appended (issue 25): the NCCL release (the same library on every rank) */
	RO(nccl_version, TCTX, INV),
};

_Static_assert(sizeof(struct ncclbpf_tuner_init_ctx) == 672, "tuner init ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, per_ch_max_nvls_tree_bw_mbps) == 560,
	       "tuner init ctx layout");

#define CCTX struct ncclbpf_chunk_ctx
static const struct nb_ctx_field chunk_fields[] = {
	RO(comm_id, CCTX, INV),  RO(n_bytes, CCTX, INV), RO(coll_type, CCTX, INV),
	RO(algo, CCTX, INV),     RO(proto, CCTX, INV),   RO(n_channels, CCTX, INV),
	RW(chunk_size, CCTX, INV), /* output: must be the same on every rank */
};

#define PCTX struct ncclbpf_profiler_ctx
static const struct nb_ctx_field profiler_fields[] = {
	RO(comm_id, PCTX, LOC),  RO(seq, PCTX, LOC),         RO(n_bytes, PCTX, LOC),
	RO(start_ns, PCTX, LOC), RO(host_ns, PCTX, LOC),     RO(gpu_ns, PCTX, LOC),
	RO(coll_type, PCTX, LOC), RO(algo, PCTX, LOC),       RO(proto, PCTX, LOC),
	RO(n_channels, PCTX, LOC), RO(rank, PCTX, LOC),      RO(n_ranks, PCTX, LOC),
	RO(n_nodes, PCTX, LOC),  RO(size_bucket, PCTX, LOC),
	RO(user_tag, PCTX, LOC), RO(flags, PCTX, LOC), /* appended (issue 15) */
	RO(comm_seq, PCTX, LOC), RO(band_seq, PCTX, LOC),   /* appended (issue 22) */
	RO(gpu_start_ns, PCTX, LOC), RO(gpu_end_ns, PCTX, LOC), RO(api_ns, PCTX, LOC),
	RO(phase_ns, PCTX, LOC), /* appended (issue 25) */
};

#define NCTX struct ncclbpf_net_ctx
static const struct nb_ctx_field net_fields[] = {
	RO(comm_id, NCTX, LOC), RO(bytes, NCTX, LOC), RO(op, NCTX, LOC),
	RO(dev, NCTX, LOC),     RO(peer, NCTX, LOC),  RO(tag, NCTX, LOC),
	RO(now_ns, NCTX, LOC),  RW(verdict, NCTX, LOC),
	/* net plugin (docs/net.md): all rank-local; n_sockets/n_threads are read at CONNECT */
	RO(conn_id, NCTX, LOC), RO(duration_ns, NCTX, LOC), RW(n_sockets, NCTX, LOC),
	RW(n_threads, NCTX, LOC), RO(n_recv, NCTX, LOC), RO(abi_version, NCTX, LOC),
	RO(mode, NCTX, LOC),
};

#define ECTX struct ncclbpf_env_ctx
static const struct nb_ctx_field env_fields[] = {
	/* output: the candidate NCCL gets for a variable it reads on every rank; ranks that
	 * pick differently for NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE ... hang or corrupt the
	 * job, so the pick must not depend on rank-local data (docs/env.md, issue 24) */
	RO(name, ECTX, INV), RO(name_hash, ECTX, INV), RW(value_index, ECTX, INV),
	/* The file's candidates (their count, numbers and the default, the last one) are the
	 * same on every host unless the file itself lists host-specific values ([host ...]
	 * sections): that difference is the operator's, written in the file, so they count as
	 * invariant. The host name and the process environment are rank-local. */
	RO(nccl_version, ECTX, INV), RO(n_candidates, ECTX, INV), RO(host_hash, ECTX, LOC),
	RO(in_environment, ECTX, LOC), RO(default_index, ECTX, INV), RO(cand_num, ECTX, INV),
};

#define A NB_ARG_ANYTHING
#define MAP NB_ARG_CONST_MAP_PTR
#define KEY NB_ARG_PTR_TO_MAP_KEY
#define VAL NB_ARG_PTR_TO_MAP_VALUE
#define MEM NB_ARG_PTR_TO_MEM
#define SZ NB_ARG_CONST_SIZE

#define H_LOOKUP { NB_HELPER_MAP_LOOKUP_ELEM, "bpf_map_lookup_elem", NB_RET_MAP_VALUE_OR_NULL, { MAP, KEY }, false }
/* update/delete results reveal presence and capacity, which are per-rank state */
#define H_UPDATE { NB_HELPER_MAP_UPDATE_ELEM, "bpf_map_update_elem", NB_RET_INTEGER, { MAP, KEY, VAL, A }, true }
#define H_DELETE { NB_HELPER_MAP_DELETE_ELEM, "bpf_map_delete_elem", NB_RET_INTEGER, { MAP, KEY }, true }
#define H_KTIME { NB_HELPER_KTIME_GET_NS, "bpf_ktime_get_ns", NB_RET_INTEGER, { 0 }, true }
/* variadic arguments r3..r5: numbers, as many as the format reads (verifier_helpers.c) */
#define H_PRINTK { NB_HELPER_TRACE_PRINTK, "bpf_trace_printk", NB_RET_INTEGER, { MEM, SZ }, true }
#define H_PRANDOM { NB_HELPER_GET_PRANDOM_U32, "bpf_get_prandom_u32", NB_RET_INTEGER, { 0 }, true }
/* checked by verifier_loop.c; the result is rank-local only through its arguments */
#define H_LOOP { NB_HELPER_LOOP, "bpf_loop", NB_RET_INTEGER, { A, NB_ARG_PTR_TO_FUNC, NB_ARG_PTR_TO_CB_CTX, A }, false }

static const struct nb_helper_proto policy_helpers[] = {
	H_LOOKUP, H_UPDATE, H_DELETE, H_KTIME, H_PRINTK, H_PRANDOM, H_LOOP,
};
static const struct nb_helper_proto io_helpers[] = {
	H_LOOKUP, H_UPDATE, H_DELETE, H_KTIME, H_PRINTK, H_LOOP,
};
static const struct nb_helper_proto conformance_helpers[] = {
	{ NB_HELPER_CONFORMANCE_IDENTITY, "identity", NB_RET_INTEGER, { A }, false },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
/* stack bytes per frame, program size limit, verifier processed-instruction budget */
#define POLICY_LIMITS 512, 4096, 1000000
/* Most instructions one run may execute (issue 24). A decision runs on NCCL's thread:
 * 10^6 instructions is about 1 ms in the JIT (tuner, profiler, net: per collective or per
 * transfer). tuner/init and env run once per communicator or variable: 10x that. */
#define RUN_LIMIT_PER_CALL 1000000
#define RUN_LIMIT_AT_INIT 10000000

static const struct nb_hook_desc hooks[NB_HOOK_COUNT] = {
	[NB_HOOK_CONFORMANCE] = { NB_HOOK_CONFORMANCE, "conformance", "conformance", 0, NULL, 0,
				  conformance_helpers, N(conformance_helpers), 512, 65536,
				  1000000, true, 0 /* conformance programs: no limit */ },
	[NB_HOOK_TUNER] = { NB_HOOK_TUNER, "tuner", "tuner", sizeof(struct ncclbpf_tuner_ctx),
			    tuner_fields, N(tuner_fields), policy_helpers, N(policy_helpers),
			    POLICY_LIMITS, false, RUN_LIMIT_PER_CALL },
	[NB_HOOK_TUNER_CHUNK] = { NB_HOOK_TUNER_CHUNK, "tuner/chunk", "tuner/chunk",
				  sizeof(struct ncclbpf_chunk_ctx), chunk_fields, N(chunk_fields),
				  policy_helpers, N(policy_helpers), POLICY_LIMITS, false,
				  RUN_LIMIT_PER_CALL },
	[NB_HOOK_PROFILER] = { NB_HOOK_PROFILER, "profiler", "profiler",
			       sizeof(struct ncclbpf_profiler_ctx), profiler_fields,
			       N(profiler_fields), policy_helpers, N(policy_helpers),
			       POLICY_LIMITS, false, RUN_LIMIT_PER_CALL },
	[NB_HOOK_NET] = { NB_HOOK_NET, "net", "net", sizeof(struct ncclbpf_net_ctx), net_fields,
			  N(net_fields), io_helpers, N(io_helpers), POLICY_LIMITS, false,
			  RUN_LIMIT_PER_CALL },
	[NB_HOOK_ENV] = { NB_HOOK_ENV, "env", "env", sizeof(struct ncclbpf_env_ctx), env_fields,
			  N(env_fields), io_helpers, N(io_helpers), POLICY_LIMITS, false,
			  RUN_LIMIT_AT_INIT },
	[NB_HOOK_TUNER_INIT] = { NB_HOOK_TUNER_INIT, "tuner/init", "tuner/init",
				 sizeof(struct ncclbpf_tuner_init_ctx), hook_tuner_init_fields,
				 NB_TUNER_INIT_FIELDS, policy_helpers, N(policy_helpers),
				 POLICY_LIMITS, false, RUN_LIMIT_AT_INIT },
};

const struct nb_hook_desc *hook_desc(enum nb_hook_type type)
{
	if ((unsigned)type >= NB_HOOK_COUNT)
		return NULL;
	return &hooks[type];
}

static bool section_matches(const char *section, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(section, prefix, n) != 0)
		return false;
	return section[n] == '\0' || section[n] == '/';
}

const struct nb_hook_desc *hook_for_section(const char *section)
{
	if (!section)
		return NULL;
	/* longest prefix first: "tuner/chunk" before "tuner" */
	const struct nb_hook_desc *best = NULL;
	size_t best_len = 0;
	for (int i = 0; i < NB_HOOK_COUNT; i++) {
		size_t n = strlen(hooks[i].section_prefix);
		if (section_matches(section, hooks[i].section_prefix) && n > best_len) {
			best = &hooks[i];
			best_len = n;
		}
	}
	return best;
}

const struct nb_hook_desc *hook_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (int i = 0; i < NB_HOOK_COUNT; i++)
		if (strcmp(hooks[i].name, name) == 0)
			return &hooks[i];
	return NULL;
}

const struct nb_helper_proto *hook_helper(const struct nb_hook_desc *hook, int32_t id)
{
	if (!hook)
		return NULL;
	for (size_t i = 0; i < hook->helper_cnt; i++)
		if (hook->helpers[i].id == id)
			return &hook->helpers[i];
	return NULL;
}

bool hook_output_rank_invariant(const struct nb_hook_desc *hook, const struct nb_ctx_field *f)
{
	/* every hook: the table's variance column is the rule (regression: only the tuner
	 * hooks were checked, so an env program could pick value_index = host_hash & 1) */
	return hook && f && f->writable && f->variance == NB_RANK_INVARIANT;
}

const struct nb_ctx_field *hook_ctx_field(const struct nb_hook_desc *hook, uint32_t off,
					  uint32_t size)
{
	if (!hook || size == 0)
		return NULL;
	for (size_t i = 0; i < hook->field_cnt; i++) {
		const struct nb_ctx_field *f = &hook->fields[i];
		if (off >= f->off && (uint64_t)off + size <= (uint64_t)f->off + f->size)
			return f;
	}
	return NULL;
}
