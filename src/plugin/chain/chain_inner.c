/* Opening an inner plugin library (chain.h): shared by the tuner and profiler chains, which
 * differ only in the symbol family, the versions they can drive and their own exports. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "plugin/chain/chain.h"
#include "runtime/runtime.h"

int chain_inner_open(const char *path, const char *sym_prefix, int vmax, int vmin,
		     bool (*is_self)(const void *table), struct chain_inner_lib *out,
		     char *err, size_t errlen)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return -ENOENT;
	}
	/* the highest version it exports; a symbol that is ours means NCCL loaded ncclbpf
	 * itself as its own inner plugin */
	for (int v = vmax; v >= vmin; v--) {
		char sym[48];
		snprintf(sym, sizeof(sym), "%s%d", sym_prefix, v);
		const void *t = dlsym(dl, sym);
		if (!t)
			continue;
		if (is_self(t)) {
			dlclose(dl);
			snprintf(err, errlen, "ncclbpf itself");
			return -ELOOP;
		}
		out->dl = dl;
		out->table = t;
		out->version = v;
		return 0;
	}
	dlclose(dl);
	snprintf(err, errlen, "exports no %s%d..v%d", sym_prefix, vmin, vmax);
	return -ENOSYS;
}

void chain_inner_warn(int rc, const char *kind, const char *env, const char *path,
		      const char *why, unsigned log_flags)
{
	if (rc == -ELOOP)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | log_flags,
			    "%s: %s=%s is ncclbpf itself: ignored", kind, env, path);
	else if (rc == -ENOSYS) /* why: "exports no <symbols>" */
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | log_flags,
			    "%s: inner plugin %s %s: running without it", kind, path, why);
	else if (rc < 0)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | log_flags,
			    "%s: inner plugin %s=%s not loaded: %s; running without it", kind, env,
			    path, why);
}
