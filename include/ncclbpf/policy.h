/* ncclbpf policy SDK: everything a policy needs, for plain `clang -target bpf -O2 -g`.
 * No other header is required (not even libbpf's or the kernel's).
 *
 *   #include <ncclbpf/policy.h>
 *   SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx) { ... return 0; }
 *   char LICENSE[] SEC("license") = "Dual BSD/GPL";
 *
 * Context layouts here are the ABI between policies and the plugin; the verifier's hook
 * tables (src/verifier/hooks.c) describe the same offsets and which fields are writable.
 * Fields are only ever appended.
 */
#ifndef NCCLBPF_POLICY_H
#define NCCLBPF_POLICY_H

#ifdef __bpf__
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
#else
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int8_t __s8;
typedef int16_t __s16;
typedef int32_t __s32;
typedef int64_t __s64;
#endif

/* ---- NCCL constants (identical in NCCL 2.21 .. 2.32) ---- */
#define NCCLBPF_COLL_BROADCAST 0
#define NCCLBPF_COLL_REDUCE 1
#define NCCLBPF_COLL_ALLGATHER 2
#define NCCLBPF_COLL_REDUCESCATTER 3
#define NCCLBPF_COLL_ALLREDUCE 4
#define NCCLBPF_NUM_COLLS 5

#define NCCLBPF_ALGO_KEEP (-1) /* keep NCCL's choice */
#define NCCLBPF_ALGO_TREE 0
#define NCCLBPF_ALGO_RING 1
#define NCCLBPF_ALGO_COLLNET_DIRECT 2
#define NCCLBPF_ALGO_COLLNET_CHAIN 3
#define NCCLBPF_ALGO_NVLS 4
#define NCCLBPF_ALGO_NVLS_TREE 5
#define NCCLBPF_ALGO_PAT 6
#define NCCLBPF_NUM_ALGOS 7
/* Profiler only (what NCCL ran, never a tuner choice): NCCL 2.31's symmetric-memory kernels,
 * which report their kernel variant instead of an algorithm and no protocol. */
#define NCCLBPF_ALGO_SYMMETRIC 16

#define NCCLBPF_PROTO_KEEP (-1) /* keep NCCL's choice */
#define NCCLBPF_PROTO_LL 0
#define NCCLBPF_PROTO_LL128 1
#define NCCLBPF_PROTO_SIMPLE 2
#define NCCLBPF_NUM_PROTOS 3

#define NCCLBPF_CHANNELS_KEEP 0 /* keep NCCL's channel count */
#define NCCLBPF_MAX_CHANNELS 64

