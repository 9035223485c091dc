/* libFuzzer target for the loader: any byte string must either load into a consistent
 * object or fail with a message; never crash, leak or read out of bounds (built with
 * -fsanitize=fuzzer,address,undefined, see CMakeLists.txt). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"

static void fail(void)
{
	abort();
}

/* Touches every byte the object model exposes and checks its invariants. */
static void walk(const struct nb_object *o)
{
	volatile uint64_t sum = strlen(o->name) + strlen(o->license);
	for (size_t i = 0; i < o->prog_cnt; i++) {
		const struct nb_program *p = &o->progs[i];
		if (p->main_insn_cnt > p->insn_cnt || p->func_cnt < 1 || p->funcs[0].insn != 0)
			fail();
		for (size_t k = 0; k < p->insn_cnt; k++)
			sum += (uint64_t)p->insns[k].imm + p->insns[k].code;
		for (size_t k = 0; k < p->line_cnt; k++) {
			if (p->lines[k].insn >= p->insn_cnt || (k && p->lines[k - 1].insn > p->lines[k].insn))
				fail();
			sum += strlen(p->lines[k].file) + strlen(p->lines[k].line_src);
		}
		for (size_t k = 0; k < p->func_cnt; k++) {
			if (p->funcs[k].insn >= p->insn_cnt)
				fail();
			sum += strlen(p->funcs[k].name);
		}
		/* pseudo calls land inside the program; map pseudo LDDWs name existing maps */
		for (size_t k = 0; k < p->insn_cnt; k++) {
			const struct bpf_insn *in = &p->insns[k];
			if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL) {
				int64_t t = (int64_t)k + in->imm + 1;
				if (t < 0 || (uint64_t)t >= p->insn_cnt)
					fail();
			}
			if (isa_is_lddw(in)) {
				if ((in->src_reg == BPF_PSEUDO_MAP_FD ||
				     in->src_reg == BPF_PSEUDO_MAP_VALUE) &&
				    (k + 1 >= p->insn_cnt || in->imm < 0 || (size_t)in->imm >= o->map_cnt))
					fail();
				/* the second slot is data (the immediate's high half), whatever
				 * its bytes look like: never an instruction of its own */
				k++;
			}
		}
		sum += loader_line_for_insn(p, p->insn_cnt / 2) != NULL;
	}
	for (size_t i = 0; i < o->map_cnt; i++) {
		const struct nb_map_def *m = &o->maps[i];
		sum += strlen(m->name);
		if (m->init_data)
			for (uint32_t k = 0; k < m->value_size; k++)
				sum += m->init_data[k];
	}
	(void)sum;
}

/* Every input in both modes: the runtime's (strict) and inspection's (externs kept). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned flags = 0; flags <= NB_LOADER_INSPECT; flags += NB_LOADER_INSPECT) {
		struct nb_object *o = NULL;
		char err[256];
		err[0] = '\0';
		int ret = loader_open_mem_flags(data, size, "fuzz", flags, &o, err, sizeof(err));
		if (ret == 0) {
			walk(o);
			/* strict objects never carry externs */
			if (!(flags & NB_LOADER_INSPECT) && o->extern_cnt)
				fail();
			for (size_t i = 0; i < o->extern_cnt; i++)
				if (!memchr(o->externs[i].name, '\0', sizeof(o->externs[i].name)))
					fail();
			loader_close(o);
		} else if (o != NULL || err[0] == '\0') {
			fail();
		}
	}
	return 0;
}
