/* runtime: what a hook chain decides with, as one number (runtime.h runtime_chain_content).
 * The agreement layer compares it across ranks when they join (docs/agreement.md
 * "Joining"): ranks whose tuner programs differ in any instruction, program name, map
 * declaration or global data (a `.rodata` configuration) cannot promise the same decisions. */
#include <string.h>

#include "runtime/runtime.h"

uint64_t runtime_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t put_u32(uint64_t h, uint32_t v)
{
	return runtime_fnv1a(h, &v, sizeof(v));
}

uint64_t runtime_chain_content(const struct nb_hook_chain *c)
{
	if (!c || c->len == 0)
		return 0; /* nothing attached: NCCL's own decisions */
	uint64_t h = put_u32(0xcbf29ce484222325ull, (uint32_t)c->hook);
	for (size_t i = 0; i < c->len; i++) {
		const struct ncclbpf_program *p = c->items[i].prog;
		const struct nb_program *nbp = p->nbp;
		h = put_u32(h, (uint32_t)i);
		if (nbp) {
			h = runtime_fnv1a(h, nbp->name, strlen(nbp->name) + 1);
			h = runtime_fnv1a(h, nbp->section, strlen(nbp->section) + 1);
			h = runtime_fnv1a(h, nbp->insns, nbp->insn_cnt * sizeof(nbp->insns[0]));
		}
		/* how it runs: a program loaded despite the verifier runs checked, and faults
		 * keep NCCL's choice where the JIT would have decided */
		h = put_u32(h, (uint32_t)p->checked | (uint32_t)p->unverified << 1);
		const struct ncclbpf_object *o = p->obj;
		for (size_t m = 0; o && m < o->map_cnt; m++) {
			const struct nb_map_def *d = o->maps[m].def;
			if (!d)
				continue;
			h = runtime_fnv1a(h, d->name, strlen(d->name) + 1);
			h = put_u32(h, d->type);
			h = put_u32(h, d->key_size);
			h = put_u32(h, d->value_size);
			h = put_u32(h, d->max_entries);
			h = put_u32(h, d->map_flags);
			if (d->init_data) /* global data: .rodata configuration, initial values */
				h = runtime_fnv1a(h, d->init_data, d->value_size);
		}
	}
	return h ? h : 1;
}
