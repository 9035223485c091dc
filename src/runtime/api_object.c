/* Public API: objects. Opening an object parses it (loader), creates its maps (global
 * data initialised from the file, pinned maps bound through the shared registry) and
 * wraps every program; nothing is verified or compiled until ncclbpf_program_prepare. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "runtime/runtime.h"

static void program_release(struct ncclbpf_program *p)
{
	if (p->jit)
		vm_jit_free(p->jit);
	free(p->linked);
	free(p->visited);
	p->visited = NULL;
	p->jit = NULL;
	p->entry = NULL;
	p->fast = NULL;
	p->fast_entry = NULL;
	p->fast_store = NULL;
	p->linked = NULL;
	p->prepared = false;
}

void ncclbpf_object_close(struct ncclbpf_object *obj)
{
	if (!obj)
		return;
	for (size_t i = 0; i < obj->prog_cnt; i++)
		program_release(&obj->progs[i]);
	for (size_t i = 0; i < obj->map_cnt; i++)
		if (obj->maps[i].map && !obj->maps[i].pinned)
			map_free(obj->maps[i].map);
	free(obj->progs);
	free(obj->maps);
	free(obj->map_handles);
	if (obj->nbo)
		loader_close(obj->nbo);
	free(obj->raw_prog.insns);
	free(obj);
}

/* The declaration passed runtime_check_maps: creation can only fail for lack of memory or
 * of an agreed-map slot taken meanwhile by another thread, or a pinned map of the same
 * name created meanwhile with other attributes. */
static int create_map(struct ncclbpf_map *m, const struct nb_map_def *d, const char *owner,
		      char *err, size_t errlen)
{
	char why[512] = "";
	struct nb_map_spec spec;
	runtime_map_spec_of(d, &spec);
	m->def = d;
	m->readonly_prog = (spec.map_flags & NB_MAP_F_RDONLY_PROG) != 0;
	if (d->pinning == 1) {
		char who[160];
		snprintf(who, sizeof(who), "object '%s'", owner);
		m->map = runtime_pinned_map_owned(&spec, who, why, sizeof(why));
		m->pinned = true;
		if (!m->map) {
			snprintf(err, errlen, "map '%s': %s", d->name, why);
			return -EINVAL;
		}
	} else {
		int rc = map_create(&spec, &m->map, why, sizeof(why));
		if (rc < 0) {
			snprintf(err, errlen, "%s", why); /* map_create names the map */
			return rc;
		}
	}
	if (d->init_data) /* an array map (runtime_check_maps) */
		memcpy(map_array_base(m->map), d->init_data, d->value_size);
	return 0;
}

/* Wraps the loader object (or the raw program) into the API object. Takes ownership of
 * obj: on failure it is closed. */
static int object_finish(struct ncclbpf_object *obj, const struct nb_object *nbo,
			 struct ncclbpf_object **out, char *err, size_t errlen)
{
	int rc = runtime_check_maps(nbo, obj->name, NULL, err, errlen);
	if (rc < 0)
		goto fail;
	rc = -ENOMEM;
	obj->progs = calloc(nbo->prog_cnt ? nbo->prog_cnt : 1, sizeof(*obj->progs));
	obj->maps = calloc(nbo->map_cnt ? nbo->map_cnt : 1, sizeof(*obj->maps));
	obj->map_handles = calloc(nbo->map_cnt ? nbo->map_cnt : 1, sizeof(*obj->map_handles));
	if (!obj->progs || !obj->maps || !obj->map_handles) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nbo->map_cnt; i++) {
		rc = create_map(&obj->maps[i], &nbo->maps[i], obj->name, err, errlen);
		obj->map_cnt = i + 1; /* so close frees what was created */
		if (rc < 0)
			goto fail;
		obj->map_handles[i] = obj->maps[i].map;
	}
	for (size_t i = 0; i < nbo->prog_cnt; i++) {
		struct ncclbpf_program *p = &obj->progs[i];
		const struct nb_hook_desc *h = hook_for_section(nbo->progs[i].section);
		p->obj = obj;
		p->nbp = &nbo->progs[i];
		p->section_hook = h ? (int)h->type : -1;
	}
	obj->prog_cnt = nbo->prog_cnt;
	*out = obj;
	return 0;
fail:
	ncclbpf_object_close(obj);
	return rc;
}

