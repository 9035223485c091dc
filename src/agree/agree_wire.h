/* Agreement protocol messages (docs/agreement.md "Wire format").
 *
 * Every message is a 32-byte header followed by `length` payload bytes, all little-endian:
 *   u32 magic 'NBAG'   u16 version (2)   u16 type   u32 length   u32 sender rank
 *   u64 comm_id        u64 reserved (0)
 * Version 2 authenticates every connection first (CHALLENGE / AUTH / AUTH_OK, agree_auth.h)
 * and carries the configuration fingerprint in HELLO; a version-1 peer is refused.
 * The parser never trusts a length, count or index: a frame longer than AGREE_MAX_PAYLOAD,
 * a wrong magic or version, a payload shorter than its type's fields or than what its
 * counts announce, an index beyond max_entries - each is a distinct error and the
 * connection that sent it is closed. Pure functions, no I/O: the fuzz target drives them.
 */
#ifndef NCCLBPF_AGREE_WIRE_H
#define NCCLBPF_AGREE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGREE_MAGIC 0x4741424eu /* "NBAG" little-endian */
#define AGREE_WIRE_VERSION 2
#define AGREE_HDR_SIZE 32
#define AGREE_MAX_PAYLOAD (4u << 20)
#define AGREE_MAX_STREAMS 32

enum agree_msg_type {
	AGREE_MSG_HELLO = 1,    /* follower -> leader: join (rank, streams) */
	AGREE_MSG_WELCOME,      /* leader -> follower: accepted (fallback seq if any) */
	AGREE_MSG_REFUSE,       /* either: refused (reason code); connection closed */
	AGREE_MSG_CONTRIB,      /* follower -> leader: epoch contribution (delta entries) */
	AGREE_MSG_DATA,         /* leader -> follower: version v (delta vs v-1) */
	AGREE_MSG_ACK,          /* follower -> leader: has version v */
	AGREE_MSG_COMMIT,       /* leader -> follower: version v is active at S_v */
	AGREE_MSG_FALLBACK,     /* either: fall back from comm_seq F */
	AGREE_MSG_BYE,          /* follower -> leader: communicator destroyed */
	AGREE_MSG_REGISTER,     /* leader -> hub: comm led by me, my listener port */
	AGREE_MSG_LOOKUP,       /* follower -> hub: who leads comm? */
	AGREE_MSG_LEADER,       /* hub -> follower: address, or port 0 = not yet */
	AGREE_MSG_PARTIAL,      /* relay -> leader: its subtree's combined contribution */
	AGREE_MSG_LOST,         /* relay -> leader: a member below it left the group */
	AGREE_MSG_CHALLENGE,    /* acceptor -> connector: nonce (the first frame of a connection) */
	AGREE_MSG_AUTH,         /* connector -> acceptor: its nonce, mac of both */
	AGREE_MSG_AUTH_OK,      /* acceptor -> connector: mac of both (the acceptor's proof) */
	AGREE_MSG_READY,        /* leader -> all: every rank joined alike (the join barrier);
				 * relay -> leader: its subtree did */
	AGREE_MSG_RECOVER,      /* survivor -> successor, after the leader died: what it saw
				 * (the successor answers WELCOME with the survivors' F) */
	AGREE_MSG_TYPE_MAX
};

/* HELLO's header rank from a member that does not know its rank (ncclbpf's profiler plugin
 * not loaded there): the leader ends agreement at its first uncommitted activation. */
#define AGREE_RANK_NONE UINT32_MAX

enum agree_refuse_reason {
	AGREE_REFUSE_DUPLICATE = 1, /* hub: another process registered that (comm, rank) */
	AGREE_REFUSE_STREAMS,     /* agreed maps differ from the leader's */
	AGREE_REFUSE_RANK,        /* rank out of range or already joined */
	AGREE_REFUSE_NOT_LEADER,  /* this process does not lead that communicator */
	AGREE_REFUSE_MALFORMED,
	AGREE_REFUSE_NORANK,      /* hub -> asker: a member of that communicator has no rank */
	AGREE_REFUSE_AUTH,        /* the connector did not prove the job's secret */
	AGREE_REFUSE_CONFIG,      /* HELLO: the configuration fingerprint differs (detail: the
				   * field, enum agree_fp_field; value: the refuser's) */
	AGREE_REFUSE_BUSY,        /* too many connections waiting for authentication */
};

