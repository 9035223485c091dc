/* Map creation (spec validation with the kernel's rules and error codes), accessors and
 * the per-type dispatch of the map operations. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map_internal.h"

#define ACCESS_MASK (NB_MAP_F_RDONLY | NB_MAP_F_WRONLY | NB_MAP_F_RDONLY_PROG | NB_MAP_F_WRONLY_PROG)
#define ARRAY_FLAGS (NB_MAP_F_NUMA_NODE | NB_MAP_F_MMAPABLE | ACCESS_MASK | \
		     NB_MAP_F_PRESERVE_ELEMS | NB_MAP_F_INNER_MAP)
#define PERCPU_ARRAY_FLAGS (ARRAY_FLAGS & ~NB_MAP_F_MMAPABLE)
#define HASH_FLAGS (NB_MAP_F_NO_PREALLOC | NB_MAP_F_NO_COMMON_LRU | NB_MAP_F_NUMA_NODE | \
		    ACCESS_MASK | NB_MAP_F_ZERO_SEED)

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static const char *type_name(uint32_t type)
{
	switch (type) {
	case NB_MAP_TYPE_HASH: return "hash";
	case NB_MAP_TYPE_ARRAY: return "array";
	case NB_MAP_TYPE_PERCPU_ARRAY: return "percpu_array";
	case NB_MAP_TYPE_LRU_HASH: return "lru_hash";
	default: return "?";
	}
}

/* Map types of the kernel a policy written for it may declare, named in the refusal. */
static const char *kernel_type_name(uint32_t type)
{
	static const char *const names[] = {
		[3] = "prog_array", [4] = "perf_event_array", [5] = "percpu_hash",
		[7] = "stack_trace", [8] = "cgroup_array", [10] = "lru_percpu_hash",
		[11] = "lpm_trie", [12] = "array_of_maps", [13] = "hash_of_maps", [14] = "devmap",
		[15] = "sockmap", [16] = "cpumap", [17] = "xskmap", [18] = "sockhash",
		[19] = "cgroup_storage", [20] = "reuseport_sockarray",
		[21] = "percpu_cgroup_storage", [22] = "queue", [23] = "stack",
		[24] = "sk_storage", [25] = "devmap_hash", [26] = "struct_ops", [27] = "ringbuf",
		[28] = "inode_storage", [29] = "task_storage", [30] = "bloom_filter",
		[31] = "user_ringbuf", [32] = "cgrp_storage", [33] = "arena",
	};
	return type < sizeof(names) / sizeof(names[0]) && names[type] ? names[type] : NULL;
}

/* The storage each type allocates (map_array_init, map_hash_init, map_pool_init) stays
 * within MAP_STORAGE_LIMIT; computed with the same formulas, before any allocation. */
static int check_storage(const struct nb_map_spec *s, const char *name, bool is_array,
			 char *err, size_t errlen)
{
	if (is_array) {
		uint64_t bytes = (uint64_t)MAP_ROUND8(s->value_size) * s->max_entries;
		if (bytes > MAP_STORAGE_LIMIT)
			return fail(err, errlen, -E2BIG,
				    "map '%s': %u entries of %u bytes exceed the 4 GiB limit", name,
				    s->max_entries, (unsigned)MAP_ROUND8(s->value_size));
		return 0;
	}
	if (s->max_entries > MAP_HASH_MAX_ENTRIES)
		return fail(err, errlen, -E2BIG, "map '%s': max_entries %u too large for a hash map "
			    "(limit %u)", name, s->max_entries, MAP_HASH_MAX_ENTRIES);
	uint64_t stride = map_hash_elem_size(s->key_size, s->value_size);
	uint64_t n = (uint64_t)s->max_entries + map_pool_slack(s->max_entries);
	uint64_t buckets = (uint64_t)map_pow2_roundup(s->max_entries) * sizeof(struct map_bucket);
	if (n >= UINT32_MAX || n * stride > MAP_STORAGE_LIMIT || buckets > MAP_STORAGE_LIMIT)
		return fail(err, errlen, -E2BIG,
			    "map '%s': %u entries of %llu bytes exceed the 4 GiB limit", name,
			    s->max_entries, (unsigned long long)stride);
	return 0;
}

