import { DomainType } from '../../platform/domains.js';
import { errorMessage } from '../../platform/errors.js';
import type { PlatformIO } from '../../platform/platform-io.js';
import {
  type DeviceLabel,
  ENERGY_DEVICE_OF_GROUP,
  type EnergyDevice,
  exportedEntries,
  KIND_UNITS,
  namesOf,
  SIGNAL_CATALOGUE,
  type SignalCatalogue,
} from '../../platform/signal-catalogue.js';
import type { Units } from '../../platform/signal-info.js';
import { ExportedCounter } from './counter.js';
import { counterKey, type SavedCounter } from './counter-state.js';

/**
 * What the exporter publishes about the node: the signal catalogue's rows with a metric
 * (platform/signal-catalogue.ts; docs/exporter.md lists them). The device index is a label named
 * after the domain (`package="0"`, `gpu="1"`).
 */
export interface MetricRule {
  /** Candidate signal names; the first one PlatformIO offers as a high-level name is used. */
  signals: readonly string[];
  units?: Units;
  metric: string;
  help: string;
  type: 'counter' | 'gauge';
  device: DeviceLabel;
  /** For energy counters: which device kind (the job report groups by it). */
  energy?: EnergyDevice;
}

const DOMAIN_OF: Record<DeviceLabel, DomainType> = {
  package: DomainType.Package,
  gpu: DomainType.Gpu,
  board: DomainType.Board,
};

/** The metrics of a catalogue, in its order. */
export function metricRules(catalogue: SignalCatalogue = SIGNAL_CATALOGUE): MetricRule[] {
  return exportedEntries(catalogue).map((e) => ({
    signals: namesOf(e),
    units: KIND_UNITS[e.kind],
    metric: e.metric.name,
    help: e.metric.help,
    type: e.metric.type,
    device: e.metric.device,
    energy: e.kind === 'energy' ? ENERGY_DEVICE_OF_GROUP[e.group] : undefined,
  }));
}

export const METRIC_RULES: readonly MetricRule[] = metricRules();

/** Why a channel has no value when PlatformIO gave NaN without an error (a rate before two readings). */
export const NO_VALUE = 'no value';

/** One pushed signal: a rule at one device index. */
export interface Channel {
  rule: MetricRule;
  index: number;
  handle: number;
  /** The signal read (its name, as the state file keeps it). */
  signal: string;
  /** Energy counters only: the exported, monotone counter. */
  counter?: ExportedCounter;
}

/** One reading of every channel: a value, or the reason it has none (the series is left out). */
export interface ChannelValue {
  channel: Channel;
  value: number;
}

export interface NodeSample {
  /** Monotonic seconds (performance.now) at the middle of the batch read. */
  timeS: number;
  values: ChannelValue[];
  /** Channels without a value in this reading, with why. */
  failures: { channel: Channel; reason: string }[];
  /**
   * Channels that have no value yet and no error, on the first reading only: rates (power,
   * utilisation) need a second sample. Not failures; they get a value from the next reading.
   */
  pending: Channel[];
  /** Lines to log once: how resumed counters continued (first reading after a restart). */
  notes: string[];
  readSeconds: number;
}

/** The labels of a channel's series: `{package: "0"}`, `{gpu: "1"}`, `{}` for the board. */
export function deviceLabels(channel: Channel): Record<string, string> {
  return channel.rule.device === 'board' ? {} : { [channel.rule.device]: String(channel.index) };
}

/**
 * The node's signals, pushed once and read with one PlatformIO batch read per `read()` (every
 * backend reads its files or devices once for all metrics, never one open per metric).
 */
export class NodeSampler {
  readonly channels: Channel[] = [];
  /** Rules that matched no signal or could not be pushed, with why (for the start-up log). */
  readonly notes: string[] = [];
  /** Rules no signal of this node matches: their metrics are absent (the start-up log names them). */
  readonly absent: MetricRule[] = [];
  /** Whether read() has run: until then a value-less channel is a rate awaiting its second sample. */
  private readBefore = false;
  /** Channels whose resume note was given. */
  private readonly resumeTold = new Set<Channel>();