/* ---- tuner hook: SEC("tuner"), called for every collective NCCL schedules ---- */
struct ncclbpf_tuner_ctx {
	/* inputs (read-only) */
	__u64 comm_id;       /*   0: NCCL's commHash (0 with tuner ABI v3/v4)      rank-invariant */
	__u64 n_bytes;       /*   8: bytes of the (aggregated) collective          rank-invariant */
	__u64 seq;           /*  16: calls so far on this comm for this coll type  rank-invariant */
	__u32 coll_type;     /*  24: NCCLBPF_COLL_*                                rank-invariant */
	__u32 n_ranks;       /*  28                                                rank-invariant */
	__u32 n_nodes;       /*  32                                                rank-invariant */
	__u32 num_pipe_ops;  /*  36: NCCL's ops-per-channel estimate               rank-invariant */
	__u32 reg_buff;      /*  40: 1 if buffers are registered                   rank-local */
	__u32 max_channels;  /*  44: comm channel count if learned, else 0        rank-local */
	__u32 avail_mask;    /*  48: bit (algo*3+proto) set if NCCL allows it      rank-invariant */
	__u32 abi_version;   /*  52: tuner ABI NCCL bound (3..7)                   rank-invariant */
	float cost[NCCLBPF_NUM_ALGOS][NCCLBPF_NUM_PROTOS]; /* 56: NCCL's estimate, µs, -1 = unavailable */
	/* outputs (read-write; start as KEEP, or as the previous program's decision) */
	__s32 algo;          /* 140: NCCLBPF_ALGO_* or NCCLBPF_ALGO_KEEP */
	__s32 proto;         /* 144: NCCLBPF_PROTO_* or NCCLBPF_PROTO_KEEP */
	__s32 n_channels;    /* 148: 1..64, or NCCLBPF_CHANNELS_KEEP */
	/* input (read-only, rank-invariant): collectives tuned so far on this communicator,
	 * all collective types together (0 for the first). One NCCL collective advances it
	 * by exactly one on every rank. Epochs of agreed maps and the activation of their
	 * published versions are counted in it (docs/agreement.md). */
	__u64 comm_seq;      /* 152 */
	/* appended (issue 15): what tuner init passes, 0 = unknown (tuner ABI v3/v4) */
	__u32 n_nvl_domains;            /* 160: NVLink domains (= nNodes, MNNVL: domains)  rank-invariant */
	__u32 min_ranks_per_nvl_domain; /* 164                                             rank-invariant */
	__u32 max_ranks_per_nvl_domain; /* 168                                             rank-invariant */
	__u32 ranks_per_node;           /* 172: n_ranks / n_nodes if even, else 0          rank-invariant */
	/* appended (issue 22): collectives tuned so far on this communicator with the same
	 * coll_type and size band (ncclbpf_size_bucket(n_bytes)), 0 for the first. A band's own
	 * clock: it advances by one per collective of the band, whatever else runs between
	 * them, on every rank alike. */
	__u64 band_seq;                 /* 176                                             rank-invariant */
	/* appended (issue 25): the NCCL release the plugin runs in, major*10000 + minor*100 +
	 * patch (23206 = 2.32.6), 0 = unknown (NCCL's ncclGetVersion not reachable from the
	 * plugin). The tuner ABI alone cannot tell 2.30 from 2.31 (both bind v6), whose
	 * selection rules differ (docs/writing-policies.md).          rank-invariant */
	__u32 nccl_version;             /* 184 */
	__u32 _pad0;                    /* 188 */
};                           /* 192 bytes */

/* Cost entries are floats; BPF has no FPU. Compare their bit patterns: for non-negative
 * IEEE-754 floats the order of the bits as unsigned integers is the order of the values. */
#define NCCLBPF_COST_BITS(ctx, a, p) (((const __u32 *)(ctx)->cost)[(a) * NCCLBPF_NUM_PROTOS + (p)])
#define NCCLBPF_AVAILABLE(ctx, a, p) (((ctx)->avail_mask >> ((a) * NCCLBPF_NUM_PROTOS + (p))) & 1)

/* ---- tuner chunk hook: SEC("tuner/chunk"), tuner ABI v6 (NCCL 2.30) getChunkSize ---- */
struct ncclbpf_chunk_ctx {
	__u64 comm_id;    /*  0 */
	__u64 n_bytes;    /*  8: segment bytes (see NCCL: per channel segment) */
	__u32 coll_type;  /* 16 */
	__s32 algo;       /* 20 */
	__s32 proto;      /* 24 */
	__s32 n_channels; /* 28 */
	__u64 chunk_size; /* 32: in: NCCL's chunk size; out: the policy's (>= protocol grain) */
};                        /* 40 bytes */

/* ---- tuner init hook: SEC("tuner/init"), once per communicator when NCCL initializes the
 * tuner (tuner ABI v5+, NCCL 2.28+), after an inner plugin (NCCLBPF_TUNER_INNER) ---- */
#define NCCLBPF_NUM_COMPCAPS 4 /* compute-capability rows of the five tables below (v5/v6) */
/* Rows of NCCL's bandwidth tables (NCCL's compcap index: the smallest compute capability of
 * the communicator's GPUs). Rows 0..3 are in the tables below on every ABI version; row 4
 * (Rubin, tuner ABI v7, NCCL 2.32+) only in compcap4_bw_mbps, appended, so that a program
 * written for four rows can never write the fifth by indexing past a table. */
