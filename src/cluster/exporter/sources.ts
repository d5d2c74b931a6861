import type { PlatformIO } from '../../platform/platform-io.js';

/**
 * Which backends (sources) the exporter has, and why each missing one is missing: published as
 * metrics, so a dashboard of a node without energy series shows the cause (no RAPL zones, no
 * NVIDIA driver) rather than nothing. Decided once at start; backends load only then.
 */

export interface SourceStatus {
  /** The backend's name, e.g. `POWERCAP`, `NVML`, `SERVICE`. */
  source: string;
  available: boolean;
  /** Why it is not available: one line, at most REASON_MAX characters. */
  reason?: string;
}

/**
 * Longest reason published as a label value. Long enough for a path and a hint ("no RAPL zones
 * under /sys/class/powercap"), short enough that a label cannot bloat every scrape.
 */
export const REASON_MAX = 200;

/** A reason as one line of at most REASON_MAX characters, cut with `…` where longer. */
export function boundedReason(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= REASON_MAX ? line : `${line.slice(0, REASON_MAX - 1)}…`;
}

/** Every backend that loaded (available) or was tried and failed (with why), by name. */
export function sourceStatus(pio: PlatformIO): SourceStatus[] {
  const out = new Map<string, SourceStatus>();
  for (const b of pio.loadedBackends()) out.set(b.name, { source: b.name, available: true });
  for (const d of pio.diagnostics()) {
    if (d.signal !== undefined || out.has(d.backend)) continue;
    out.set(d.backend, { source: d.backend, available: false, reason: boundedReason(d.reason) });
  }
  return [...out.values()].sort((a, b) => a.source.localeCompare(b.source));
}
