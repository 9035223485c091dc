/* The one spelling of every boolean NCCLBPF_* variable: 1/0, on/off, yes/no, true/false,
 * case-insensitive. Header-only and in maps, the lowest module that reads such a variable
 * (NCCLBPF_EPOCH_FENCE); runtime/env.c wraps it with the WARN for anything else
 * (runtime_env_bool). */
#ifndef NCCLBPF_MAPS_ENV_BOOL_H
#define NCCLBPF_MAPS_ENV_BOOL_H

#include <strings.h>

/* 1 true, 0 false, -1 not a boolean (NULL or empty: -1 too; callers treat unset first). */
static inline int nb_env_bool_parse(const char *v)
{
	static const char *const yes[] = {"1", "on", "yes", "true"};
	static const char *const no[] = {"0", "off", "no", "false"};
	if (!v || !*v)
		return -1;
	for (unsigned i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

#endif
