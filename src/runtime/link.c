/* Link step: the loader leaves map references as pseudo LDDW forms (imm = map index).
 * Execution needs addresses: BPF_PSEUDO_MAP_FD becomes the struct nb_map pointer (what the
 * map helpers and the JIT's inlined array lookup take), BPF_PSEUDO_MAP_VALUE becomes the
 * address of the global-data / array value plus the offset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "runtime/runtime.h"

static void set_imm64(struct bpf_insn *insn, uint64_t v)
{
	insn[0].imm = (int32_t)(uint32_t)v;
	insn[1].imm = (int32_t)(uint32_t)(v >> 32);
	insn[0].src_reg = 0;
}

int runtime_link_program(struct ncclbpf_program *prog, char *err, size_t errlen)
{
	const struct nb_program *p = prog->nbp;
	const struct ncclbpf_object *obj = prog->obj;
	struct bpf_insn *out = malloc((p->insn_cnt ? p->insn_cnt : 1) * sizeof(*out));

	if (!out) {
		snprintf(err, errlen, "out of memory linking '%s'", p->name);
		return -ENOMEM;
	}
	memcpy(out, p->insns, p->insn_cnt * sizeof(*out));
	prog->needs_epoch = false;
	prog->uses_agreed = false;
	/* runtime_check_program checked every reference below (index, form, value offset) */
	for (size_t i = 0; i + 1 < p->insn_cnt; i++) {
		struct bpf_insn *in = &out[i];
		if (!isa_is_lddw(in))
			continue;
		if (in->src_reg == BPF_PSEUDO_FUNC) {
			/* bpf_loop callback: the absolute index of its function (vm.h) */
			set_imm64(in, (uint64_t)((int64_t)i + in->imm + 1));
			in->src_reg = BPF_PSEUDO_FUNC;
		} else if (in->src_reg) {
			struct nb_map *m = obj->maps[(uint32_t)in->imm].map;
			if (map_flags(m) & NB_MAP_F_AGREED)
				prog->uses_agreed = true;
			if (in->src_reg == BPF_PSEUDO_MAP_FD) {
				prog->needs_epoch |= map_needs_epoch(m);
				set_imm64(in, (uint64_t)(uintptr_t)m);
			} else {
				uint32_t off = (uint32_t)out[i + 1].imm;
				set_imm64(in, (uint64_t)(uintptr_t)(map_array_base(m) + off));
			}
		}
		i++;
	}
	/* Instructions no verified path executes (the verifier proved their branch
	 * infeasible) become traps: "call 0" has no helper on any hook, so the interpreter
	 * and the JIT stop the program with a fault there. A mistake in deciding feasibility
	 * then costs a fault, never unverified code running. */
	if (prog->visited) {
		for (size_t i = 0; i < p->insn_cnt; i++) {
			if (prog->visited[i])
				continue;
			bool wide = isa_is_lddw(&out[i]) && i + 1 < p->insn_cnt;
			out[i] = (struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .imm = 0 };
			if (wide) /* second slot: a harmless move, never reached */
				out[++i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X };
		}
	}
	free(prog->linked);
	prog->linked = out;
	return 0;
}
