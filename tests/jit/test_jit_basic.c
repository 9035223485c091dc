/* x86-64 JIT mechanics, checked against values written here: entry ABI (arguments, r0,
 * callee-saved host registers), W^X code memory, 16-byte stack alignment at every helper
 * call (main, nested subprograms, permuted register maps), run-time faults through both
 * entries, refusals of programs it cannot compile exactly, and the inlined array-map
 * lookup (same results as the helper, helper not called). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/insn_build.h"
#include "maps/map.h"
#include "test_util.h"
#include "vm/jit_x86_64.h"
#include "vm/vm.h"

static vm_helper_fn helpers[NB_HELPER_MAX];

#if defined(__x86_64__)
/* uint64_t call_check_regs(a1, a2, fn, int *ok): calls fn(a1, a2) with known values in
 * every callee-saved register and reports whether they all survived. */
__asm__(".text\n"
	".globl call_check_regs\n"
	".type call_check_regs, @function\n"
	"call_check_regs:\n"
	"  push %rbx\n  push %rbp\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
	"  push %rcx\n"
	"  mov %rdx, %rax\n"
	"  movabs $0x1111111111111111, %rbx\n"
	"  movabs $0x2222222222222222, %rbp\n"
	"  movabs $0x3333333333333333, %r12\n"
	"  movabs $0x4444444444444444, %r13\n"
	"  movabs $0x5555555555555555, %r14\n"
	"  movabs $0x6666666666666666, %r15\n"
	"  call *%rax\n"
	"  pop %rcx\n"
	"  movl $0, (%rcx)\n"
	"  movabs $0x1111111111111111, %rdx\n  cmp %rdx, %rbx\n  jne 1f\n"
	"  movabs $0x2222222222222222, %rdx\n  cmp %rdx, %rbp\n  jne 1f\n"
	"  movabs $0x3333333333333333, %rdx\n  cmp %rdx, %r12\n  jne 1f\n"
	"  movabs $0x4444444444444444, %rdx\n  cmp %rdx, %r13\n  jne 1f\n"
	"  movabs $0x5555555555555555, %rdx\n  cmp %rdx, %r14\n  jne 1f\n"
	"  movabs $0x6666666666666666, %rdx\n  cmp %rdx, %r15\n  jne 1f\n"
	"  movl $1, (%rcx)\n"
	"1:\n"
	"  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbp\n  pop %rbx\n"
	"  ret\n"
	".size call_check_regs, .-call_check_regs\n"
	/* helper: returns r1 + 1 and counts calls made with a misaligned stack (at entry of
	 * a correctly called function RSP is 8 mod 16). */
	".globl align_helper\n"
	".type align_helper, @function\n"
	"align_helper:\n"
	"  mov %rsp, %rax\n  and $15, %eax\n  cmp $8, %eax\n  je 2f\n"
	"  lock incq misaligned_calls(%rip)\n"
	"2:\n"
	"  lea 1(%rdi), %rax\n"
	"  ret\n"
	".size align_helper, .-align_helper\n"
	/* int call_check_regs_store(a1, a2, fn, r0, int *ok): the same for a store entry
	 * fn(a1, a2, r0) */
	".globl call_check_regs_store\n"
	".type call_check_regs_store, @function\n"
	"call_check_regs_store:\n"
	"  push %rbx\n  push %rbp\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
	"  push %r8\n"
	"  mov %rdx, %rax\n"
	"  mov %rcx, %rdx\n"
	"  movabs $0x1111111111111111, %rbx\n"
	"  movabs $0x2222222222222222, %rbp\n"
	"  movabs $0x3333333333333333, %r12\n"
	"  movabs $0x4444444444444444, %r13\n"
	"  movabs $0x5555555555555555, %r14\n"
	"  movabs $0x6666666666666666, %r15\n"
	"  call *%rax\n"
	"  pop %rcx\n"
	"  movl $0, (%rcx)\n"
	"  movabs $0x1111111111111111, %rdx\n  cmp %rdx, %rbx\n  jne 3f\n"
	"  movabs $0x2222222222222222, %rdx\n  cmp %rdx, %rbp\n  jne 3f\n"
	"  movabs $0x3333333333333333, %rdx\n  cmp %rdx, %r12\n  jne 3f\n"
	"  movabs $0x4444444444444444, %rdx\n  cmp %rdx, %r13\n  jne 3f\n"
	"  movabs $0x5555555555555555, %rdx\n  cmp %rdx, %r14\n  jne 3f\n"
	"  movabs $0x6666666666666666, %rdx\n  cmp %rdx, %r15\n  jne 3f\n"
	"  movl $1, (%rcx)\n"
	"3:\n"
	"  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbp\n  pop %rbx\n"
	"  ret\n"
	".size call_check_regs_store, .-call_check_regs_store\n");
