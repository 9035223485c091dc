/* Public API: maps. The host never holds a pointer into a map: values are copied in and
 * out inside an epoch, so a concurrent delete cannot free memory being copied. */
#include <errno.h>
#include <string.h>

#include "maps/map.h"
#include "runtime/runtime.h"

const char *ncclbpf_map_name(const struct ncclbpf_map *map)
{
	if (!map)
		return NULL;
	return map->def ? map->def->name : map_name(map->map);
}

uint32_t ncclbpf_map_type(const struct ncclbpf_map *map)
{
	return map ? map_type(map->map) : 0;
}

uint32_t ncclbpf_map_key_size(const struct ncclbpf_map *map)
{
	return map ? map_key_size(map->map) : 0;
}

uint32_t ncclbpf_map_value_size(const struct ncclbpf_map *map)
{
	return map ? map_value_size(map->map) : 0;
}

uint32_t ncclbpf_map_max_entries(const struct ncclbpf_map *map)
{
	return map ? map_max_entries(map->map) : 0;
}

int ncclbpf_map_lookup(struct ncclbpf_map *map, const void *key, void *value)
{
	if (!map || !key || !value)
		return -EINVAL;
	map_epoch_enter();
	const void *v = map_lookup(map->map, key);
	if (v)
		memcpy(value, v, map_value_size(map->map));
	map_epoch_exit();
	return v ? 0 : -ENOENT;
}

int ncclbpf_map_update(struct ncclbpf_map *map, const void *key, const void *value,
		       uint64_t flags)
{
	if (!map || !key || !value)
		return -EINVAL;
	map_epoch_enter();
	int rc = map_update(map->map, key, value, flags);
	map_epoch_exit();
	return rc;
}

int ncclbpf_map_delete(struct ncclbpf_map *map, const void *key)
{
	if (!map || !key)
		return -EINVAL;
	map_epoch_enter();
	int rc = map_delete(map->map, key);
	map_epoch_exit();
	return rc;
}

int ncclbpf_map_get_next_key(struct ncclbpf_map *map, const void *key, void *next_key)
{
	if (!map || !next_key)
		return -EINVAL;
	map_epoch_enter();
	int rc = map_get_next_key(map->map, key, next_key);
	map_epoch_exit();
	return rc;
}
