/* verifier internals: the abstract domain (tnum + ranges), the abstract state, and the
 * functions the verifier's files share. Not used outside src/verifier and its tests.
 */
#ifndef NCCLBPF_VERIFIER_INTERNAL_H
#define NCCLBPF_VERIFIER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isa/isa.h"
#include "loader/object.h"
#include "verifier/hooks.h"
#include "verifier/verifier.h"

/* ---- tnum: known bits. A value v is in (value, mask) iff (v & ~mask) == value. ---- */
struct tnum {
	uint64_t value;
	uint64_t mask;
};

/* the small ones inline: the scalar domain calls them on every ALU instruction */
static inline struct tnum tnum_const(uint64_t v)
{
	return (struct tnum){ v, 0 };
}

static inline struct tnum tnum_unknown(void)
{
	return (struct tnum){ 0, ~0ull };
}

static inline bool tnum_is_const(struct tnum t)
{
	return t.mask == 0;
}

static inline bool tnum_contains(struct tnum t, uint64_t v)
{
	return (v & ~t.mask) == t.value;
}

/* every value of inner is in outer */
static inline bool tnum_in(struct tnum outer, struct tnum inner)
{
	if (inner.mask & ~outer.mask)
		return false;
	return (inner.value & ~outer.mask) == outer.value;
}

/* The smallest tnum holding [min, max]: bits above the highest differing bit are known. */
static inline struct tnum tnum_range(uint64_t min, uint64_t max)
{
	uint64_t chi = min ^ max;
	if (min > max)
		return tnum_unknown();
	if (chi == 0)
		return tnum_const(min);
	unsigned bits = 64 - (unsigned)__builtin_clzll(chi);
	if (bits > 63)
		return tnum_unknown();
	uint64_t delta = (1ull << bits) - 1;
	return (struct tnum){ min & ~delta, delta };
}

/* false when a and b have no common value */
static inline bool tnum_intersect(struct tnum a, struct tnum b, struct tnum *out)
{
	uint64_t known_both = ~a.mask & ~b.mask;
	if ((a.value ^ b.value) & known_both)
		return false;
	uint64_t v = a.value | b.value;
	uint64_t mu = a.mask & b.mask;
	*out = (struct tnum){ v & ~mu, mu };
	return true;
}

/* keep the low bytes, zero the rest */
static inline struct tnum tnum_cast(struct tnum a, unsigned bytes)
{
	if (bytes >= 8)
		return a;
	uint64_t keep = (1ull << (bytes * 8)) - 1;
	return (struct tnum){ a.value & keep, a.mask & keep };
}

/* low 32 bits */
static inline struct tnum tnum_subreg(struct tnum a)
{
	return tnum_cast(a, 4);
}

static inline struct tnum tnum_with_subreg(struct tnum a, struct tnum sub)
{
	uint64_t hi = 0xffffffff00000000ull;
	return (struct tnum){ (a.value & hi) | (sub.value & 0xffffffffull),
			      (a.mask & hi) | (sub.mask & 0xffffffffull) };
}

struct tnum tnum_add(struct tnum a, struct tnum b);
struct tnum tnum_sub(struct tnum a, struct tnum b);
struct tnum tnum_mul(struct tnum a, struct tnum b);
struct tnum tnum_and(struct tnum a, struct tnum b);
struct tnum tnum_or(struct tnum a, struct tnum b);
struct tnum tnum_xor(struct tnum a, struct tnum b);
struct tnum tnum_lshift(struct tnum a, unsigned k);
struct tnum tnum_rshift(struct tnum a, unsigned k);
struct tnum tnum_arshift(struct tnum a, unsigned k, unsigned width);

/* ---- scalars: tnum + unsigned/signed 64- and 32-bit ranges, kept consistent ---- */
struct vscalar {
	struct tnum t;
	uint64_t umin, umax;
	int64_t smin, smax;
	uint32_t u32min, u32max;
	int32_t s32min, s32max;
};

