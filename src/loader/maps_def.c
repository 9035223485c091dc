/* Map definitions: BTF-defined maps in `.maps`, legacy `struct bpf_map_def` entries in
 * `maps`, and global data sections (.rodata*, .data*, .bss*) as single-entry array maps,
 * following libbpf's conventions so existing policies load unchanged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

#define MAP_TYPE_ARRAY 2
#define MAP_F_RDONLY_PROG (1u << 7)
#define LEGACY_DEF_SIZE 20 /* 5 x u32: type, key_size, value_size, max_entries, map_flags */

static int push_map(struct ld_ctx *c, const char *name, const struct ld_map_loc *loc,
		    struct nb_map_def **out)
{
	struct nb_object *o = c->obj;

	if (strlen(name) >= NB_NAME_MAX)
		return ld_err(c, EINVAL, "map name '%.*s...' is longer than %d characters", 40,
			      name, NB_NAME_MAX - 1);
	for (size_t i = 0; i < o->map_cnt; i++)
		if (strcmp(o->maps[i].name, name) == 0)
			return ld_err(c, EINVAL, "map '%s' is defined twice", name);
	struct nb_map_def *m = realloc(o->maps, (o->map_cnt + 1) * sizeof(*m));
	if (!m)
		return ld_err(c, ENOMEM, "out of memory");
	o->maps = m;
	struct ld_map_loc *l = realloc(c->map_locs, (o->map_cnt + 1) * sizeof(*l));
	if (!l)
		return ld_err(c, ENOMEM, "out of memory");
	c->map_locs = l;
	l[o->map_cnt] = *loc;
	m = &o->maps[o->map_cnt++];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	*out = m;
	return 0;
}

/* __uint(name, N) is `int (*name)[N]`: pointer to an array of N elements. */
static int field_uint(struct ld_ctx *c, const char *map, const struct ld_btf_member *mb,
		      uint32_t *val)
{
	uint32_t id;
	int ret = ld_btf_skip_mods(c, mb->type, &id);
	if (ret)
		return ret;
	const struct ld_btf_type *t = ld_btf_type(&c->btf, id);
	if (!t || t->kind != LD_BTF_KIND_PTR)
		return ld_err(c, EINVAL, "map '%s': field '%s' is not declared with __uint() "
					 "(BTF type %u is not a pointer)", map, mb->name, id);
	ret = ld_btf_skip_mods(c, t->size_or_type, &id);
	if (ret)
		return ret;
	t = ld_btf_type(&c->btf, id);
	if (!t || t->kind != LD_BTF_KIND_ARRAY)
		return ld_err(c, EINVAL, "map '%s': field '%s' is not declared with __uint() "
					 "(BTF type %u is not an array)", map, mb->name, id);
	*val = ld_rd32(t->extra + 8);
	return 0;
}

/* __type(name, T) is `typeof(T) *name`: the pointee's size and id. */
static int field_type(struct ld_ctx *c, const char *map, const struct ld_btf_member *mb,
		      uint32_t *type_id, uint32_t *size)
{
	uint32_t id;
	uint64_t sz;
	int ret = ld_btf_skip_mods(c, mb->type, &id);
	if (ret)
		return ret;
	const struct ld_btf_type *t = ld_btf_type(&c->btf, id);
	if (!t || t->kind != LD_BTF_KIND_PTR)
		return ld_err(c, EINVAL, "map '%s': field '%s' is not declared with __type() "
					 "(BTF type %u is not a pointer)", map, mb->name, id);
	ret = ld_btf_resolve_size(c, t->size_or_type, &sz);
	if (ret)
		return ret;
	if (sz == 0 || sz > UINT32_MAX)
		return ld_err(c, EINVAL, "map '%s': %s type has size %llu", map, mb->name,
			      (unsigned long long)sz);
	*type_id = t->size_or_type;
	*size = (uint32_t)sz;
	return 0;
}

