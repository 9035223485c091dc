/* OTLP requests from ncclbpf's records (otlp.h): ExportTraceServiceRequest with one span
 * per GPU-timed collective, ExportMetricsServiceRequest with cumulative histograms and sums.
 * Field numbers are those of opentelemetry-proto (collector/trace/v1, collector/metrics/v1,
 * trace/v1, metrics/v1, common/v1, resource/v1); the JSON names their lowerCamelCase forms.
 * tests/obs decodes both encodings with the official definitions. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "runtime/decision_src.h"

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void put_be64(uint8_t *o, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		o[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* A bijection of (coll, seq) for a fixed communicator: two collectives of one communicator
 * never share a trace id (for seq < 2^56). */
void otlp_trace_id(uint64_t comm_id, uint32_t coll, uint64_t seq, uint8_t out[16])
{
	uint64_t a = mix64(comm_id);
	uint64_t b = mix64(a ^ ((uint64_t)(coll & 0xffu) << 56) ^ (seq & 0x00ffffffffffffffull));
	if (!a && !b)
		b = 1; /* all zeros is an invalid trace id */
	put_be64(out, a);
	put_be64(out + 8, b);
}

void otlp_span_id(uint64_t comm_id, uint32_t coll, uint64_t seq, uint32_t rank, uint8_t out[8])
{
	uint8_t t[16];
	otlp_trace_id(comm_id, coll, seq, t);
	uint64_t b = 0;
	for (int i = 8; i < 16; i++)
		b = b << 8 | t[i];
	uint64_t s = mix64(b ^ mix64((uint64_t)rank + 0x5bd1e995ull));
	put_be64(out, s ? s : 1);
}

static void resource(struct otlp_enc *e, uint32_t field, const struct otlp_resource *res)
{
	otlp_msg_begin(e, field, "resource");
	otlp_arr_begin(e, 1, "attributes");
	for (int i = 0; i < res->n; i++)
		otlp_attr_str(e, res->attrs[i].key, res->attrs[i].value);
	otlp_arr_end(e);
	otlp_msg_end(e);
}

static void scope(struct otlp_enc *e)
{
	otlp_msg_begin(e, 1, "scope");
	otlp_str(e, 1, "name", "ncclbpf");
	otlp_msg_end(e);
}

static void comm_attr(struct otlp_enc *e, uint64_t comm_id)
{
	char id[24];
	snprintf(id, sizeof(id), "0x%" PRIx64, comm_id);
	otlp_attr_str(e, "nccl.comm.hash", id);
}

static void span(struct otlp_enc *e, const struct otlp_span_rec *s, int64_t mono_to_unix,
		 otlp_comm_name_fn name_of)
{
	uint8_t tid[16], sid[8];
	otlp_trace_id(s->comm_id, s->coll, s->seq, tid);
	otlp_span_id(s->comm_id, s->coll, s->seq, s->rank, sid);
	char name[48], band[32], pol[160];
	snprintf(name, sizeof(name), "nccl:%s", metrics_coll_name(s->coll));
	otlp_elem_begin(e);
	otlp_hex_bytes(e, 1, "traceId", tid, 16);
	otlp_hex_bytes(e, 2, "spanId", sid, 8);
	otlp_str(e, 5, "name", name);
	otlp_u32(e, 6, "kind", 1); /* SPAN_KIND_INTERNAL */
	otlp_fixed64(e, 7, "startTimeUnixNano", (uint64_t)((int64_t)s->start_ns + mono_to_unix));
	otlp_fixed64(e, 8, "endTimeUnixNano", (uint64_t)((int64_t)s->end_ns + mono_to_unix));
	otlp_arr_begin(e, 9, "attributes");
	comm_attr(e, s->comm_id);
	const char *cn = name_of ? name_of(s->comm_id) : "";
	if (cn && *cn)
		otlp_attr_str(e, "nccl.comm.name", cn);
	otlp_attr_int(e, "nccl.rank", s->rank);
	otlp_attr_int(e, "nccl.nranks", s->n_ranks);
	otlp_attr_int(e, "nccl.nnodes", s->n_nodes);
	otlp_attr_str(e, "nccl.collective", metrics_coll_name(s->coll));
	otlp_attr_int(e, "nccl.seq", (int64_t)s->seq);
	otlp_attr_int(e, "nccl.bytes", (int64_t)s->n_bytes);
	metrics_band_label(band, sizeof(band), ncclbpf_size_bucket(s->n_bytes));
	otlp_attr_str(e, "nccl.size_band", band);
	otlp_attr_str(e, "nccl.algorithm", metrics_algo_name(s->algo));
	otlp_attr_str(e, "nccl.protocol", metrics_proto_name(s->proto));
	otlp_attr_int(e, "nccl.channels", s->n_channels);
	otlp_attr_str(e, "ncclbpf.decision.source", nb_dsrc_name(s->src));
	if (nb_policy_name(s->policy, pol, sizeof(pol))[0])
		otlp_attr_str(e, "ncclbpf.policy", pol);
	if (s->user_tag)
		otlp_attr_int(e, "nccl.user_tag", (int64_t)s->user_tag);
	otlp_attr_int(e, "nccl.gpu_time_ns", (int64_t)s->gpu_ns);
	otlp_attr_int(e, "nccl.host_time_ns", (int64_t)s->host_ns);
	otlp_arr_end(e);
	otlp_elem_end(e);
}

