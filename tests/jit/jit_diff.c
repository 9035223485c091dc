/* Differential test: random valid programs (jit_diff_gen.c: every instruction class,
 * atomics on stack and buffer, byte swaps, movsx, signed division, JMP32, LDDW, counted
 * loops, local calls, helper calls, inlined array-map lookups, call-depth and missing-helper
 * faults) run in the interpreter and in the JIT on the same initial memory. Return code,
 * r0, fault kind/pc/message and the whole buffer (which receives every function's final
 * registers and stack window) must be identical. Each case is re-run in the JIT with 20
 * random permutations of r0-r9 over the x86 registers (r10 fixed) and, on odd
 * permutations, without array-lookup inlining.
 *
 *   test_jit_diff [seconds=5] [seed]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit_diff_gen.h"
#include "maps/map.h"
#include "test_util.h"
#include "vm/jit_x86_64.h"
#include "vm/vm.h"

#define PERMS 20
#define MAP_ENTRIES 6

static uint8_t mem[DG_MEM_BYTES] __attribute__((aligned(64)));
static vm_helper_fn helpers[NB_HELPER_MAX];
static const struct nb_helper_proto *protos[NB_HELPER_MAX];
static const struct nb_helper_proto lookup_proto = {
	NB_HELPER_MAP_LOOKUP_ELEM, "map_lookup_elem", NB_RET_MAP_VALUE_OR_NULL,
	{ NB_ARG_CONST_MAP_PTR, NB_ARG_PTR_TO_MAP_KEY }, false,
};

uint64_t dg_mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull;
	h ^= (b + 0x1234) * 0xbf58476d1ce4e5b9ull;
	h ^= (c ^ (h >> 31)) * 0x94d049bb133111ebull;
	h += d * 3 + (e << 7);
	return h ^ (h >> 29);
}

#if defined(__x86_64__)
/* The helper the programs call: counts entries with a misaligned stack (RSP must be
 * 8 mod 16 at entry), then tail-calls dg_mix. */
__asm__(".text\n"
	".globl dg_mix_checked\n"
	".type dg_mix_checked, @function\n"
	"dg_mix_checked:\n"
	"  mov %rsp, %rax\n  and $15, %eax\n  cmp $8, %eax\n  je 1f\n"
	"  lock incq dg_misaligned(%rip)\n"
	"1:\n  jmp dg_mix\n"
	".size dg_mix_checked, .-dg_mix_checked\n");
uint64_t dg_mix_checked(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
#endif
volatile uint64_t dg_misaligned;

static uint64_t h_lookup(uint64_t map, uint64_t key, uint64_t c, uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)map,
					       (const void *)(uintptr_t)key);
}

/* src/vm/vm_interp.c built with -DNCCLBPF_INTERP_SWITCH (tests/jit/CMakeLists.txt) */
int vm_interp_run_switch(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
			 struct vm_checked *chk, struct vm_fault *fault);

struct outcome {
	int rc;
	uint64_t r0;
	struct vm_fault fault;
	uint8_t mem[DG_MEM_BYTES];
};

static void dump_program(const struct bpf_insn *p, size_t n)
{
	for (size_t pc = 0; pc < n; pc++) {
		char buf[128];
		int k = isa_disasm_insn(p, n, pc, buf, sizeof(buf));
		fprintf(stderr, "  %4zu: %02x %x %x %6d %11d  %s\n", pc, p[pc].code, p[pc].dst_reg,
			p[pc].src_reg, p[pc].off, p[pc].imm, k > 0 ? buf : "?");
		if (k == 2) {
			pc++;
			fprintf(stderr, "  %4zu: (lddw imm hi %d)\n", pc, p[pc].imm);
		}
	}
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	if (a->rc != b->rc || memcmp(a->mem, b->mem, sizeof(a->mem)))
		return false;
	if (a->rc == 0)
		return a->r0 == b->r0;
	return a->fault.kind == b->fault.kind && a->fault.pc == b->fault.pc &&
	       !strcmp(a->fault.msg, b->fault.msg);
}

static void describe(const char *who, const struct outcome *o, const uint8_t *ref_mem)
{
	fprintf(stderr, "  %s: rc %d r0 0x%llx %s\n", who, o->rc, (unsigned long long)o->r0,
		o->rc ? o->fault.msg : "");
	for (size_t i = 0; ref_mem && i < DG_MEM_BYTES; i += 8)
		if (memcmp(o->mem + i, ref_mem + i, 8)) {
			uint64_t x, y;
			memcpy(&x, o->mem + i, 8);
			memcpy(&y, ref_mem + i, 8);
			fprintf(stderr, "    mem[%zu]: 0x%llx (reference 0x%llx)\n", i,
				(unsigned long long)x, (unsigned long long)y);
		}
}

