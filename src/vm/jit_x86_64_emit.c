/* x86-64 instruction encoder for the JIT. Pure byte emission: it compiles (and is
 * harmless) on every architecture; only jit_x86_64.c decides whether code is run.
 *
 * Every memory operand uses mod=01/10 (an explicit displacement), so RBP/R13 bases never
 * turn into RIP-relative addressing, and RSP/R12 bases get their mandatory SIB byte.
 * Byte-register operands always carry a REX prefix so that encodings 4..7 mean
 * SPL/BPL/SIL/DIL rather than AH/CH/DH/BH.
 */
#include "vm/jit_x86_64.h"

#include <string.h>

static void put(struct jit_buf *b, const void *p, size_t n)
{
	if (b->code && b->len + n <= b->cap)
		memcpy(b->code + b->len, p, n);
	b->len += n;
}

void jit_emit_u8(struct jit_buf *b, uint8_t v)
{
	put(b, &v, 1);
}

void jit_emit_u32(struct jit_buf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	put(b, x, 4);
}

static void emit_u16(struct jit_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	put(b, x, 2);
}

void jit_emit_u64(struct jit_buf *b, uint64_t v)
{
	jit_emit_u32(b, (uint32_t)v);
	jit_emit_u32(b, (uint32_t)(v >> 32));
}

void jit_patch_rel32(struct jit_buf *b, size_t at, size_t target)
{
	if (!b->code || at + 4 > b->cap)
		return;
	int64_t rel = (int64_t)target - (int64_t)(at + 4);
	uint32_t v = (uint32_t)(int32_t)rel;
	uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	memcpy(b->code + at, x, 4);
}

void jit_patch_rel8(struct jit_buf *b, size_t at, size_t target)
{
	if (!b->code || at + 1 > b->cap)
		return;
	b->code[at] = (uint8_t)(int8_t)((int64_t)target - (int64_t)(at + 1));
}

/* REX prefix: emitted when any bit is needed or `force` (byte registers 4..7). */
static void rex(struct jit_buf *b, bool w, int reg, int rm, bool force)
{
	uint8_t v = 0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) | ((rm & 8) ? 1 : 0);
	if (v != 0x40 || force)
		jit_emit_u8(b, v);
}

static bool byte_reg_needs_rex(int reg)
{
	return reg >= 4 && reg <= 7;
}

static void modrm_rr(struct jit_buf *b, int reg, int rm)
{
	jit_emit_u8(b, (uint8_t)(0xc0 | ((reg & 7) << 3) | (rm & 7)));
}

static void modrm_mem(struct jit_buf *b, int reg, int base, int32_t disp)
{
	bool d8 = disp >= -128 && disp <= 127;
	jit_emit_u8(b, (uint8_t)((d8 ? 0x40 : 0x80) | ((reg & 7) << 3) | (base & 7)));
	if ((base & 7) == X_RSP)
		jit_emit_u8(b, 0x24); /* SIB: base only */
	if (d8)
		jit_emit_u8(b, (uint8_t)(int8_t)disp);
	else
		jit_emit_u32(b, (uint32_t)disp);
}

void jit_mov_rr(struct jit_buf *b, bool w64, int dst, int src)
{
	rex(b, w64, src, dst, false);
	jit_emit_u8(b, 0x89);
	modrm_rr(b, src, dst);
}

void jit_mov_imm32(struct jit_buf *b, int dst, uint32_t imm)
{
	rex(b, false, 0, dst, false);
	jit_emit_u8(b, (uint8_t)(0xb8 + (dst & 7)));
	jit_emit_u32(b, imm);
}

void jit_mov_imm64(struct jit_buf *b, int dst, uint64_t imm)
{
	if (imm <= 0xffffffffull) {
		jit_mov_imm32(b, dst, (uint32_t)imm);
	} else if ((int64_t)imm >= INT32_MIN && (int64_t)imm <= INT32_MAX) {
		rex(b, true, 0, dst, false); /* mov r/m64, imm32 (sign-extended) */
		jit_emit_u8(b, 0xc7);
		modrm_rr(b, 0, dst);
		jit_emit_u32(b, (uint32_t)imm);
	} else {
		rex(b, true, 0, dst, false);
		jit_emit_u8(b, (uint8_t)(0xb8 + (dst & 7)));
		jit_emit_u64(b, imm);
	}
}

void jit_xor_zero(struct jit_buf *b, int reg)
{
	rex(b, false, reg, reg, false);
	jit_emit_u8(b, 0x31);
	modrm_rr(b, reg, reg);
}

void jit_alu_rr(struct jit_buf *b, bool w64, enum jit_alu op, int dst, int src)
{
	rex(b, w64, src, dst, false);
	jit_emit_u8(b, (uint8_t)((op << 3) | 1));
	modrm_rr(b, src, dst);
}

