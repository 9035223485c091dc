/* DPDK side of bench/interp_vs_dpdk.c: loads instructions with rte_bpf_load (DPDK's own
 * validator runs) and executes them with rte_bpf_exec, its interpreter. Compiled against
 * DPDK's headers by bench/interp_vs_dpdk.sh, never by the project's build.
 *
 * With -DBENCH_DPDK_STUBS (lib/bpf built from source without the EAL): the few EAL symbols
 * lib/bpf references (logging, rte_errno, panic, mbuf reads), none of them on the
 * execution path of these programs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bpf.h>

void *dpdk_load(const void *insns, unsigned n, size_t ctx_size);
uint64_t dpdk_exec(void *h, void *ctx);

void *dpdk_load(const void *insns, unsigned n, size_t ctx_size)
{
	struct rte_bpf_prm prm;
	memset(&prm, 0, sizeof(prm));
	prm.ins = insns; /* struct ebpf_insn has the same 8-byte layout as struct bpf_insn */
	prm.nb_ins = n;
	prm.prog_arg.type = RTE_BPF_ARG_PTR;
	prm.prog_arg.size = ctx_size;
	return rte_bpf_load(&prm);
}

uint64_t dpdk_exec(void *h, void *ctx)
{
	return rte_bpf_exec(h, ctx);
}

#ifdef BENCH_DPDK_STUBS
RTE_DEFINE_PER_LCORE(int, _rte_errno);

int rte_log(uint32_t level, uint32_t logtype, const char *format, ...)
{
	(void)logtype;
	if (level > RTE_LOG_ERR)
		return 0;
	va_list ap;
	va_start(ap, format);
	int r = vfprintf(stderr, format, ap);
	va_end(ap);
	return r;
}

int rte_log_register_type_and_pick_level(const char *name, uint32_t level_def)
{
	(void)name, (void)level_def;
	return 0;
}

void __rte_panic(const char *funcname, const char *format, ...)
{
	va_list ap;
	fprintf(stderr, "PANIC in %s: ", funcname);
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	abort();
}

const void *__rte_pktmbuf_read(const struct rte_mbuf *m, uint32_t off, uint32_t len, void *buf)
{
	(void)m, (void)off, (void)len, (void)buf;
	return NULL; /* no mbuf programs here */
}
#endif
