/* Table-policy objects from rules; see tune_object.h. */
#include "tools/tune_object.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ncclbpf/ncclbpf.h>
#include <ncclbpf/policy.h>

#define TUNED_MAGIC 0x4e425254u

_Static_assert(sizeof(struct tune_rule) == 48, "struct tune_rule must match policies/tuned_rules.bpf.c");

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Walks the symbols defined in .rodata of an ELF64 little-endian BPF object; every offset
 * and size is checked against the buffer, so a damaged object gives an error, never a
 * stray read or write. cb returns non-zero to stop. */
static int walk_rodata(const unsigned char *b, size_t len,
		       int (*cb)(void *arg, const char *name, size_t off, size_t size), void *arg,
		       char *err, size_t errlen)
{
	if (len < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) || b[EI_CLASS] != ELFCLASS64 ||
	    b[EI_DATA] != ELFDATA2LSB)
		return fail(err, errlen, "not a little-endian ELF64 object");
	Elf64_Ehdr eh;
	memcpy(&eh, b, sizeof(eh));
	if (eh.e_machine != EM_BPF || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shoff > len || (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum ||
	    eh.e_shstrndx >= eh.e_shnum)
		return fail(err, errlen, "bad section headers (not a BPF object?)");
	Elf64_Shdr *sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	memcpy(sh, b + eh.e_shoff, eh.e_shnum * sizeof(*sh));
	int rc = 0;
	for (int i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_type != SHT_NOBITS && (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset)) {
			rc = fail(err, errlen, "section %d is out of bounds", i);
			goto out;
		}
	const Elf64_Shdr *shstr = &sh[eh.e_shstrndx];
	int rodata = -1, symtab = -1;
	for (int i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= shstr->sh_size)
			continue;
		const char *nm = (const char *)b + shstr->sh_offset + sh[i].sh_name;
		size_t room = shstr->sh_size - sh[i].sh_name;
		if (strnlen(nm, room) == room)
			continue;
		if (!strcmp(nm, ".rodata") && sh[i].sh_type == SHT_PROGBITS)
			rodata = i;
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = i;
	}
	if (rodata < 0 || symtab < 0 || sh[symtab].sh_link >= eh.e_shnum) {
		rc = fail(err, errlen, "no .rodata section or no symbol table");
		goto out;
	}
	const Elf64_Shdr *strs = &sh[sh[symtab].sh_link];
	size_t nsym = sh[symtab].sh_size / sizeof(Elf64_Sym);
	for (size_t i = 0; i < nsym; i++) {
		Elf64_Sym s;
		memcpy(&s, b + sh[symtab].sh_offset + i * sizeof(s), sizeof(s));
		if (s.st_name >= strs->sh_size || s.st_shndx != rodata || ELF64_ST_TYPE(s.st_info) != STT_OBJECT)
			continue;
		const char *nm = (const char *)b + strs->sh_offset + s.st_name;
		size_t room = strs->sh_size - s.st_name;
		if (strnlen(nm, room) == room)
			continue;
		if (s.st_value > sh[rodata].sh_size || sh[rodata].sh_size - s.st_value < s.st_size) {
			rc = fail(err, errlen, ".rodata symbol %s lies outside .rodata", nm);
			goto out;
		}
		if (cb(arg, nm, sh[rodata].sh_offset + s.st_value, s.st_size))
			break;
	}
out:
	free(sh);
	return rc;
}

struct sym_list {
	struct tune_rodata_sym *v;
	size_t n, cap;
	int oom;
};

static int collect(void *arg, const char *name, size_t off, size_t size)
{
	struct sym_list *l = arg;
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 16;
		struct tune_rodata_sym *g = realloc(l->v, nc * sizeof(*g));
		if (!g) {
			l->oom = 1;
			return 1;
		}
		l->v = g;
		l->cap = nc;
	}
	struct tune_rodata_sym *s = &l->v[l->n++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->offset = off;
	s->size = size;
	return 0;
}

int tune_rodata_symbols(const void *obj, size_t len, struct tune_rodata_sym **syms, size_t *n,
			char *err, size_t errlen)
{
	struct sym_list l = {0};
	int rc = walk_rodata(obj, len, collect, &l, err, errlen);
	if (!rc && l.oom)
		rc = -ENOMEM;
	if (rc) {
		free(l.v);
		return rc;
	}
	*syms = l.v;
	*n = l.n;
	return 0;
}

struct sym_loc {
	const char *name;
	size_t size;   /* expected st_size */
	size_t offset; /* file offset of the symbol's bytes, found */
};