void sc_const(struct vscalar *s, uint64_t v);
void sc_unknown(struct vscalar *s);
/* unknown value of `bytes` bytes, zero-extended (sign-extended when sx) */
void sc_unknown_sized(struct vscalar *s, unsigned bytes, bool sx);
bool sc_is_const(const struct vscalar *s);
/* Derives every representation from the others. Returns false if s is empty. */
bool sc_sync(struct vscalar *s);
bool sc_is_empty(const struct vscalar *s);
bool sc_contains(const struct vscalar *s, uint64_t v); /* concrete membership */
bool sc_in(const struct vscalar *outer, const struct vscalar *inner);
bool sc_equal(const struct vscalar *a, const struct vscalar *b);
/* 32-bit view zero-extended to 64 bits (what a w-register move produces) */
void sc_zext32(struct vscalar *s);

/* ALU transfer: dst = dst OP src. op is BPF_OP(code); alu32 for BPF_ALU; off as in the
 * instruction (signed div/mod, movsx width). Division by a range containing zero is the
 * caller's concern (rejected before). Returns false on an op it does not model. */
bool sc_alu(struct vscalar *dst, const struct vscalar *src, uint8_t op, bool alu32, int16_t off);
/* byte swap / truncation (BPF_END): imm = 16/32/64; to_be / alu64 (bswap) decide. */
void sc_end(struct vscalar *dst, unsigned bits, bool swap);

/* Branch refinement of a conditional jump "if a OP b". On return *ta,*tb hold a and b on the
 * taken edge and *fa,*fb on the fall-through edge; the return bits say which edges are
 * feasible (1 = taken, 2 = fall-through). */
#define SC_TAKEN 1
#define SC_FALL 2
int sc_branch(const struct vscalar *a, const struct vscalar *b, uint8_t op, bool jmp32,
	      struct vscalar *ta, struct vscalar *tb, struct vscalar *fa, struct vscalar *fb);

/* ---- registers ---- */
enum vtype {
	VT_NOT_INIT = 0,
	VT_SCALAR,
	VT_PTR_CTX,
	VT_PTR_STACK,
	VT_PTR_MAP_VALUE,
	VT_PTR_MAP_VALUE_OR_NULL,
	VT_CONST_MAP_PTR,
	VT_PTR_MEM, /* conformance: raw memory of opts->mem_size bytes */
	VT_PTR_FUNC, /* a function's address (off = its first insn): bpf_loop's callback */
};

/* Origins: which positions of the top frame of the most recent stored state a scalar
 * derives from (bits 0..10 registers, 11..74 stack slots), for precision propagation. */
#define VPOS_COUNT 75
struct vorig {
	uint64_t b[2];
};

struct vreg {
	uint8_t type;
	uint8_t frameno; /* PTR_TO_STACK: frame the pointer points into */
	/* Scalars reuse the pointer fields (a register state stays 96 bytes) for a loop
	 * counter tag (verifier_widen.c): lc != 0 means this number equals, exactly (no wrap),
	 * the value the counter candidate lc had at the widened loop head on this iteration
	 * plus lc_off. Kept by copies, spills, fills and constant adds only. */
	union {
		uint16_t map; /* map index for map pointers */
		uint16_t lc;
	};
	union {
		int32_t off; /* constant offset of pointers */
		int32_t lc_off;
	};
	uint32_t id;     /* OR_NULL: lookup id; scalar: copies share an id */
	uint32_t taint;  /* rank-local: 0 = no, else 1 + insn of its first source (see below) */
	struct vorig org;
	struct vscalar s; /* scalar value, or the variable offset of a map value pointer */
};
_Static_assert(sizeof(struct vreg) == 96, "register state size (copied with every state)");

/* stack byte types */
enum { SB_INVALID = 0, SB_MISC, SB_SPILL };

struct vslot {
	uint8_t type[8]; /* byte i is fp - 8*(slot+1) + i */
	uint8_t taint;   /* bit i: byte i holds rank-local data (a spill: 0xff or 0) */
	/* The spilled register lives in bytes [spill_at, spill_at + spill_size), all SB_SPILL
	 * (no byte is SB_SPILL when spill_size is 0). Full spills: 0, 8. Narrower spills
	 * (a 4-byte loop counter) are of scalars whose value fits those bytes, so a load of
	 * the same bytes gives back the register. */
	uint8_t spill_at, spill_size;
	uint32_t taint_src; /* 1 + insn of a source of a tainted byte, 0 when taint == 0 */
	struct vreg spill;
};