#define NCCLBPF_COMPCAP_VOLTA 0
#define NCCLBPF_COMPCAP_AMPERE 1
#define NCCLBPF_COMPCAP_HOPPER 2
#define NCCLBPF_COMPCAP_BLACKWELL 3
#define NCCLBPF_COMPCAP_RUBIN 4
/* The five bandwidth tables, in NCCL's order (first index of compcap4_bw_mbps). */
#define NCCLBPF_BW_LL_MAX 0
#define NCCLBPF_BW_RING_LL128 1
#define NCCLBPF_BW_TREE_LL128 2
#define NCCLBPF_BW_TREE 3
#define NCCLBPF_BW_NVLS_TREE 4
#define NCCLBPF_NUM_BW_TABLES 5
#define NCCLBPF_NUM_HW 3       /* hardware rows of the latency table: NVLink, PCI, network */
/* NCCL's tuning constants (ncclTunerConstants_v5, doubles in µs and GB/s) as integers: BPF
 * has no floating point. Writable, within bounds the plugin checks when converting back:
 * latencies 0..NCCLBPF_MAX_LATENCY_NS, bandwidths 0..NCCLBPF_MAX_BW_MBPS; an entry outside
 * keeps NCCL's value (counted, logged once). Entries left unchanged keep NCCL's exact double.
 * Every rank must write the same values (all fields are rank-invariant). */
#define NCCLBPF_MAX_LATENCY_NS 10000000u /* 10 ms */
#define NCCLBPF_MAX_BW_MBPS 10000000u    /* 10 TB/s */
struct ncclbpf_tuner_init_ctx {
	__u64 comm_id;                  /*   0 */
	__u32 n_ranks;                  /*   8 */
	__u32 n_nodes;                  /*  12 */
	__u32 n_nvl_domains;            /*  16 */
	__u32 min_ranks_per_nvl_domain; /*  20 */
	__u32 max_ranks_per_nvl_domain; /*  24 */
	__u32 abi_version;              /*  28 */
	__u32 base_latency_ns[NCCLBPF_NUM_ALGOS][NCCLBPF_NUM_PROTOS];                /*  32 */
	__u32 hw_latency_ns[NCCLBPF_NUM_HW][NCCLBPF_NUM_ALGOS][NCCLBPF_NUM_PROTOS];  /* 116 */
	__u32 ll_max_bw_mbps[NCCLBPF_NUM_COMPCAPS][3];                               /* 368 */
	__u32 per_ch_max_ring_ll128_bw_mbps[NCCLBPF_NUM_COMPCAPS][3];                /* 416 */
	__u32 per_ch_max_tree_ll128_bw_mbps[NCCLBPF_NUM_COMPCAPS][3];                /* 464 */
	__u32 per_ch_max_tree_bw_mbps[NCCLBPF_NUM_COMPCAPS][3];                      /* 512 */
	__u32 per_ch_max_nvls_tree_bw_mbps[NCCLBPF_NUM_COMPCAPS][3];                 /* 560 */
	/* appended (issue 25): compute-capability rows NCCL's constants have: 4 (tuner ABI
	 * v5/v6) or 5 (v7, NCCL 2.32+). Read-only. */
	__u32 n_compcaps;                                                            /* 608 */
	/* Row NCCLBPF_COMPCAP_RUBIN (4) of each bandwidth table, [NCCLBPF_BW_*][scale]:
	 * NCCL's values on v7; all 0 on v5/v6, where a write here is ignored (counted, logged
	 * once: NCCL has no such row). Same bounds and rules as the tables above. */
	__u32 compcap4_bw_mbps[NCCLBPF_NUM_BW_TABLES][3];                            /* 612 */
};                                                                               /* 672 bytes */