static void random_perm(struct dg_rng *r, uint8_t perm[10])
{
	for (int i = 0; i < 10; i++)
		perm[i] = (uint8_t)i;
	for (int i = 9; i > 0; i--) {
		int j = (int)(dg_next(r) % (uint64_t)(i + 1));
		uint8_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 5.0;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
	if (!vm_jit_available()) {
		printf("no JIT on this architecture: nothing to compare\n");
		TEST_DONE();
	}
	printf("jit_diff: budget %.1f s, seed 0x%llx\n", budget, (unsigned long long)seed);
#if defined(__x86_64__)
	helpers[DG_HELPER_MIX] = dg_mix_checked;
#endif
	helpers[NB_HELPER_MAP_LOOKUP_ELEM] = h_lookup;
	protos[NB_HELPER_MAP_LOOKUP_ELEM] = &lookup_proto;

	struct nb_map_spec spec = { "diff", NB_MAP_TYPE_ARRAY, 4, 8, MAP_ENTRIES, 0 };
	struct nb_map *map = NULL;
	char err[256];
	if (map_create(&spec, &map, err, sizeof(err))) {
		fprintf(stderr, "map_create: %s\n", err);
		return 1;
	}
	for (uint32_t k = 0; k < MAP_ENTRIES; k++) {
		uint64_t v = 0x1111111111111111ull * (k + 1);
		map_update(map, &k, &v, NB_ANY);
	}
	struct nb_map *maps[] = { map };
	struct vm_jit_options inl = { .inline_array_lookup = true, .maps = maps, .map_cnt = 1 };
	struct vm_jit_options noinl = { .inline_array_lookup = false };

	struct dg_rng rng = { seed | 1 };
	struct dg_params params = { (uint64_t)(uintptr_t)mem, (uint64_t)(uintptr_t)map,
				    MAP_ENTRIES };
	static struct bpf_insn prog_insns[DG_MAX_INSNS];
	static uint8_t init[DG_MEM_BYTES];
	static struct outcome ref, chk_out, jit, sw;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t cases = 0, runs = 0, faults = 0, insns_total = 0, reported = 0, store_runs = 0;
	uint64_t fault_kinds[16] = { 0 };

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= budget)
			break;
		size_t n = dg_generate(&rng, &params, prog_insns);
		insns_total += n;
		for (size_t i = 0; i < sizeof(init); i += 8) {
			uint64_t v = dg_next(&rng);
			memcpy(init + i, &v, 8);
		}
		struct vm_program prog = { prog_insns, n, helpers, protos };
		test_checks++;
		if (isa_validate(prog_insns, n, err, sizeof(err))) {
			test_failures++;
			if (reported++ < 3) {
				fprintf(stderr, "case %llu: generator made an invalid program: %s\n",
					(unsigned long long)cases, err);
				dump_program(prog_insns, n);
			}
			cases++;
			continue;
		}
		/* reference: unchecked interpreter */
		memcpy(mem, init, sizeof(mem));
		ref.rc = vm_interp_run(&prog, (uint64_t)(uintptr_t)mem, sizeof(mem), &ref.r0, NULL,
				       &ref.fault);
		memcpy(ref.mem, mem, sizeof(mem));
		/* sanity: the checked interpreter agrees and sees no memory fault (else the
		 * generator produced an unsafe access and the case proves nothing) */
		memcpy(mem, init, sizeof(mem));
		struct vm_checked chk;
		memset(&chk, 0, sizeof(chk));
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)mem, sizeof(mem), true, "buffer");
		chk_out.rc = vm_interp_run(&prog, (uint64_t)(uintptr_t)mem, sizeof(mem),
					   &chk_out.r0, &chk, &chk_out.fault);
		memcpy(chk_out.mem, mem, sizeof(mem));
		test_checks++;
		if (!same(&ref, &chk_out)) {
			test_failures++;
			if (reported++ < 3) {
				fprintf(stderr, "case %llu: checked interpreter differs (generator bug?)\n",
					(unsigned long long)cases);
				describe("unchecked", &ref, NULL);
				describe("checked", &chk_out, ref.mem);
				dump_program(prog_insns, n);
			}
		}
		/* the switch-dispatch build of the same interpreter: identical, both modes */
		for (int mode = 0; mode < 2; mode++) {
			struct vm_checked schk;
			memset(&schk, 0, sizeof(schk));
			vm_checked_add_region(&schk, (uint64_t)(uintptr_t)mem, sizeof(mem), true,
					      "buffer");
			memcpy(mem, init, sizeof(mem));
			sw.r0 = 0;
			memset(&sw.fault, 0, sizeof(sw.fault));
			sw.rc = vm_interp_run_switch(&prog, (uint64_t)(uintptr_t)mem, sizeof(mem),
						     &sw.r0, mode ? &schk : NULL, &sw.fault);
			memcpy(sw.mem, mem, sizeof(mem));
			test_checks++;
			if (!same(mode ? &chk_out : &ref, &sw) ||
			    (mode && schk.insns_executed != chk.insns_executed)) {
				test_failures++;
				if (reported++ < 3) {
					fprintf(stderr, "case %llu: %s interpreter: switch and computed-"
						"goto dispatch differ\n", (unsigned long long)cases,
						mode ? "checked" : "unchecked");
					describe("goto", mode ? &chk_out : &ref, NULL);
					describe("switch", &sw, ref.mem);
					dump_program(prog_insns, n);
				}
			}
		}
		if (ref.rc) {
			faults++;
			fault_kinds[ref.fault.kind & 15]++;
		}
		for (unsigned k = 0; k <= PERMS; k++) {
			uint8_t perm[10];
			random_perm(&rng, perm);
			if (k == 0)
				for (int i = 0; i < 10; i++)
					perm[i] = (uint8_t)i;
			struct vm_jit_image *img = NULL;
			int rc = jit_compile_permuted(&prog, (k % 2) ? &noinl : &inl, k ? perm : NULL,
						      &img, err, sizeof(err));
			test_checks++;
			if (rc) {
				test_failures++;
				if (reported++ < 3) {
					fprintf(stderr, "case %llu: JIT refused: %s\n",
						(unsigned long long)cases, err);
					dump_program(prog_insns, n);
				}
				break;
			}
			memcpy(mem, init, sizeof(mem));
			memset(&jit.fault, 0, sizeof(jit.fault));
			jit.r0 = 0;
			jit.rc = vm_jit_run(img, (uint64_t)(uintptr_t)mem, sizeof(mem), &jit.r0,
					    &jit.fault);
			memcpy(jit.mem, mem, sizeof(mem));
			/* the store entry (code that cannot fault): the same result, stored */
			vm_jit_store_fn store = vm_jit_store_entry(img);
			test_checks++;
			if (store ? vm_jit_may_fault(img) : !vm_jit_may_fault(img)) {
				test_failures++;
				fprintf(stderr, "case %llu: store entry %s for code that %s fault\n",
					(unsigned long long)cases, store ? "present" : "missing",
					store ? "may" : "cannot");
			}
			if (store && !jit.rc && same(&ref, &jit)) {
				memcpy(mem, init, sizeof(mem));
				jit.r0 = ~0ull;
				jit.rc = store((uint64_t)(uintptr_t)mem, sizeof(mem), &jit.r0);
				memcpy(jit.mem, mem, sizeof(mem));
				store_runs++;
			}
			vm_jit_free(img);
			runs++;
			test_checks++;
			if (!same(&ref, &jit)) {
				test_failures++;
				if (reported++ < 3) {
					fprintf(stderr,
						"case %llu (seed 0x%llx): interpreter and JIT differ, "
						"permutation %u = [%u %u %u %u %u %u %u %u %u %u]%s\n",
						(unsigned long long)cases, (unsigned long long)seed, k,
						perm[0], perm[1], perm[2], perm[3], perm[4], perm[5],
						perm[6], perm[7], perm[8], perm[9],
						k == 0 ? " (default map)" : "");
					describe("interpreter", &ref, NULL);
					describe("jit", &jit, ref.mem);
					dump_program(prog_insns, n);
				}
				break;
			}
		}
		cases++;
	}
	test_checks++;
	if (runs > 100 && store_runs == 0) {
		test_failures++;
		fprintf(stderr, "no program was run through the store entry\n");
	}
	test_checks++;
	if (dg_misaligned) {
		test_failures++;
		fprintf(stderr, "%llu helper calls with a misaligned stack\n",
			(unsigned long long)dg_misaligned);
	}
	printf("jit_diff: %llu programs (%.1f insns avg), %llu JIT runs (%llu also through the "
	       "store entry), %llu faulting (call depth %llu, missing helper %llu)\n",
	       (unsigned long long)cases, cases ? (double)insns_total / (double)cases : 0.0,
	       (unsigned long long)runs, (unsigned long long)store_runs, (unsigned long long)faults,
	       (unsigned long long)fault_kinds[VM_FAULT_CALL_DEPTH],
	       (unsigned long long)fault_kinds[VM_FAULT_BAD_HELPER]);
	map_free(map);
	TEST_DONE();
}