static int btf_map_def(struct ld_ctx *c, const char *name, uint32_t struct_id,
		       struct nb_map_def *m)
{
	uint32_t id;
	int ret = ld_btf_skip_mods(c, struct_id, &id);
	if (ret)
		return ret;
	const struct ld_btf_type *t = ld_btf_type(&c->btf, id);
	if (!t || t->kind != LD_BTF_KIND_STRUCT)
		return ld_err(c, EINVAL, "map '%s': BTF type %u is not a struct", name, id);
	bool have_key_size = false, have_value_size = false;
	for (uint32_t i = 0; i < t->vlen; i++) {
		struct ld_btf_member mb;
		uint32_t ksz = 0;
		if (ld_btf_member(&c->btf, t, i, &mb))
			return ld_err(c, EINVAL, "map '%s': bad member %u", name, i);
		if (strcmp(mb.name, "type") == 0)
			ret = field_uint(c, name, &mb, &m->type);
		else if (strcmp(mb.name, "max_entries") == 0)
			ret = field_uint(c, name, &mb, &m->max_entries);
		else if (strcmp(mb.name, "map_flags") == 0)
			ret = field_uint(c, name, &mb, &m->map_flags);
		else if (strcmp(mb.name, "pinning") == 0)
			ret = field_uint(c, name, &mb, &m->pinning);
		else if (strcmp(mb.name, "numa_node") == 0)
			ret = field_uint(c, name, &mb, &m->numa_node);
		else if (strcmp(mb.name, "map_extra") == 0) {
			uint32_t v = 0;
			ret = field_uint(c, name, &mb, &v);
			m->map_extra = v;
		}
		else if (strcmp(mb.name, "key_size") == 0 || strcmp(mb.name, "value_size") == 0) {
			bool key = mb.name[0] == 'k';
			ret = field_uint(c, name, &mb, &ksz);
			uint32_t *dst = key ? &m->key_size : &m->value_size;
			if (!ret && *dst && *dst != ksz)
				return ld_err(c, EINVAL, "map '%s': %s %u conflicts with the %s type "
							 "size %u", name, mb.name, ksz,
					      key ? "key" : "value", *dst);
			*dst = ksz;
			if (key)
				have_key_size = true;
			else
				have_value_size = true;
		} else if (strcmp(mb.name, "key") == 0 || strcmp(mb.name, "value") == 0) {
			bool key = mb.name[0] == 'k';
			uint32_t tid = 0;
			ret = field_type(c, name, &mb, &tid, &ksz);
			uint32_t *dst = key ? &m->key_size : &m->value_size;
			if (!ret && (key ? have_key_size : have_value_size) && *dst != ksz)
				return ld_err(c, EINVAL, "map '%s': %s_size %u conflicts with the %s "
							 "type size %u", name, mb.name, *dst,
					      mb.name, ksz);
			*dst = ksz;
			if (key)
				m->btf_key_type = tid;
			else
				m->btf_value_type = tid;
		} else if (strcmp(mb.name, "values") == 0) {
			/* inspection: the inner map / program slots (4-byte ids to the kernel)
			 * and their initial contents are the kernel loader's business */
			if (!(c->flags & NB_LOADER_INSPECT))
				return ld_err(c, ENOTSUP, "map '%s': map-in-map / program array "
							  "'values' is not supported", name);
			m->value_size = m->value_size ? m->value_size : 4;
		} else {
			return ld_err(c, EINVAL, "map '%s': unknown field '%s'", name, mb.name);
		}
		if (ret)
			return ret;
	}
	if (!m->type)
		return ld_err(c, EINVAL, "map '%s': no 'type' field", name);
	return 0;
}

