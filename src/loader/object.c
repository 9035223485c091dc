/* loader entry points: open an object from memory or a file, close it. The input buffer is
 * copied once; strings handed out in the object model (line info file names and source
 * text) point into that private copy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

struct ld_priv {
	uint8_t *buf;
	size_t size;
};

static void read_license(struct ld_ctx *c)
{
	int idx = ld_elf_find_section(&c->elf, "license");
	if (idx < 0 || !c->elf.secs[idx].data)
		return;
	const struct ld_section *s = &c->elf.secs[idx];
	size_t n = s->size < sizeof(c->obj->license) - 1 ? (size_t)s->size
							  : sizeof(c->obj->license) - 1;
	memcpy(c->obj->license, s->data, n);
	c->obj->license[n] = '\0';
}

static int load(struct ld_ctx *c, const uint8_t *buf, size_t size)
{
	int ret = ld_elf_parse(c, buf, size);
	if (ret)
		return ret;
	int idx = ld_elf_find_section(&c->elf, ".BTF");
	if (idx > 0 && !c->elf.secs[idx].data)
		return ld_err(c, EINVAL, "section %d (.BTF) has no file contents (type %u)", idx,
			      c->elf.secs[idx].type);
	if (idx > 0) {
		ret = ld_btf_parse(c, c->elf.secs[idx].data, c->elf.secs[idx].size);
		if (ret)
			return ret;
		c->has_btf = true;
	}
	idx = ld_elf_find_section(&c->elf, ".BTF.ext");
	if (idx > 0 && !c->elf.secs[idx].data)
		return ld_err(c, EINVAL, "section %d (.BTF.ext) has no file contents (type %u)", idx,
			      c->elf.secs[idx].type);
	if (idx > 0) {
		ret = ld_btf_ext_parse(c, c->elf.secs[idx].data, c->elf.secs[idx].size);
		if (ret)
			return ret;
		c->has_ext = true;
	}
	c->obj->has_btf = c->has_btf;
	c->obj->has_btf_ext = c->has_ext;
	read_license(c);
	ret = ld_collect_maps(c);
	if (ret)
		return ret;
	return ld_collect_programs(c);
}

int ld_add_extern(struct ld_ctx *c, const char *name, bool is_func)
{
	struct nb_object *o = c->obj;
	for (size_t i = 0; i < o->extern_cnt; i++)
		if (!strcmp(o->externs[i].name, name))
			return 0;
	struct nb_extern *n = realloc(o->externs, (o->extern_cnt + 1) * sizeof(*n));
	if (!n)
		return ld_err(c, ENOMEM, "out of memory");
	o->externs = n;
	snprintf(n[o->extern_cnt].name, sizeof(n->name), "%s", name);
	n[o->extern_cnt++].is_func = is_func;
	return 0;
}

int loader_open_mem(const void *buf, size_t size, const char *name, struct nb_object **out,
		    char *err, size_t errlen)
{
	return loader_open_mem_flags(buf, size, name, 0, out, err, errlen);
}

int loader_open_mem_flags(const void *buf, size_t size, const char *name, unsigned flags,
			  struct nb_object **out, char *err, size_t errlen)
{
	struct ld_ctx c = {.err = err, .errlen = errlen, .flags = flags};
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!buf && size)
		return ld_err(&c, EINVAL, "NULL buffer");
	if (size > LD_MAX_FILE_SIZE)
		return ld_err(&c, EFBIG, "object is %zu bytes, more than the %u-byte limit", size,
			      LD_MAX_FILE_SIZE);
	struct nb_object *obj = calloc(1, sizeof(*obj));
	struct ld_priv *priv = calloc(1, sizeof(*priv));
	if (!obj || !priv) {
		free(obj);
		free(priv);
		return ld_err(&c, ENOMEM, "out of memory");
	}
	obj->priv = priv;
	priv->buf = malloc(size ? size : 1);
	if (!priv->buf) {
		loader_close(obj);
		return ld_err(&c, ENOMEM, "out of memory copying %zu bytes", size);
	}
	if (size)
		memcpy(priv->buf, buf, size);
	priv->size = size;
	snprintf(obj->name, sizeof(obj->name), "%s", name ? name : "");
	c.obj = obj;
	ret = load(&c, priv->buf, size);
	ld_btf_ext_free(&c.ext);
	ld_btf_free(&c.btf);
	ld_elf_free(&c.elf);
	free(c.map_locs);
	if (ret) {
		if (err && errlen && !err[0])
			snprintf(err, errlen, "load failed (%d)", ret);
		loader_close(obj);
		return ret;
	}
	*out = obj;
	return 0;
}

int loader_open_file(const char *path, struct nb_object **out, char *err, size_t errlen)
{
	return loader_open_file_flags(path, 0, out, err, errlen);
}

int loader_open_file_flags(const char *path, unsigned flags, struct nb_object **out, char *err,
			   size_t errlen)
{
	struct ld_ctx c = {.err = err, .errlen = errlen};
	char why[256];
	void *buf = NULL;
	size_t len = 0;

	if (out)
		*out = NULL;
	int rc = loader_read_file(path, LD_MAX_FILE_SIZE, &buf, &len, why, sizeof(why));
	if (rc)
		return ld_err(&c, -rc, "%s", why);
	const char *base = strrchr(path, '/');
	int ret = loader_open_mem_flags(buf, len, base ? base + 1 : path, flags, out, err, errlen);
	free(buf);
	return ret;
}

void loader_close(struct nb_object *obj)
{
	if (!obj)
		return;
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		free(obj->progs[i].insns);
		free(obj->progs[i].lines);
		free(obj->progs[i].funcs);
	}
	free(obj->progs);
	for (size_t i = 0; i < obj->map_cnt; i++)
		free(obj->maps[i].init_data);
	free(obj->maps);
	free(obj->externs);
	struct ld_priv *priv = obj->priv;
	if (priv)
		free(priv->buf);
	free(priv);
	free(obj);
}