  constructor(
    private readonly pio: PlatformIO,
    rules: readonly MetricRule[] = METRIC_RULES,
    /** Counters an earlier exporter process saved (counter-state.ts), by counterKey. */
    saved: ReadonlyMap<string, SavedCounter> = new Map(),
  ) {
    const names = pio.signalNames();
    for (const rule of rules) {
      const signal = rule.signals.find((s) => names.includes(s));
      if (signal === undefined) {
        this.absent.push(rule);
        continue;
      }
      const info = pio.signalInfo(signal);
      if (rule.units !== undefined && info.units !== rule.units) {
        this.notes.push(`${signal}: not exported, its units are not those of ${rule.metric}`);
        continue;
      }
      const domain = DOMAIN_OF[rule.device];
      const count = rule.device === 'board' ? 1 : pio.topology.numDomain(domain);
      for (let index = 0; index < count; index++) {
        const missing = pio.whyUnavailable(signal, domain, index);
        if (missing !== undefined) {
          this.notes.push(`${signal} ${rule.device} ${index}: not exported (${missing})`);
          continue;
        }
        try {
          const handle = pio.pushSignal(signal, domain, index);
          const counter = rule.type === 'counter' ? new ExportedCounter() : undefined;
          const before = saved.get(counterKey(rule.metric, index));
          if (counter !== undefined && before !== undefined && before.signal === signal)
            counter.resume(before, info.counterRange);
          this.channels.push({ rule, index, handle, signal, counter });
        } catch (err) {
          this.notes.push(`${signal} ${rule.device} ${index}: not exported (${errorMessage(err)})`);
        }
      }
    }
  }

  /** One batch read of every channel. A failed channel has no value this time, never 0. */
  async read(): Promise<NodeSample> {
    const before = performance.now();
    let batchError: string | undefined;
    try {
      await this.pio.readBatch();
    } catch (err) {
      batchError = errorMessage(err);
    }
    const after = performance.now();
    const values: ChannelValue[] = [];
    const failures: NodeSample['failures'] = [];
    const notes: string[] = [];
    const pending: Channel[] = [];
    const first = !this.readBefore;
    this.readBefore = true;
    for (const channel of this.channels) {
      let value: number;
      let reason: string | undefined;
      try {
        value = this.pio.sample(channel.handle);
        if (!Number.isFinite(value)) {
          const err = this.pio.sampleError(channel.handle);
          reason = err ? errorMessage(err) : (batchError ?? NO_VALUE);
        }
      } catch (err) {
        value = Number.NaN;
        reason = errorMessage(err);
      }
      if (channel.counter !== undefined && reason === undefined) {
        value = channel.counter.feed(value);
        if (channel.counter.resumed !== undefined && !this.resumeTold.has(channel)) {
          this.resumeTold.add(channel);
          notes.push(resumeNote(channel, channel.counter.resumed));
        }
      }
      if (reason === undefined && Number.isFinite(value)) values.push({ channel, value });
      else if (first && reason === NO_VALUE) pending.push(channel);
      else failures.push({ channel, reason: reason ?? NO_VALUE });
    }
    const timeS = (before + after) / 2000;
    return { timeS, values, failures, pending, notes, readSeconds: (after - before) / 1000 };
  }

  /** Every counter's last source reading and total, for the state file. */
  savedCounters(): Map<string, SavedCounter> {
    const out = new Map<string, SavedCounter>();
    for (const c of this.channels) {
      const last = c.counter?.lastSource;
      if (last === undefined) continue;
      out.set(counterKey(c.rule.metric, c.index), { signal: c.signal, last, total: c.counter!.value });
    }
    return out;
  }
}

/** The one log line of a resumed counter's first reading. */
function resumeNote(channel: Channel, outcome: 'continued' | 'advance-unknown'): string {
  const series = `${channel.rule.metric} ${channel.rule.device} ${channel.index}`;
  return outcome === 'continued'
    ? `${series}: continued from the saved total, with the energy used while no exporter ran`
    : `${series}: continued from the saved total, but the energy used while no exporter ran is unknown (${channel.signal} restarted below its last value and its wrap range is not known)`;
}