void otlp_model_traces(struct otlp_enc *e, const struct otlp_resource *res,
		       const struct otlp_span_rec *spans, size_t n, int64_t mono_to_unix,
		       otlp_comm_name_fn name_of)
{
	otlp_arr_begin(e, 1, "resourceSpans");
	otlp_elem_begin(e);
	resource(e, 1, res);
	otlp_arr_begin(e, 2, "scopeSpans");
	otlp_elem_begin(e);
	scope(e);
	otlp_arr_begin(e, 2, "spans");
	for (size_t i = 0; i < n; i++)
		span(e, &spans[i], mono_to_unix, name_of);
	otlp_arr_end(e);
	otlp_elem_end(e);
	otlp_arr_end(e);
	otlp_elem_end(e);
	otlp_arr_end(e);
}

/* ---- metrics ---- */
enum series_metric { M_DURATION, M_BUSBW, M_COLLECTIVES };

struct pts {
	struct otlp_enc *e;
	enum series_metric which;
	uint64_t now;
	size_t n;
};

static void series_attrs(struct otlp_enc *e, const struct metrics_point *p, uint32_t field)
{
	char band[32], pol[160];
	otlp_arr_begin(e, field, "attributes");
	comm_attr(e, p->comm_id);
	if (p->comm_name && *p->comm_name)
		otlp_attr_str(e, "nccl.comm.name", p->comm_name);
	otlp_attr_int(e, "nccl.rank", p->rank);
	otlp_attr_str(e, "nccl.collective", metrics_coll_name(p->coll));
	metrics_band_label(band, sizeof(band), p->band);
	otlp_attr_str(e, "nccl.size_band", band);
	otlp_attr_str(e, "nccl.algorithm", metrics_algo_name(p->algo));
	otlp_attr_str(e, "nccl.protocol", metrics_proto_name(p->proto));
	otlp_attr_str(e, "ncclbpf.decision.source", nb_dsrc_name(p->src));
	if (nb_policy_name(p->policy, pol, sizeof(pol))[0])
		otlp_attr_str(e, "ncclbpf.policy", pol);
	otlp_arr_end(e);
}

static void count_point(const struct metrics_point *p, void *arg)
{
	(void)p;
	((struct pts *)arg)->n++;
}

static void series_point(const struct metrics_point *p, void *arg)
{
	struct pts *a = arg;
	struct otlp_enc *e = a->e;
	otlp_elem_begin(e);
	if (a->which == M_COLLECTIVES) { /* NumberDataPoint */
		series_attrs(e, p, 7);
		otlp_fixed64(e, 2, "startTimeUnixNano", p->start_unix_ns);
		otlp_fixed64(e, 3, "timeUnixNano", a->now);
		otlp_sfixed64(e, 6, "asInt", (int64_t)p->count);
		otlp_elem_end(e);
		return;
	}
	/* HistogramDataPoint: bucket_counts has one more entry than explicit_bounds (the
	 * overflow bucket), and sums to count */
	uint64_t b[METRICS_BW_BUCKETS > METRICS_BUCKETS ? METRICS_BW_BUCKETS + 1
							 : METRICS_BUCKETS + 1];
	double le[METRICS_BW_BUCKETS > METRICS_BUCKETS ? METRICS_BW_BUCKETS : METRICS_BUCKETS];
	size_t nb;
	uint64_t count, cum = 0;
	double sum;
	if (a->which == M_DURATION) {
		nb = METRICS_BUCKETS;
		for (size_t i = 0; i < nb; i++) {
			b[i] = p->bucket[i];
			le[i] = metrics_bucket_le((int)i);
			cum += b[i];
		}
		count = p->timed;
		sum = (double)p->sum_ns * 1e-9;
	} else {
		nb = METRICS_BW_BUCKETS;
		for (size_t i = 0; i < nb; i++) {
			b[i] = p->bw_bucket[i];
			le[i] = metrics_bw_bucket_le((int)i);
			cum += b[i];
		}
		count = p->bw_count;
		sum = p->bw_sum;
	}
	if (count < cum)
		count = cum;
	b[nb] = count - cum;
	series_attrs(e, p, 9);
	otlp_fixed64(e, 2, "startTimeUnixNano", p->start_unix_ns);
	otlp_fixed64(e, 3, "timeUnixNano", a->now);
	otlp_fixed64(e, 4, "count", count);
	otlp_double(e, 5, "sum", sum);
	otlp_packed_fixed64(e, 6, "bucketCounts", b, nb + 1);
	otlp_packed_double(e, 7, "explicitBounds", le, nb);
	otlp_elem_end(e);
}

static void metric_begin(struct otlp_enc *e, const char *name, const char *desc, const char *unit)
{
	otlp_elem_begin(e);
	otlp_str(e, 1, "name", name);
	otlp_str(e, 2, "description", desc);
	otlp_str(e, 3, "unit", unit);
}