uint64_t call_check_regs(uint64_t a1, uint64_t a2, vm_jit_fn fn, int *ok);
int call_check_regs_store(uint64_t a1, uint64_t a2, vm_jit_store_fn fn, uint64_t *r0, int *ok);
uint64_t align_helper(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
#endif
volatile uint64_t misaligned_calls;

static struct vm_jit_image *compile(const struct bpf_insn *insns, size_t n,
				    const struct vm_jit_options *opts, const uint8_t *perm)
{
	struct vm_program prog = { insns, n, helpers, NULL };
	struct vm_jit_image *img = NULL;
	char err[256] = "";
	int rc = jit_compile_permuted(&prog, opts, perm, &img, err, sizeof(err));
	if (rc)
		fprintf(stderr, "compile failed: %d %s\n", rc, err);
	CHECK(rc == 0);
	return rc ? NULL : img;
}

#define COMPILE(...) compile(PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), NULL, NULL)

static void perm_of(unsigned k, uint8_t perm[10])
{
	/* rotations and two strides: every BPF register visits several x86 homes */
	for (int i = 0; i < 10; i++)
		perm[i] = (uint8_t)((k < 10) ? (i + k) % 10 : (i * (k % 2 ? 3 : 7) + k) % 10);
}

static void test_entry_abi(void)
{
	struct vm_jit_image *img = COMPILE(MOV64_K(0, 42), EXIT());
	if (!img)
		return;
	CHECK_EQ_U64(vm_jit_entry(img)(0, 0), 42);
	uint64_t r0 = 0;
	CHECK(vm_jit_run(img, 1, 2, &r0, NULL) == 0);
	CHECK_EQ_U64(r0, 42);
	CHECK(vm_jit_code_size(img) > 0 && vm_jit_code_size(img) < 64);
	vm_jit_free(img);

	/* r1, r2 arrive; every other register starts at 0 under every map */
	const struct bpf_insn p[] = {
		MOV64_X(0, 1), ALU64_K(BPF_MUL, 0, 1000), ALU64_X(BPF_ADD, 0, 2),
		ALU64_X(BPF_ADD, 0, 3), ALU64_X(BPF_ADD, 0, 4), ALU64_X(BPF_ADD, 0, 5),
		ALU64_X(BPF_ADD, 0, 6), ALU64_X(BPF_ADD, 0, 7), ALU64_X(BPF_ADD, 0, 8),
		ALU64_X(BPF_ADD, 0, 9), EXIT(),
	};
	for (unsigned k = 0; k < 14; k++) {
		uint8_t perm[10];
		perm_of(k, perm);
		img = compile(p, sizeof(p) / sizeof(p[0]), NULL, perm);
		if (!img)
			continue;
		CHECK(vm_jit_run(img, 7, 5, &r0, NULL) == 0);
		CHECK_EQ_U64(r0, 7005);
#if defined(__x86_64__)
		int ok = 0;
		CHECK_EQ_U64(call_check_regs(3, 4, vm_jit_entry(img), &ok), 3004);
		CHECK(ok == 1);
#endif
		vm_jit_free(img);
	}
}

/* Host callee-saved registers survive programs that use all of r0-r10, calls, faults. */
static void test_callee_saved(void)
{
#if defined(__x86_64__)
	helpers[20] = align_helper;
	const struct bpf_insn p[] = {
		MOV64_K(6, 6), MOV64_K(7, 7), MOV64_K(8, 8), MOV64_K(9, 9), ST(BPF_DW, 10, -8, 1),
		CALL_LOCAL(3), ALU64_X(BPF_ADD, 0, 6), ALU64_X(BPF_ADD, 0, 9), EXIT(),
		/* sub at 9 */
		MOV64_K(6, 100), MOV64_K(9, 200), MOV64_K(1, 5), CALL(20), EXIT(),
	};
	for (unsigned k = 0; k < 14; k++) {
		uint8_t perm[10];
		perm_of(k, perm);
		struct vm_jit_image *img = compile(p, sizeof(p) / sizeof(p[0]), NULL, perm);
		if (!img)
			continue;
		int ok = 0;
		CHECK_EQ_U64(call_check_regs(0, 0, vm_jit_entry(img), &ok), 6 + 6 + 9);
		CHECK(ok == 1);
		vm_jit_free(img);
	}
	/* a faulting run unwinds through the same epilogue */
	struct vm_jit_image *img = COMPILE(MOV64_K(6, 1), CALL_LOCAL(1), EXIT(), CALL_LOCAL(-1),
					   EXIT());
	if (img) {
		int ok = 0;
		CHECK_EQ_U64(call_check_regs(0, 0, vm_jit_entry(img), &ok), 0);
		CHECK(ok == 1);
		vm_jit_free(img);
	}
#endif
}

static void test_wx(void)
{
	struct vm_jit_image *img = COMPILE(MOV64_K(0, 1), EXIT());
	if (!img)
		return;
	uint64_t code = (uint64_t)(uintptr_t)vm_jit_entry(img);
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	char line[512], perms[8] = "";
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char p[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 && code >= lo && code < hi)
			memcpy(perms, p, sizeof(perms));
	}
	if (f)
		fclose(f);
	CHECK(perms[0] == 'r' && perms[1] == '-' && perms[2] == 'x'); /* never writable */
	vm_jit_free(img);
}

