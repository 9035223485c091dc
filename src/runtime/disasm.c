/* Program disassembly in llvm-objdump syntax (isa_disasm_insn does the instruction text),
 * with function labels and "; file:line source" lines interleaved from BTF line info, the
 * way `llvm-objdump -S -d` shows them. Works on the loader's (unlinked) instructions, so
 * map references are annotated with the map's name. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/runtime.h"

struct outbuf {
	char *buf;
	size_t cap;
	size_t len; /* length that would have been written */
};

static void out_printf(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct outbuf *o, const char *fmt, ...)
{
	va_list ap;
	char *dst = o->len < o->cap ? o->buf + o->len : NULL;
	size_t room = o->len < o->cap ? o->cap - o->len : 0;
	va_start(ap, fmt);
	int n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* "     12:\t<bytes>": like llvm-objdump, an LDDW's two slots share one line. */
static void out_bytes(struct outbuf *o, size_t pc, const struct bpf_insn *insn, int slots)
{
	uint8_t b[16];
	memcpy(b, insn, 8 * (size_t)slots);
	out_printf(o, "%8zu:\t", pc);
	for (int i = 0; i < 8 * slots; i++)
		out_printf(o, "%s%02x", i ? " " : "", b[i]);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int ncclbpf_program_disasm(const struct ncclbpf_program *prog, char *buf, size_t buflen)
{
	if (!prog)
		return -EINVAL;
	const struct ncclbpf_object *obj = prog->obj;
	const struct nb_object *nbo = obj->nbo ? obj->nbo : &obj->raw;
	return runtime_disasm_loader_program(prog->nbp, nbo->maps, nbo->map_cnt, buf, buflen);
}

int runtime_disasm_loader_program(const struct nb_program *p, const struct nb_map_def *maps,
				  size_t map_cnt, char *buf, size_t buflen)
{
	if (!p || (!buf && buflen))
		return -EINVAL;
	struct outbuf o = {buf, buflen, 0};
	size_t line_i = 0, func_i = 0;
	const struct nb_line_info *last = NULL;

	if (buflen)
		buf[0] = '\0';
	if (!p->func_cnt)
		out_printf(&o, "<%s>:\n", p->name);
	for (size_t pc = 0; pc < p->insn_cnt;) {
		while (func_i < p->func_cnt && p->funcs[func_i].insn <= pc) {
			if (p->funcs[func_i].insn == pc)
				out_printf(&o, "%s<%s>:\n", pc ? "\n" : "", p->funcs[func_i].name);
			func_i++;
		}
		while (line_i < p->line_cnt && p->lines[line_i].insn <= pc) {
			const struct nb_line_info *li = &p->lines[line_i++];
			/* line 0 = compiler-generated code without a source line (objdump skips it) */
			if (li->insn != pc || li->line == 0 ||
			    (last && last->line == li->line && last->file == li->file))
				continue;
			last = li;
			out_printf(&o, "; %s:%u %s\n", li->file ? base_name(li->file) : "?", li->line,
				   li->line_src ? li->line_src : "");
		}
		char text[160];
		const struct bpf_insn *in = &p->insns[pc];
		int slots = isa_disasm_insn(p->insns, p->insn_cnt, pc, text, sizeof(text));
		if (slots <= 0) {
			snprintf(text, sizeof(text), "<invalid instruction>");
			slots = 1;
		}
		if (slots == 2 && pc + 1 >= p->insn_cnt)
			slots = 1;
		out_bytes(&o, pc, in, slots);
		out_printf(&o, "\t%s", text);
		if (isa_is_lddw(in) && in->src_reg && (uint32_t)in->imm < map_cnt) {
			const char *mn = maps[(uint32_t)in->imm].name;
			if (in->src_reg == BPF_PSEUDO_MAP_FD)
				out_printf(&o, "\t# map %s", mn);
			else if (pc + 1 < p->insn_cnt)
				out_printf(&o, "\t# &%s + %d", mn, p->insns[pc + 1].imm);
		}
		out_printf(&o, "\n");
		pc += (size_t)slots;
	}
	return o.len > (size_t)0x7fffffff ? -E2BIG : (int)o.len;
}
