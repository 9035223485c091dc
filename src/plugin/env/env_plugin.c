/* ncclEnvPlugin_v1 (NCCL 2.28+) and _v2 (2.30+): NCCL's getEnv goes through here.
 *
 * init never fails (NCCL would fail every API call and keep the plugin selected): a file
 * that cannot be read or parsed is reported as "file:line: error: ..." and the plugin then
 * returns what getenv returns, for every variable (never half of a file). Returned strings
 * stay valid for the life of the process: file values are never freed, environment values
 * are getenv's own storage.
 *
 * Precedence (NCCLBPF_ENV_PRECEDENCE): "env" (default) = a variable set in the process
 * environment wins over the file, like NCCL's nccl.conf; "file" = the file wins.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclbpf/policy.h"
#include "plugin/env/env_plugin.h"
#include "plugin/nccl_version.h"
#include "plugin/net/net_log.h"
#include "runtime/runtime.h"

#define LOGE (NET_SUBSYS_ENV)

static _Atomic(struct env_file *) active_file;
static struct env_file *retired_files; /* never freed (string lifetime guarantee) */
static _Atomic int initialised;
static bool file_wins;
static uint32_t nccl_version;
static uint64_t host_hash;
static int audit_fd = -1;
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;

/* audit de-duplication: name -> hash of the last value written */
#define AUDIT_SLOTS 1024
static struct {
	char *name;
	uint64_t value_hash;
} audit_seen[AUDIT_SLOTS];

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s:0: error: cannot open: %s", path, strerror(errno));
		return -errno;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)ENV_MAX_FILE) {
		snprintf(err, errlen, "%s:0: error: not a regular file of at most %u bytes", path,
			 ENV_MAX_FILE);
		close(fd);
		return -EINVAL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf) {
		snprintf(err, errlen, "%s:0: error: out of memory", path);
		return -ENOMEM;
	}
	*text = buf;
	*len = got;
	return 0;
}

static void audit_write(const char *name, const char *value, const char *source)
{
	if (audit_fd < 0)
		return;
	uint64_t vh = value ? env_fnv1a(value) ^ 0x9e3779b97f4a7c15ull : 1;
	uint64_t nh = env_fnv1a(name);
	pthread_mutex_lock(&audit_lock);
	if (audit_fd < 0) { /* finalize closed it meanwhile */
		pthread_mutex_unlock(&audit_lock);
		return;
	}
	bool write_it = true;
	for (size_t i = nh % AUDIT_SLOTS, k = 0; k < AUDIT_SLOTS; i = (i + 1) % AUDIT_SLOTS, k++) {
		if (!audit_seen[i].name) {
			audit_seen[i].name = strdup(name);
			audit_seen[i].value_hash = vh;
			break;
		}
		if (!strcmp(audit_seen[i].name, name)) {
			write_it = audit_seen[i].value_hash != vh;
			audit_seen[i].value_hash = vh;
			break;
		}
	}
	if (write_it) {
		char line[ENV_MAX_LINE + 512];
		int n = snprintf(line, sizeof(line), "%s\t%s\t%s\n", name, value ? value : "(unset)",
				 source);
		if (n > 0) {
			size_t w = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
			if (write(audit_fd, line, w) < 0) {
				/* the audit log is best effort; NCCL's answer does not depend on it */
			}
		}
	}
	pthread_mutex_unlock(&audit_lock);
}