static void test_alignment(void)
{
#if defined(__x86_64__)
	helpers[20] = align_helper;
	/* helper calls from main (various frame shapes) and from depth 2..8 */
	const struct bpf_insn progs[][16] = {
		{ MOV64_K(1, 1), CALL(20), EXIT() },
		{ ST(BPF_DW, 10, -8, 0), MOV64_K(6, 1), MOV64_K(1, 1), CALL(20), EXIT() },
		{ MOV64_K(6, 1), MOV64_K(7, 1), MOV64_K(1, 1), CALL(20), EXIT() },
		{ MOV64_K(6, 1), MOV64_K(7, 1), MOV64_K(8, 1), MOV64_K(9, 1), MOV64_K(1, 1),
		  CALL(20), EXIT() },
		{ MOV64_K(1, 1), CALL(20), MOV64_K(1, 1), CALL(99), EXIT() }, /* + fault slot */
	};
	for (unsigned k = 0; k < 14; k++) {
		uint8_t perm[10];
		perm_of(k, perm);
		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			size_t n = 0;
			while (n < 16 && progs[i][n].code)
				n++;
			struct vm_jit_image *img = compile(progs[i], n, NULL, perm);
			if (!img)
				continue;
			uint64_t r0 = 0;
			int rc = vm_jit_run(img, 0, 0, &r0, NULL);
			CHECK(i == 4 ? rc == -EFAULT : (rc == 0 && r0 == 2));
			vm_jit_free(img);
		}
		/* recursion to depth 8 calling the helper in every frame */
		const struct bpf_insn rec[] = {
			MOV64_K(6, 6), CALL_LOCAL(1), EXIT(),
			/* f at 3: r6 = remaining depth */
			MOV64_K(1, 1), CALL(20), JMP_K(BPF_JEQ, 6, 0, 2), ALU64_K(BPF_SUB, 6, 1),
			CALL_LOCAL(-5), EXIT(),
		};
		struct vm_jit_image *img = compile(rec, sizeof(rec) / sizeof(rec[0]), NULL, perm);
		if (img) {
			uint64_t r0 = 0;
			CHECK(vm_jit_run(img, 0, 0, &r0, NULL) == 0);
			vm_jit_free(img);
		}
	}
	CHECK_EQ_U64(misaligned_calls, 0);
#endif
}

static uint64_t h_sum(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e;
}