static int collect_btf_maps(struct ld_ctx *c, int shndx)
{
	const struct ld_section *sec = &c->elf.secs[shndx];

	if (!c->has_btf)
		return ld_err(c, EINVAL, "section %d (.maps): BTF-defined maps need a .BTF section "
			      "(compile with clang -g)", shndx);
	uint32_t ds = ld_btf_find_datasec(&c->btf, ".maps");
	if (!ds)
		return ld_err(c, EINVAL, "section %d (.maps): no BTF DATASEC '.maps'", shndx);
	const struct ld_btf_type *t = ld_btf_type(&c->btf, ds);
	for (uint32_t i = 0; i < t->vlen; i++) {
		const uint8_t *vi = t->extra + (size_t)i * 12;
		uint32_t var_id = ld_rd32(vi), off = ld_rd32(vi + 4), size = ld_rd32(vi + 8);
		const struct ld_btf_type *v = ld_btf_type(&c->btf, var_id);
		if (!v || v->kind != LD_BTF_KIND_VAR)
			return ld_err(c, EINVAL, ".maps DATASEC entry %u: BTF type %u is not a VAR",
				      i, var_id);
		const char *name = ld_btf_str(&c->btf, v->name_off);
		if (!name || !*name)
			return ld_err(c, EINVAL, ".maps DATASEC entry %u: unnamed variable", i);
		/* object files leave DATASEC offsets to the linker (often 0): the ELF symbol of
		 * the variable has the real position, as libbpf uses it */
		const struct ld_sym *sym = NULL;
		for (uint32_t k = 0; k < c->elf.nsyms && !sym; k++)
			if (c->elf.syms[k].shndx == shndx && c->elf.syms[k].type != LD_STT_SECTION &&
			    strcmp(c->elf.syms[k].name, name) == 0)
				sym = &c->elf.syms[k];
		if (!sym)
			return ld_err(c, EINVAL, "map '%s': no symbol of that name in section %d "
						 "(.maps)", name, shndx);
		if (sym->value > UINT32_MAX || sym->size > UINT32_MAX)
			return ld_err(c, EINVAL, "map '%s': symbol value/size out of range", name);
		off = (uint32_t)sym->value;
		if (sym->size)
			size = (uint32_t)sym->size;
		if (!ld_range_ok(off, size, sec->size))
			return ld_err(c, EINVAL, "map '%s': definition [%u, +%u) outside section %d "
						 "(.maps, %llu bytes)", name, off, size, shndx,
				      (unsigned long long)sec->size);
		struct ld_map_loc loc = {(uint32_t)shndx, off, size, false};
		struct nb_map_def *m;
		int ret = push_map(c, name, &loc, &m);
		if (ret)
			return ret;
		m->origin = NB_MAP_ORIGIN_BTF;
		ret = btf_map_def(c, name, v->size_or_type, m);
		if (ret)
			return ret;
	}
	return 0;
}

static int collect_legacy_maps(struct ld_ctx *c, int shndx)
{
	const struct ld_elf *e = &c->elf;
	const struct ld_section *sec = &e->secs[shndx];
	uint32_t nr = 0;

	if (!sec->data)
		return ld_err(c, EINVAL, "section %d (maps): has no file contents", shndx);
	for (uint32_t i = 0; i < e->nsyms; i++)
		if (e->syms[i].shndx == shndx && e->syms[i].type != LD_STT_SECTION)
			nr++;
	if (!nr)
		return sec->size ? ld_err(c, EINVAL, "section %d (maps): %llu bytes but no map "
						     "symbols", shndx,
					  (unsigned long long)sec->size)
				 : 0;
	for (uint32_t i = 0; i < e->nsyms; i++) {
		const struct ld_sym *s = &e->syms[i];
		if (s->shndx != shndx || s->type == LD_STT_SECTION)
			continue;
		uint64_t size = s->size ? s->size : sec->size / nr;
		if (size < LEGACY_DEF_SIZE)
			return ld_err(c, EINVAL, "legacy map '%s' (symbol %u): definition is %llu "
						 "bytes, struct bpf_map_def needs %d", s->name, i,
				      (unsigned long long)size, LEGACY_DEF_SIZE);
		if (!ld_range_ok(s->value, size, sec->size))
			return ld_err(c, EINVAL, "legacy map '%s' (symbol %u): definition [%llu, "
						 "+%llu) outside section %d (maps, %llu bytes)",
				      s->name, i, (unsigned long long)s->value,
				      (unsigned long long)size, shndx,
				      (unsigned long long)sec->size);
		if (!*s->name)
			return ld_err(c, EINVAL, "legacy map symbol %u has no name", i);
		struct ld_map_loc loc = {(uint32_t)shndx, s->value, size, false};
		struct nb_map_def *m;
		int ret = push_map(c, s->name, &loc, &m);
		if (ret)
			return ret;
		const uint8_t *p = sec->data + s->value;
		m->origin = NB_MAP_ORIGIN_LEGACY;
		m->type = ld_rd32(p);
		m->key_size = ld_rd32(p + 4);
		m->value_size = ld_rd32(p + 8);
		m->max_entries = ld_rd32(p + 12);
		m->map_flags = ld_rd32(p + 16);
	}
	return 0;
}

