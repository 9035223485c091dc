/* Private to the x86-64 JIT: the instruction encoder (jit_x86_64_emit.c), the code-memory
 * helpers (jit_memory.c) and a test hook that permutes the BPF -> x86 register map.
 *
 * The encoder appends to a jit_buf. With buf->code == NULL it only counts bytes, so the
 * compiler can run a sizing pass with exactly the same emit calls as the final pass.
 */
#ifndef NCCLBPF_VM_JIT_X86_64_H
#define NCCLBPF_VM_JIT_X86_64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm/vm.h"

/* x86-64 register numbers as encoded in ModRM/REX. */
enum jit_xreg {
	X_RAX = 0, X_RCX, X_RDX, X_RBX, X_RSP, X_RBP, X_RSI, X_RDI,
	X_R8, X_R9, X_R10, X_R11, X_R12, X_R13, X_R14, X_R15,
};

/* x86 condition codes (low nibble of Jcc). */
enum jit_cc {
	CC_B = 0x2, CC_AE = 0x3, CC_E = 0x4, CC_NE = 0x5, CC_BE = 0x6, CC_A = 0x7,
	CC_L = 0xc, CC_GE = 0xd, CC_LE = 0xe, CC_G = 0xf,
};

/* Group-1 ALU operations (the /digit of opcode 0x81/0x83 and the base of the r/m,reg
 * forms: ADD 0x01, OR 0x09, AND 0x21, SUB 0x29, XOR 0x31, CMP 0x39). */
enum jit_alu {
	A_ADD = 0, A_OR = 1, A_AND = 4, A_SUB = 5, A_XOR = 6, A_CMP = 7,
};

/* Shift group-2 /digit. */
enum jit_shift { S_ROL = 0, S_SHL = 4, S_SHR = 5, S_SAR = 7 };

struct jit_buf {
	uint8_t *code; /* NULL: sizing pass */
	size_t len;
	size_t cap;
};

/* raw bytes */
void jit_emit_u8(struct jit_buf *b, uint8_t v);
void jit_emit_u32(struct jit_buf *b, uint32_t v);
void jit_emit_u64(struct jit_buf *b, uint64_t v);
/* Overwrites a previously emitted rel32 at position `at` (final pass only). */
void jit_patch_rel32(struct jit_buf *b, size_t at, size_t target);

/* width: 64 or 32 (operand size); 32-bit results are zero-extended by the CPU. */
void jit_mov_rr(struct jit_buf *b, bool w64, int dst, int src);
void jit_mov_imm64(struct jit_buf *b, int dst, uint64_t imm); /* shortest exact form */
void jit_mov_imm32(struct jit_buf *b, int dst, uint32_t imm); /* dst = (u64)imm */
void jit_alu_rr(struct jit_buf *b, bool w64, enum jit_alu op, int dst, int src);
void jit_alu_ri(struct jit_buf *b, bool w64, enum jit_alu op, int dst, int32_t imm);
void jit_test_rr(struct jit_buf *b, bool w64, int dst, int src);
void jit_test_ri(struct jit_buf *b, bool w64, int dst, int32_t imm);
void jit_imul_rr(struct jit_buf *b, bool w64, int dst, int src);
void jit_imul_rri(struct jit_buf *b, bool w64, int dst, int src, int32_t imm);
void jit_neg(struct jit_buf *b, bool w64, int reg);
void jit_shift_ri(struct jit_buf *b, bool w64, enum jit_shift op, int reg, uint8_t cnt);
void jit_shift_cl(struct jit_buf *b, bool w64, enum jit_shift op, int reg);
void jit_rol16_8(struct jit_buf *b, int reg);            /* rol r16, 8 */
void jit_movzx16(struct jit_buf *b, int dst, int src);   /* dst32 = (u16)src */
void jit_movsx_rr(struct jit_buf *b, bool w64, int dst, int src, int from_bits); /* 8/16/32 */
void jit_bswap(struct jit_buf *b, bool w64, int reg);
void jit_div(struct jit_buf *b, bool w64, bool is_signed, int divisor); /* div/idiv r/m */
void jit_cqo(struct jit_buf *b, bool w64);               /* cqo / cdq */
void jit_xor_zero(struct jit_buf *b, int reg);           /* xor r32, r32 */

/* Memory operands are always [base + disp] with mod=01/10 (never mod=00, so RBP/R13
 * bases are not RIP-relative) and a SIB byte for RSP/R12 bases. */
void jit_load(struct jit_buf *b, int size, bool sign_extend, int dst, int base, int32_t disp);
void jit_store_reg(struct jit_buf *b, int size, int base, int32_t disp, int src);
void jit_store_imm(struct jit_buf *b, int size, int base, int32_t disp, int32_t imm);
void jit_lea(struct jit_buf *b, int dst, int base, int32_t disp);
/* lock <op> [base+disp], src  (op: ADD/OR/AND/XOR), size 4 or 8 */
void jit_lock_alu_mr(struct jit_buf *b, int size, enum jit_alu op, int base, int32_t disp,
		     int src);
