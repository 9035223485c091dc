/* Translations of the strings and enum ids NCCL puts in profiler descriptors. */
#include <stdatomic.h>
#include <string.h>

#include "plugin/profiler/profiler.h"

/* NCCL passes the same static strings every time: a tiny direct-mapped cache of
 * (pointer -> result) avoids the strcmp loops. Pointer and result are packed into one
 * word (user-space pointers fit in 48 bits) so a reader never sees a torn pair. */
#define NAME_CACHE 16
struct name_cache {
	_Atomic uint64_t slot[NAME_CACHE];
};

static int cached(struct name_cache *nc, const char *s, int (*slow)(const char *))
{
	uintptr_t p = (uintptr_t)s;
	if (!s || p >> 48)
		return slow(s);
	unsigned i = (unsigned)((p >> 3) ^ (p >> 9)) & (NAME_CACHE - 1);
	uint64_t w = atomic_load_explicit(&nc->slot[i], memory_order_relaxed);
	if (w && (w >> 16) == p)
		return (int)(int16_t)(w & 0xffff);
	int r = slow(s);
	atomic_store_explicit(&nc->slot[i], (uint64_t)p << 16 | (uint16_t)(int16_t)r,
			      memory_order_relaxed);
	return r;
}

static int slow_coll_type_from_name(const char *f)
{
	if (!f)
		return -1;
	static const char *const names[NCCLBPF_NUM_COLLS] = {"Broadcast", "Reduce", "AllGather",
							      "ReduceScatter", "AllReduce"};
	for (int i = 0; i < NCCLBPF_NUM_COLLS; i++)
		if (strcmp(f, names[i]) == 0)
			return i;
	return -1;
}

static int slow_algo_from_name(const char *a)
{
	if (!a)
		return -1;
	static const char *const names[NCCLBPF_NUM_ALGOS] = {
		"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
	for (int i = 0; i < NCCLBPF_NUM_ALGOS; i++)
		if (strcmp(a, names[i]) == 0)
			return i;
	return -1;
}

static int slow_proto_from_name(const char *p)
{
	if (!p)
		return -1;
	static const char *const names[NCCLBPF_NUM_PROTOS] = {"LL", "LL128", "SIMPLE"};
	for (int i = 0; i < NCCLBPF_NUM_PROTOS; i++)
		if (strcmp(p, names[i]) == 0)
			return i;
	return -1;
}

/* ncclDataType_t order: Int8 Uint8 Int32 Uint32 Int64 Uint64 Float16 Float32 Float64
 * Bfloat16 Float8e4m3 Float8e5m2 */
static const int dtype_sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

int profiler_type_size_from_id(int dtype)
{
	if (dtype < 0 || dtype >= (int)(sizeof(dtype_sizes) / sizeof(dtype_sizes[0])))
		return 0;
	return dtype_sizes[dtype];
}

static int slow_type_size_from_name(const char *d)
{
	if (!d)
		return 0;
	static const char *const names[] = {"ncclInt8",    "ncclUint8",      "ncclInt32",
					    "ncclUint32",  "ncclInt64",      "ncclUint64",
					    "ncclFloat16", "ncclFloat32",    "ncclFloat64",
					    "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(d, names[i]) == 0)
			return dtype_sizes[i];
	return 0;
}

const char *profiler_event_name(uint32_t type)
{
	switch (type) {
	case NB_PROF_GROUP: return "Group";
	case NB_PROF_COLL: return "Coll";
	case NB_PROF_P2P: return "P2p";
	case NB_PROF_PROXY_OP: return "ProxyOp";
	case NB_PROF_PROXY_STEP: return "ProxyStep";
	case NB_PROF_PROXY_CTRL: return "ProxyCtrl";
	case NB_PROF_KERNEL_CH: return "KernelCh";
	case NB_PROF_NET_PLUGIN: return "NetPlugin";
	case NB_PROF_GROUP_API: return "GroupApi";
	case NB_PROF_COLL_API: return "CollApi";
	case NB_PROF_P2P_API: return "P2pApi";
	case NB_PROF_KERNEL_LAUNCH: return "KernelLaunch";
	case NB_PROF_CE_COLL: return "CeColl";
	case NB_PROF_CE_SYNC: return "CeSync";
	case NB_PROF_CE_BATCH: return "CeBatch";
	case NB_PROF_KERNEL_PHASE: return "KernelPhase";
	default: return "Unknown";
	}
}

int profiler_coll_type_from_name(const char *s)
{
	static struct name_cache nc;
	return cached(&nc, s, slow_coll_type_from_name);
}

int profiler_algo_from_name(const char *s)
{
	static struct name_cache nc;
	return cached(&nc, s, slow_algo_from_name);
}

int profiler_proto_from_name(const char *s)
{
	static struct name_cache nc;
	return cached(&nc, s, slow_proto_from_name);
}

int profiler_type_size_from_name(const char *s)
{
	static struct name_cache nc;
	return cached(&nc, s, slow_type_size_from_name);
}