static void series_metric(struct otlp_enc *e, enum series_metric which, uint64_t now,
			  const char *name, const char *desc, const char *unit)
{
	metric_begin(e, name, desc, unit);
	struct pts a = {e, which, now, 0};
	bool hist = which != M_COLLECTIVES;
	otlp_msg_begin(e, hist ? 9 : 7, hist ? "histogram" : "sum");
	otlp_arr_begin(e, 1, "dataPoints");
	metrics_foreach_point(series_point, &a);
	otlp_arr_end(e);
	otlp_u32(e, 2, "aggregationTemporality", 2); /* CUMULATIVE */
	if (!hist)
		otlp_bool(e, 3, "isMonotonic", true);
	otlp_msg_end(e);
	otlp_elem_end(e);
}

struct dec {
	struct otlp_enc *e;
	uint64_t start, now;
};

static void decision_point(uint64_t comm_id, unsigned src, uint64_t n, void *arg)
{
	struct dec *d = arg;
	if (!n)
		return;
	otlp_elem_begin(d->e);
	otlp_arr_begin(d->e, 7, "attributes");
	comm_attr(d->e, comm_id);
	otlp_attr_str(d->e, "ncclbpf.decision.source", nb_dsrc_name(src));
	otlp_arr_end(d->e);
	otlp_fixed64(d->e, 2, "startTimeUnixNano", d->start);
	otlp_fixed64(d->e, 3, "timeUnixNano", d->now);
	otlp_sfixed64(d->e, 6, "asInt", (int64_t)n);
	otlp_elem_end(d->e);
}

static void own_point(struct otlp_enc *e, const char *result, uint64_t v, uint64_t start,
		      uint64_t now)
{
	otlp_elem_begin(e);
	otlp_arr_begin(e, 7, "attributes");
	otlp_attr_str(e, "result", result);
	otlp_arr_end(e);
	otlp_fixed64(e, 2, "startTimeUnixNano", start);
	otlp_fixed64(e, 3, "timeUnixNano", now);
	otlp_sfixed64(e, 6, "asInt", (int64_t)v);
	otlp_elem_end(e);
}

static void sum_begin(struct otlp_enc *e)
{
	otlp_msg_begin(e, 7, "sum");
	otlp_arr_begin(e, 1, "dataPoints");
}

static void sum_end(struct otlp_enc *e)
{
	otlp_arr_end(e);
	otlp_u32(e, 2, "aggregationTemporality", 2);
	otlp_bool(e, 3, "isMonotonic", true);
	otlp_msg_end(e);
	otlp_elem_end(e);
}

void otlp_model_metrics(struct otlp_enc *e, const struct otlp_resource *res,
			uint64_t process_start_unix, uint64_t now_unix_ns,
			const struct otlp_counters *own)
{	otlp_arr_begin(e, 1, "resourceMetrics");
	otlp_elem_begin(e);
	resource(e, 1, res);
	otlp_arr_begin(e, 2, "scopeMetrics");
	otlp_elem_begin(e);
	scope(e);
	otlp_arr_begin(e, 2, "metrics");
	struct pts cnt = {NULL, M_DURATION, 0, 0};
	metrics_foreach_point(count_point, &cnt);
	if (cnt.n) {
		series_metric(e, M_DURATION, now_unix_ns, "ncclbpf.collective.duration",
			      "Collective latency: GPU time of KernelCh-instrumented (sampled) "
			      "collectives, or enqueue-to-completion where no KernelCh is requested.",
			      "s");
		series_metric(e, M_BUSBW, now_unix_ns, "ncclbpf.collective.bus_bandwidth",
			      "Bus bandwidth of each timed collective (nccl-tests busbw convention).",
			      "By/s");
		series_metric(e, M_COLLECTIVES, now_unix_ns, "ncclbpf.collectives",
			      "Collectives completed.", "{collective}");
	}
	metric_begin(e, "ncclbpf.tuner.decisions", "Tuner decisions by who decided.",
		     "{decision}");
	sum_begin(e);
	struct dec d = {e, process_start_unix, now_unix_ns};
	metrics_foreach_decisions(decision_point, &d);
	sum_end(e);
	metric_begin(e, "ncclbpf.otlp.spans", "Spans of the OTLP exporter, by what became of them.",
		     "{span}");
	sum_begin(e);
	own_point(e, "queued", own->spans_queued, process_start_unix, now_unix_ns);
	own_point(e, "exported", own->spans_exported, process_start_unix, now_unix_ns);
	own_point(e, "dropped_queue_full", own->spans_dropped_full, process_start_unix,
		  now_unix_ns);
	own_point(e, "dropped_export_failed", own->spans_dropped_failed, process_start_unix,
		  now_unix_ns);
	own_point(e, "rejected", own->spans_rejected, process_start_unix, now_unix_ns);
	sum_end(e);
	otlp_arr_end(e);
	otlp_elem_end(e);
	otlp_arr_end(e);
	otlp_elem_end(e);
	otlp_arr_end(e);
}