int map_spec_check(const struct nb_map_spec *s, char *err, size_t errlen)
{
	uint32_t allowed;
	bool is_array = s->type == NB_MAP_TYPE_ARRAY || s->type == NB_MAP_TYPE_PERCPU_ARRAY;
	const char *name = s->name ? s->name : "";

	switch (s->type) {
	case NB_MAP_TYPE_ARRAY: allowed = ARRAY_FLAGS; break;
	case NB_MAP_TYPE_PERCPU_ARRAY: allowed = PERCPU_ARRAY_FLAGS; break;
	case NB_MAP_TYPE_HASH:
	case NB_MAP_TYPE_LRU_HASH: allowed = HASH_FLAGS; break;
	default:
		if (kernel_type_name(s->type))
			return fail(err, errlen, -EINVAL, "map '%s': unsupported map type %u (%s, a "
				    "kernel-only type); ncclbpf has hash, array, percpu_array and "
				    "lru_hash", name, s->type, kernel_type_name(s->type));
		return fail(err, errlen, -EINVAL, "map '%s': unsupported map type %u", name, s->type);
	}
	if (s->map_flags & NB_MAP_AGREED_BITS) {
		int rc = map_agreed_validate(s, name, err, errlen);
		if (rc)
			return rc;
		allowed |= NB_MAP_AGREED_BITS;
	}
	if (s->key_size == 0 || s->value_size == 0 || s->max_entries == 0)
		return fail(err, errlen, -EINVAL,
			    "map '%s': key_size %u, value_size %u, max_entries %u: all must be > 0",
			    name, s->key_size, s->value_size, s->max_entries);
	if (is_array && s->key_size != 4)
		return fail(err, errlen, -EINVAL, "map '%s': %s key_size %u invalid (must be 4)", name,
			    type_name(s->type), s->key_size);
	if (s->map_flags & ~allowed)
		return fail(err, errlen, -EINVAL, "map '%s': map_flags 0x%x not supported for %s",
			    name, s->map_flags & ~allowed, type_name(s->type));
	if ((s->map_flags & NB_MAP_F_RDONLY) && (s->map_flags & NB_MAP_F_WRONLY))
		return fail(err, errlen, -EINVAL, "map '%s': RDONLY and WRONLY are exclusive", name);
	if ((s->map_flags & NB_MAP_F_RDONLY_PROG) && (s->map_flags & NB_MAP_F_WRONLY_PROG))
		return fail(err, errlen, -EINVAL, "map '%s': RDONLY_PROG and WRONLY_PROG are exclusive",
			    name);
	if (s->type == NB_MAP_TYPE_HASH && (s->map_flags & NB_MAP_F_NO_COMMON_LRU))
		return fail(err, errlen, -EINVAL, "map '%s': NO_COMMON_LRU needs an LRU map", name);
	if (s->type == NB_MAP_TYPE_LRU_HASH && (s->map_flags & NB_MAP_F_NO_PREALLOC))
		return fail(err, errlen, -ENOTSUP, "map '%s': LRU maps are always preallocated", name);
	if (!is_array && s->key_size > NB_MAP_MAX_KEY_SIZE)
		return fail(err, errlen, -E2BIG, "map '%s': key_size %u > %u", name, s->key_size,
			    NB_MAP_MAX_KEY_SIZE);
	if (s->value_size > NB_MAP_MAX_VALUE_SIZE)
		return fail(err, errlen, -E2BIG, "map '%s': value_size %u > %u", name, s->value_size,
			    NB_MAP_MAX_VALUE_SIZE);
	if (s->type == NB_MAP_TYPE_PERCPU_ARRAY && MAP_ROUND8(s->value_size) > NB_MAP_MAX_PERCPU_VALUE_SIZE)
		return fail(err, errlen, -E2BIG, "map '%s': per-CPU value_size %u > %u", name,
			    s->value_size, NB_MAP_MAX_PERCPU_VALUE_SIZE);
	return check_storage(s, name, is_array, err, errlen);
}

uint64_t map_spec_value_span(const struct nb_map_spec *s)
{
	bool is_array = s->type == NB_MAP_TYPE_ARRAY || s->type == NB_MAP_TYPE_PERCPU_ARRAY;
	if (!is_array || (s->map_flags & NB_MAP_F_AGREED))
		return 0;
	return (uint64_t)MAP_ROUND8(s->value_size) * s->max_entries;
}