/* Finds the named symbols' bytes in .rodata, with their expected sizes. */
static int locate(const unsigned char *b, size_t len, struct sym_loc *syms, int nsyms, char *err,
		  size_t errlen)
{
	struct tune_rodata_sym *all = NULL;
	size_t n = 0;
	char e[256] = "";
	int rc = tune_rodata_symbols(b, len, &all, &n, e, sizeof(e));
	if (rc) {
		if (rc == -EINVAL)
			fail(err, errlen, "template: %s", e);
		return rc;
	}
	for (int k = 0; k < nsyms && !rc; k++) {
		size_t i;
		for (i = 0; i < n; i++)
			if (!strcmp(all[i].name, syms[k].name))
				break;
		if (i == n)
			rc = fail(err, errlen, "template has no .rodata symbol %s", syms[k].name);
		else if (all[i].size != syms[k].size)
			rc = fail(err, errlen, "template symbol %s has size %zu, want %zu", syms[k].name,
				  all[i].size, syms[k].size);
		else
			syms[k].offset = all[i].offset;
	}
	free(all);
	return rc;
}

int tune_verify_object(const void *obj_bytes, size_t len, char *err, size_t errlen)
{
	struct ncclbpf_object *obj = NULL;
	char e[1024] = "";
	int rc = ncclbpf_object_open_mem(obj_bytes, len, "policy", &obj, e, sizeof(e));
	if (rc)
		return fail(err, errlen, "object does not load: %s", e), rc;
	size_t np = ncclbpf_object_program_count(obj);
	for (size_t i = 0; i < np && !rc; i++) {
		struct ncclbpf_program *p = ncclbpf_object_program(obj, i);
		enum ncclbpf_hook hook = ncclbpf_program_section_hook(p);
		if (hook == NCCLBPF_HOOK_AUTO)
			continue;
		struct ncclbpf_prepare_opts opts = {.sz = sizeof(opts), .verify_mode = NCCLBPF_VERIFY_STRICT};
		rc = ncclbpf_program_prepare(p, hook, &opts, e, sizeof(e));
		if (rc)
			fail(err, errlen, "program %s is rejected: %s", ncclbpf_program_name(p), e);
	}
	ncclbpf_object_close(obj);
	return rc;
}

int tune_rules_match(const struct tune_rule *rules, size_t n, int coll, unsigned long long bytes,
		     int nnodes, int nranks, int num_pipe_ops)
{
	for (size_t i = 0; i < n; i++) {
		const struct tune_rule *r = &rules[i];
		if (r->coll_type != -1 && r->coll_type != coll)
			continue;
		if (bytes < r->min_bytes || bytes > r->max_bytes)
			continue;
		if (r->n_nodes != -1 && r->n_nodes != nnodes)
			continue;
		if (r->n_ranks != -1 && r->n_ranks != nranks)
			continue;
		if (r->num_pipe_ops != -1 && r->num_pipe_ops != num_pipe_ops)
			continue;
		return (int)i;
	}
	return -1;
}

/* Runs the program on one input and compares with the host-side reference. */
static int probe(struct ncclbpf_program *prog, const struct tune_rule *rules, size_t n, int coll,
		 unsigned long long bytes, int nnodes, int nranks, int pipe_ops, char *err, size_t errlen)
{
	struct ncclbpf_tuner_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.n_bytes = bytes;
	ctx.coll_type = (uint32_t)coll;
	ctx.n_nodes = (uint32_t)nnodes;
	ctx.n_ranks = (uint32_t)nranks;
	ctx.num_pipe_ops = (uint32_t)pipe_ops;
	ctx.avail_mask = (1u << (NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS)) - 1;
	ctx.algo = NCCLBPF_ALGO_KEEP;
	ctx.proto = NCCLBPF_PROTO_KEEP;
	ctx.n_channels = NCCLBPF_CHANNELS_KEEP;
	uint64_t ret = 0;
	char runerr[256] = "";
	if (ncclbpf_program_run(prog, &ctx, sizeof(ctx), &ret, runerr, sizeof(runerr)))
		return fail(err, errlen, "built policy faulted on a probe: %s", runerr);
	int m = tune_rules_match(rules, n, coll, bytes, nnodes, nranks, pipe_ops);
	int32_t want_algo = m < 0 ? NCCLBPF_ALGO_KEEP : rules[m].algo;
	int32_t want_proto = m < 0 ? NCCLBPF_PROTO_KEEP : rules[m].proto;
	int32_t want_ch = m < 0 ? NCCLBPF_CHANNELS_KEEP : rules[m].n_channels;
	if (ctx.algo != want_algo || ctx.proto != want_proto || ctx.n_channels != want_ch)
		return fail(err, errlen,
			    "built policy decides %d/%d/%d for coll %d, %llu bytes, %d nodes, %d ranks; rules say %d/%d/%d",
			    ctx.algo, ctx.proto, ctx.n_channels, coll, bytes, nnodes, nranks, want_algo,
			    want_proto, want_ch);
	return 0;
}

