/* NCCL's release number (nccl_version.h). */
#define _GNU_SOURCE
#include "plugin/nccl_version.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* what the env plugin's init was told (0 = nothing) */
static _Atomic uint32_t noted;

typedef int (*get_version_fn)(int *version);

static uint32_t from_fn(get_version_fn fn)
{
	int v = 0;
	if (!fn || fn(&v) != 0)
		return 0;
	/* NCCL_VERSION_CODE is major*10000 + minor*100 + patch from 2.9 on; older codes (and
	 * garbage) are not a release this plugin runs in */
	return v >= 20900 && v < 1000000 ? (uint32_t)v : 0;
}

struct find_nccl {
	char path[512];
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_nccl *f = arg;
	const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (base && !strncmp(base, "libnccl.so", 10) && strlen(name) < sizeof(f->path)) {
		strcpy(f->path, name);
		return 1;
	}
	return 0;
}

static uint32_t lookup(void)
{
	uint32_t v = from_fn((get_version_fn)dlsym(RTLD_DEFAULT, "ncclGetVersion"));
	if (v)
		return v;
	/* NCCL loaded RTLD_LOCAL (dlopen'ed by a framework): find it among the loaded objects;
	 * RTLD_NOLOAD never loads anything new */
	struct find_nccl f = {{0}};
	if (!dl_iterate_phdr(find_cb, &f))
		return 0;
	void *h = dlopen(f.path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h)
		return 0;
	v = from_fn((get_version_fn)dlsym(h, "ncclGetVersion"));
	dlclose(h);
	return v;
}

uint32_t nccl_version_get(void)
{
	/* looked up at every communicator's init rather than cached: a process that loads
	 * another NCCL (the mock host emulating several releases) gets the current one */
	uint32_t n = atomic_load_explicit(&noted, memory_order_acquire);
	return n ? n : lookup();
}

void nccl_version_note(uint32_t version)
{
	if (version >= 20900 && version < 1000000)
		atomic_store_explicit(&noted, version, memory_order_release);
}

void nccl_version_reset(void)
{
	atomic_store(&noted, 0);
}
