// Decodes the OTLP payloads that test_otlp captured with the official opentelemetry-proto
// definitions (the code protobufjs generated from them, as @opentelemetry/otlp-transformer
// ships it), not with ncclbpf's own parser:
//  - protobuf payloads: decoded as ExportTraceServiceRequest / ExportMetricsServiceRequest;
//  - JSON payloads: converted to messages (fromObject, ids from hex) and back; every field
//    must survive the round trip, so a misnamed or misplaced field fails;
// then, on the decoded messages: every span has a 16-byte trace id and an 8-byte span id,
// the spans of one collective (one trace id) come from two different ranks, the attributes
// say who decided; every histogram point has one bucket more than bounds, summing to count.
// usage: node otlp_decode.js NODE_MODULES_DIR PAYLOAD_DIR   (exit 77: definitions missing)
'use strict';
const fs = require('fs');
const path = require('path');
const [nm, dir] = process.argv.slice(2);
let root;
try {
  root = require(path.join(nm, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
} catch (e) {
  console.log(`SKIP: the official OTLP definitions are not installed under ${nm} (${e.code})`);
  process.exit(77);
}
const P = root.opentelemetry.proto;
const T = {
  traces: P.collector.trace.v1.ExportTraceServiceRequest,
  metrics: P.collector.metrics.v1.ExportMetricsServiceRequest,
};
let failures = 0, checks = 0;
function check(cond, what) {
  checks++;
  if (!cond) { failures++; console.error(`FAIL: ${what}`); }
}
const idKeys = new Set(['traceId', 'spanId', 'parentSpanId']);
const hex = (b) => Buffer.from(b).toString('hex');
// JSON -> proto3 JSON of protobufjs: ids are hex in OTLP/JSON, bytes are base64 in protobufjs
function idsToBytes(v) {
  if (Array.isArray(v)) return v.map(idsToBytes);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v))
      o[k] = idKeys.has(k) && typeof x === 'string' ? Buffer.from(x, 'hex') : idsToBytes(x);
    return o;
  }
  return v;
}
function idsToHex(v) {
  if (Array.isArray(v)) return v.map(idsToHex);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[k] = idKeys.has(k) ? hex(x) : idsToHex(x);
    return o;
  }
  return v;
}
function same(a, b, where) {
  if (typeof a === 'number' && typeof b === 'string') return String(a) === b || Number(b) === a;
  if (typeof a === 'string' && typeof b === 'number') return same(b, a, where);
  if (typeof a !== typeof b) { console.error(`${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`); return false; }
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => same(x, b[i], `${where}[${i}]`));
  if (a && typeof a === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (ka.join() !== kb.join()) { console.error(`${where}: keys ${ka} vs ${kb}`); return false; }
    return ka.every((k) => same(a[k], b[k], `${where}.${k}`));
  }
  if (a !== b) console.error(`${where}: ${a} vs ${b}`);
  return a === b;
}
const attrs = (list) => Object.fromEntries((list || []).map((kv) =>
  [kv.key, kv.value.stringValue !== undefined ? kv.value.stringValue : String(kv.value.intValue)]));

const spans = { json: [], pb: [] };
let histPoints = 0, files = 0;
for (const f of fs.readdirSync(dir).sort()) {
  const m = f.match(/^(\w+)-(traces|metrics)-\d+\.(json|pb)$/);
  if (!m) continue;
  files++;
  const type = T[m[2]], fmt = m[3];
  const raw = fs.readFileSync(path.join(dir, f));
  let msg;
  if (fmt === 'pb') {
    msg = type.decode(raw);
  } else {
    const doc = JSON.parse(raw.toString('utf8'));
    msg = type.fromObject(idsToBytes(doc));
    const back = idsToHex(type.toObject(msg, { longs: String, enums: Number, bytes: Array }));
    check(same(doc, back, f), `${f}: JSON survives a round trip through the official definitions`);
  }
  check(type.verify(msg) === null, `${f}: verify: ${type.verify(msg)}`);
  const obj = type.toObject(msg, { longs: String, enums: Number, bytes: Array });
  if (m[2] === 'traces') {
    for (const rs of obj.resourceSpans || []) {
      const ra = attrs(rs.resource.attributes);
      check(ra['service.name'] === 'otlp-test', `${f}: service.name`);
      for (const ss of rs.scopeSpans) for (const s of ss.spans) {
        check(s.traceId.length === 16 && s.spanId.length === 8, `${f}: id sizes`);
        check(/^nccl:/.test(s.name) && s.kind === 1, `${f}: span name and kind`);
        check(BigInt(s.endTimeUnixNano) > BigInt(s.startTimeUnixNano), `${f}: span times`);
        const a = attrs(s.attributes);
        for (const k of ['nccl.comm.hash', 'nccl.rank', 'nccl.collective', 'nccl.algorithm',
          'nccl.protocol', 'nccl.channels', 'ncclbpf.decision.source'])
          check(k in a, `${f}: span attribute ${k}`);
        spans[fmt].push({ trace: hex(s.traceId), rank: a['nccl.rank'] });
      }
    }
  } else {
    for (const rm of obj.resourceMetrics || []) for (const sm of rm.scopeMetrics) for (const mt of sm.metrics) {
      if (!mt.histogram) continue;
      check(mt.histogram.aggregationTemporality === 2, `${f}: ${mt.name} cumulative`);
      for (const p of mt.histogram.dataPoints) {
        histPoints++;
        check(p.bucketCounts.length === p.explicitBounds.length + 1, `${f}: ${mt.name} bucket count`);
        const sum = p.bucketCounts.reduce((x, y) => x + BigInt(y), 0n);
        check(sum === BigInt(p.count), `${f}: ${mt.name} buckets sum to count`);
      }
    }
  }
}
check(files > 0, 'payload files found');
for (const fmt of ['json', 'pb']) {
  check(spans[fmt].length > 0, `${fmt}: spans decoded`);
  const byTrace = new Map();
  for (const s of spans[fmt]) byTrace.set(s.trace, [...(byTrace.get(s.trace) || []), s.rank]);
  let joined = 0;
  for (const ranks of byTrace.values()) joined += ranks.length === 2 && ranks[0] !== ranks[1];
  check(joined === byTrace.size, `${fmt}: every collective's trace holds both ranks' spans (${joined}/${byTrace.size})`);
}
check(histPoints > 0, 'histogram points decoded');
console.log(`${files} payloads, ${spans.json.length + spans.pb.length} spans, ${histPoints} histogram points`);
console.log(`${checks - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