int map_create(const struct nb_map_spec *spec, struct nb_map **out, char *err, size_t errlen)
{
	struct nb_map *m;
	const char *name;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return fail(err, errlen, -EINVAL, "map_create: no output pointer");
	*out = NULL;
	if (!spec)
		return fail(err, errlen, -EINVAL, "map_create: no spec");
	name = spec->name ? spec->name : "";
	rc = map_spec_check(spec, err, errlen);
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return fail(err, errlen, -ENOMEM, "map '%s': out of memory", name);
	m->name = strdup(name);
	if (!m->name) {
		free(m);
		return fail(err, errlen, -ENOMEM, "map '%s': out of memory", name);
	}
	m->type = spec->type;
	m->key_size = spec->key_size;
	m->value_size = spec->value_size;
	m->max_entries = spec->max_entries;
	m->map_flags = spec->map_flags;
	m->agreed_slot = -1;
	switch (m->type) {
	case NB_MAP_TYPE_ARRAY:
	case NB_MAP_TYPE_PERCPU_ARRAY:
		rc = map_array_init(m, err, errlen);
		if (!rc && (m->map_flags & NB_MAP_F_AGREED)) {
			rc = map_agreed_init(m, err, errlen);
			if (rc)
				map_array_destroy(m);
		}
		break;
	case NB_MAP_TYPE_LRU_HASH:
		pthread_mutex_init(&m->lru_lock, NULL);
		/* fallthrough */
	default:
		rc = map_hash_init(m, err, errlen);
		break;
	}
	if (rc) {
		if (m->type == NB_MAP_TYPE_LRU_HASH)
			pthread_mutex_destroy(&m->lru_lock);
		free(m->name);
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void map_free(struct nb_map *m)
{
	if (!m)
		return;
	switch (m->type) {
	case NB_MAP_TYPE_ARRAY:
	case NB_MAP_TYPE_PERCPU_ARRAY:
		map_agreed_destroy(m);
		map_array_destroy(m);
		break;
	case NB_MAP_TYPE_LRU_HASH:
		pthread_mutex_destroy(&m->lru_lock);
		/* fallthrough */
	default:
		map_hash_destroy(m);
		break;
	}
	free(m->name);
	free(m);
}

const char *map_name(const struct nb_map *m) { return m->name; }
uint32_t map_type(const struct nb_map *m) { return m->type; }
uint32_t map_key_size(const struct nb_map *m) { return m->key_size; }
uint32_t map_value_size(const struct nb_map *m) { return m->value_size; }
uint32_t map_max_entries(const struct nb_map *m) { return m->max_entries; }
uint32_t map_flags(const struct nb_map *m) { return m->map_flags; }

static inline bool is_array(const struct nb_map *m)
{
	return m->type == NB_MAP_TYPE_ARRAY || m->type == NB_MAP_TYPE_PERCPU_ARRAY;
}

bool map_needs_epoch(const struct nb_map *m)
{
	return !is_array(m);
}

void *map_lookup(struct nb_map *m, const void *key)
{
	if (MAP_UNLIKELY(m->map_flags & NB_MAP_F_AGREED))
		return map_agreed_lookup(m, key);
	if (MAP_LIKELY(is_array(m)))
		return map_array_lookup(m, key);
	if (m->type == NB_MAP_TYPE_HASH)
		return map_hash_lookup(m, key);
	return map_lru_lookup(m, key);
}

int map_update(struct nb_map *m, const void *key, const void *value, uint64_t flags)
{
	if (!m || !key || !value)
		return -EINVAL;
	if (m->map_flags & NB_MAP_F_AGREED)
		return map_agreed_update(m, key, value, flags);
	if (is_array(m))
		return map_array_update(m, key, value, flags);
	if (m->type == NB_MAP_TYPE_HASH)
		return map_hash_update(m, key, value, flags);
	return map_lru_update(m, key, value, flags);
}

int map_delete(struct nb_map *m, const void *key)
{
	if (!m || !key)
		return -EINVAL;
	if (is_array(m))
		return -EINVAL; /* array entries always exist */
	if (m->type == NB_MAP_TYPE_HASH)
		return map_hash_delete(m, key);
	return map_lru_delete(m, key);
}

int map_get_next_key(struct nb_map *m, const void *key, void *next_key)
{
	if (!m || !next_key)
		return -EINVAL;
	if (is_array(m))
		return map_array_get_next_key(m, key, next_key);
	return map_hash_get_next_key(m, key, next_key);
}

void *map_array_base(struct nb_map *m)
{
	return is_array(m) && !(m->map_flags & NB_MAP_F_AGREED) ? m->array_base : NULL;
}

uint32_t map_array_stride(const struct nb_map *m)
{
	return is_array(m) ? m->stride : 0;
}
