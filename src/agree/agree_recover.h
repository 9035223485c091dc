/* agree: the survivors' recovery round after the leader's death (agree_recover.c), service
 * thread only. */
#ifndef NCCLBPF_AGREE_RECOVER_H
#define NCCLBPF_AGREE_RECOVER_H

#include "agree/agree_internal.h"

/* The leader is gone (nothing listens at its address, or it closed on this orphan): the
 * successor starts collecting, another participant reports to it. false: this rank takes
 * no part (not a direct child of the leader, the successor unknown or unreachable, an
 * orderly end, two ranks) - it falls back alone as before. */
bool agree_recover_start(struct agree_comm *ac, uint64_t now);
/* A round is under way here: the rank's own timer must not decide meanwhile. */
bool agree_recover_waiting(const struct agree_comm *ac);
void agree_recover_step(struct agree_comm *ac, uint64_t now);
/* This rank registers its listener at the hub (it is the successor). */
bool agree_recover_registers(const struct agree_comm *ac);
/* The hub's answer to a LOOKUP of `rank`. */
void agree_recover_on_leader(struct agree_comm *ac, uint32_t rank, uint32_t addr, uint32_t port);
/* The successor: a message on a participant's connection; false closes it. */
bool agree_recover_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m);
bool agree_recover_owns(const struct agree_comm *ac, int fd);
void agree_recover_on_close(struct agree_comm *ac, int fd);
/* A participant: the successor's answer (WELCOME). */
void agree_recover_on_answer(struct agree_comm *ac, const struct agree_msg *m);
void agree_recover_free(struct agree_comm *ac);

#endif