static void test_faults(void)
{
	helpers[21] = h_sum;
	struct vm_fault f;
	uint64_t r0 = 0;
	/* depth: recursion without end faults at the 8th frame's call */
	struct vm_jit_image *img = COMPILE(MOV64_K(0, 0), CALL_LOCAL(1), EXIT(),
					   ALU64_K(BPF_ADD, 0, 1), CALL_LOCAL(-2), EXIT());
	if (img) {
		CHECK(vm_jit_run(img, 0, 0, &r0, &f) == -EFAULT);
		CHECK(f.kind == VM_FAULT_CALL_DEPTH);
		CHECK(f.pc == 4);
		CHECK_STR_CONTAINS(f.msg, "insn 4: call depth exceeds 8 frames");
		/* the raw entry returns 0 and counts */
		CHECK_EQ_U64(vm_jit_entry(img)(0, 0), 0);
		CHECK_EQ_U64(vm_jit_entry(img)(0, 0), 0);
		CHECK_EQ_U64(vm_jit_fault_count(img), 2);
		enum vm_fault_kind kind;
		size_t pc;
		vm_jit_last_fault(img, &kind, &pc);
		CHECK(kind == VM_FAULT_CALL_DEPTH && pc == 4);
		vm_jit_free(img);
	}
	/* missing helper, after a working one; arguments reach the helper */
	img = COMPILE(MOV64_K(1, 1), MOV64_K(2, 1), MOV64_K(3, 1), MOV64_K(4, 1), MOV64_K(5, 1),
		      CALL(21), JMP_K(BPF_JNE, 0, 99, 1), CALL(33), EXIT());
	if (img) {
		CHECK(vm_jit_run(img, 0, 0, &r0, &f) == 0);
		CHECK_EQ_U64(r0, 15);
		vm_jit_free(img);
	}
	img = COMPILE(MOV64_K(1, 10), MOV64_K(2, 10), CALL(21), CALL(33), EXIT());
	if (img) {
		CHECK(vm_jit_run(img, 0, 0, &r0, &f) == -EFAULT);
		CHECK(f.kind == VM_FAULT_BAD_HELPER && f.pc == 3);
		CHECK_STR_CONTAINS(f.msg, "insn 3: call to unavailable helper 33");
		CHECK_EQ_U64(vm_jit_fault_count(img), 0); /* vm_jit_run reports per call */
		vm_jit_free(img);
	}
	/* falling off the end (isa_validate would reject it; the JIT still stops safely) */
	img = COMPILE(MOV64_K(0, 1), JMP_K(BPF_JEQ, 1, 0, -2));
	if (img) {
		CHECK(vm_jit_run(img, 5, 0, &r0, &f) == -EFAULT);
		CHECK(f.kind == VM_FAULT_PC_OOB && f.pc == 2);
		vm_jit_free(img);
	}
}

static void expect_refused(int line, const struct bpf_insn *insns, size_t n, const char *why)
{
	struct vm_program prog = { insns, n, helpers, NULL };
	struct vm_jit_image *img = (struct vm_jit_image *)1;
	char err[256] = "";
	int rc = vm_jit_compile(&prog, NULL, &img, err, sizeof(err));
	test_checks++;
	if (rc != -EINVAL || img != NULL) {
		test_failures++;
		fprintf(stderr, "line %d: expected -EINVAL, got %d\n", line, rc);
	}
	CHECK_STR_CONTAINS(err, why);
}
#define REFUSED(why, ...) expect_refused(__LINE__, PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), why)

static void test_refusals(void)
{
	struct vm_program empty = { NULL, 0, helpers, NULL };
	struct vm_jit_image *img = NULL;
	char err[128];
	CHECK(vm_jit_compile(&empty, NULL, &img, err, sizeof(err)) == -EINVAL);
	REFUSED("insn 0 (opcode 0xb7): write to r10", MOV64_K(10, 0), EXIT());
	REFUSED("insn 1 (opcode 0xff)", MOV64_K(0, 0), INSN(0xff, 0, 0, 0, 0), EXIT());
	REFUSED("insn 0: jump target 5 out of range", JA(4), EXIT());
	REFUSED("insn 0: incomplete lddw", INSN(BPF_LDDW, 0, 0, 0, 1));
	REFUSED("jump into the middle of an lddw", JA(1), LDDW(0, 1), EXIT());
	REFUSED("unlinked pseudo lddw", INSN(BPF_LDDW, 1, BPF_PSEUDO_MAP_FD, 0, 0),
		INSN(0, 0, 0, 0, 0), EXIT());
	REFUSED("leaves its function", CALL_LOCAL(1), JA(1), MOV64_K(0, 1), EXIT());
	REFUSED("falls through into the function", CALL_LOCAL(1), MOV64_K(0, 1), EXIT());
	REFUSED("call target", CALL_LOCAL(5), EXIT());
	/* not refused: a subprogram whose first instruction is also a loop head */
	struct vm_jit_image *loop = COMPILE(MOV64_K(0, 0), CALL_LOCAL(1), EXIT(),
					    ALU64_K(BPF_ADD, 0, 1), JMP_K(BPF_JLT, 0, 5, -2), EXIT());
	if (loop) {
		uint64_t r0 = 0;
		CHECK(vm_jit_run(loop, 0, 0, &r0, NULL) == 0);
		CHECK_EQ_U64(r0, 5);
		vm_jit_free(loop);
	}
	REFUSED("insn 1: local call to the entry function", MOV64_K(0, 0), CALL_LOCAL(-2), EXIT());
	REFUSED("bad movsx offset", MOVSX32(0, 1, 32), EXIT());
	REFUSED("unknown atomic", ATOMIC(BPF_DW, 10, 1, -8, 0x02), EXIT());
	REFUSED("legacy packet", INSN(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0), EXIT());
}

