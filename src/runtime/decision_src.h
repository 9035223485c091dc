/* Decision provenance (issue 27): who made a tuner decision, carried into the decision log,
 * the timeline, metrics labels, OTLP spans and `ncclbpf ctl status`.
 *
 * The tuner decides the source on its decision path (tuner_core.c, lock-free and
 * allocation-free); a policy source also names the program as a small integer id, interned
 * here once per (chain version, program) so that the service threads can print
 * "file.bpf.o:prog@VERSION" long after a reload freed the chain. Every rank of a
 * communicator decides the same source for one collective (its inputs are rank-invariant:
 * the chain version the activation rule picked, the agreement verdict, the environment). */
#ifndef NCCLBPF_RUNTIME_DECISION_SRC_H
#define NCCLBPF_RUNTIME_DECISION_SRC_H

#include <stddef.h>
#include <stdint.h>

enum nb_dsrc {
	NB_DSRC_UNKNOWN = 0, /* no record of the decision (no tuner on this communicator, NCCL
			      * 2.27 without a commHash, a record overwritten before use) */
	NB_DSRC_NCCL,        /* NCCL's own choice: no tuner program attached, or one that kept
			      * it with NCCLBPF_TUNER_SYM=compete */
	NB_DSRC_POLICY,      /* a policy program changed algorithm, protocol or channels */
	NB_DSRC_PINNED,      /* programs attached kept NCCL's choice; ncclbpf made it explicit
			      * (NCCLBPF_TUNER_SYM=pin, the default) */
	NB_DSRC_ENV,         /* NCCL_ALGO / NCCL_PROTO restricted the candidates and nothing
			      * overrode NCCL's choice among them */
	NB_DSRC_CALL,        /* a per-call restriction (ncclCollConfig_t, NCCL 2.31+) */
	NB_DSRC_FALLBACK,    /* the agreement layer fell back: NCCL's defaults on every rank */
	NB_DSRC_INNER,       /* the native inner tuner (NCCLBPF_TUNER_INNER) changed the choice */
	NB_DSRC_COUNT
};

/* "unknown", "nccl", "policy", "pinned", "env", "call", "fallback", "inner" ("unknown" for
 * anything out of range). */
const char *nb_dsrc_name(unsigned src);
/* The source for a name, or -1. */
int nb_dsrc_from_name(const char *s, size_t len);

/* Policy ids: 1..NB_POLICY_IDS-1, 0 = none. */
#define NB_POLICY_IDS 1024u
/* The id of program `index` of the chain published as `version` whose label is `label`
 * ("file.bpf.o:prog"). Lock-free, allocation-free and syscall-free (callable on the
 * decision path; callers cache the result per chain version). 0 when the table is full
 * (counted: nb_policy_ids_full). */
uint32_t nb_policy_id(uint64_t version, uint32_t index, const char *label);
/* "label@version" of an id into buf (empty for 0 or an unknown id). Returns buf. */
const char *nb_policy_name(uint32_t id, char *buf, size_t len);
/* Interning attempts that found the table full. */
uint64_t nb_policy_ids_full(void);

#endif