int env_plugin_init(int major, int minor, int patch, const char *suffix, void *log)
{
	if (log)
		net_set_logger((net_logger_fn)log);
	if (atomic_load(&initialised))
		return 0;
	nccl_version = (uint32_t)(major * 10000 + minor * 100 + patch);
	nccl_version_note(nccl_version); /* the tuner's ctx->nccl_version, first hand */
	char host[256] = "";
	const char *h = getenv("NCCLBPF_ENV_HOSTNAME");
	if (h && *h)
		snprintf(host, sizeof(host), "%s", h);
	else
		gethostname(host, sizeof(host) - 1);
	host_hash = env_fnv1a(host);
	const char *prec = getenv("NCCLBPF_ENV_PRECEDENCE");
	file_wins = prec && !strcmp(prec, "file");
	if (prec && *prec && strcmp(prec, "file") && strcmp(prec, "env"))
		net_log(NET_WARN, LOGE, "env: NCCLBPF_ENV_PRECEDENCE=%s: unknown, using env (env|file)", prec);

	const char *audit = getenv("NCCLBPF_ENV_AUDIT");
	if (audit && *audit) {
		audit_fd = open(audit, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (audit_fd < 0)
			net_log(NET_WARN, LOGE, "env: NCCLBPF_ENV_AUDIT=%s: %s", audit, strerror(errno));
	}
	const char *path = getenv("NCCLBPF_ENV_FILE");
	const char *status = "no file";
	if (path && *path) {
		char err[1024] = "";
		char *text = NULL;
		size_t len = 0;
		struct env_file *f = NULL;
		if (read_file(path, &text, &len, err, sizeof(err)) == 0) {
			env_file_parse(text, len, path, host, &f, err, sizeof(err));
			free(text);
		}
		if (f) {
			atomic_store(&active_file, f);
			status = "ok";
			net_log(NET_INFO, LOGE | NET_SUBSYS_INIT,
				"env: %s: %zu variable(s) for host %s, %s wins", path, f->n_vars, host,
				file_wins ? "the file" : "the environment");
		} else {
			status = "rejected";
			net_log(NET_WARN, LOGE | NET_SUBSYS_INIT, "%s (no variable of the file is used)", err);
		}
	}
	if (audit_fd >= 0) {
		char line[1024];
		int n = snprintf(line, sizeof(line),
				 "# ncclbpf env audit: pid %d host %s nccl %d.%d.%d%s file %s (%s) "
				 "precedence %s\n",
				 (int)getpid(), host, major, minor, patch, suffix ? suffix : "",
				 path && *path ? path : "-", status, file_wins ? "file" : "env");
		if (n > 0 && write(audit_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
			/* best effort */
		}
	}
	/* SEC("env") programs of NCCLBPF_POLICY (loaded once per process, shared with the
	 * other plugin types) */
	runtime_load_policies_from_env();
	atomic_store(&initialised, 1);
	return 0;
}

void env_plugin_reset(void)
{
	atomic_store(&initialised, 0);
	struct env_file *f = atomic_exchange(&active_file, NULL);
	if (f) { /* values may still be referenced by callers: keep the whole file */
		f->retired_next = retired_files;
		retired_files = f;
	}
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
	pthread_mutex_lock(&audit_lock);
	for (int i = 0; i < AUDIT_SLOTS; i++) {
		free(audit_seen[i].name);
		audit_seen[i].name = NULL;
	}
	pthread_mutex_unlock(&audit_lock);
}

/* The env programs choose a candidate; -1 (or anything out of range) keeps the default. */
static int run_hooks(const char *name, const struct env_var *v, bool in_env, int def,
		     const char **label)
{
	const struct nb_hook_chain *chain = runtime_hook_chain(NB_HOOK_ENV);
	if (!chain)
		return def;
	struct ncclbpf_env_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.name, sizeof(ctx.name), "%s", name);
	ctx.name_hash = v->hash;
	ctx.value_index = -1;
	ctx.nccl_version = nccl_version;
	ctx.n_candidates = (uint32_t)v->n;
	ctx.host_hash = host_hash;
	ctx.in_environment = in_env;
	ctx.default_index = (uint32_t)def;
	for (int i = 0; i < NCCLBPF_ENV_MAX_CANDIDATES; i++)
		ctx.cand_num[i] = i < v->n ? v->nums[i] : INT64_MIN;
	if (runtime_chain_run(chain, &ctx, sizeof(ctx)) != 0)
		return def; /* a faulting program changes nothing */
	if (ctx.value_index < 0 || ctx.value_index >= v->n)
		return def;
	*label = chain->items[chain->len - 1].label;
	return ctx.value_index;
}

const char *env_plugin_lookup(const char *name)
{
	if (!name)
		return NULL;
	const char *env = getenv(name);
	if (!atomic_load_explicit(&initialised, memory_order_acquire))
		return env;
	struct env_file *f = atomic_load_explicit(&active_file, memory_order_acquire);
	const struct env_var *v = f ? env_file_find(f, name) : NULL;
	if (!v || !v->n || (env && !file_wins)) {
		if (audit_fd >= 0)
			audit_write(name, env, env ? "env" : "unset");
		return env;
	}
	int def = v->n - 1;
	const char *label = NULL;
	int idx = run_hooks(name, v, env != NULL, def, &label);
	if (audit_fd >= 0) {
		char src[512];
		if (label)
			snprintf(src, sizeof(src), "policy %s: file line %d", label, v->lines[idx]);
		else
			snprintf(src, sizeof(src), "file line %d", v->lines[idx]);
		audit_write(name, v->values[idx], src);
	}
	return v->values[idx];
}

/* ---- ABI ---- */
typedef void (*env_logger_t)(int level, unsigned long flags, const char *file, int line,
			     const char *fmt, ...);

struct nb_env_v1 {
	const char *name;
	int (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix);
	int (*finalize)(void);
	const char *(*get_env)(const char *name);
};
struct nb_env_v2 {
	const char *name;
	int (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix,
		    env_logger_t log);
	int (*finalize)(void);
	const char *(*get_env)(const char *name);
};

static int v1_init(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix)
{
	env_plugin_init(major, minor, patch, suffix, NULL);
	return 0;
}

static int v2_init(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix,
		   env_logger_t log)
{
	env_plugin_init(major, minor, patch, suffix, (void *)log);
	return 0;
}

/* Runs from NCCL's atexit handler: only the audit log is closed; values stay valid
 * because other atexit handlers or threads may still hold them. */
static int env_finalize(void)
{
	pthread_mutex_lock(&audit_lock);
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
	pthread_mutex_unlock(&audit_lock);
	return 0;
}

__attribute__((visibility("default"))) const struct nb_env_v1 ncclEnvPlugin_v1 = {
	.name = "ncclbpf",
	.init = v1_init,
	.finalize = env_finalize,
	.get_env = env_plugin_lookup,
};

__attribute__((visibility("default"))) const struct nb_env_v2 ncclEnvPlugin_v2 = {
	.name = "ncclbpf",
	.init = v2_init,
	.finalize = env_finalize,
	.get_env = env_plugin_lookup,
};
