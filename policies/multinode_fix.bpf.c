// SPDX-License-Identifier: BSD-3-Clause
/* multinode_fix: AllReduce across nodes, where NCCL's default choice is measurably slow.
 *
 * Intent: on 2 emulated nodes x 2 H200 (NCCL 2.28.9, socket transport between the nodes;
 * docs/results.md, "Emulated 2 nodes"), NCCL picks Ring for small and mid-size AllReduce
 * while Tree is faster: Tree/LL up to 16 KiB (1.3-1.6x), Tree/Simple from 32 KiB to 8 MiB
 * (1.1-1.6x). From 16 MiB on, Ring/Simple and Tree/Simple are within noise of each other
 * and the policy keeps NCCL's choice. Single-node communicators (n_nodes == 1) and every
 * other collective are left to NCCL entirely.
 *
 * Every decision depends only on rank-invariant inputs (coll_type, n_nodes, n_bytes), so
 * all ranks decide the same. If NCCL marked the requested pair unavailable (e.g. the user
 * set NCCL_ALGO=Ring), the plugin keeps NCCL's choice.
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int multinode_fix(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE || ctx->n_nodes < 2)
		return 0;
	if (ctx->n_bytes <= 16 * 1024) {
		ctx->algo = NCCLBPF_ALGO_TREE;
		ctx->proto = NCCLBPF_PROTO_LL;
	} else if (ctx->n_bytes <= 8 * 1024 * 1024) {
		ctx->algo = NCCLBPF_ALGO_TREE;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
