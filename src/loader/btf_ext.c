/* .BTF.ext parser: func info and line info, grouped per ELF section. Each record is checked
 * against the section it names (instruction offset aligned and inside the section) and
 * against .BTF (func type ids are FUNC types, file/line strings exist). CO-RE relocation
 * records are not used by this runtime and are skipped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

#define EXT_HDR_MIN 24
#define FUNC_REC_MIN 8
#define LINE_REC_MIN 16
#define REC_MAX 256

const struct ld_ext_sec *ld_btf_ext_sec(const struct ld_btf_ext *x, const char *sec_name)
{
	for (size_t i = 0; i < x->sec_cnt; i++)
		if (strcmp(x->secs[i].sec_name, sec_name) == 0)
			return &x->secs[i];
	return NULL;
}

static struct ld_ext_sec *get_sec(struct ld_btf_ext *x, const char *name)
{
	for (size_t i = 0; i < x->sec_cnt; i++)
		if (strcmp(x->secs[i].sec_name, name) == 0)
			return &x->secs[i];
	struct ld_ext_sec *n = realloc(x->secs, (x->sec_cnt + 1) * sizeof(*n));
	if (!n)
		return NULL;
	x->secs = n;
	memset(&n[x->sec_cnt], 0, sizeof(*n));
	n[x->sec_cnt].sec_name = name;
	return &n[x->sec_cnt++];
}

/* Parses one info block (func or line) at [off, off+len) of the data after the header. */
static int parse_block(struct ld_ctx *c, const uint8_t *d, uint32_t len, bool line)
{
	const char *what = line ? "line info" : "func info";
	uint32_t min = line ? LINE_REC_MIN : FUNC_REC_MIN;

	if (len == 0)
		return 0;
	if (len < 4)
		return ld_err(c, EINVAL, ".BTF.ext %s: %u bytes, too short for the record size",
			      what, len);
	uint32_t rec_size = ld_rd32(d);
	if (rec_size < min || rec_size > REC_MAX || rec_size % 4)
		return ld_err(c, EINVAL, ".BTF.ext %s: record size %u invalid (min %u, max %u, "
					 "multiple of 4)", what, rec_size, min, REC_MAX);
	uint64_t pos = 4;
	unsigned blk = 0;
	while (pos < len) {
		if (len - pos < 8)
			return ld_err(c, EINVAL, ".BTF.ext %s block %u: header truncated (%llu "
						 "bytes left)", what, blk,
				      (unsigned long long)(len - pos));
		uint32_t name_off = ld_rd32(d + pos), num = ld_rd32(d + pos + 4);
		pos += 8;
		const char *sname = ld_btf_str(&c->btf, name_off);
		if (!sname)
			return ld_err(c, EINVAL, ".BTF.ext %s block %u: section name offset %u out "
						 "of range (%u bytes of strings)", what, blk, name_off,
				      c->btf.str_len);
		if (num == 0)
			return ld_err(c, EINVAL, ".BTF.ext %s block %u (%s): zero records", what,
				      blk, sname);
		if ((uint64_t)num * rec_size > len - pos)
			return ld_err(c, EINVAL, ".BTF.ext %s block %u (%s): %u records of %u bytes "
						 "run past the end of the block (%llu bytes left)",
				      what, blk, sname, num, rec_size,
				      (unsigned long long)(len - pos));
		int shndx = ld_elf_find_section(&c->elf, sname);
		if (shndx < 0)
			return ld_err(c, EINVAL, ".BTF.ext %s block %u names section '%s' which is "
						 "not in the object", what, blk, sname);
		const struct ld_section *sec = &c->elf.secs[shndx];
		if (!(sec->flags & LD_SHF_EXECINSTR))
			return ld_err(c, EINVAL, ".BTF.ext %s block %u: section %d (%s) is not "
						 "executable", what, blk, shndx, sname);
		struct ld_ext_sec *es = get_sec(&c->ext, sname);
		if (!es)
			return ld_err(c, ENOMEM, "out of memory");
		size_t have = line ? es->line_cnt : es->func_cnt;
		if (have + num > (SIZE_MAX / 32))
			return ld_err(c, EINVAL, ".BTF.ext %s: too many records", what);
		void *arr = line ? (void *)es->lines : (void *)es->funcs;
		size_t esz = line ? sizeof(struct ld_ext_line) : sizeof(struct ld_ext_func);
		arr = realloc(arr, (have + num) * esz);
		if (!arr)
			return ld_err(c, ENOMEM, "out of memory for %u %s records", num, what);
		if (line)
			es->lines = arr;
		else
			es->funcs = arr;
		for (uint32_t i = 0; i < num; i++, pos += rec_size) {
			const uint8_t *r = d + pos;
			uint32_t insn_off = ld_rd32(r);
			if (insn_off % 8 || insn_off >= sec->size)
				return ld_err(c, EINVAL, ".BTF.ext %s for section '%s' record %u: "
							 "instruction offset %u invalid (section is "
							 "%llu bytes, offsets are multiples of 8)",
					      what, sname, i, insn_off,
					      (unsigned long long)sec->size);
			if (line) {
				struct ld_ext_line *l = &es->lines[es->line_cnt];
				l->insn_off = insn_off;
				l->file_off = ld_rd32(r + 4);
				l->line_off = ld_rd32(r + 8);
				l->line_col = ld_rd32(r + 12);
				if (!ld_btf_str(&c->btf, l->file_off) || !ld_btf_str(&c->btf, l->line_off))
					return ld_err(c, EINVAL, ".BTF.ext line info for section '%s' "
								 "record %u: file/line string offset "
								 "%u/%u out of range (%u bytes)",
						      sname, i, l->file_off, l->line_off,
						      c->btf.str_len);
				es->line_cnt++;
			} else {
				struct ld_ext_func *f = &es->funcs[es->func_cnt];
				f->insn_off = insn_off;
				f->type_id = ld_rd32(r + 4);
				const struct ld_btf_type *t = ld_btf_type(&c->btf, f->type_id);
				if (!t || t->kind != LD_BTF_KIND_FUNC)
					return ld_err(c, EINVAL, ".BTF.ext func info for section '%s' "
								 "record %u: type id %u is not a BTF "
								 "FUNC", sname, i, f->type_id);
				es->func_cnt++;
			}
		}
		blk++;
	}
	return 0;
}

