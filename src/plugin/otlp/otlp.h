/* OTLP/HTTP export (issue 27): one span per GPU-timed collective, and the metrics as
 * cumulative histograms, to an OpenTelemetry collector.
 *
 *   NCCLBPF_OTLP  off (default) | traces | metrics | on (both); a comma list works too
 * and the standard variables: OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT, _HEADERS,
 * _TIMEOUT, _PROTOCOL (http/json default, http/protobuf), OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE,
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_METRIC_EXPORT_INTERVAL, OTEL_SDK_DISABLED
 * (docs/observability.md "OTLP export").
 *
 * NCCL's threads only put a fixed-size record into a bounded lock-free ring (no lock, no
 * allocation, no syscall; a full ring drops the record and counts it). One exporter thread
 * of ours batches, encodes (otlp_model.c), sends (otlp_http.c), retries with backoff and
 * counts what it could not deliver; an unreachable, slow or hostile endpoint costs that
 * thread its time and nothing else. */
#ifndef NCCLBPF_PLUGIN_OTLP_H
#define NCCLBPF_PLUGIN_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf/policy.h"
#include "plugin/otlp/otlp_enc.h"

struct runtime_status_emit;

/* Configuration (read once per process). */
bool otlp_traces_enabled(void);
bool otlp_metrics_enabled(void);

/* Profiler init / finalize of a communicator: the first starts the exporter thread, the
 * last flushes (bounded: min(timeout, 2 s)) and stops it. comm_name is kept for the
 * spans' attributes. */
void otlp_comm_open(uint64_t comm_id, const char *comm_name);
void otlp_comm_close(uint64_t comm_id);

/* A completed GPU-timed collective (any thread; lock-free, allocation-free, syscall-free).
 * src/policy: who decided it (runtime/decision_src.h). */
void otlp_span_submit(const struct ncclbpf_profiler_ctx *pc, unsigned src, uint32_t policy);
/* The metrics as they are now, for a communicator about to be removed (metrics.c, at its
 * finalize, on the finalizing thread): encoded there and handed to the exporter. */
void otlp_metrics_final(void);

struct otlp_counters {
	uint64_t spans_queued;         /* accepted into the ring */
	uint64_t spans_exported;       /* acknowledged by the collector */
	uint64_t spans_dropped_full;   /* the ring was full */
	uint64_t spans_dropped_failed; /* their export failed for good */
	uint64_t spans_rejected;       /* the collector's partial success */
	uint64_t metric_exports_ok, metric_exports_failed;
	uint64_t points_rejected;
	uint64_t requests, retries;
	uint64_t span_batches_ok, span_batches_failed;
};
void otlp_get_counters(struct otlp_counters *out);

/* Tests: forget the configuration and counters (the exporter must be stopped). */
void otlp_reset_for_tests(void);

/* ---- the model: requests from records (otlp_model.c) ---- */
struct otlp_span_rec {
	uint64_t comm_id, seq, n_bytes, user_tag;
	uint64_t start_ns, end_ns; /* GPU start / end, CLOCK_MONOTONIC */
	uint64_t host_ns, gpu_ns;
	uint32_t coll, n_channels, rank, n_ranks, n_nodes, policy;
	int32_t algo, proto;
	uint8_t src, flags;
};

struct otlp_kv {
	char key[64];
	char value[256];
};
struct otlp_resource {
	struct otlp_kv attrs[40];
	int n;
};

/* Looks up a communicator's name for the spans (the exporter's table), "" when unknown. */
typedef const char *(*otlp_comm_name_fn)(uint64_t comm_id);
/* ExportTraceServiceRequest for spans[0..n); mono_to_unix: CLOCK_REALTIME - CLOCK_MONOTONIC
 * in ns, now. */
void otlp_model_traces(struct otlp_enc *e, const struct otlp_resource *res,
		       const struct otlp_span_rec *spans, size_t n, int64_t mono_to_unix,
		       otlp_comm_name_fn name_of);
/* ExportMetricsServiceRequest for the current metrics (metrics_foreach_point etc.) plus the
 * exporter's own counters; process_start_unix: the start of the process-wide sums;
 * now_unix_ns: the data points' time. */
void otlp_model_metrics(struct otlp_enc *e, const struct otlp_resource *res,
			uint64_t process_start_unix, uint64_t now_unix_ns,
			const struct otlp_counters *own);
/* The trace id (16 bytes) of collective (comm_id, coll, seq), the same on every rank, and a
 * span id (8 bytes) for one rank's part of it. */
void otlp_trace_id(uint64_t comm_id, uint32_t coll, uint64_t seq, uint8_t out[16]);
void otlp_span_id(uint64_t comm_id, uint32_t coll, uint64_t seq, uint32_t rank, uint8_t out[8]);

/* ---- configuration parsing (otlp_config.c; pure, fuzzed) ---- */
/* OTEL_EXPORTER_OTLP_HEADERS: "k=v,k2=v2", values percent-decoded. Writes "K: V\r\n" lines
 * into out. Returns the number of headers, or -EINVAL with a message (a name that is not an
 * HTTP token, a value with control characters after decoding, bad percent-encoding, more
 * than 32 headers or 4 KiB). */
int otlp_parse_headers(const char *s, char *out, size_t cap, char *err, size_t errlen);
/* OTEL_RESOURCE_ATTRIBUTES into r (appended). 0, or -EINVAL with a message (then nothing is
 * added: the variable is discarded whole, as the specification says). */
int otlp_parse_resource(const char *s, struct otlp_resource *r, char *err, size_t errlen);

#endif