/* ---- profiler hook: SEC("profiler"), once per completed collective (read-only) ---- */
struct ncclbpf_profiler_ctx {
	__u64 comm_id;     /*  0 */
	__u64 seq;         /*  8: per-comm collective sequence number (NCCL's seqNumber) */
	__u64 n_bytes;     /* 16 */
	__u64 start_ns;    /* 24: enqueue time, CLOCK_MONOTONIC ns (same clock on a node) */
	__u64 host_ns;     /* 32: enqueue-to-completion, host clock */
	__u64 gpu_ns;      /* 40: GPU execution (kernel-channel timestamps), 0 if unknown */
	__u32 coll_type;   /* 48: NCCLBPF_COLL_* */
	__s32 algo;        /* 52: what NCCL ran */
	__s32 proto;       /* 56 */
	__u32 n_channels;  /* 60 */
	__u32 rank;        /* 64 */
	__u32 n_ranks;     /* 68 */
	__u32 n_nodes;     /* 72 */
	__u32 size_bucket; /* 76: ncclbpf_size_bucket(n_bytes) */
	/* appended (issue 15) */
	__u64 user_tag;    /* 80: ncclCollConfig_t.userProfilerTag (profiler v7, NCCL 2.31+), 0 = none */
	__u32 flags;       /* 88: NCCLBPF_PROF_F_* */
	__u32 _pad;        /* 92 */
	/* appended (issue 22): where the collective stands in the communicator's sequence, and
	 * its GPU interval on the host clock */
	__u64 comm_seq;     /*  96: collectives of the communicator started before this one, all
			     *      types (the tuner's comm_seq when NCCL tuned every collective) */
	__u64 band_seq;     /* 104: of those, with the same coll_type and size_bucket (the
			     *      tuner's band_seq) */
	__u64 gpu_start_ns; /* 112: the kernel's start (earliest KernelCh start), CLOCK_MONOTONIC
			     *      ns like start_ns; 0 unless NCCLBPF_PROF_F_GPU_TIMED */
	__u64 gpu_end_ns;   /* 120: its end (latest KernelCh stop), same clock; 0 unless timed */
	__u64 api_ns;       /* 128: when the application called NCCL for it (its group's start,
			     *      profiler v5+), same clock; 0 = unknown. start_ns comes later:
			     *      NCCL starts the Coll event after launching the kernel */
	/* appended (issue 25): NCCL 2.31+ kernel phases (profiler v7 KernelPhase events, when
	 * requested: NCCLBPF_PROFILE_PHASES=1 or full mode; docs/observability.md), GPU ns,
	 * the slowest channel of each; 0 = not measured. 0: initial sync (the kernel waiting
	 * for its peers to arrive: skew between ranks), 1: compute (moving and reducing data),
	 * 2: final sync (waiting for the peers to finish). */
	__u64 phase_ns[3];  /* 136 */
};                          /* 160 bytes */
#define NCCLBPF_PROF_F_GPU_TIMED 0x1u /* gpu_ns comes from KernelCh timestamps (sampled) */
#define NCCLBPF_PROF_F_SYMMETRIC 0x2u /* a symmetric kernel ran (algo = NCCLBPF_ALGO_SYMMETRIC) */
#define NCCLBPF_PROF_F_PHASES 0x4u    /* phase_ns comes from KernelPhase events */
#define NCCLBPF_PHASE_INITIAL_SYNC 0
#define NCCLBPF_PHASE_COMPUTE 1
#define NCCLBPF_PHASE_FINAL_SYNC 2

/* ---- sampling requests: the pinned array "ncclbpf_sample_ctl" (NCCLBPF_SAMPLE_CTL_MAP),
 * one __u32 per size band (ncclbpf_size_bucket(n_bytes), 0..64), written by profiler
 * programs, read by the profiler's KernelCh sampler of every communicator of the process
 * (docs/observability.md): 0 = the sampler's default; otherwise the first B of every N
 * collectives of the band carry KernelCh (GPU time), and so do the collectives before and
 * after each of them, so that a program can time completion to completion or kernel start
 * to kernel start. Rank-local: sampling
 * changes what is measured, never what NCCL runs. */
#define NCCLBPF_SAMPLE_EVERY 1u                                   /* every collective */
#define NCCLBPF_SAMPLE_BURST(n, b) ((__u32)(n) | ((__u32)(b) << 16)) /* first b of every n */

/* ---- net hook: SEC("net"), the net plugin (ncclNetPlugin_v10..v12, docs/net.md) ----
 * Runs at connect / accept (op CONNECT / ACCEPT), when NCCL posts a send or receive (ISEND /
 * IRECV), when one completes (SEND_DONE / RECV_DONE, with its duration) and at close (CLOSE:
 * bytes = total of the connection, duration_ns = its lifetime). Everything is rank-local: a
 * net program steers only this process's sockets and fills maps. */
