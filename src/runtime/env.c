/* NCCLBPF_VERIFY, NCCLBPF_JIT, NCCLBPF_RANK_LOCAL and the boolean variables' parser. Read at
 * prepare/load/init time only, never on a run. An unknown value is reported once per process
 * and variable, saying what is done instead. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "maps/env_bool.h"
#include "runtime/runtime.h"

static atomic_bool warned_verify, warned_rank_local;

/* Names already warned about (a handful of variables; init paths only). */
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *warned_names[32];

static bool warn_once(const char *name)
{
	bool first = true;
	pthread_mutex_lock(&warned_lock);
	unsigned i = 0;
	for (; i < 32 && warned_names[i]; i++)
		if (!strcmp(warned_names[i], name))
			first = false;
	if (first && i < 32)
		warned_names[i] = name;
	pthread_mutex_unlock(&warned_lock);
	return first;
}

int runtime_env_parse_bool(const char *value)
{
	return nb_env_bool_parse(value);
}

bool runtime_env_bool(const char *name, bool def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	int b = nb_env_bool_parse(v);
	if (b >= 0)
		return b;
	if (warn_once(name))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "%s=%s: not a boolean (1|0, on|off, yes|no, true|false): using the "
			    "default, %s", name, v, def ? "on" : "off");
	return def;
}

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
	return runtime_env_bool("NCCLBPF_JIT", true);
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