/* Inlined array lookups: same pointer as map_lookup for every key, NULL out of range,
 * the helper never called; without a constant map the helper is called. */
static int lookup_calls;
static uint64_t h_lookup(uint64_t map, uint64_t key, uint64_t c, uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	lookup_calls++;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)map,
					       (const void *)(uintptr_t)key);
}

static void test_inline_lookup(void)
{
	helpers[NB_HELPER_MAP_LOOKUP_ELEM] = h_lookup;
	uint32_t vsizes[] = { 8, 12, 64 };
	for (size_t v = 0; v < 3; v++) {
		struct nb_map_spec spec = { "arr", NB_MAP_TYPE_ARRAY, 4, vsizes[v], 10, 0 };
		if (v == 2)
			spec.type = NB_MAP_TYPE_PERCPU_ARRAY;
		struct nb_map *m = NULL;
		char err[128];
		CHECK(map_create(&spec, &m, err, sizeof(err)) == 0);
		if (!m)
			return;
		uint64_t mp = (uint64_t)(uintptr_t)m;
		/* r0 = lookup(m, &key) - base; -1 when NULL */
		const struct bpf_insn p[] = {
			STX(BPF_W, 10, 1, -4), LDDW(1, mp), MOV64_X(2, 10), ALU64_K(BPF_ADD, 2, -4),
			CALL(NB_HELPER_MAP_LOOKUP_ELEM), JMP_K(BPF_JEQ, 0, 0, 1), EXIT(),
			MOV64_K(0, -1), EXIT(),
		};
		struct nb_map *maps[] = { m };
		struct vm_jit_options on = { .inline_array_lookup = true, .maps = maps, .map_cnt = 1 };
		struct vm_jit_options off = { .inline_array_lookup = false, .maps = maps, .map_cnt = 1 };
		for (unsigned k = 0; k < 14; k++) {
			uint8_t perm[10];
			perm_of(k, perm);
			struct vm_jit_image *a = compile(p, sizeof(p) / sizeof(p[0]), &on, perm);
			struct vm_jit_image *b = compile(p, sizeof(p) / sizeof(p[0]), &off, perm);
			if (!a || !b)
				return;
			uint32_t keys[] = { 0, 1, 9, 10, 11, 0x80000000u, 0xffffffffu };
			for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
				uint64_t ra = 1, rb = 2;
				lookup_calls = 0;
				CHECK(vm_jit_run(a, keys[i], 0, &ra, NULL) == 0);
				CHECK(lookup_calls == 0);
				CHECK(vm_jit_run(b, keys[i], 0, &rb, NULL) == 0);
				CHECK(lookup_calls == 1);
				CHECK_EQ_U64(ra, rb);
				uint64_t want = (uint64_t)(uintptr_t)map_lookup(m, &keys[i]);
				CHECK_EQ_U64(ra, want ? want : (uint64_t)-1);
			}
			vm_jit_free(a);
			vm_jit_free(b);
		}
		/* r1 from another block: not inlined (the helper runs) */
		const struct bpf_insn q[] = {
			STX(BPF_W, 10, 1, -4), LDDW(1, mp), MOV64_X(2, 10), ALU64_K(BPF_ADD, 2, -4),
			JA(0), CALL(NB_HELPER_MAP_LOOKUP_ELEM), EXIT(),
		};
		struct vm_jit_image *c = compile(q, sizeof(q) / sizeof(q[0]), &on, NULL);
		if (c) {
			uint64_t r0;
			lookup_calls = 0;
			CHECK(vm_jit_run(c, 3, 0, &r0, NULL) == 0);
			CHECK(lookup_calls == 1);
			vm_jit_free(c);
		}
		map_free(m);
	}
	/* a hash map is never inlined */
	struct nb_map_spec hs = { "h", NB_MAP_TYPE_HASH, 4, 8, 10, 0 };
	struct nb_map *h = NULL;
	char err[128];
	CHECK(map_create(&hs, &h, err, sizeof(err)) == 0);
	if (h) {
		const struct bpf_insn p[] = {
			STX(BPF_W, 10, 1, -4), LDDW(1, (uint64_t)(uintptr_t)h), MOV64_X(2, 10),
			ALU64_K(BPF_ADD, 2, -4), CALL(NB_HELPER_MAP_LOOKUP_ELEM), EXIT(),
		};
		struct nb_map *maps[] = { h };
		struct vm_jit_options on = { .inline_array_lookup = true, .maps = maps, .map_cnt = 1 };
		struct vm_jit_image *c = compile(p, sizeof(p) / sizeof(p[0]), &on, NULL);
		if (c) {
			uint64_t r0 = 1;
			lookup_calls = 0;
			map_epoch_enter();
			CHECK(vm_jit_run(c, 3, 0, &r0, NULL) == 0);
			map_epoch_exit();
			CHECK(lookup_calls == 1 && r0 == 0);
			vm_jit_free(c);
		}
		map_free(h);
	}
}