static inline bool slot_spilled(const struct vslot *s)
{
	return s->spill_size != 0;
}

#define VSLOTS (BPF_STACK_SIZE / 8)

struct vloop;
struct vwiden;
#define VWIDEN_DEPTH 4 /* nested widened loops on one path */
/* A loop counter tag with this bit (struct vreg lc) is congruent only: the number equals the
 * counter's head value plus lc_off modulo 2^32 (a constant add that may have wrapped: the
 * countdown `w6 += -1; if w6 == -1 goto out`). It proves progress at an arrival whose
 * counter range spans less than 2^32 - 2^30 within 32 bits (verifier_widen.c) and narrows
 * nothing. Tags themselves stay below it. */
#define VLC_MOD 0x8000u
/* widening attempts at a loop head, in order: a guessed bound for the counter, the guess
 * plus one step (the counter is tested before its step), no guess, no widening */
enum { VWIDEN_GUESS, VWIDEN_GUESS_STEP, VWIDEN_NO_GUESS, VWIDEN_NEVER };

struct vframe {
	const struct vloop *loop; /* bpf_loop callback frame: the loop being verified */
	uint32_t callsite; /* insn of the call that created this frame (0 for the entry) */
	uint16_t nslots;   /* slots [0, nslots) may be non-INVALID */
	uint16_t cap;      /* slots allocated (own) */
	/* own: slots is this frame's malloc'd array. Otherwise it is an array in the arena,
	 * shared with stored states and never written: a stored state whose stack equals its
	 * parent's, and a pending branch whose stack equals its path's last stored state,
	 * point to that array instead of copying it (a state's stack is most of its size,
	 * and first-touch memory most of a short verification's time). The current state
	 * always owns its slots (vstate_own before it runs). */
	bool own;
	struct vslot *slots;
	/* Not own, and not NULL: the frame's slots are sp[0..nslots) instead of slots (then
	 * NULL). A stored state's copy of a stack takes this form: a slot equal to the same
	 * slot of the path's previous stored state points to that one, so a walked iteration
	 * that changes one slot copies one slot. Read slots through vframe_slot. */
	const struct vslot *const *sp;
	/* Not NULL: a stored state's frame, allocated without regs (VFRAME_HEAD bytes);
	 * register r is rp[r], shared with the same register of the previous stored state
	 * on the path when equal, or an uninitialised register. Read through vframe_reg. */
	const struct vreg *const *rp;
	struct vreg regs[BPF_NREGS]; /* last: see rp */
};
#define VFRAME_HEAD offsetof(struct vframe, regs)

/* slot i (< f->nslots) of frame f, whichever form it is stored in */
static inline const struct vslot *vframe_slot(const struct vframe *f, unsigned i)
{
	return f->sp ? f->sp[i] : &f->slots[i];
}

/* register r of frame f, whichever form it is stored in */
static inline const struct vreg *vframe_reg(const struct vframe *f, unsigned r)
{
	return f->rp ? f->rp[r] : &f->regs[r];
}

struct vrecord;

struct vstate {
	uint32_t nframes;
	uint32_t loop_head; /* most recent back-edge target on this path, for diagnostics */
	uint32_t loop_jump; /* the jump that took that back-edge */
	uint32_t path_taint; /* 1 + insn of a branch on rank-local data above, 0 = none; never
			      * cleared on the path (control dependence, conservatively) */
	uint64_t stored_at; /* insns_processed when this path last stored a state */
	uint64_t steps;     /* instructions this path executed since rec (verifier_cost.c) */
	struct vrecord *rec; /* most recent stored state on this path (precision parent) */
	struct vwiden *widen; /* innermost widened loop this path is inside (verifier_widen.c) */
	struct vframe *frames[BPF_MAX_CALL_DEPTH];
};

/* Worst-case instructions executed below a stored state, by how the paths end
 * (verifier_cost.c); 0 = no path ends so. */