/* Loads and verifies the object, then probes every rule's edges (and just outside them). */
static int check_object(const void *obj_bytes, size_t len, const struct tune_rule *rules, size_t n,
			char *err, size_t errlen)
{
	struct ncclbpf_object *obj = NULL;
	char e[1024] = "";
	int rc = ncclbpf_object_open_mem(obj_bytes, len, "tuned_rules", &obj, e, sizeof(e));
	if (rc)
		return fail(err, errlen, "built object does not load: %s", e), rc;
	struct ncclbpf_program *prog = ncclbpf_object_find_program(obj, "tuned_rules_pick");
	struct ncclbpf_prepare_opts opts = {.sz = sizeof(opts), .verify_mode = NCCLBPF_VERIFY_STRICT};
	if (!prog) {
		rc = fail(err, errlen, "built object lacks program tuned_rules_pick");
		goto out;
	}
	rc = ncclbpf_program_prepare(prog, NCCLBPF_HOOK_TUNER, &opts, e, sizeof(e));
	if (rc) {
		fail(err, errlen, "built policy is rejected by the verifier: %s", e);
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct tune_rule *r = &rules[i];
		int coll = r->coll_type < 0 ? NCCLBPF_COLL_ALLREDUCE : r->coll_type;
		int nodes = r->n_nodes < 0 ? 2 : r->n_nodes, ranks = r->n_ranks < 0 ? 8 : r->n_ranks;
		int ops = r->num_pipe_ops < 0 ? 1 : r->num_pipe_ops;
		unsigned long long edges[4] = {r->min_bytes, r->max_bytes, r->min_bytes - 1, r->max_bytes + 1};
		for (int k = 0; k < 4 && !rc; k++) {
			if ((k == 2 && r->min_bytes == 0) || (k == 3 && r->max_bytes == UINT64_MAX))
				continue;
			rc = probe(prog, rules, n, coll, edges[k], nodes, ranks, ops, err, errlen);
			if (!rc && r->coll_type >= 0) /* another collective must not match this rule */
				rc = probe(prog, rules, n, (coll + 1) % NCCLBPF_NUM_COLLS, edges[k], nodes, ranks,
					   ops, err, errlen);
			if (!rc && r->n_nodes >= 0)
				rc = probe(prog, rules, n, coll, edges[k], nodes + 1, ranks, ops, err, errlen);
		}
	}
out:
	ncclbpf_object_close(obj);
	return rc;
}

int tune_object_build(const void *tmpl, size_t tmpl_len, const struct tune_rule *rules, size_t n,
		      void **out, size_t *out_len, char *err, size_t errlen)
{
	if (n > TUNE_MAX_RULES)
		return fail(err, errlen, "%zu rules; the table policy holds %d", n, TUNE_MAX_RULES), -E2BIG;
	struct sym_loc syms[3] = {{"tuned_magic", 4, 0}, {"tuned_n_rules", 4, 0},
				  {"tuned_rules", TUNE_MAX_RULES * sizeof(struct tune_rule), 0}};
	int rc = locate(tmpl, tmpl_len, syms, 3, err, errlen);
	if (rc)
		return rc;
	uint32_t magic;
	memcpy(&magic, (const unsigned char *)tmpl + syms[0].offset, 4);
	if (magic != TUNED_MAGIC)
		return fail(err, errlen, "template's table magic is %#x, not %#x (layout mismatch)", magic,
			    TUNED_MAGIC);
	unsigned char *b = malloc(tmpl_len);
	if (!b)
		return -ENOMEM;
	memcpy(b, tmpl, tmpl_len);
	uint32_t count = (uint32_t)n;
	memcpy(b + syms[1].offset, &count, 4);
	memset(b + syms[2].offset, 0, syms[2].size);
	if (n)
		memcpy(b + syms[2].offset, rules, n * sizeof(*rules));
	rc = check_object(b, tmpl_len, rules, n, err, errlen);
	if (rc) {
		free(b);
		return rc;
	}
	*out = b;
	*out_len = tmpl_len;
	return 0;
}