static int object_from_loader(struct nb_object *nbo, struct ncclbpf_object **out, char *err,
			      size_t errlen)
{
	struct ncclbpf_object *obj = calloc(1, sizeof(*obj));
	if (!obj) {
		loader_close(nbo);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	obj->nbo = nbo;
	snprintf(obj->name, sizeof(obj->name), "%s", nbo->name);
	return object_finish(obj, nbo, out, err, errlen);
}

int ncclbpf_object_open_file(const char *path, struct ncclbpf_object **out, char *err,
			     size_t errlen)
{
	struct nb_object *nbo = NULL;
	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	int rc = loader_open_file(path, &nbo, err, errlen);
	if (rc < 0)
		return rc;
	return object_from_loader(nbo, out, err, errlen);
}

int ncclbpf_object_open_mem(const void *buf, size_t size, const char *name,
			    struct ncclbpf_object **out, char *err, size_t errlen)
{
	struct nb_object *nbo = NULL;
	if (!buf || !out)
		return -EINVAL;
	*out = NULL;
	int rc = loader_open_mem(buf, size, name ? name : "<memory>", &nbo, err, errlen);
	if (rc < 0)
		return rc;
	return object_from_loader(nbo, out, err, errlen);
}

int runtime_object_from_insns(const void *insns, size_t bytes, const char *name,
			      struct ncclbpf_object **out, char *err, size_t errlen)
{
	if (!insns || !out)
		return -EINVAL;
	*out = NULL;
	if (bytes == 0 || bytes % sizeof(struct bpf_insn)) {
		snprintf(err, errlen, "program is %zu bytes: not a positive multiple of 8", bytes);
		return -EINVAL;
	}
	struct ncclbpf_object *obj = calloc(1, sizeof(*obj));
	if (!obj || !(obj->raw_prog.insns = malloc(bytes))) {
		free(obj);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(obj->raw_prog.insns, insns, bytes);
	obj->raw_prog.insn_cnt = obj->raw_prog.main_insn_cnt = bytes / sizeof(struct bpf_insn);
	snprintf(obj->raw_prog.name, sizeof(obj->raw_prog.name), "main");
	snprintf(obj->raw_prog.section, sizeof(obj->raw_prog.section), ".text");
	snprintf(obj->name, sizeof(obj->name), "%s", name ? name : "<raw>");
	obj->raw.progs = &obj->raw_prog;
	obj->raw.prog_cnt = 1;
	snprintf(obj->raw.name, sizeof(obj->raw.name), "%s", obj->name);
	return object_finish(obj, &obj->raw, out, err, errlen);
}

static const struct nb_object *nbo_of(const struct ncclbpf_object *obj)
{
	return obj->nbo ? obj->nbo : &obj->raw;
}

const char *ncclbpf_object_name(const struct ncclbpf_object *obj)
{
	return obj ? obj->name : NULL;
}

const char *ncclbpf_object_license(const struct ncclbpf_object *obj)
{
	return obj ? nbo_of(obj)->license : NULL;
}

bool ncclbpf_object_has_btf(const struct ncclbpf_object *obj)
{
	return obj && nbo_of(obj)->has_btf;
}

size_t ncclbpf_object_program_count(const struct ncclbpf_object *obj)
{
	return obj ? obj->prog_cnt : 0;
}

struct ncclbpf_program *ncclbpf_object_program(struct ncclbpf_object *obj, size_t i)
{
	return obj && i < obj->prog_cnt ? &obj->progs[i] : NULL;
}

struct ncclbpf_program *ncclbpf_object_find_program(struct ncclbpf_object *obj, const char *name)
{
	if (!obj || !name)
		return NULL;
	for (size_t i = 0; i < obj->prog_cnt; i++)
		if (!strcmp(obj->progs[i].nbp->name, name))
			return &obj->progs[i];
	return NULL;
}

size_t ncclbpf_object_map_count(const struct ncclbpf_object *obj)
{
	return obj ? obj->map_cnt : 0;
}

struct ncclbpf_map *ncclbpf_object_map(struct ncclbpf_object *obj, size_t i)
{
	return obj && i < obj->map_cnt ? &obj->maps[i] : NULL;
}

struct ncclbpf_map *ncclbpf_object_find_map(struct ncclbpf_object *obj, const char *name)
{
	if (!obj || !name)
		return NULL;
	for (size_t i = 0; i < obj->map_cnt; i++)
		if (!strcmp(obj->maps[i].def->name, name))
			return &obj->maps[i];
	return NULL;
}

void runtime_program_release(struct ncclbpf_program *p)
{
	program_release(p);
}