struct vcost {
	uint64_t exit;              /* at the program's exit (in a callback: the callback's) */
	uint64_t arr[VWIDEN_DEPTH]; /* at an arrival at widened loop d of st.widen's chain */
	uint64_t iter;              /* widened head / bpf_loop call: one iteration */
	uint32_t culprit;           /* 1 + insn of the loop or call that most adds to exit */
};

/* A state stored at a prune point. */
struct vrecord {
	struct vrecord *next;   /* list of fully explored states at the same insn */
	struct vrecord *hnext;  /* chain in env->live (loop heads, while being explored) */
	struct vrecord *parent; /* previous stored state on the path that stored this one */
	uint32_t branches;      /* live paths below this state; 0 = fully explored */
	uint32_t pc;
	uint32_t miss, hit;     /* pruning attempts against this state (list eviction) */
	uint64_t hash;          /* vstate_hash of st, for the infinite-loop check */
	bool hashed;
	uint64_t precise[2];    /* top-frame positions whose values mattered below */
	/* per top-frame position: its origins in the parent, compactly (most positions
	 * either hold the parent's value of the same position or derive from nothing):
	 * org_self = {pos}, org_other = other_org[number of org_other bits below pos],
	 * neither = none */
	uint64_t org_self[2], org_other[2];
	struct vorig *other_org;
	uint32_t npos;            /* positions stored (registers + used slots) */
	struct vwiden *widen_own; /* this is the widened head state of that loop */
	struct vloop *loop_own;   /* this is the state at that bpf_loop call */
	struct vcost cost;        /* final once fully explored (branches == 0) */
	uint64_t dist;            /* instructions executed from parent to this state */
	struct vrecord *anext;    /* every stored state, newest first (widening rollback) */
	uint64_t seq;             /* store order */
	struct vstate st;
};

/* A bpf_loop call being verified (verifier_loop.c). The callback is verified as a loop
 * body over the caller's frames: `in` is the caller state the current round starts from;
 * an iteration whose exit state `in` contains adds nothing, any other widens `in`
 * (verifier_loop.c) and starts another round. Lives in the arena (shared by copies). */
struct vloop {
	struct vstate in;     /* caller frames (arena copies) */
	struct vreg ctx;      /* r2 of every iteration (bpf_loop's r3) */
	struct vreg idx;      /* r1 of every iteration: [0, nr_loops max - 1] */
	uint32_t cb;          /* the callback's first insn */
	uint32_t callsite;    /* the call to bpf_loop */
	uint32_t round;       /* widenings so far */
	uint32_t nr_taint;    /* taint of nr_loops */
	uint64_t n_max;       /* most callback runs (nr_loops' bound, capped) */
	struct vrecord *rec;  /* the state stored at the call (cost, rounds restart below it) */
};

/* ---- the verifier run ---- */
struct vpending {
	struct vstate st;
	uint32_t pc;
};

/* Bump allocator for stored states: one free at the end instead of one per state. */
struct varena {
	struct varena *next;
	size_t used, size;
	max_align_t data[];
};