#define NCCLBPF_NET_OP_ISEND 0
#define NCCLBPF_NET_OP_IRECV 1
#define NCCLBPF_NET_OP_SEND_DONE 2
#define NCCLBPF_NET_OP_RECV_DONE 3
#define NCCLBPF_NET_OP_CONNECT 4
#define NCCLBPF_NET_OP_ACCEPT 5
#define NCCLBPF_NET_OP_CLOSE 6
#define NCCLBPF_NET_MODE_TCP 0  /* own TCP transport */
#define NCCLBPF_NET_MODE_WRAP 1 /* NCCLBPF_NET_INNER plugin */
#define NCCLBPF_NET_MAX_SOCKETS 16
#define NCCLBPF_NET_MAX_THREADS 16

struct ncclbpf_net_ctx {
	__u64 comm_id;     /*  0: NCCL's commId of the net context (0 with net ABI v10) */
	__u64 bytes;       /*  8: ISEND: size; IRECV: sum of the buffer sizes; *_DONE: bytes
			    *     moved; CLOSE: total bytes of the connection (of the
			    *     requests posted while programs were attached) */
	__u32 op;          /* 16: NCCLBPF_NET_OP_* */
	__u32 dev;         /* 20: net device index */
	__s32 peer;        /* 24: -1 (NCCL's net ABI does not name the peer rank) */
	__s32 tag;         /* 28: message tag (IRECV / RECV_DONE: of the first buffer), -1 else */
	__u64 now_ns;      /* 32: CLOCK_MONOTONIC */
	__u32 verdict;     /* 40: writable, reserved (ignored) */
	__u32 _pad;        /* 44 */
	__u64 conn_id;     /* 48: process-unique connection id (map key); each side has its own */
	__u64 duration_ns; /* 56: *_DONE: post to completion; CLOSE: lifetime; else 0 */
	__u32 n_sockets;   /* 64: data sockets of the connection. CONNECT (tcp mode): writable,
			    *     0..16 (0 = everything on the control socket) */
	__u32 n_threads;   /* 68: worker threads. CONNECT (tcp mode): writable, 1..16 */
	__u32 n_recv;      /* 72: IRECV / RECV_DONE: grouped receives (1..8); 1 for sends */
	__u32 abi_version; /* 76: ncclNetPlugin version NCCL bound (10, 11, 12) */
	__u32 mode;        /* 80: NCCLBPF_NET_MODE_* */
	__u32 _pad2;       /* 84 */
};                         /* 88 bytes */

/* ---- env hook: SEC("env"), the env plugin's getEnv (docs/env.md) ----
 * Runs when NCCL asks for a variable that NCCLBPF_ENV_FILE lists (at least one candidate
 * for this host). value_index picks the candidate (0 = first listed); -1 keeps the default
 * (the last listed line, or the process environment when it wins, see docs/env.md). */
#define NCCLBPF_ENV_MAX_CANDIDATES 8
struct ncclbpf_env_ctx {
	char name[64];     /*  0: variable NCCL asks for, NUL-terminated (truncated at 63) */
	__u64 name_hash;   /* 64: FNV-1a 64 of the whole name */
	__s32 value_index; /* 72: writable: candidate to return, -1 = default */
	__u32 _pad;        /* 76 */
	__u32 nccl_version; /* 80: major*10000 + minor*100 + patch (22809 = 2.28.9) */
	__u32 n_candidates; /* 84: values the file lists for this host (1..8) */
	__u64 host_hash;   /* 88: FNV-1a 64 of the host name */
	__u32 in_environment; /* 96: 1 when the process environment sets the variable */
	__u32 default_index;  /* 100: the candidate returned without a program */
	__s64 cand_num[NCCLBPF_ENV_MAX_CANDIDATES]; /* 104: candidates parsed as integers
						     * (strtoll, base 0); INT64_MIN if not */
};                         /* 168 bytes */

/* ---- branch-free arithmetic ----
 * The verifier walks every path of a program, and paths that leave different values in
 * registers still needed later do not merge: a run of if's that each update a running
 * result (keep the smaller, pick a bucket) multiplies the paths, and with them the
 * verification time (a histogram bucket written with five if's: up to 64 paths, ~2 ms).
 * These compute with ALU operations only: one path. ncclbpf_opaque's empty asm keeps the
 * optimizer from turning the arithmetic back into compares and branches. Unsigned, full
 * 64-bit range; bits are 0 or 1. */