/* bpf_loop: same results as the interpreter under every register map; callee-saved
 * registers survive it; the callback writes the caller's stack; a nested bpf_loop and two
 * callbacks (dispatch). Linked form: the function address holds the absolute index. */
#define LD_FUNC_LINKED(d, idx) INSN(BPF_LDDW, d, BPF_PSEUDO_FUNC, 0, idx), INSN(0, 0, 0, 0, 0)
static void test_bpf_loop(void)
{
	const struct bpf_insn stop12[] = {
		MOV64_K(6, 7), MOV64_K(7, 11), MOV64_K(8, 13), MOV64_K(9, 17),
		ST(BPF_DW, 10, -8, 0), MOV64_K(1, 20), LD_FUNC_LINKED(2, 20), MOV64_X(3, 10),
		ALU64_K(BPF_ADD, 3, -8), MOV64_K(4, 0), CALL(NB_HELPER_LOOP),
		ALU64_K(BPF_MUL, 0, 1000), LDX(BPF_DW, 1, 10, -8), ALU64_X(BPF_ADD, 0, 1),
		ALU64_X(BPF_ADD, 0, 6), ALU64_X(BPF_ADD, 0, 7), ALU64_X(BPF_ADD, 0, 8),
		ALU64_X(BPF_ADD, 0, 9), EXIT(),
		/* 20 */ LDX(BPF_DW, 6, 2, 0), ALU64_X(BPF_ADD, 6, 1), STX(BPF_DW, 2, 6, 0),
		MOV64_K(0, 0), JMP_K(BPF_JNE, 1, 12, 1), MOV64_K(0, 1), EXIT(),
	};
	const struct bpf_insn nested[] = {
		ST(BPF_DW, 10, -8, 0), MOV64_K(1, 5), LD_FUNC_LINKED(2, 10), MOV64_X(3, 10),
		ALU64_K(BPF_ADD, 3, -8), MOV64_K(4, 0), CALL(NB_HELPER_LOOP),
		LDX(BPF_DW, 0, 10, -8), EXIT(),
		/* 10 */ MOV64_X(6, 2), MOV64_K(1, 3), LD_FUNC_LINKED(2, 19), MOV64_X(3, 6),
		MOV64_K(4, 0), CALL(NB_HELPER_LOOP), MOV64_K(0, 0), EXIT(),
		/* 19 */ LDX(BPF_DW, 3, 2, 0), ALU64_K(BPF_ADD, 3, 1), STX(BPF_DW, 2, 3, 0),
		MOV64_K(0, 0), EXIT(),
	};
	/* flags, over the cap and zero iterations return without calling */
	const struct bpf_insn errors[] = {
		MOV64_K(1, 3), LD_FUNC_LINKED(2, 20), MOV64_K(3, 0), MOV64_K(4, 1),
		CALL(NB_HELPER_LOOP), MOV64_X(6, 0), MOV64_K(1, (1 << 23) + 1), LD_FUNC_LINKED(2, 20),
		MOV64_K(4, 0), CALL(NB_HELPER_LOOP), ALU64_X(BPF_ADD, 6, 0), MOV64_K(1, 0),
		LD_FUNC_LINKED(2, 20), CALL(NB_HELPER_LOOP), ALU64_X(BPF_ADD, 6, 0), MOV64_X(0, 6),
		EXIT(),
		/* 20 */ MOV64_K(0, 0), EXIT(),
	};
	const struct {
		const struct bpf_insn *p;
		size_t n;
		uint64_t expect;
	} cases[] = {
		{ stop12, sizeof(stop12) / sizeof(stop12[0]), 13 * 1000 + 78 + 48 },
		{ nested, sizeof(nested) / sizeof(nested[0]), 15 },
		{ errors, sizeof(errors) / sizeof(errors[0]), (uint64_t)(-EINVAL - E2BIG) },
	};
	helpers[NB_HELPER_LOOP] = vm_helper_bpf_loop;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct vm_program prog = { cases[c].p, cases[c].n, helpers, NULL };
		uint64_t ref = 0;
		CHECK(vm_interp_run(&prog, 0, 0, &ref, NULL, NULL) == 0);
		CHECK_EQ_U64(ref, cases[c].expect);
		for (unsigned k = 0; k < 14; k++) {
			uint8_t perm[10];
			perm_of(k, perm);
			struct vm_jit_image *img = compile(cases[c].p, cases[c].n, NULL, k ? perm : NULL);
			if (!img)
				continue;
			uint64_t r0 = 0;
			CHECK(vm_jit_run(img, 0, 0, &r0, NULL) == 0);
			CHECK_EQ_U64(r0, ref);
#if defined(__x86_64__)
			int ok = 0;
			call_check_regs(0, 0, vm_jit_entry(img), &ok);
			CHECK(ok == 1); /* host callee-saved registers intact */
#endif
			vm_jit_free(img);
		}
	}
	helpers[NB_HELPER_LOOP] = NULL;
}

