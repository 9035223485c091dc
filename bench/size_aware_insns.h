/* The size-aware tuner decision as 16 eBPF instructions on a struct ncclbpf_tuner_ctx:
 * algo/proto by n_bytes, 32 channels for large collectives on 8+ ranks. Shared by
 * bench/cpu_dispatch.c and bench/interp_vs_dpdk.c so both measure the same bytes. Needs
 * tests/isa/insn_build.h and an OFF(field) macro giving the context offset of a field. */
#ifndef NCCLBPF_BENCH_SIZE_AWARE_INSNS_H
#define NCCLBPF_BENCH_SIZE_AWARE_INSNS_H

#define BENCH_SIZE_AWARE_INSNS                                                 \
	LDX(BPF_DW, 2, 1, OFF(n_bytes)),                                       \
	JMP_K(BPF_JGT, 2, 65536, 3),                                           \
	ST(BPF_W, 1, OFF(algo), NCCLBPF_ALGO_TREE),                            \
	ST(BPF_W, 1, OFF(proto), NCCLBPF_PROTO_LL),                            \
	JA(9),                                                                 \
	JMP_K(BPF_JGT, 2, 1 << 22, 3),                                         \
	ST(BPF_W, 1, OFF(algo), NCCLBPF_ALGO_RING),                            \
	ST(BPF_W, 1, OFF(proto), NCCLBPF_PROTO_LL128),                         \
	JA(5),                                                                 \
	ST(BPF_W, 1, OFF(algo), NCCLBPF_ALGO_RING),                            \
	ST(BPF_W, 1, OFF(proto), NCCLBPF_PROTO_SIMPLE),                        \
	LDX(BPF_W, 3, 1, OFF(n_ranks)),                                        \
	JMP_K(BPF_JLT, 3, 8, 1),                                               \
	ST(BPF_W, 1, OFF(n_channels), 32),                                     \
	MOV64_K(0, 0),                                                         \
	EXIT()

#endif