static inline __attribute__((always_inline)) __u64 ncclbpf_opaque(__u64 x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}
#define NCCLBPF_NZ(a) ((ncclbpf_opaque((__u64)(a) | -(__u64)(a)) >> 63) & 1) /* a != 0 */
/* a < b: the borrow out of a - b */
#define NCCLBPF_LT(a, b)                                                                   \
	((ncclbpf_opaque((~(__u64)(a) & (__u64)(b)) |                                      \
			 (~((__u64)(a) ^ (__u64)(b)) & ((__u64)(a) - (__u64)(b)))) >> 63) & 1)
/* bit ? x : y */
#define NCCLBPF_SEL(bit, x, y)                                                             \
	((__u64)(y) ^ (((__u64)(x) ^ (__u64)(y)) & ncclbpf_opaque(-(__u64)(bit))))

/* Size buckets used by the built-in latency map: floor(log2(n_bytes)), 0 for 0 bytes.
 * Branch-free (one verifier path whatever the size). */
static inline __attribute__((always_inline)) __u32 ncclbpf_size_bucket(__u64 n)
{
	__u64 b = 0, t;
	t = NCCLBPF_NZ(n >> 32) << 5; n >>= t; b |= t;
	t = NCCLBPF_NZ(n >> 16) << 4; n >>= t; b |= t;
	t = NCCLBPF_NZ(n >> 8) << 3;  n >>= t; b |= t;
	t = NCCLBPF_NZ(n >> 4) << 2;  n >>= t; b |= t;
	t = NCCLBPF_NZ(n >> 2) << 1;  n >>= t; b |= t;
	b |= NCCLBPF_NZ(n >> 1);
	return (__u32)b;
}

/* ---- built-in latency statistics, filled by the profiler, read by tuner policies ---- */
struct ncclbpf_latency_key {
	__u64 comm_id;
	__u32 coll_type;
	__u32 size_bucket;
};
struct ncclbpf_latency_stats {
	__u64 count;
	__u64 last_ns;
	__u64 ewma_ns;   /* EWMA, alpha = 1/8 */
	__u64 min_ns;
	__u64 p99_ns;    /* streaming p99 estimate */
	__u64 n_channels_last; /* channel count of the last sample */
};

/* ---- agreed maps (docs/agreement.md) ----
 * An ARRAY map whose map_flags carry NCCLBPF_F_AGREED is agreed across the ranks of each
 * communicator. Every communicator has its own copy of it in two views:
 *  - the local contribution: what profiler programs (and the host) of this rank write;
 *  - the published view: what tuner programs read. At the end of every epoch of K
 *    collectives (counted in ctx->comm_seq) each rank ships its contribution to the
 *    communicator's leader (rank 0), which reduces the contributions of all ranks word by
 *    word (__u64 words; value_size must be a multiple of 8) and publishes version v,
 *    active from collective comm_seq S_v = (v + 1) * K on every rank. A tuner reading the
 *    map at comm_seq s sees exactly version floor(s / K) - 1 (version 0, all zeros, before
 *    that) - the same bytes on every rank - so the verifier treats loads from it as
 *    rank-invariant and rejects tuner writes to it.
 * An entry whose contribution is all zero bytes on a rank is "not contributed" by that
 * rank: MIN/MAX/MEAN/SUM are taken over the ranks that contributed it (0 if none).
 * Declare with map_flags = NCCLBPF_AGREED(op, log2_K):
 *
 *   struct {
 *           __uint(type, BPF_MAP_TYPE_ARRAY);
 *           __uint(max_entries, 320);
 *           __type(key, __u32);
 *           __type(value, struct my_stats);          // __u64 words only
 *           __uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 6)); // max over ranks, K = 64
 *   } lat SEC(".maps");
 */