int tune_rules_read(const void *obj, size_t len, struct tune_rule *rules, size_t *n, char *err,
		    size_t errlen)
{
	struct tune_rodata_sym *all = NULL;
	size_t ns = 0;
	char e[256] = "";
	int rc = tune_rodata_symbols(obj, len, &all, &ns, e, sizeof(e));
	if (rc) {
		if (rc == -EINVAL)
			fail(err, errlen, "not a rule table: %s", e);
		return rc;
	}
	const struct tune_rodata_sym *magic = NULL, *count = NULL, *table = NULL;
	for (size_t i = 0; i < ns; i++) {
		if (!strcmp(all[i].name, "tuned_magic"))
			magic = &all[i];
		else if (!strcmp(all[i].name, "tuned_n_rules"))
			count = &all[i];
		else if (!strcmp(all[i].name, "tuned_rules"))
			table = &all[i];
	}
	const unsigned char *b = obj;
	uint32_t m = 0, c = 0;
	if (!magic || !count || !table) {
		rc = fail(err, errlen, "not a rule table: no .rodata tuned_magic, tuned_n_rules and "
				       "tuned_rules (objects from `ncclbpf tune -o` and `ncclbpf rules "
				       "compile` have them)");
	} else if (magic->size != 4 || count->size != 4 ||
		   table->size != TUNE_MAX_RULES * sizeof(struct tune_rule)) {
		rc = fail(err, errlen, "rule table of an unknown layout (tuned_rules is %zu bytes, "
				       "want %zu)", table->size, TUNE_MAX_RULES * sizeof(struct tune_rule));
	} else {
		memcpy(&m, b + magic->offset, 4);
		memcpy(&c, b + count->offset, 4);
		if (m != TUNED_MAGIC)
			rc = fail(err, errlen, "rule table magic %#x, not %#x (unknown layout)", m,
				  TUNED_MAGIC);
		else if (c > TUNE_MAX_RULES)
			rc = fail(err, errlen, "tuned_n_rules is %u, the table holds %d", c, TUNE_MAX_RULES);
	}
	if (!rc) {
		memcpy(rules, b + table->offset, c * sizeof(struct tune_rule));
		*n = c;
	}
	free(all);
	return rc;
}

/* NCCL's example-tuner spellings, so the line reads back through `rules compile`. */
static const char *conf_algo(int a, char *buf, size_t len)
{
	static const char *const n[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls",
					"nvls_tree", "pat"};
	if (a == NCCLBPF_ALGO_KEEP)
		return "-1";
	if (a >= 0 && a < NCCLBPF_NUM_ALGOS)
		return n[a];
	snprintf(buf, len, "?%d", a);
	return buf;
}

static const char *conf_proto(int p, char *buf, size_t len)
{
	static const char *const n[] = {"ll", "ll128", "simple"};
	if (p == NCCLBPF_PROTO_KEEP)
		return "-1";
	if (p >= 0 && p < NCCLBPF_NUM_PROTOS)
		return n[p];
	snprintf(buf, len, "?%d", p);
	return buf;
}

void tune_rule_format(const struct tune_rule *r, char *buf, size_t len)
{
	static const char *const colls[] = {"broadcast", "reduce", "allgather", "reducescatter",
					    "allreduce"};
	char cb[16], ab[16], pb[16], maxb[24];
	const char *coll = cb;
	if (r->coll_type >= 0 && r->coll_type < NCCLBPF_NUM_COLLS)
		coll = colls[r->coll_type];
	else
		snprintf(cb, sizeof(cb), "%d", r->coll_type);
	if (r->max_bytes == UINT64_MAX)
		snprintf(maxb, sizeof(maxb), "-1");
	else
		snprintf(maxb, sizeof(maxb), "%llu", (unsigned long long)r->max_bytes);
	snprintf(buf, len, "%s,%llu,%s,%s,%s,%d,%d,%d,%d", coll, (unsigned long long)r->min_bytes,
		 maxb, conf_algo(r->algo, ab, sizeof(ab)), conf_proto(r->proto, pb, sizeof(pb)),
		 r->n_channels > 0 ? r->n_channels : -1, r->n_nodes, r->n_ranks, r->num_pipe_ops);
}

int tune_write_atomic(const char *path, const void *buf, size_t len, char *err, size_t errlen)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = -errno;
		snprintf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
		free(tmp);
		return e;
	}
	const unsigned char *p = buf;
	size_t left = len;
	int e = 0;
	while (left && !e) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			e = w < 0 ? -errno : -EIO;
		else {
			p += w;
			left -= (size_t)w;
		}
	}
	if (!e && fchmod(fd, 0644))
		e = -errno;
	if (!e && fsync(fd))
		e = -errno;
	if (close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		snprintf(err, errlen, "%s: %s", path, strerror(-e));
		unlink(tmp);
	}
	free(tmp);
	return e;
}
