/* NCCLBPF_VERIFY, NCCLBPF_JIT and NCCLBPF_RANK_LOCAL. Read at prepare/load time only, never on a run. An
 * unknown value is reported once per process and the safe default is used. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static atomic_bool warned_verify, warned_jit, warned_rank_local;

enum ncclbpf_verify_mode runtime_env_verify_mode(void)
{
	const char *v = getenv("NCCLBPF_VERIFY");
	if (!v || !*v || !strcmp(v, "strict"))
		return NCCLBPF_VERIFY_STRICT;
	if (!strcmp(v, "warn"))
		return NCCLBPF_VERIFY_WARN;
	if (!atomic_exchange(&warned_verify, true))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "NCCLBPF_VERIFY=%s: unknown value, using strict (strict|warn)", v);
	return NCCLBPF_VERIFY_STRICT;
}

bool runtime_env_jit_enabled(void)
{
	const char *v = getenv("NCCLBPF_JIT");
	if (!v || !*v || !strcmp(v, "1"))
		return true;
	if (!strcmp(v, "0"))
		return false;
	if (!atomic_exchange(&warned_jit, true))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "NCCLBPF_JIT=%s: unknown value, using 1 (1|0)", v);
	return true;
}

/* NCCLBPF_RANK_LOCAL=allow: tuner decisions may depend on rank-local data (the latency
 * map, timers, map presence); only safe when every rank shares that state. */
bool runtime_env_rank_local_allowed(void)
{
	const char *v = getenv("NCCLBPF_RANK_LOCAL");
	if (!v || !*v || !strcmp(v, "strict"))
		return false;
	if (!strcmp(v, "allow"))
		return true;
	if (!atomic_exchange(&warned_rank_local, true))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "NCCLBPF_RANK_LOCAL=%s: unknown value, using strict (strict|allow)", v);
	return false;
}