void jit_lock_xadd(struct jit_buf *b, int size, int base, int32_t disp, int src);
void jit_xchg_mr(struct jit_buf *b, int size, int base, int32_t disp, int src);
void jit_lock_cmpxchg(struct jit_buf *b, int size, int base, int32_t disp, int src);
void jit_lock_inc_m64(struct jit_buf *b, int base, int32_t disp);

void jit_push(struct jit_buf *b, int reg);
void jit_pop(struct jit_buf *b, int reg);
void jit_ret(struct jit_buf *b);
void jit_call_reg(struct jit_buf *b, int reg);
/* Control transfers with rel32; each returns the buffer position of its rel32 field. */
size_t jit_jmp32(struct jit_buf *b);
size_t jit_jcc32(struct jit_buf *b, enum jit_cc cc);
size_t jit_call32(struct jit_buf *b);
/* Short forms when the caller knows the displacement fits (used inside sequences). */
size_t jit_jcc8(struct jit_buf *b, enum jit_cc cc);
size_t jit_jmp8(struct jit_buf *b);
void jit_patch_rel8(struct jit_buf *b, size_t at, size_t target);

/* ---- code memory (jit_memory.c): W^X ---- */
/* Maps `size` bytes RW. Returns NULL and fills err on failure. */
void *jit_mem_alloc(size_t size, char *err, size_t errlen);
/* Flips the mapping to RX. Returns 0, or -EPERM / -errno with err filled. */
int jit_mem_seal(void *mem, size_t size, char *err, size_t errlen);
void jit_mem_free(void *mem, size_t size);

/* ---- test hook ---- */
/* Compiles with BPF r0..r9 placed in a permutation of the ten x86 registers the JIT uses
 * for them (RAX RDI RSI RDX RCX R8 RBX R13 R14 R15): perm[i] is the slot of BPF ri in
 * that list (NULL = the default System V friendly map). Used by the differential tests to
 * make every BPF register meet every special-case encoding (RCX shifts, RAX/RDX division,
 * R13 bases, byte registers). Results must be identical for every permutation. */
int jit_compile_permuted(const struct vm_program *prog, const struct vm_jit_options *opts,
			 const uint8_t perm[10], struct vm_jit_image **out, char *err,
			 size_t errlen);

/* ---- compiler internals shared by jit_x86_64.c (code generation) and
 * jit_x86_64_prog.c (program analysis, images, public API) ---- */

/* Where JIT code reports a run-time fault: info = kind | pc << 8 | helper id << 32; count is bumped with a
 * locked increment (the raw entry's record is shared by all threads). */

struct vm_jit_image {
	uint8_t *code;      /* RX mapping */
	size_t map_size;    /* bytes mapped */
	size_t code_len;    /* bytes of code (without the store entry's copy) */
	vm_jit_fn entry;    /* raw entry: faults go to raw_fault */
	uint64_t (*run)(uint64_t a1, uint64_t a2, struct vm_jit_fault_rec *rec);
	vm_jit_store_fn store; /* NULL when may_fault */
	struct vm_jit_fault_rec raw_fault;
	bool may_fault;     /* false: run never reports a fault (entry == run) */
};

/* Facts about the program found before code generation (jit_x86_64_prog.c). */
struct jit_analysis {
	size_t insn_cnt;
	bool *func_start;     /* insn starts a function (0 and local-call targets) */
	bool *jump_target;    /* some jump lands here */
	bool *lddw_tail;      /* second slot of an LDDW */
	struct nb_map **inline_map; /* per call insn: array map to inline, or NULL */
	bool used[BPF_NREGS]; /* BPF register appears in the program */
	/* used, but the entry's straight-line prefix writes it before anything reads it: the
	 * prologue need not zero it (every path starts with that prefix) */
	bool written_first[BPF_NREGS];
	bool has_calls;       /* any local call (or bpf_loop) */
	size_t *cbs;          /* functions whose address is taken (bpf_loop callbacks) */
	size_t cb_cnt;
	bool has_helper_calls;
	bool main_uses_fp;    /* the entry function touches r10 */
	bool may_fault;       /* local calls, missing helpers or falling off the end */
	bool falls_off_end;   /* the last insn can continue past the program */
};

int jit_analyze(const struct vm_program *prog, const struct vm_jit_options *opts,
		struct jit_analysis *an, char *err, size_t errlen);
void jit_analysis_free(struct jit_analysis *an);

/* Generates code for the analysed program into img (maps, seals). reg_map[i] is the x86
 * register of BPF ri (i <= 10). */
int jit_generate(const struct vm_program *prog, const struct jit_analysis *an,
		 const uint8_t reg_map[BPF_NREGS], struct vm_jit_image *img, char *err,
		 size_t errlen);

#endif