struct verifier_env {
	const struct nb_program *prog;
	const struct bpf_insn *insns;
	size_t insn_cnt;
	const struct nb_map_def *maps;
	size_t map_cnt;
	const struct nb_hook_desc *hook;
	uint32_t mem_size;
	uint64_t budget;
	struct nb_verifier_diag *diag;
	struct nb_verifier_warnings *warnings; /* NULL: not collected */
	struct nb_verifier_stats stats;
	uint8_t *insn_flags; /* per insn: VF_* */
	struct vrecord **records; /* per insn: fully explored states (pruning candidates) */
	/* States still being explored at loop heads, hashed by (pc, state hash): an exact
	 * repeat is an infinite loop. A table instead of a per-insn list keeps long loops
	 * linear (regression: 1,000 iterations cost 4 ms, budget exhaustion 2 s). */
	struct vrecord **live;
	uint32_t *inprogress; /* per insn: stored states not yet fully explored */
	uint16_t *live_regs;  /* per insn: registers some path from it reads before writing */
	uint64_t nrecords;
	struct vpending *pending;
	size_t npending, cap_pending;
	struct varena *arena; /* stored states live here until the run ends */
	uint32_t next_id;
	bool taint_on; /* tracking rank-local data: the hook has rank-invariant outputs and
			* opts->allow_rank_local is off */
	struct vtaint_src *taint_src; /* per insn: what the taint created there is */
	struct vstate cur;
	uint32_t pc;
	bool failed;
	/* loop widening (verifier_widen.c) */
	uint8_t *widen_attempt;  /* per insn: VWIDEN_GUESS.. VWIDEN_NEVER (verifier_widen.c) */
	uint32_t *pred_start, *preds; /* predecessors (CSR), built on first widening */
	uint8_t **body_of;       /* per loop head: its natural loop (arena bit set), once computed */
	uint8_t *widen_shape_miss; /* per loop head: visits whose state moved more than numbers */
	uint8_t *walk_short; /* per loop head: visits walked because a bound was near (widen.c) */
	uint32_t next_tag;
	uint32_t next_wid; /* pointer ids given by widening (verifier_widen.c) */
	uint64_t max_insns;  /* cost limit per run (verifier_cost.c) */
	uint64_t cost_root;  /* the bound, once the root state is fully explored */
	bool cost_lost;      /* a path end could not be attributed: bound unknown */
	struct vrecord *root; /* the first stored state */
	bool widen_off;      /* this run walks every loop */
	bool widen_used;     /* this run widened a loop */
	bool restart;        /* a rollback ran out of memory: verify again, walking */
	struct vwiden *undo; /* a widening whose proof failed at its completion: roll back */
	uint64_t wasted;     /* instructions processed in widenings rolled back */
	struct vrecord *all_recs; /* every stored state, newest first */
	uint64_t rec_seq;
};

#define VF_PRUNE 0x01     /* prune point: jump target, branch fall-through, after call */
#define VF_LDDW2 0x02     /* second slot of an LDDW */
#define VF_SUBPROG 0x04   /* start of a function */
#define VF_REACHED 0x08   /* statically reachable */
#define VF_LOOP_HEAD 0x10 /* target of a backward jump */
#define VF_VISITED 0x20   /* executed by some explored path */
#define VF_WARNED 0x40    /* a warning was recorded for it */

#define VERIFIER_MAX_PENDING 8192
#define VERIFIER_MAX_RECORDS 16384

/* ---- rank variance (verifier_taint.c) ----
 * A value is rank-local when it may differ between the ranks of a communicator for the
 * same collective. Registers, stack bytes and the path carry a taint (1 + insn of the
 * first source, for diagnostics; pruning and loop detection only look at taint != 0).
 * Outputs the hook table marks rank-invariant must not receive a tainted value nor be
 * written on a tainted path (NB_VERR_RANK_LOCAL). */
enum vtaint_kind {
	VTK_NONE = 0,
	VTK_CTX,          /* arg: field index of a NB_RANK_LOCAL context field */
	VTK_HELPER,       /* arg: helper id (rank_local_result) */
	VTK_MAP_VALUE,    /* arg: map index; a load from a map programs or the plugin write */
	VTK_MAP_PRESENCE, /* arg: map index; whether a hash/LRU key is present */
	VTK_BRANCH,       /* arg: taint of the compared value */
};
struct vtaint_src {
	uint8_t kind;
	uint32_t arg;
};
static inline uint32_t vtaint_join(uint32_t a, uint32_t b)
{
	return a ? a : b;
}
/* A new source at env->pc: returns its taint (0 when tracking is off). */
uint32_t vtaint_new(struct verifier_env *env, enum vtaint_kind kind, uint32_t arg);
/* True when loads from map `m` are rank-local (any map a program or the plugin writes). */
bool vtaint_map_writable(const struct verifier_env *env, const struct nb_map_def *m);
/* True for an agreed map (NCCLBPF_F_AGREED) seen from a tuner hook: read-only there. */
bool vtaint_map_agreed_readonly(const struct verifier_env *env, const struct nb_map_def *m);
/* Taint of a lookup result (its NULL-ness) for the map and the key register. */
uint32_t vtaint_lookup(struct verifier_env *env, uint16_t map, const struct vreg *key);
/* Conditional jump with both edges feasible comparing a and b: taints the path of st. */
void vtaint_branch(struct verifier_env *env, struct vstate *st, const struct vreg *a,
		   const struct vreg *b);