/* The configuration a rank joins with (HELLO): what must be the same on every rank for
 * their decisions to be (docs/agreement.md "Joining"). */
struct agree_fingerprint {
	uint64_t lib;       /* library version and git commit */
	uint64_t tuner;     /* content of the tuner programs (runtime_chain_content) */
	uint64_t chunk;     /* content of the tuner/chunk programs */
	uint32_t wait_ms;   /* NCCLBPF_AGREE_WAIT_MS */
	uint32_t fanout;    /* the group's fan-out for its size (NCCLBPF_AGREE_FANOUT) */
	uint32_t flags;     /* AGREE_FP_* */
};
#define AGREE_FP_SYM_COMPETE 1u /* NCCLBPF_TUNER_SYM=compete (seq counting differs) */
/* tuner / chunk: a reload of that hook is activating across ranks here (not compared) */
#define AGREE_FP_ACTIVATING UINT64_MAX

/* Which part of the configuration differs (REFUSE detail, FALLBACK detail). */
enum agree_fp_field {
	AGREE_FP_NONE = 0,
	AGREE_FP_NRANKS,    /* communicator size */
	AGREE_FP_STREAMS,   /* agreed maps: names, shapes, reduce operation, epoch length */
	AGREE_FP_LIB,
	AGREE_FP_TUNER,
	AGREE_FP_CHUNK,
	AGREE_FP_WAIT,
	AGREE_FP_FANOUT,
	AGREE_FP_FLAGS,
	AGREE_FP_FIELD_MAX
};
const char *agree_fp_field_name(uint32_t field);

/* Why a group fell back (FALLBACK, so that every rank can say it). */
enum agree_why {
	AGREE_WHY_NONE = 0,
	AGREE_WHY_LOST,      /* rank `rank` left the group (link lost, process gone) */
	AGREE_WHY_DESTROYED, /* rank `rank` destroyed the communicator (orderly) */
	AGREE_WHY_TIMEOUT,   /* rank `rank` waited for version `detail` without a verdict */
	AGREE_WHY_CONFIG,    /* rank `rank` differs from the leader in field `detail` */
	AGREE_WHY_NORANK,    /* a member without a rank (no profiler plugin there) */
	AGREE_WHY_MISSING,   /* rank `rank` (first of `detail`) did not join in time */
	AGREE_WHY_RANK,      /* rank `rank` joined twice or out of range */
	AGREE_WHY_OOM,
	AGREE_WHY_HUB,       /* the rendezvous hub refused this communicator */
	AGREE_WHY_MAX
};
/* HELLO flags */
#define AGREE_HELLO_REJOIN 1u /* a member that lost its parent asks the leader for F */
/* RECOVER flags */
#define AGREE_RECOVER_READY 1u /* the sender saw the join barrier pass */
/* WELCOME flags */
#define AGREE_WELCOME_READY 1u /* the group passed its join barrier */

struct agree_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t rank;
	uint64_t comm_id;
	uint64_t reserved; /* 0 */
};

/* FALLBACK flags. ORDERLY: the fallback is a communicator being destroyed (orderly end,
 * not a failure). REQUEST: the sender has not fallen back; it waited for a version (or the
 * join barrier) at collective F without a verdict and asks the leader to decide: the
 * leader falls back at F unless what F needs is committed already (its COMMIT is then
 * ahead of any answer on the link). */
#define AGREE_FALLBACK_ORDERLY 1u
#define AGREE_FALLBACK_REQUEST 2u

/* One agreed map as announced in HELLO: the leader refuses a follower whose maps differ. */
struct agree_stream_sig {
	uint64_t name_hash;
	uint32_t value_size, max_entries, map_flags;
};

