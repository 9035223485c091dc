/* NCCLBPF_VERIFY, NCCLBPF_JIT, NCCLBPF_RANK_LOCAL, NCCLBPF_MAX_INSNS and the boolean
 * variables' parser. Read at prepare/load/init time only, never on a run. An unknown value is reported once per process
 * and variable, saying what is done instead. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "maps/env_bool.h"
#include "runtime/runtime.h"
#include "verifier/hooks.h"

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

/* One N of NCCLBPF_MAX_INSNS: 1 to 10^15 decimal instructions. */
static bool parse_count(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 16)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v == 0 || v > 1000000000000000ull)
		return false;
	*out = v;
	return true;
}

int runtime_parse_max_insns(const char *v, const struct nb_hook_desc *h, uint64_t *out)
{
	*out = 0;
	if (!v || !*v)
		return 0;
	if (!strchr(v, '='))
		return parse_count(v, strlen(v), out) ? 0 : -EINVAL;
	uint64_t mine = 0;
	for (const char *s = v; *s;) {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		uint64_t n;
		if (!eq || !parse_count(eq + 1, len - (size_t)(eq + 1 - s), &n))
			return -EINVAL;
		char name[32];
		size_t nl = (size_t)(eq - s);
		if (nl == 0 || nl >= sizeof(name))
			return -EINVAL;
		memcpy(name, s, nl);
		name[nl] = 0;
		const struct nb_hook_desc *hn = hook_by_name(name);
		if (!hn)
			return -EINVAL;
		if (h && hn->type == h->type)
			mine = n;
		s += len;
		if (*s == ',')
			s++;
	}
	*out = mine;
	return 0;
}

/* NCCLBPF_MAX_INSNS=N or HOOK=N[,HOOK=N...]: the most instructions one run of a program
 * of that hook may execute (the verifier's static bound, E-COST); 0 = the hook's default.
 * A malformed value is reported once and the defaults are used. */
uint64_t runtime_env_max_insns(const struct nb_hook_desc *h)
{
	const char *v = getenv("NCCLBPF_MAX_INSNS");
	uint64_t n;
	if (runtime_parse_max_insns(v, h, &n) == 0)
		return n;
	if (warn_once("NCCLBPF_MAX_INSNS"))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "NCCLBPF_MAX_INSNS=%s: malformed, using each hook's default (N or "
			    "HOOK=N[,HOOK=N...], N from 1 to 10^15)", v);
	return 0;
}