/* Store of val to ctx field f: NB_VERR_RANK_LOCAL when f must be rank-invariant and val
 * or the path is rank-local. */
int vtaint_check_output(struct verifier_env *env, const struct nb_ctx_field *f,
			const struct vreg *val);

/* structure (verifier_check.c) */
int verifier_check_structure(struct verifier_env *env);
int verifier_liveness(struct verifier_env *env);

/* diagnostics (verifier_diag.c): records the first error; always returns -EACCES */
int verr(struct verifier_env *env, enum nb_verr code, size_t insn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* records a warning (opts->warnings), once per instruction */
void vwarn(struct verifier_env *env, enum nb_verr code, size_t insn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *vtype_name(uint8_t type);
/* source line of insn from BTF line info, 0 when unknown */
uint32_t verifier_source_line(const struct verifier_env *env, size_t insn);
void vreg_describe(const struct verifier_env *env, const struct vreg *r, char *buf, size_t len);

/* state (verifier_state.c) */
struct vframe *vframe_new(uint32_t callsite);
/* Makes slots [0, slot] of frame `frameno` of st exist (new ones INVALID); the frame may
 * move. Returns it, or NULL on allocation failure. */
struct vframe *vframe_reserve(struct vstate *st, unsigned frameno, unsigned slot);
int vstate_copy(struct vstate *dst, const struct vstate *src);
/* a copy without spare slot capacity (pending branches: many wait, most are pruned) */
int vstate_copy_compact(struct vstate *dst, const struct vstate *src);
/* A pending branch: frames whose stack equals that of st->rec's state share its array. */
void vstate_share_slots(struct vstate *st);
/* Makes every frame own its slots (a state about to be the current one). */
int vstate_own(struct vstate *st);
void vframe_free(struct vframe *f);
void vstate_free(struct vstate *st);
void varena_free(struct varena *a);
/* live: registers of the top frame that matter at old's pc (others are not compared) */
bool vstate_contains(const struct vrecord *old, const struct vstate *cur, uint16_t live);
bool vstate_equal(const struct vstate *a, const struct vstate *b);
/* equal for vstate_equal states */
uint64_t vstate_hash(const struct vstate *st);
void vstate_mark_precise(struct vrecord *rec, struct vorig org);
void vreg_mark_precise(struct verifier_env *env, const struct vreg *r);
/* stores the current state at env->pc (called at prune points when not pruned) */
int vstate_store(struct verifier_env *env);
/* propagates precision after cur was pruned against old */
void vstate_prune_precision(struct verifier_env *env, const struct vrecord *old);
int vrecord_path_done(struct verifier_env *env, struct vrecord *rec);
#define VERIFIER_LIVE_BUCKETS 1024 /* power of 2 */
static inline uint32_t vlive_bucket(uint32_t pc, uint64_t hash)
{
	return (uint32_t)((hash ^ (uint64_t)pc * 0x9e3779b97f4a7c15ull) >> 20) &
	       (VERIFIER_LIVE_BUCKETS - 1);
}
void vreg_set_scalar(struct vreg *r, const struct vscalar *s);
void vreg_set_unknown(struct vreg *r);
void vreg_set_not_init(struct vreg *r);
void vreg_set_const(struct vreg *r, uint64_t v);

/* memory (verifier_mem.c) */
int verifier_check_mem(struct verifier_env *env, const struct bpf_insn *insn);
/* checks that `size` bytes at r (a pointer) may be read by a helper, all initialised;
 * sets *has_ptr when the range holds spilled pointers */
int verifier_check_helper_mem(struct verifier_env *env, const struct vreg *r, uint64_t size,
			      int argno, const char *what, bool *has_ptr);
/* Taint of `size` bytes of memory at r (stack or map value pointer), 0 if none. */
uint32_t verifier_mem_taint(struct verifier_env *env, const struct vreg *r, uint64_t size);

/* bpf_loop (verifier_loop.c): the call, and the callback's exit (1 = path ends) */
int verifier_push_pending(struct verifier_env *env, uint32_t pc, struct vstate *st);
int verifier_bpf_loop_call(struct verifier_env *env, const struct bpf_insn *insn);
int verifier_bpf_loop_exit(struct verifier_env *env);
/* state helpers for it (verifier_state.c) */
void *varena_alloc(struct verifier_env *env, size_t size);
/* out = st with its frames copied into the arena (shared, never changed after) */
int vstate_snapshot(struct verifier_env *env, struct vstate *out, const struct vstate *st);
/* marks every scalar of every frame precise in the current path's stored states and
 * clears their origins (a state that is copied or joined as a whole) */
void vstate_mark_all_precise(struct verifier_env *env);
/* old contains cur, comparing every position (no precision, no liveness) */
bool vstate_covers(const struct vstate *old, const struct vstate *cur);
/* out (arena frames) = a state containing both a and b (same frames and registers) */
int vstate_join(struct verifier_env *env, struct vstate *out, const struct vstate *a,
		const struct vstate *b);

/* loop widening (verifier_widen.c) */
#define VWIDEN_MAX_CAND 4
#define VWIDEN_MAX_PTR 4
/* ids of pointers that step with a widened loop's counter: [VWIDEN_ID_BASE, 2^31) (other
 * ids count up from 1 and are far below it; widening stops before they could reach it) */
#define VWIDEN_ID_BASE 0x40000000u
static inline bool vwiden_id(uint32_t id)
{
	return id >= VWIDEN_ID_BASE && id < 0x80000000u;
}
struct vwiden {
	struct vwiden *parent;  /* enclosing widened loop on the path */
	struct vrecord *rec;    /* the widened state W stored at the head */
	uint8_t *body;          /* bit per insn: in the natural loop of the head (vbody_has) */
	uint32_t head;
	uint32_t tag;           /* candidate j carries tag + j */
	uint32_t jump;          /* the back edge that led to the widening (diagnostics) */
	uint64_t n;             /* iteration bound, once W is fully explored */
	uint8_t ncand, mask;    /* candidates; those that progressed on every arrival so far */
	/* to undo the widening when its proof fails: the state before it, and where the
	 * exploration stood (everything explored since is W's subtree: DFS) */
	struct vstate saved;    /* arena frames */
	size_t npending_at;
	uint64_t processed_at;
	bool guessed;           /* a bound was guessed for some candidate */
	struct {
		uint16_t pos;   /* 0..10 register, 11.. stack slot (spill) */
		int8_t dir;     /* +1 increasing, -1 decreasing */
		uint64_t lo, hi;        /* W's range */
		uint64_t ext;           /* max (dir +1) / min (dir -1) over arrivals */
		uint64_t dmin;          /* smallest |step| over arrivals */
		bool seen;
	} cand[VWIDEN_MAX_CAND];
	/* map value pointers stepping with candidate cand: W gives each a fresh id (wid) and
	 * the offsets woff + s; at an arrival a pointer with that id is the head's pointer
	 * moved by k times the candidate's step (see verifier_widen.c) */
	uint8_t nptr;
	struct {
		uint32_t wid;
		int32_t woff;
		int64_t k;
		uint8_t cand;
		int64_t base;   /* the variable offset when widened (a constant) */
		uint64_t cv;    /* the candidate's value when widened */
		struct vscalar s;
	} ptr[VWIDEN_MAX_PTR];
};
/* A loop's body: one bit per instruction (a byte each was most of the memory of a loop
 * head's first widening in a long program) */
static inline bool vbody_has(const uint8_t *body, size_t pc)
{
	return (body[pc >> 3] >> (pc & 7)) & 1;
}

static inline void vbody_add(uint8_t *body, size_t pc)
{
	body[pc >> 3] |= (uint8_t)(1u << (pc & 7));
}

/* A register, or the register spilled in a stack slot (pos 11..), of frame f; NULL if none. */
static inline struct vreg *vpos_reg(struct vframe *f, unsigned pos)
{
	if (pos < BPF_NREGS) /* a stored frame's register: only read */
		return (struct vreg *)vframe_reg(f, pos);
	unsigned i = pos - BPF_NREGS;
	/* a stored frame's slot: only read (the current state owns its slots) */
	struct vslot *sl = i < f->nslots ? (struct vslot *)vframe_slot(f, i) : NULL;
	if (sl && slot_spilled(sl))
		return &sl->spill;
	return NULL;
}

/* map value pointers that moved between two visits of a loop head (verifier_widen_ptr.c) */
struct vmoving {
	unsigned n;
	uint16_t pos[VWIDEN_MAX_PTR];
};
/* Plans W's offsets for each moving pointer from a counter candidate (nv: W's numbers,
 * cstep: each candidate's step); false if some pointer has none. */
bool vwiden_ptr_plan(struct vwiden *w, const struct vmoving *mv, const struct vframe *top,
		     const struct vframe *pf, const struct vscalar *nv, const int64_t *cstep);
/* Gives the moving pointers of top W's offsets and ids. */
void vwiden_ptr_apply(struct verifier_env *env, struct vwiden *w, const struct vmoving *mv,
		      struct vframe *top, const struct vframe *pf);
/* At an arrival: every pointer with one of w's ids moved by its counter's step times k
 * (then it is given W's offset); false otherwise. */
bool vwiden_ptr_arrival(struct verifier_env *env, struct vwiden *w);
/* Leaving w's loop: its pointers' ids end. */
void vwiden_ptr_leave(struct verifier_env *env, const struct vwiden *w);

/* At a loop head (prune point, not pruned): 1 = path ends (an arrival the widened state
 * covers), 2 = the proof failed and the exploration was rolled back to the state before
 * the widening (env->cur, env->pc: go through the prune point again), 0 = continue
 * (*stored: the state was widened and stored), <0 error. */
int verifier_widen_head(struct verifier_env *env, bool *stored);
/* Undoes widening w (its proof failed): drops everything explored since, restores the
 * state it widened as env->cur at its head. */
void verifier_widen_rollback(struct verifier_env *env, struct vwiden *w);
/* Before each step: leaves widened loops whose body does not contain env->pc. */
void verifier_widen_step(struct verifier_env *env);
/* W fully explored: sets its iteration bound w->n. false = no bound (roll back, walk). */
bool verifier_widen_done(struct verifier_env *env, struct vwiden *w);
/* A congruent tag (VLC_MOD) from tag lc can prove progress: its candidate's range in W lies
 * within 32 bits and spans less than 2^32 - 2^30. */
bool vwiden_lc_mod_useful(const struct vstate *st, uint16_t lc);
/* x (a number with a loop counter tag) was narrowed by a test: narrows the pointers that
 * step with that counter in st. true if any changed. */
bool verifier_widen_narrow(struct vstate *st, const struct vreg *x);

/* cost per run (verifier_cost.c) */
void vcost_exit(struct verifier_env *env);                         /* path ends at an exit */
void vcost_arrival(struct verifier_env *env, const struct vwiden *w); /* ... at w's head */
/* A path of rec may end pruned against old: old's ends are ends for it too. */
bool vcost_prunable(const struct vrecord *old, const struct vrecord *rec);
void vcost_pruned(struct verifier_env *env, const struct vrecord *old);
/* rec fully explored: its final bound, into its parent. 0, 1 = roll back its widening
 * (env->undo) and walk the loop, <0 = E-COST. */
int vcost_finish(struct verifier_env *env, struct vrecord *rec);
/* After the exploration: stats.max_insns, E-COST over the limit. */
int vcost_check_total(struct verifier_env *env);
/* every scalar of the current state mattered (compared in full against a state in progress) */
void vstate_mark_cur_precise(struct verifier_env *env);

/* helpers (verifier_helpers.c) */
int verifier_check_helper(struct verifier_env *env, const struct bpf_insn *insn);
bool verifier_helper_known(int32_t id);

/* current frame helpers */
static inline struct vframe *vcur_frame(struct verifier_env *env)
{
	return env->cur.frames[env->cur.nframes - 1];
}
static inline struct vreg *vcur_reg(struct verifier_env *env, unsigned regno)
{
	return &vcur_frame(env)->regs[regno];
}

#endif
