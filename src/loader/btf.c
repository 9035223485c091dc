/* .BTF parser: header, type section (every kind up to ENUM64), string section.
 * Every type's trailing data and every type id / string offset it holds is validated
 * once here, so later lookups only need the id range check. Size resolution follows
 * modifiers and typedefs with a depth limit, so type loops give an error, not a hang. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

#define BTF_HDR_SIZE 24
#define BTF_TYPE_SIZE 12

const char *ld_btf_str(const struct ld_btf *b, uint32_t off)
{
	if (!b->strs || off >= b->str_len)
		return NULL;
	return b->strs + off; /* the section ends with NUL (checked at parse) */
}

const struct ld_btf_type *ld_btf_type(const struct ld_btf *b, uint32_t id)
{
	if (id == 0 || id >= b->nr_types)
		return NULL;
	return &b->types[id];
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = {
		"UNKNOWN", "INT",   "PTR",        "ARRAY", "STRUCT",  "UNION", "ENUM",
		"FWD",     "TYPEDEF", "VOLATILE", "CONST", "RESTRICT", "FUNC", "FUNC_PROTO",
		"VAR",     "DATASEC", "FLOAT",    "DECL_TAG", "TYPE_TAG", "ENUM64",
	};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/* Bytes of kind-specific data after the 12-byte common header, or -1 if unknown. */
static int64_t extra_size(uint32_t kind, uint32_t vlen)
{
	switch (kind) {
	case LD_BTF_KIND_INT: return 4;
	case LD_BTF_KIND_PTR:
	case LD_BTF_KIND_FWD:
	case LD_BTF_KIND_TYPEDEF:
	case LD_BTF_KIND_VOLATILE:
	case LD_BTF_KIND_CONST:
	case LD_BTF_KIND_RESTRICT:
	case LD_BTF_KIND_FUNC:
	case LD_BTF_KIND_FLOAT:
	case LD_BTF_KIND_TYPE_TAG: return 0;
	case LD_BTF_KIND_ARRAY: return 12;
	case LD_BTF_KIND_STRUCT:
	case LD_BTF_KIND_UNION: return (int64_t)vlen * 12;
	case LD_BTF_KIND_ENUM: return (int64_t)vlen * 8;
	case LD_BTF_KIND_FUNC_PROTO: return (int64_t)vlen * 8;
	case LD_BTF_KIND_VAR: return 4;
	case LD_BTF_KIND_DATASEC: return (int64_t)vlen * 12;
	case LD_BTF_KIND_DECL_TAG: return 4;
	case LD_BTF_KIND_ENUM64: return (int64_t)vlen * 12;
	default: return -1;
	}
}

static bool kind_refs_type(uint32_t kind)
{
	switch (kind) {
	case LD_BTF_KIND_PTR:
	case LD_BTF_KIND_TYPEDEF:
	case LD_BTF_KIND_VOLATILE:
	case LD_BTF_KIND_CONST:
	case LD_BTF_KIND_RESTRICT:
	case LD_BTF_KIND_FUNC:
	case LD_BTF_KIND_FUNC_PROTO:
	case LD_BTF_KIND_VAR:
	case LD_BTF_KIND_DECL_TAG:
	case LD_BTF_KIND_TYPE_TAG: return true;
	default: return false;
	}
}

/* Checks every id and string offset a type holds. */
static int check_type_refs(struct ld_ctx *c, uint32_t id)
{
	const struct ld_btf *b = &c->btf;
	const struct ld_btf_type *t = &b->types[id];
	const uint8_t *x = t->extra;
	uint32_t n = b->nr_types;

#define REF_OK(ref, what)                                                                   \
	do {                                                                                \
		if ((ref) >= n)                                                             \
			return ld_err(c, EINVAL, "BTF type %u (%s): %s type id %u out of range " \
						 "(%u types)", id, kind_name(t->kind), what, \
				      (unsigned)(ref), n - 1);                              \
	} while (0)
#define STR_OK(off, what)                                                                   \
	do {                                                                                \
		if ((off) >= b->str_len)                                                    \
			return ld_err(c, EINVAL, "BTF type %u (%s): %s name offset %u out of "  \
						 "range (string section %u bytes)", id,      \
				      kind_name(t->kind), what, (unsigned)(off), b->str_len); \
	} while (0)

	STR_OK(t->name_off, "type");
	if (kind_refs_type(t->kind))
		REF_OK(t->size_or_type, "referenced");
	switch (t->kind) {
	case LD_BTF_KIND_ARRAY:
		REF_OK(ld_rd32(x), "element");
		REF_OK(ld_rd32(x + 4), "index");
		break;
	case LD_BTF_KIND_STRUCT:
	case LD_BTF_KIND_UNION:
		for (uint32_t i = 0; i < t->vlen; i++) {
			STR_OK(ld_rd32(x + i * 12), "member");
			REF_OK(ld_rd32(x + i * 12 + 4), "member");
		}
		break;
	case LD_BTF_KIND_ENUM:
	case LD_BTF_KIND_FUNC_PROTO:
		for (uint32_t i = 0; i < t->vlen; i++) {
			STR_OK(ld_rd32(x + i * 8), "enumerator/parameter");
			if (t->kind == LD_BTF_KIND_FUNC_PROTO)
				REF_OK(ld_rd32(x + i * 8 + 4), "parameter");
		}
		break;
	case LD_BTF_KIND_ENUM64:
		for (uint32_t i = 0; i < t->vlen; i++)
			STR_OK(ld_rd32(x + i * 12), "enumerator");
		break;
	case LD_BTF_KIND_DATASEC:
		for (uint32_t i = 0; i < t->vlen; i++)
			REF_OK(ld_rd32(x + i * 12), "variable");
		break;
	default:
		break;
	}
#undef REF_OK
#undef STR_OK
	return 0;
}

int ld_btf_parse(struct ld_ctx *c, const uint8_t *data, uint64_t size)
{
	struct ld_btf *b = &c->btf;

	if (size < BTF_HDR_SIZE)
		return ld_err(c, EINVAL, ".BTF: section is %llu bytes, header needs %d",
			      (unsigned long long)size, BTF_HDR_SIZE);
	uint16_t magic = ld_rd16(data);
	if (magic != LD_BTF_MAGIC)
		return ld_err(c, EINVAL, ".BTF: bad magic 0x%04x (expected 0xeb9f; big-endian BTF "
					 "is not supported)", magic);
	if (data[2] != 1)
		return ld_err(c, EINVAL, ".BTF: unsupported version %u", data[2]);
	uint32_t hdr_len = ld_rd32(data + 4), type_off = ld_rd32(data + 8),
		 type_len = ld_rd32(data + 12), str_off = ld_rd32(data + 16),
		 str_len = ld_rd32(data + 20);
	if (hdr_len < BTF_HDR_SIZE || hdr_len > size)
		return ld_err(c, EINVAL, ".BTF: header length %u invalid (section %llu bytes)",
			      hdr_len, (unsigned long long)size);
	uint64_t body = size - hdr_len;
	if (!ld_range_ok(type_off, type_len, body))
		return ld_err(c, EINVAL, ".BTF: type section [%u, +%u) outside data (%llu bytes)",
			      type_off, type_len, (unsigned long long)body);
	if (!ld_range_ok(str_off, str_len, body))
		return ld_err(c, EINVAL, ".BTF: string section [%u, +%u) outside data (%llu bytes)",
			      str_off, str_len, (unsigned long long)body);
	if (type_off % 4)
		return ld_err(c, EINVAL, ".BTF: type section offset %u is not 4-byte aligned",
			      type_off);
	if (str_len == 0 || data[hdr_len + str_off] != 0 ||
	    data[hdr_len + str_off + str_len - 1] != 0)
		return ld_err(c, EINVAL, ".BTF: string section (%u bytes) must start and end with "
					 "NUL", str_len);
	b->strs = (const char *)data + hdr_len + str_off;
	b->str_len = str_len;
	b->types_start = data + hdr_len + type_off;

	/* pass 1: count and validate lengths */
	uint32_t count = 0;
	uint64_t pos = 0;
	while (pos < type_len) {
		if (type_len - pos < BTF_TYPE_SIZE)
			return ld_err(c, EINVAL, ".BTF: type %u header truncated at type offset %llu "
						 "(%u bytes of types)", count + 1,
				      (unsigned long long)pos, type_len);
		uint32_t info = ld_rd32(b->types_start + pos + 4);
		uint32_t kind = (info >> 24) & 0x1f;
		int64_t ex = extra_size(kind, info & 0xffff);
		if (ex < 0)
			return ld_err(c, EINVAL, ".BTF: type %u has unknown kind %u", count + 1, kind);
		if ((uint64_t)ex > type_len - pos - BTF_TYPE_SIZE)
			return ld_err(c, EINVAL, ".BTF: type %u (%s, vlen %u) needs %lld bytes past "
						 "the end of the type section", count + 1,
				      kind_name(kind), info & 0xffff,
				      (long long)((uint64_t)ex - (type_len - pos - BTF_TYPE_SIZE)));
		pos += BTF_TYPE_SIZE + (uint64_t)ex;
		count++;
	}
	b->nr_types = count + 1;
	b->types = calloc(b->nr_types, sizeof(*b->types));
	if (!b->types)
		return ld_err(c, ENOMEM, "out of memory for %u BTF types", count);
	pos = 0;
	for (uint32_t id = 1; id < b->nr_types; id++) {
		const uint8_t *p = b->types_start + pos;
		struct ld_btf_type *t = &b->types[id];
		uint32_t info = ld_rd32(p + 4);
		t->name_off = ld_rd32(p);
		t->kind = (info >> 24) & 0x1f;
		t->vlen = info & 0xffff;
		t->kflag = info >> 31;
		t->size_or_type = ld_rd32(p + 8);
		t->extra = p + BTF_TYPE_SIZE;
		pos += BTF_TYPE_SIZE + (uint64_t)extra_size(t->kind, t->vlen);
	}
	for (uint32_t id = 1; id < b->nr_types; id++) {
		int ret = check_type_refs(c, id);
		if (ret)
			return ret;
	}
	return 0;
}

void ld_btf_free(struct ld_btf *b)
{
	free(b->types);
	memset(b, 0, sizeof(*b));
}

static bool is_modifier(uint32_t kind)
{
	return kind == LD_BTF_KIND_TYPEDEF || kind == LD_BTF_KIND_VOLATILE ||
	       kind == LD_BTF_KIND_CONST || kind == LD_BTF_KIND_RESTRICT ||
	       kind == LD_BTF_KIND_TYPE_TAG;
}

int ld_btf_skip_mods(struct ld_ctx *c, uint32_t id, uint32_t *out)
{
	uint32_t start = id;
	for (int depth = 0; depth <= LD_BTF_MAX_DEPTH; depth++) {
		const struct ld_btf_type *t = ld_btf_type(&c->btf, id);
		if (!t || !is_modifier(t->kind)) {
			*out = id;
			return 0;
		}
		id = t->size_or_type;
	}
	return ld_err(c, ELOOP, "BTF type %u: modifier/typedef chain deeper than %d (type loop)",
		      start, LD_BTF_MAX_DEPTH);
}

static int resolve_size(struct ld_ctx *c, uint32_t id, uint64_t *size, int depth)
{
	if (depth > LD_BTF_MAX_DEPTH)
		return ld_err(c, ELOOP, "BTF type %u: type chain deeper than %d (type loop)", id,
			      LD_BTF_MAX_DEPTH);
	const struct ld_btf_type *t = ld_btf_type(&c->btf, id);
	if (!t)
		return ld_err(c, EINVAL, "BTF type %u: void or out of range has no size", id);
	switch (t->kind) {
	case LD_BTF_KIND_INT:
	case LD_BTF_KIND_STRUCT:
	case LD_BTF_KIND_UNION:
	case LD_BTF_KIND_ENUM:
	case LD_BTF_KIND_ENUM64:
	case LD_BTF_KIND_FLOAT:
	case LD_BTF_KIND_DATASEC:
		*size = t->size_or_type;
		return 0;
	case LD_BTF_KIND_PTR:
		*size = 8;
		return 0;
	case LD_BTF_KIND_ARRAY: {
		uint64_t elem;
		uint32_t nelems = ld_rd32(t->extra + 8);
		int ret = resolve_size(c, ld_rd32(t->extra), &elem, depth + 1);
		if (ret)
			return ret;
		if (elem && nelems > UINT32_MAX / elem)
			return ld_err(c, EOVERFLOW, "BTF type %u: array of %u x %llu bytes is too "
						    "large", id, nelems, (unsigned long long)elem);
		*size = elem * nelems;
		return 0;
	}
	case LD_BTF_KIND_TYPEDEF:
	case LD_BTF_KIND_VOLATILE:
	case LD_BTF_KIND_CONST:
	case LD_BTF_KIND_RESTRICT:
	case LD_BTF_KIND_TYPE_TAG:
	case LD_BTF_KIND_VAR:
		return resolve_size(c, t->size_or_type, size, depth + 1);
	default:
		return ld_err(c, EINVAL, "BTF type %u (%s) has no size", id, kind_name(t->kind));
	}
}

int ld_btf_resolve_size(struct ld_ctx *c, uint32_t id, uint64_t *size)
{
	return resolve_size(c, id, size, 0);
}

int ld_btf_member(const struct ld_btf *b, const struct ld_btf_type *t, uint32_t i,
		  struct ld_btf_member *m)
{
	if ((t->kind != LD_BTF_KIND_STRUCT && t->kind != LD_BTF_KIND_UNION) || i >= t->vlen)
		return -EINVAL;
	const uint8_t *x = t->extra + (size_t)i * 12;
	m->name = ld_btf_str(b, ld_rd32(x));
	m->type = ld_rd32(x + 4);
	m->offset = ld_rd32(x + 8);
	if (t->kflag)
		m->offset &= 0xffffff;
	return m->name ? 0 : -EINVAL;
}

uint32_t ld_btf_find_datasec(const struct ld_btf *b, const char *name)
{
	for (uint32_t id = 1; id < b->nr_types; id++) {
		const struct ld_btf_type *t = &b->types[id];
		if (t->kind != LD_BTF_KIND_DATASEC)
			continue;
		const char *n = ld_btf_str(b, t->name_off);
		if (n && strcmp(n, name) == 0)
			return id;
	}
	return 0;
}