struct agree_msg {
	struct agree_hdr h;
	/* decoded per type */
	uint32_t n_ranks;                 /* HELLO */
	uint32_t n_streams;               /* HELLO */
	uint32_t flags;                   /* HELLO (AGREE_HELLO_*), WELCOME (AGREE_WELCOME_*),
					   * RECOVER (AGREE_RECOVER_*) */
	struct agree_stream_sig streams[AGREE_MAX_STREAMS];
	struct agree_fingerprint fp;      /* HELLO */
	uint32_t reason;                  /* REFUSE; FALLBACK, LOST: flags (AGREE_FALLBACK_*) */
	uint32_t why, why_rank, why_detail; /* FALLBACK, WELCOME (optional): enum agree_why, args */
	uint32_t detail;                  /* REFUSE (optional): e.g. the differing field */
	uint64_t value;                   /* REFUSE (optional): the refuser's value of it */
	uint8_t nonce[16];                /* CHALLENGE, AUTH */
	uint64_t mac;                     /* AUTH, AUTH_OK */
	uint64_t seq;                     /* WELCOME (fallback seq or UINT64_MAX), FALLBACK,
					   * RECOVER (the sender's F or UINT64_MAX) */
	uint64_t committed[AGREE_MAX_STREAMS]; /* RECOVER: per stream (n_streams), the newest
						* version the sender saw committed */
	uint32_t stream;                  /* CONTRIB DATA ACK COMMIT PARTIAL */
	uint64_t number;                  /* CONTRIB: epoch; DATA/ACK/COMMIT: version */
	uint32_t value_size;              /* CONTRIB DATA: bytes per entry; PARTIAL: value + 8
					   * (a u64 count of contributing ranks) */
	uint32_t n_entries;               /* CONTRIB DATA PARTIAL */
	uint32_t done;                    /* PARTIAL: subtree members that closed `number` */
	uint32_t lost;                    /* LOST: the rank that left */
	const uint8_t *entries;           /* n_entries x (u32 index, value_size bytes) */
	uint32_t port;                    /* REGISTER LEADER */
	uint32_t addr;                    /* LEADER: IPv4, network order */
};

/* Parses one frame from buf[0..len). Returns the frame size consumed (> 0), 0 when more
 * bytes are needed, or a negative errno (-EPROTO bad magic/version/type, -EMSGSIZE length
 * over the limit, -EBADMSG payload inconsistent with its type) with err filled. */
long agree_wire_parse(const uint8_t *buf, size_t len, struct agree_msg *out, char *err,
		      size_t errlen);

/* Encoding into a growable buffer. */
struct agree_buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};
void agree_buf_free(struct agree_buf *b);
void agree_buf_put(struct agree_buf *b, const void *src, size_t n);
void agree_buf_u32(struct agree_buf *b, uint32_t v);
void agree_buf_u64(struct agree_buf *b, uint64_t v);
/* Starts a frame (header with length 0); agree_wire_end patches the length. Returns the
 * frame's offset. */
size_t agree_wire_begin(struct agree_buf *b, enum agree_msg_type type, uint32_t rank,
			uint64_t comm_id);
void agree_wire_end(struct agree_buf *b, size_t frame_off);

/* Delta of two equal-size views: appends (u32 index, value) for every entry of `cur` that
 * differs from `prev` (prev NULL = all non-zero entries). Returns the number appended. */
uint32_t agree_wire_put_delta(struct agree_buf *b, const uint8_t *cur, const uint8_t *prev,
			      uint32_t max_entries, uint32_t stride, uint32_t value_size);
/* Applies parsed entries to a view (indexes were bounds-checked against max_entries by
 * the caller through agree_wire_check_entries). */
void agree_wire_apply(uint8_t *view, uint32_t stride, const struct agree_msg *m);
/* Every index < max_entries and value_size equal to the stream's: 0 or -EBADMSG. */
int agree_wire_check_entries(const struct agree_msg *m, uint32_t max_entries,
			     uint32_t value_size);

uint64_t agree_fnv1a(const void *p, size_t n, uint64_t h);
/* HELLO's payload (the parser's inverse; tests, the benchmark's simulated members). */
void agree_wire_put_hello(struct agree_buf *b, uint32_t n_ranks, uint32_t flags,
			  uint32_t n_streams, const struct agree_stream_sig *streams,
			  const struct agree_fingerprint *fp);
/* FALLBACK's payload. */
void agree_wire_put_fallback(struct agree_buf *b, uint64_t seq, uint32_t flags, uint32_t why,
			     uint32_t why_rank, uint32_t why_detail);
/* RECOVER's payload: flags, the sender's F, per stream its newest committed version. */
void agree_wire_put_recover(struct agree_buf *b, uint32_t flags, uint64_t seq,
			    uint32_t n_streams, const uint64_t *committed);
#define AGREE_FNV_INIT 0xcbf29ce484222325ull

#endif