static bool has_prefix_sec(const char *name, const char *base)
{
	size_t n = strlen(base);
	return strncmp(name, base, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static int collect_global_data(struct ld_ctx *c)
{
	const struct ld_elf *e = &c->elf;

	for (uint32_t i = 1; i < e->shnum; i++) {
		const struct ld_section *s = &e->secs[i];
		enum nb_map_origin origin;
		if (s->type != LD_SHT_PROGBITS && s->type != LD_SHT_NOBITS)
			continue;
		if (s->flags & LD_SHF_EXECINSTR)
			continue;
		if (has_prefix_sec(s->name, ".rodata"))
			origin = NB_MAP_ORIGIN_RODATA;
		else if (has_prefix_sec(s->name, ".data"))
			origin = NB_MAP_ORIGIN_DATA;
		else if (has_prefix_sec(s->name, ".bss"))
			origin = NB_MAP_ORIGIN_BSS;
		else
			continue;
		if (s->size == 0)
			continue;
		if (s->size > LD_MAX_GLOBAL_DATA)
			return ld_err(c, EFBIG, "section %u (%s): %llu bytes is too large for a "
						"global data map (limit %u)", i, s->name,
				      (unsigned long long)s->size, LD_MAX_GLOBAL_DATA);
		struct ld_map_loc loc = {i, 0, s->size, true};
		struct nb_map_def *m;
		int ret = push_map(c, s->name, &loc, &m);
		if (ret)
			return ret;
		m->origin = origin;
		m->type = MAP_TYPE_ARRAY;
		m->key_size = 4;
		m->value_size = (uint32_t)s->size;
		m->max_entries = 1;
		m->map_flags = origin == NB_MAP_ORIGIN_RODATA ? MAP_F_RDONLY_PROG : 0;
		if (c->has_btf)
			m->btf_value_type = ld_btf_find_datasec(&c->btf, s->name);
		m->init_data = calloc(1, s->size);
		if (!m->init_data)
			return ld_err(c, ENOMEM, "out of memory for %llu bytes of %s",
				      (unsigned long long)s->size, s->name);
		if (s->type == LD_SHT_PROGBITS)
			memcpy(m->init_data, s->data, s->size);
	}
	return 0;
}

int ld_collect_maps(struct ld_ctx *c)
{
	int ret, idx;

	idx = ld_elf_find_section(&c->elf, ".maps");
	if (idx > 0 && c->elf.secs[idx].size) {
		ret = collect_btf_maps(c, idx);
		if (ret)
			return ret;
	}
	idx = ld_elf_find_section(&c->elf, "maps");
	if (idx > 0) {
		ret = collect_legacy_maps(c, idx);
		if (ret)
			return ret;
	}
	return collect_global_data(c);
}

int ld_map_at(const struct ld_ctx *c, uint32_t shndx, uint64_t offset, bool *global_data)
{
	for (size_t i = 0; i < c->obj->map_cnt; i++) {
		const struct ld_map_loc *l = &c->map_locs[i];
		if (l->shndx != shndx)
			continue;
		if (l->global_data || l->offset == offset) {
			*global_data = l->global_data;
			return (int)i;
		}
	}
	return -1;
}