/* The store entry (vm_jit_store_entry): the main entry's code with r0 stored through the
 * third argument and 0 returned, for every register map, frame shape and helper call;
 * host callee-saved registers intact, helpers called with an aligned stack; absent for
 * code that may fault (the runtime's tail call must never need a fault record). */
/* The prologue zeroes only registers that may be read before they are written: those the
 * entry's straight-line prefix writes first are left alone (jit_analysis.written_first),
 * and `rX = 0` is a register xor. Results stay the interpreter's under every register map:
 * a register read first (by an ALU op on itself, a move from it, a store or a load
 * address), or written only after the prefix's first jump, still reads as zero. */
static void test_entry_zeroing(void)
{
	const struct bpf_insn progs[][8] = {
		/* r3 += 5 reads r3 first */
		{ ALU64_K(BPF_ADD, 3, 5), MOV64_X(0, 3), EXIT() },
		/* r4 is written only on the path that does not jump (a1 == 7 jumps) */
		{ JMP_K(BPF_JEQ, 1, 7, 1), MOV64_K(4, 1), MOV64_X(0, 4), EXIT() },
		/* a 32-bit move writes all 64 bits (zero-extended) */
		{ MOV32_K(5, -1), MOV64_X(0, 5), EXIT() },
		/* written by a load, then read */
		{ ST(BPF_DW, 10, -8, 77), LDX(BPF_DW, 6, 10, -8), MOV64_X(0, 6), EXIT() },
		/* r7 = r7 + r7 and r8 = r8 read themselves first */
		{ ALU64_X(BPF_ADD, 7, 7), MOV64_X(8, 8), MOV64_X(0, 7), ALU64_X(BPF_ADD, 0, 8),
		  ALU64_K(BPF_ADD, 0, 3), EXIT() },
		/* r9 written, then read: 9 * 2 */
		{ MOV64_K(9, 9), ALU64_X(BPF_ADD, 9, 9), MOV64_X(0, 9), EXIT() },
		/* the address register of a store is read first (r6 = 0 would fault: the value
		 * stored through the frame pointer instead proves the order is kept) */
		{ MOV64_X(6, 10), ST(BPF_DW, 6, -16, 41), LDX(BPF_DW, 0, 10, -16),
		  ALU64_X(BPF_ADD, 0, 2), EXIT() },
	};
	const uint64_t want_a7[] = { 5, 0, 0xffffffffull, 77, 3, 18, 41 + 5 };
	const uint64_t want_a8[] = { 5, 1, 0xffffffffull, 77, 3, 18, 41 + 5 };
	for (unsigned k = 0; k < 14; k++) {
		uint8_t perm[10];
		perm_of(k, perm);
		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			size_t n = 0;
			while (n < 8 && progs[i][n].code)
				n++;
			struct vm_jit_image *img = compile(progs[i], n, NULL, perm);
			if (!img)
				continue;
			CHECK_EQ_U64(vm_jit_entry(img)(7, 5), want_a7[i]);
			CHECK_EQ_U64(vm_jit_entry(img)(8, 5), want_a8[i]);
			vm_jit_free(img);
		}
	}
	/* `r0 = 0; exit`: nothing to zero, and the move is an xor (31 c0, 2 bytes) instead of
	 * a 5-byte mov: the main entry is xor + ret */
	struct vm_jit_image *img = COMPILE(MOV64_K(0, 0), EXIT());
	if (img) {
		const uint8_t *code = (const uint8_t *)vm_jit_entry(img);
		CHECK(code[0] == 0x31 && code[1] == 0xc0 && code[2] == 0xc3);
		CHECK_EQ_U64(vm_jit_entry(img)(1, 2), 0);
		vm_jit_free(img);
	}
}