#define NCCLBPF_F_AGREED (1U << 24)      /* map_flags bit: agreed map (ARRAY only) */
#define NCCLBPF_AGREE_OP_SHIFT 25        /* map_flags bits 25..27: reduce operation */
#define NCCLBPF_AGREE_OP_MASK 7U
#define NCCLBPF_AGREE_SUM 0              /* sum over contributing ranks (wraps mod 2^64) */
#define NCCLBPF_AGREE_MIN 1              /* unsigned minimum */
#define NCCLBPF_AGREE_MAX 2              /* unsigned maximum */
#define NCCLBPF_AGREE_MEAN 3             /* sum / number of contributing ranks (floor) */
#define NCCLBPF_AGREE_LEADER 4           /* the leader's (rank 0's) contribution */
#define NCCLBPF_AGREE_NUM_OPS 5
#define NCCLBPF_AGREE_EPOCH_SHIFT 28     /* map_flags bits 28..31: log2(K), K = 1 .. 32768 */
#define NCCLBPF_AGREE_EPOCH_MASK 15U
#define NCCLBPF_AGREED(op, log2_epoch)                                         \
	(NCCLBPF_F_AGREED | ((unsigned)(op) << NCCLBPF_AGREE_OP_SHIFT) |        \
	 ((unsigned)(log2_epoch) << NCCLBPF_AGREE_EPOCH_SHIFT))
#define NCCLBPF_AGREE_OP_OF(flags) (((flags) >> NCCLBPF_AGREE_OP_SHIFT) & NCCLBPF_AGREE_OP_MASK)
#define NCCLBPF_AGREE_EPOCH_OF(flags)                                          \
	(1U << (((flags) >> NCCLBPF_AGREE_EPOCH_SHIFT) & NCCLBPF_AGREE_EPOCH_MASK))

#ifdef __bpf__
/* ---- libbpf-compatible declaration macros ---- */
#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __array(name, val) typeof(val) *name[]
#define __always_inline inline __attribute__((always_inline))
#ifndef NULL
#define NULL ((void *)0)
#endif

/* kernel map-type numbers */
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
/* update flags */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2
#define BPF_F_RDONLY_PROG (1U << 7)
#define LIBBPF_PIN_BY_NAME 1

/* ---- helpers, kernel-compatible ids ---- */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
				   __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_trace_printk)(const char *fmt, __u32 fmt_size, ...) = (void *)6;
static __u32 (*bpf_get_prandom_u32)(void) = (void *)7;
/* Calls callback_fn(i, callback_ctx) for i = 0 .. nr_loops - 1 until it returns 1; returns
 * the iterations run, -EINVAL for flags != 0, -E2BIG for nr_loops > 1 << 23. The callback
 * is a static function returning 0 (continue) or 1 (stop); callback_ctx is a pointer to the
 * stack or a map value, or NULL. Verified once, whatever nr_loops (docs/verifier.md). */
static long (*bpf_loop)(__u32 nr_loops, void *callback_fn, void *callback_ctx,
			__u64 flags) = (void *)181;

/* bpf_printk("x=%d", x): logged through NCCL's logger at INFO in the TUNING subsystem
 * (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING), at most 50 lines a second. */
#define bpf_printk(fmt, ...)                                                   \
	({                                                                     \
		static const char ____fmt[] = fmt;                             \
		bpf_trace_printk(____fmt, sizeof(____fmt), ##__VA_ARGS__);     \
	})

/* Declares the built-in latency map in a tuner policy. Pinned by name: the plugin binds
 * it to the statistics the profiler maintains. */
#define NCCLBPF_LATENCY_MAP                                                    \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_HASH);                               \
		__uint(max_entries, 4096);                                     \
		__type(key, struct ncclbpf_latency_key);                       \
		__type(value, struct ncclbpf_latency_stats);                   \
		__uint(pinning, LIBBPF_PIN_BY_NAME);                           \
	} ncclbpf_latency SEC(".maps")

/* Declares the sampling-request map (NCCLBPF_SAMPLE_EVERY / NCCLBPF_SAMPLE_BURST above). */
#define NCCLBPF_SAMPLE_CTL_MAP                                                 \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                              \
		__uint(max_entries, 65);                                       \
		__type(key, __u32);                                            \
		__type(value, __u32);                                          \
		__uint(pinning, LIBBPF_PIN_BY_NAME);                           \
	} ncclbpf_sample_ctl SEC(".maps")
#endif /* __bpf__ */

#endif
