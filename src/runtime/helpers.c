/* Helper implementations, called by programs through vm_program.helpers (interpreter) or
 * directly from JIT code. Arguments arrive as raw registers; the verifier has proven them
 * to match the prototypes in hooks.c (map handle = struct nb_map *, key/value pointers of
 * the map's sizes). Errors are negative errnos, as the kernel returns them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "maps/map.h"
#include "runtime/runtime.h"

static uint64_t helper_map_lookup(uint64_t map, uint64_t key, uint64_t a3, uint64_t a4,
				  uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)map,
					       (const void *)(uintptr_t)key);
}

static uint64_t helper_map_update(uint64_t map, uint64_t key, uint64_t value, uint64_t flags,
				  uint64_t a5)
{
	(void)a5;
	return (uint64_t)(int64_t)map_update((struct nb_map *)(uintptr_t)map,
					     (const void *)(uintptr_t)key,
					     (const void *)(uintptr_t)value, flags);
}

static uint64_t helper_map_delete(uint64_t map, uint64_t key, uint64_t a3, uint64_t a4,
				  uint64_t a5)
{
	(void)a3, (void)a4, (void)a5;
	return (uint64_t)(int64_t)map_delete((struct nb_map *)(uintptr_t)map,
					     (const void *)(uintptr_t)key);
}

static uint64_t helper_ktime_get_ns(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
				    uint64_t a5)
{
	struct timespec ts;
	(void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Per-thread xorshift64*: no lock, no shared cache line. Seeded from the thread's own
 * address and the clock so threads get different streams. initial-exec TLS: the default
 * model would make libncclbpf.so need ld-linux (__tls_get_addr). */
static __thread uint64_t prandom_state __attribute__((tls_model("initial-exec")));

static uint64_t helper_get_prandom_u32(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
				       uint64_t a5)
{
	(void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	uint64_t x = prandom_state;
	if (!x) {
		x = helper_ktime_get_ns(0, 0, 0, 0, 0) ^ (uint64_t)(uintptr_t)&prandom_state;
		x = x * 0x9e3779b97f4a7c15ull | 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	prandom_state = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

/* Identity helper of the conformance hook (bpf_conformance: helper 5 returns r1). */
static uint64_t helper_conformance_identity(uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
					    uint64_t a5)
{
	(void)a2, (void)a3, (void)a4, (void)a5;
	return a1;
}

/* Formats one conversion of the supported subset. Returns chars appended or -EINVAL. */
static int printk_conv(char *out, size_t cap, const char *len, char conv, uint64_t v)
{
	bool ll = len[0] == 'l'; /* %l and %ll are both 64-bit on BPF */
	switch (conv) {
	case 'd':
	case 'i':
		return snprintf(out, cap, "%" PRId64, ll ? (int64_t)v : (int64_t)(int32_t)v);
	case 'u':
		return snprintf(out, cap, "%" PRIu64, ll ? v : (uint64_t)(uint32_t)v);
	case 'x':
		return snprintf(out, cap, "%" PRIx64, ll ? v : (uint64_t)(uint32_t)v);
	default:
		return -EINVAL;
	}
}

static struct runtime_ratelimit printk_limit;

/* bpf_trace_printk(fmt, fmt_size, a, b, c): %d %i %u %x with optional l/ll, and %%.
 * Anything else (%s, %p, widths) is refused with -EINVAL: arguments are raw registers and
 * a string conversion would dereference program-chosen addresses. Logged at INFO through
 * NCCL's logger, at most 50 lines per second. Returns the formatted length. */
static uint64_t helper_trace_printk(uint64_t fmt_addr, uint64_t fmt_size, uint64_t a3,
				    uint64_t a4, uint64_t a5)
{
	const char *fmt = (const char *)(uintptr_t)fmt_addr;
	uint64_t args[3] = {a3, a4, a5};
	char out[256];
	size_t n = 0;
	unsigned used = 0;

	if (!fmt || fmt_size == 0)
		return (uint64_t)-EINVAL;
	for (size_t i = 0; i < fmt_size && fmt[i]; i++) {
		char c = fmt[i];
		if (c != '%') {
			if (c != '\n' && n + 1 < sizeof(out))
				out[n++] = c;
			continue;
		}
		char len[3] = {0};
		size_t j = i + 1, k = 0;
		if (j < fmt_size && fmt[j] == '%') {
			if (n + 1 < sizeof(out))
				out[n++] = '%';
			i = j;
			continue;
		}
		while (j < fmt_size && fmt[j] == 'l' && k < 2)
			len[k++] = fmt[j++];
		if (j >= fmt_size || used >= 3)
			return (uint64_t)-EINVAL;
		int w = printk_conv(out + n, sizeof(out) - n, len, fmt[j], args[used++]);
		if (w < 0)
			return (uint64_t)-EINVAL;
		n += (size_t)w;
		if (n >= sizeof(out))
			n = sizeof(out) - 1;
		i = j;
	}
	out[n] = '\0';
	if (runtime_ratelimit_ok(&printk_limit, 50))
		runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "bpf_trace_printk: %s", out);
	return n;
}

vm_helper_fn runtime_helper_impl(enum nb_hook_type hook, int32_t id)
{
	/* Conformance programs get the identity helper at id 5 instead of ktime. */
	if (hook == NB_HOOK_CONFORMANCE && id == NB_HELPER_CONFORMANCE_IDENTITY)
		return helper_conformance_identity;
	switch (id) {
	case NB_HELPER_MAP_LOOKUP_ELEM: return helper_map_lookup;
	case NB_HELPER_MAP_UPDATE_ELEM: return helper_map_update;
	case NB_HELPER_MAP_DELETE_ELEM: return helper_map_delete;
	case NB_HELPER_KTIME_GET_NS: return helper_ktime_get_ns;
	case NB_HELPER_TRACE_PRINTK: return helper_trace_printk;
	case NB_HELPER_GET_PRANDOM_U32: return helper_get_prandom_u32;
	case NB_HELPER_LOOP: return vm_helper_bpf_loop; /* run by the VM (vm.h) */
	default: return NULL;
	}
}
