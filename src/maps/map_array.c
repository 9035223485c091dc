/* Array and per-CPU array maps (BPF_MAP_TYPE_ARRAY / PERCPU_ARRAY).
 *
 * One zero-initialised, 64-byte aligned block; entry i lives at base + i * stride with
 * stride = value_size rounded up to 8, so every value is 8-byte aligned for the 64-bit
 * atomics programs do on it. Entries are never freed, so lookups need no epoch.
 * Updates copy in place as the kernel does (no lock): whole 64-bit words are stored with
 * relaxed atomics, so a concurrent reader may see a mix of old and new words but never a
 * torn word. PERCPU_ARRAY keeps one shared copy (user space has no CPU binding). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map_internal.h"

/* The size was checked by map_spec_check (map_create). */
int map_array_init(struct nb_map *m, char *err, size_t errlen)
{
	uint64_t bytes;

	m->stride = (uint32_t)MAP_ROUND8(m->value_size);
	bytes = (uint64_t)m->stride * m->max_entries;
	bytes = (bytes + 63) & ~63ull;
	m->array_base = aligned_alloc(64, (size_t)bytes);
	if (!m->array_base) {
		snprintf(err, errlen, "map '%s': cannot allocate %llu bytes", m->name,
			 (unsigned long long)bytes);
		return -ENOMEM;
	}
	memset(m->array_base, 0, (size_t)bytes);
	return 0;
}

void map_array_destroy(struct nb_map *m)
{
	free(m->array_base);
	m->array_base = NULL;
}

/* In-place copy: 64-bit relaxed atomic stores for whole words, bytes for the tail. */
static void array_copy_value(uint8_t *dst, const uint8_t *src, uint32_t size)
{
	uint32_t i = 0;

	for (; i + 8 <= size; i += 8) {
		uint64_t w;
		memcpy(&w, src + i, 8);
		atomic_store_explicit((_Atomic uint64_t *)(void *)(dst + i), w, memory_order_relaxed);
	}
	for (; i < size; i++)
		atomic_store_explicit((_Atomic uint8_t *)(dst + i), src[i], memory_order_relaxed);
}

int map_array_update(struct nb_map *m, const void *key, const void *value, uint64_t flags)
{
	uint32_t idx;

	/* Kernel order: flags, then index, then NOEXIST (every index always exists). */
	if (flags > NB_EXIST)
		return -EINVAL;
	memcpy(&idx, key, sizeof(idx));
	if (idx >= m->max_entries)
		return -E2BIG;
	if (flags == NB_NOEXIST)
		return -EEXIST;
	array_copy_value(m->array_base + (size_t)idx * m->stride, value, m->value_size);
	return 0;
}

int map_array_get_next_key(struct nb_map *m, const void *key, void *next_key)
{
	uint32_t idx, next;

	if (!key) {
		next = 0;
	} else {
		memcpy(&idx, key, sizeof(idx));
		if (idx >= m->max_entries)
			next = 0;
		else if (idx == m->max_entries - 1)
			return -ENOENT;
		else
			next = idx + 1;
	}
	memcpy(next_key, &next, sizeof(next));
	return 0;
}
