import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { VERSION } from '../../platform/version.js';
import type { ConsumerEnergy, ConsumerScrape } from './consumers.js';
import { deviceLabels, type NodeSample, type NodeSampler } from './node-metrics.js';
import { REASON_MAX, type SourceStatus } from './sources.js';

/**
 * The exporter's metrics as prom-client objects, filled from one node reading per scrape.
 * Two registries, each with its own metric objects: one renders Prometheus text 0.0.4, the other
 * OpenMetrics 1.0 (chosen by the scrape's Accept header). Values are set from the reading (counters are reset
 * and set to the exported total, since the exporter mirrors counters kept elsewhere); a series
 * whose read failed is left out of that scrape, never published as 0.
 */
export const CONTENT_TYPES = {
  text: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
} as const;
export type ExpositionFormat = keyof typeof CONTENT_TYPES;

/** OpenMetrics when the scraper asks for it (Prometheus does), text otherwise. */
export function negotiateFormat(accept: string | undefined): ExpositionFormat {
  return accept !== undefined && /application\/openmetrics-text/.test(accept) ? 'openmetrics' : 'text';
}

function openMetricsRegistry(): Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE> {
  const registry = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  return registry;
}

/**
 * A consumer's labels: its id as attribution names it (`slurm:42`), and its kind and the id
 * within that kind apart (`slurm`, `42`), so dashboards select a job by `consumer_id` directly.
 */
export function consumerLabels(consumer: string): {
  consumer: string;
  consumer_kind: string;
  consumer_id: string;
} {
  const colon = consumer.indexOf(':');
  return colon < 0
    ? { consumer, consumer_kind: '', consumer_id: consumer }
    : { consumer, consumer_kind: consumer.slice(0, colon), consumer_id: consumer.slice(colon + 1) };
}

/**
 * One registry's metric objects. Each format gets its own set: prom-client's OpenMetrics
 * rendering renames a counter object in place (drops `_total` from its name), so an object
 * shared with the text registry would change the text format's names after the first
 * OpenMetrics scrape.
 */
class MetricSet {
  readonly registry: Registry<(typeof CONTENT_TYPES)[ExpositionFormat]>;
  private readonly node = new Map<string, Counter | Gauge>();
  private readonly consumerEnergy?: Counter;
  private readonly unattributed?: Counter;
  private readonly consumersTracked?: Gauge;
  private readonly consumersUntracked?: Gauge;
  private readonly readSeconds: Gauge;
  private readonly readFailures: Gauge;

