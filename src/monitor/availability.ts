import type { Diagnostic } from '../platform/backend.js';
import type { Estimator } from '../platform/cpu-estimate.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { SeriesSpec } from '../platform/signal-catalogue.js';
import type { SourceInfo } from './model/report-model.js';
import { NAN_READ, type Sampler, whyNoValue } from './sampler.js';
import { seriesLabel } from './signals.js';

/*
 * What was measured and what was not, decided by reading: a series none of whose samples could
 * be read is not a source, whatever the backend offered; it is listed as not readable with the
 * reason. Totals, power and the summary use the series that were read (metrics.ts).
 */

/**
 * How each device group was measured, from the series that gave at least one value (`unread`
 * holds the ids of those that never did). CPU power is estimated where no CPU energy or power
 * series could be read and utilisation could.
 */
export function describeSources(
  series: readonly SeriesSpec[],
  estimator: Estimator | undefined,
  unread: ReadonlySet<string>,
): SourceInfo[] {
  const out: SourceInfo[] = [];
  const read = series.filter((s) => !unread.has(s.id));
  for (const group of new Set(series.map((s) => s.group))) {
    const of = read.filter((s) => s.group === group);
    const energy = of.filter((s) => s.kind === 'energy');
    const power = of.filter((s) => s.kind === 'power');
    const util = of.find((s) => s.kind === 'util');
    if (energy.length > 0) {
      out.push({
        group,
        method: 'counter',
        series: energy.map((s) => s.id),
        detail: `energy counters via ${energy[0]!.backend}`,
      });
    } else if (power.length > 0) {
      out.push({
        group,
        method: 'power-integrated',
        series: power.map((s) => s.id),
        detail: `power readings via ${power[0]!.backend}, trapezoid over sample times`,
      });
    } else if (group === 'cpu' && util && estimator) {
      out.push({
        group,
        method: 'estimated',
        series: [util.id],
        detail: `utilisation × ${estimator.fullLoadWatts.toFixed(1)} W (${estimator.source})`,
        wattsPerUnit: estimator.fullLoadWatts / 100,
      });
    }
  }
  return out;
}

/**
 * What the report lacks and why: series that never gave a value (not readable, with the
 * reason and, for a permission refusal, what to ask for), read failures of the others, CPU
 * utilisation when nothing offers it (it comes only from PROCFS's /proc/stat through
 * PlatformIO), and a missing energy source.
 */
export async function notAvailable(
  pio: PlatformIO,
  sampler: Sampler,
  notes: readonly string[],
  estimator: Estimator | undefined,
): Promise<Diagnostic[]> {
  const out: Diagnostic[] = [];
  const never = sampler.withoutValue();
  for (const s of never) {
    const failure = sampler.errors.get(s.id);
    const why = failure !== undefined && failure !== NAN_READ ? failure : await whyNoValue(pio, s);
    const ask = sampler.denied.has(s.id) ? `; ask your admin to grant ${s.signal} through joulegated` : '';
    out.push({ backend: 'monitor', signal: s.id, reason: `${seriesLabel(s)} not readable: ${why}${ask}` });
  }
  for (const [signal, reason] of sampler.errors) {
    if (!never.some((s) => s.id === signal))
      out.push({ backend: 'monitor', signal, reason: `read failed: ${reason}` });
  }
  const series = sampler.series;
  if (!series.some((s) => s.group === 'cpu' && s.kind === 'util')) {
    const why =
      notes.find((n) => n.includes('CPU_UTILIZATION')) ??
      pio.diagnostics().find((d) => d.backend === 'PROCFS' && d.signal === undefined)?.reason ??
      'no backend offers CPU_UTILIZATION';
    out.push({ backend: 'monitor', reason: `CPU utilisation unavailable: ${why}` });
  }
  const isSource = (s: SeriesSpec) => s.kind === 'energy' || s.kind === 'power';
  const read = series.filter((s) => !never.includes(s));
  if (!read.some(isSource)) {
    const none = series.some(isSource)
      ? 'no energy or power source could be read'
      : 'no energy or power source on this host';
    let reason = `${none} and no TDP known for this CPU (set [monitor] estimate_tdp)`;
    if (!read.some((s) => s.group === 'cpu' && s.kind === 'util'))
      reason = `${none}, and no CPU utilisation to estimate from`;
    else if (estimator) reason = `${none}: CPU power is estimated from utilisation and shown separately`;
    out.push({ backend: 'monitor', reason });
  }
  return out;
}