static void test_store_entry(void)
{
#if defined(__x86_64__)
	helpers[20] = align_helper;
	const struct bpf_insn progs[][16] = {
		/* r1, r2 arrive, r3 (the result pointer's register) starts at 0 */
		{ MOV64_X(0, 1), ALU64_K(BPF_MUL, 0, 1000), ALU64_X(BPF_ADD, 0, 2),
		  ALU64_X(BPF_ADD, 0, 3), ALU64_X(BPF_ADD, 0, 9), EXIT() },
		/* stack + callee-saved homes + a helper call: 7 + 1000 * 7 + 5 */
		{ ST(BPF_DW, 10, -8, 5), MOV64_X(6, 1), MOV64_K(7, 1000), MOV64_K(1, 6),
		  CALL(20), ALU64_X(BPF_MUL, 7, 6), ALU64_X(BPF_ADD, 0, 7), LDX(BPF_DW, 8, 10, -8),
		  ALU64_X(BPF_ADD, 0, 8), EXIT() },
		/* two exits (an early one jumps to the store epilogue) */
		{ MOV64_K(0, 1), JMP_K(BPF_JEQ, 1, 7, 1), EXIT(), MOV64_K(0, 2), EXIT() },
	};
	const uint64_t want[] = { 7005, 7012, 2 };
	for (unsigned k = 0; k < 14; k++) {
		uint8_t perm[10];
		perm_of(k, perm);
		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			size_t n = 0;
			while (n < 16 && progs[i][n].code)
				n++;
			struct vm_jit_image *img = compile(progs[i], n, NULL, perm);
			if (!img)
				continue;
			vm_jit_store_fn store = vm_jit_store_entry(img);
			CHECK(store != NULL);
			CHECK(!vm_jit_may_fault(img));
			if (store) {
				uint64_t r0 = ~0ull; /* all 8 bytes must be written */
				int ok = 0;
				CHECK(call_check_regs_store(7, 5, store, &r0, &ok) == 0);
				CHECK_EQ_U64(r0, want[i]);
				CHECK(ok == 1);
				CHECK_EQ_U64(vm_jit_entry(img)(7, 5), want[i]); /* the main entry too */
				if (i == 2) { /* the early exit's jump to the store epilogue */
					r0 = ~0ull;
					CHECK(store(8, 5, &r0) == 0);
					CHECK_EQ_U64(r0, 1);
				}
			}
			vm_jit_free(img);
		}
	}
	CHECK_EQ_U64(misaligned_calls, 0);
	/* code that may fault has no store entry: a missing helper, a local call, falling
	 * off the end */
	struct vm_jit_image *img = COMPILE(MOV64_K(0, 0), CALL(99), EXIT());
	if (img) {
		CHECK(vm_jit_may_fault(img) && vm_jit_store_entry(img) == NULL);
		vm_jit_free(img);
	}
	img = COMPILE(CALL_LOCAL(1), EXIT(), MOV64_K(0, 3), EXIT());
	if (img) {
		CHECK(vm_jit_may_fault(img) && vm_jit_store_entry(img) == NULL);
		vm_jit_free(img);
	}
	img = COMPILE(JMP_K(BPF_JEQ, 1, 0, 1), EXIT(), MOV64_K(0, 4));
	if (img) {
		CHECK(vm_jit_may_fault(img) && vm_jit_store_entry(img) == NULL);
		vm_jit_free(img);
	}
	CHECK(vm_jit_store_entry(NULL) == NULL);
#endif
}

int main(void)
{
	if (!vm_jit_available()) {
		struct vm_jit_image *img = NULL;
		char err[128];
		struct vm_program p = { PROG(MOV64_K(0, 1), EXIT()), 2, helpers, NULL };
		CHECK(vm_jit_compile(&p, NULL, &img, err, sizeof(err)) == -ENOTSUP);
		TEST_DONE();
	}
	test_entry_abi();
	test_entry_zeroing();
	test_callee_saved();
	test_wx();
	test_alignment();
	test_faults();
	test_refusals();
	test_inline_lookup();
	test_bpf_loop();
	test_store_entry();
	TEST_DONE();
}