  constructor(
    format: ExpositionFormat,
    sampler: NodeSampler,
    private readonly nodeName: string,
    withConsumers: boolean,
    sources: readonly SourceStatus[],
  ) {
    this.registry = format === 'openmetrics' ? openMetricsRegistry() : new Registry();
    const registers = [this.registry];
    // The exporter's own process (CPU time, memory, open files, start time) under the standard
    // process_* names. prom-client's nodejs_* set (heap spaces, GC and event-loop histograms) is
    // left out: it doubled a RAPL-only scrape's CPU (bench/exporter.ts), and some of its gauges
    // end in _total, which promtool refuses for anything but a counter.
    collectDefaultMetrics({ register: this.registry });
    for (const m of this.registry.getMetricsAsArray())
      if (!m.name.startsWith('process_')) this.registry.removeSingleMetric(m.name);
    const node = { node: nodeName };
    new Gauge({
      name: 'joulegate_build_info',
      help: 'Always 1; the labels say which joulegate and Node.js serve these metrics.',
      labelNames: ['node', 'version', 'node_version'],
      registers,
    }).set({ ...node, version: VERSION, node_version: process.version }, 1);
    const available = new Gauge({
      name: 'joulegate_source_available',
      help: 'Whether a source (backend) loaded at exporter start: 1, or 0 (joulegate_source_unavailable_info says why).',
      labelNames: ['node', 'source'],
      registers,
    });
    const unavailable = new Gauge({
      name: 'joulegate_source_unavailable_info',
      help: `Always 1, for each source that did not load; the reason label says why (one line, at most ${REASON_MAX} characters).`,
      labelNames: ['node', 'source', 'reason'],
      registers,
    });
    for (const s of sources) {
      available.set({ ...node, source: s.source }, s.available ? 1 : 0);
      if (!s.available) unavailable.set({ ...node, source: s.source, reason: s.reason ?? '' }, 1);
    }
    for (const { rule } of sampler.channels) {
      if (this.node.has(rule.metric)) continue;
      const labelNames = ['node', ...(rule.device === 'board' ? [] : [rule.device])];
      const config = { name: rule.metric, help: rule.help, labelNames, registers };
      this.node.set(rule.metric, rule.type === 'counter' ? new Counter(config) : new Gauge(config));
    }
    if (withConsumers) {
      this.consumerEnergy = new Counter({
        name: 'joulegate_consumer_energy_joules_total',
        help: 'Energy attributed to a consumer (slurm:<job>, user:<uid>, system:<unit>, cgroup:<path>; also apart as consumer_kind and consumer_id) on a device kind, since it was first seen.',
        labelNames: ['node', 'consumer', 'consumer_kind', 'consumer_id', 'device'],
        registers,
      });
      this.unattributed = new Counter({
        name: 'joulegate_unattributed_energy_joules_total',
        help: 'Energy of a device kind that no tracked consumer got (other processes, idle, unreadable usage).',
        labelNames: ['node', 'device'],
        registers,
      });
      this.consumersTracked = new Gauge({
        name: 'joulegate_consumers_tracked',
        help: 'Consumers whose energy is exported.',
        labelNames: ['node'],
        registers,
      });
      this.consumersUntracked = new Gauge({
        name: 'joulegate_consumers_untracked',
        help: 'Consumers found but not tracked (over --max-consumers); their energy is unattributed.',
        labelNames: ['node'],
        registers,
      });
    }
    this.readSeconds = new Gauge({
      name: 'joulegate_exporter_read_seconds',
      help: 'Time the batch read of this scrape took.',
      labelNames: ['node'],
      registers,
    });
    this.readFailures = new Gauge({
      name: 'joulegate_exporter_read_failures',
      help: 'Series left out of this scrape because their read failed (not rates awaiting their second sample after start).',
      labelNames: ['node'],
      registers,
    });
  }

  /** Replaces every value with those of this scrape's reading. */
  update(sample: NodeSample, consumers?: { energy: ConsumerEnergy; scrape: ConsumerScrape }): void {
    const node = { node: this.nodeName };
    for (const metric of this.node.values()) metric.reset();
    for (const { channel, value } of sample.values) {
      const metric = this.node.get(channel.rule.metric)!;
      const labels = { ...node, ...deviceLabels(channel) };
      if (metric instanceof Counter) metric.inc(labels, value);
      else metric.set(labels, value);
    }
    this.readSeconds.set(node, sample.readSeconds);
    this.readFailures.set(node, sample.failures.length);
    if (consumers === undefined || this.consumerEnergy === undefined) return;
    this.consumerEnergy.reset();
    for (const s of consumers.energy.series()) {
      this.consumerEnergy.inc({ ...node, ...consumerLabels(s.consumer), device: s.device }, s.joules);
    }
    this.unattributed!.reset();
    for (const s of consumers.energy.unattributedSeries()) {
      this.unattributed!.inc({ ...node, device: s.device }, s.joules);
    }
    this.consumersTracked!.set(node, consumers.scrape.tracked);
    this.consumersUntracked!.set(node, consumers.scrape.untracked);
  }
}

export class Exposition {
  private readonly sets: Record<ExpositionFormat, MetricSet>;

  constructor(
    sampler: NodeSampler,
    /** Value of the `node` label on every series. */
    nodeName: string,
    withConsumers: boolean,
    /** Every backend tried at start: fixed for the exporter's life, so set once here. */
    sources: readonly SourceStatus[],
  ) {
    const make = (format: ExpositionFormat) =>
      new MetricSet(format, sampler, nodeName, withConsumers, sources);
    this.sets = { text: make('text'), openmetrics: make('openmetrics') };
  }

  /** Replaces every value, in both formats, with those of this scrape's reading. */
  update(sample: NodeSample, consumers?: { energy: ConsumerEnergy; scrape: ConsumerScrape }): void {
    this.sets.text.update(sample, consumers);
    this.sets.openmetrics.update(sample, consumers);
  }

  async render(format: ExpositionFormat): Promise<string> {
    return this.sets[format].registry.metrics();
  }
}