void jit_alu_ri(struct jit_buf *b, bool w64, enum jit_alu op, int dst, int32_t imm)
{
	rex(b, w64, 0, dst, false);
	if (imm >= -128 && imm <= 127) {
		jit_emit_u8(b, 0x83);
		modrm_rr(b, op, dst);
		jit_emit_u8(b, (uint8_t)(int8_t)imm);
	} else {
		jit_emit_u8(b, 0x81);
		modrm_rr(b, op, dst);
		jit_emit_u32(b, (uint32_t)imm);
	}
}

void jit_test_rr(struct jit_buf *b, bool w64, int dst, int src)
{
	rex(b, w64, src, dst, false);
	jit_emit_u8(b, 0x85);
	modrm_rr(b, src, dst);
}

void jit_test_ri(struct jit_buf *b, bool w64, int dst, int32_t imm)
{
	rex(b, w64, 0, dst, false);
	jit_emit_u8(b, 0xf7);
	modrm_rr(b, 0, dst);
	jit_emit_u32(b, (uint32_t)imm);
}

void jit_imul_rr(struct jit_buf *b, bool w64, int dst, int src)
{
	rex(b, w64, dst, src, false);
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, 0xaf);
	modrm_rr(b, dst, src);
}

void jit_imul_rri(struct jit_buf *b, bool w64, int dst, int src, int32_t imm)
{
	rex(b, w64, dst, src, false);
	if (imm >= -128 && imm <= 127) {
		jit_emit_u8(b, 0x6b);
		modrm_rr(b, dst, src);
		jit_emit_u8(b, (uint8_t)(int8_t)imm);
	} else {
		jit_emit_u8(b, 0x69);
		modrm_rr(b, dst, src);
		jit_emit_u32(b, (uint32_t)imm);
	}
}

void jit_neg(struct jit_buf *b, bool w64, int reg)
{
	rex(b, w64, 0, reg, false);
	jit_emit_u8(b, 0xf7);
	modrm_rr(b, 3, reg);
}

void jit_shift_ri(struct jit_buf *b, bool w64, enum jit_shift op, int reg, uint8_t cnt)
{
	rex(b, w64, 0, reg, false);
	jit_emit_u8(b, 0xc1);
	modrm_rr(b, op, reg);
	jit_emit_u8(b, cnt);
}

void jit_shift_cl(struct jit_buf *b, bool w64, enum jit_shift op, int reg)
{
	rex(b, w64, 0, reg, false);
	jit_emit_u8(b, 0xd3);
	modrm_rr(b, op, reg);
}

void jit_rol16_8(struct jit_buf *b, int reg)
{
	jit_emit_u8(b, 0x66);
	rex(b, false, 0, reg, false);
	jit_emit_u8(b, 0xc1);
	modrm_rr(b, S_ROL, reg);
	jit_emit_u8(b, 8);
}

void jit_movzx16(struct jit_buf *b, int dst, int src)
{
	rex(b, false, dst, src, false);
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, 0xb7);
	modrm_rr(b, dst, src);
}

void jit_movsx_rr(struct jit_buf *b, bool w64, int dst, int src, int from_bits)
{
	if (from_bits == 32) { /* movsxd r64, r/m32 */
		rex(b, true, dst, src, false);
		jit_emit_u8(b, 0x63);
		modrm_rr(b, dst, src);
		return;
	}
	rex(b, w64, dst, src, from_bits == 8 && byte_reg_needs_rex(src));
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, from_bits == 8 ? 0xbe : 0xbf);
	modrm_rr(b, dst, src);
}

void jit_bswap(struct jit_buf *b, bool w64, int reg)
{
	rex(b, w64, 0, reg, false);
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, (uint8_t)(0xc8 + (reg & 7)));
}

void jit_div(struct jit_buf *b, bool w64, bool is_signed, int divisor)
{
	rex(b, w64, 0, divisor, false);
	jit_emit_u8(b, 0xf7);
	modrm_rr(b, is_signed ? 7 : 6, divisor);
}

void jit_cqo(struct jit_buf *b, bool w64)
{
	if (w64)
		jit_emit_u8(b, 0x48);
	jit_emit_u8(b, 0x99);
}

void jit_load(struct jit_buf *b, int size, bool sx, int dst, int base, int32_t disp)
{
	switch (size) {
	case 1:
		rex(b, sx, dst, base, false);
		jit_emit_u8(b, 0x0f);
		jit_emit_u8(b, sx ? 0xbe : 0xb6);
		break;
	case 2:
		rex(b, sx, dst, base, false);
		jit_emit_u8(b, 0x0f);
		jit_emit_u8(b, sx ? 0xbf : 0xb7);
		break;
	case 4:
		rex(b, sx, dst, base, false);
		jit_emit_u8(b, sx ? 0x63 : 0x8b);
		break;
	default:
		rex(b, true, dst, base, false);
		jit_emit_u8(b, 0x8b);
		break;
	}
	modrm_mem(b, dst, base, disp);
}

