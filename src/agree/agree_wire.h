/* Agreement protocol messages (docs/agreement.md "Wire format").
 *
 * Every message is a 32-byte header followed by `length` payload bytes, all little-endian:
 *   u32 magic 'NBAG'   u16 version (1)   u16 type   u32 length   u32 sender rank
 *   u64 comm_id        u64 token
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
#define AGREE_WIRE_VERSION 1
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
	AGREE_MSG_TYPE_MAX
};

/* HELLO's header rank from a member that does not know its rank (ncclbpf's profiler plugin
 * not loaded there): the leader ends agreement at its first uncommitted activation. */
#define AGREE_RANK_NONE UINT32_MAX

enum agree_refuse_reason {
	AGREE_REFUSE_TOKEN = 1,   /* job token mismatch (another job or secret) */
	AGREE_REFUSE_STREAMS,     /* agreed maps differ from the leader's */
	AGREE_REFUSE_RANK,        /* rank out of range or already joined */
	AGREE_REFUSE_NOT_LEADER,  /* this process does not lead that communicator */
	AGREE_REFUSE_MALFORMED,
	AGREE_REFUSE_NORANK,      /* hub -> asker: a member of that communicator has no rank */
};

struct agree_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t rank;
	uint64_t comm_id;
	uint64_t token;
};

/* FALLBACK flag: the fallback is a communicator being destroyed (orderly end, not a failure). */
#define AGREE_FALLBACK_ORDERLY 1u

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
	struct agree_stream_sig streams[AGREE_MAX_STREAMS];
	uint32_t reason;                  /* REFUSE; FALLBACK, LOST: flags (AGREE_FALLBACK_ORDERLY) */
	uint64_t seq;                     /* WELCOME (fallback seq or UINT64_MAX), FALLBACK */
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
			uint64_t comm_id, uint64_t token);
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
#define AGREE_FNV_INIT 0xcbf29ce484222325ull

#endif
