/* The env plugin (ncclEnvPlugin_v1 / _v2): NCCLBPF_ENV_FILE overrides what NCCL reads,
 * SEC("env") programs may pick among the values the file lists, NCCLBPF_ENV_AUDIT logs
 * every answer. File format and precedence: docs/env.md.
 */
#ifndef NCCLBPF_PLUGIN_ENV_PLUGIN_H
#define NCCLBPF_PLUGIN_ENV_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define ENV_MAX_CANDIDATES 8
#define ENV_MAX_FILE (1u << 20)
#define ENV_MAX_LINE 4096

struct env_var {
	char *name;
	int n;                                 /* candidates for this host, file order */
	const char *values[ENV_MAX_CANDIDATES]; /* never freed: NCCL may keep the pointers */
	int lines[ENV_MAX_CANDIDATES];
	int64_t nums[ENV_MAX_CANDIDATES];
	uint64_t hash;
};

struct env_file {
	struct env_var *vars;
	size_t n_vars, cap;
	size_t *index; /* open-addressing table of var indices + 1 */
	size_t index_cap;
	struct env_file *retired_next; /* replaced files stay reachable: NCCL may hold values */
};

/* Parses `text` (len bytes) as an env file for host `host`. On a syntax error returns
 * -EINVAL with "path:line: error: ..." in err and *out NULL: nothing of a bad file is ever
 * used. Pure apart from allocation (fuzzed). */
int env_file_parse(const char *text, size_t len, const char *path, const char *host,
		   struct env_file **out, char *err, size_t errlen);
const struct env_var *env_file_find(const struct env_file *f, const char *name);
/* Frees the table; the value strings stay allocated only if keep_values. */
void env_file_free(struct env_file *f, int keep_values);
uint64_t env_fnv1a(const char *s);
/* True when host matches one of the space-separated glob patterns. */
int env_host_matches(const char *patterns, const char *host);

/* What NCCL's getEnv returns: the plugin's answer once it is initialised, else getenv.
 * Used by the net plugin for its own configuration. */
const char *env_plugin_lookup(const char *name);

/* Tests: initialise / reset without NCCL (same as init(major, minor, patch, suffix)). */
int env_plugin_init(int major, int minor, int patch, const char *suffix, void *log);
void env_plugin_reset(void);

#endif