void jit_store_reg(struct jit_buf *b, int size, int base, int32_t disp, int src)
{
	if (size == 2)
		jit_emit_u8(b, 0x66);
	rex(b, size == 8, src, base, size == 1 && byte_reg_needs_rex(src));
	jit_emit_u8(b, size == 1 ? 0x88 : 0x89);
	modrm_mem(b, src, base, disp);
}

void jit_store_imm(struct jit_buf *b, int size, int base, int32_t disp, int32_t imm)
{
	if (size == 2)
		jit_emit_u8(b, 0x66);
	rex(b, size == 8, 0, base, false);
	jit_emit_u8(b, size == 1 ? 0xc6 : 0xc7);
	modrm_mem(b, 0, base, disp);
	if (size == 1)
		jit_emit_u8(b, (uint8_t)imm);
	else if (size == 2)
		emit_u16(b, (uint16_t)imm);
	else
		jit_emit_u32(b, (uint32_t)imm);
}

void jit_lea(struct jit_buf *b, int dst, int base, int32_t disp)
{
	rex(b, true, dst, base, false);
	jit_emit_u8(b, 0x8d);
	modrm_mem(b, dst, base, disp);
}

void jit_lock_alu_mr(struct jit_buf *b, int size, enum jit_alu op, int base, int32_t disp,
		     int src)
{
	jit_emit_u8(b, 0xf0);
	rex(b, size == 8, src, base, false);
	jit_emit_u8(b, (uint8_t)((op << 3) | 1));
	modrm_mem(b, src, base, disp);
}

void jit_lock_xadd(struct jit_buf *b, int size, int base, int32_t disp, int src)
{
	jit_emit_u8(b, 0xf0);
	rex(b, size == 8, src, base, false);
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, 0xc1);
	modrm_mem(b, src, base, disp);
}

void jit_xchg_mr(struct jit_buf *b, int size, int base, int32_t disp, int src)
{
	rex(b, size == 8, src, base, false); /* xchg with memory is implicitly locked */
	jit_emit_u8(b, 0x87);
	modrm_mem(b, src, base, disp);
}

void jit_lock_cmpxchg(struct jit_buf *b, int size, int base, int32_t disp, int src)
{
	jit_emit_u8(b, 0xf0);
	rex(b, size == 8, src, base, false);
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, 0xb1);
	modrm_mem(b, src, base, disp);
}

void jit_lock_inc_m64(struct jit_buf *b, int base, int32_t disp)
{
	jit_emit_u8(b, 0xf0);
	rex(b, true, 0, base, false);
	jit_emit_u8(b, 0xff);
	modrm_mem(b, 0, base, disp);
}

void jit_push(struct jit_buf *b, int reg)
{
	rex(b, false, 0, reg, false);
	jit_emit_u8(b, (uint8_t)(0x50 + (reg & 7)));
}

void jit_pop(struct jit_buf *b, int reg)
{
	rex(b, false, 0, reg, false);
	jit_emit_u8(b, (uint8_t)(0x58 + (reg & 7)));
}

void jit_ret(struct jit_buf *b)
{
	jit_emit_u8(b, 0xc3);
}

void jit_call_reg(struct jit_buf *b, int reg)
{
	rex(b, false, 0, reg, false);
	jit_emit_u8(b, 0xff);
	modrm_rr(b, 2, reg);
}

size_t jit_jmp32(struct jit_buf *b)
{
	jit_emit_u8(b, 0xe9);
	size_t at = b->len;
	jit_emit_u32(b, 0);
	return at;
}

size_t jit_jcc32(struct jit_buf *b, enum jit_cc cc)
{
	jit_emit_u8(b, 0x0f);
	jit_emit_u8(b, (uint8_t)(0x80 | cc));
	size_t at = b->len;
	jit_emit_u32(b, 0);
	return at;
}

size_t jit_call32(struct jit_buf *b)
{
	jit_emit_u8(b, 0xe8);
	size_t at = b->len;
	jit_emit_u32(b, 0);
	return at;
}

size_t jit_jcc8(struct jit_buf *b, enum jit_cc cc)
{
	jit_emit_u8(b, (uint8_t)(0x70 | cc));
	size_t at = b->len;
	jit_emit_u8(b, 0);
	return at;
}

size_t jit_jmp8(struct jit_buf *b)
{
	jit_emit_u8(b, 0xeb);
	size_t at = b->len;
	jit_emit_u8(b, 0);
	return at;
}