int ld_btf_ext_parse(struct ld_ctx *c, const uint8_t *data, uint64_t size)
{
	if (!c->has_btf)
		return ld_err(c, EINVAL, ".BTF.ext present but the object has no .BTF");
	if (size < EXT_HDR_MIN)
		return ld_err(c, EINVAL, ".BTF.ext: section is %llu bytes, header needs %d",
			      (unsigned long long)size, EXT_HDR_MIN);
	uint16_t magic = ld_rd16(data);
	if (magic != LD_BTF_MAGIC)
		return ld_err(c, EINVAL, ".BTF.ext: bad magic 0x%04x (expected 0xeb9f)", magic);
	if (data[2] != 1)
		return ld_err(c, EINVAL, ".BTF.ext: unsupported version %u", data[2]);
	uint32_t hdr_len = ld_rd32(data + 4);
	if (hdr_len < EXT_HDR_MIN || hdr_len > size)
		return ld_err(c, EINVAL, ".BTF.ext: header length %u invalid (section %llu bytes)",
			      hdr_len, (unsigned long long)size);
	uint64_t body = size - hdr_len;
	const uint8_t *d = data + hdr_len;
	uint32_t off[2] = {ld_rd32(data + 8), ld_rd32(data + 16)};
	uint32_t len[2] = {ld_rd32(data + 12), ld_rd32(data + 20)};
	for (int k = 0; k < 2; k++) {
		if (!ld_range_ok(off[k], len[k], body))
			return ld_err(c, EINVAL, ".BTF.ext: %s [%u, +%u) outside data (%llu bytes)",
				      k ? "line info" : "func info", off[k], len[k],
				      (unsigned long long)body);
		int ret = parse_block(c, d + off[k], len[k], k == 1);
		if (ret)
			return ret;
	}
	return 0;
}

void ld_btf_ext_free(struct ld_btf_ext *x)
{
	for (size_t i = 0; i < x->sec_cnt; i++) {
		free(x->secs[i].funcs);
		free(x->secs[i].lines);
	}
	free(x->secs);
	memset(x, 0, sizeof(*x));
}
