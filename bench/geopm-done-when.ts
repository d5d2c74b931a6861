/**
 * Issue 27's "done when" list, checked against one run of bench/geopm-side-by-side.ts: each
 * figure's ratio (joulegate / GEOPM, same run), its limit and whether it holds. A ReadSignal p99
 * measured next to the floor daemon also carries the floor's own p99 over GEOPM's: where that is
 * above the limit, no daemon could have met the limit in that run (docs/geopm-side-by-side.md),
 * and `p99_over_floor_p99` says how much joulegated added to what any daemon pays. A p50/p99
 * ratio also carries how far it could have moved had the run's rounds gone otherwise (the 90 %
 * interval of a paired bootstrap over rounds: round-interval.ts).
 */

type Figures = Record<string, unknown>;

interface Check {
  figure: string;
  ratio: number;
  limit: number;
  met: boolean;
  ratio_interval_90?: unknown;
  floor_p99_over_geopm_p99?: number;
  p99_over_floor_p99?: number;
  p99_over_floor_p99_interval_90?: unknown;
}

const LIMITS: [figure: string, key: string, limit: number][] = [
  ['start_batch_back_to_back', 'p50_ms', 1],
  ['start_batch_paused', 'p50_ms', 1],
  ['connect_quit_stop_batch', 'p50_ms', 1],
  ['batch_cpu_per_sample_1khz', 'us_per_sample', 1],
  ['one_shot_session_wall', 'median_ms', 1],
  ['read_signal_1_client', 'p50_us', 0.5],
  ['read_signal_1_client', 'p99_us', 0.5],
  ['read_signal_1_c_client', 'p50_us', 0.5],
  ['read_signal_1_c_client', 'p99_us', 0.5],
  ['read_signal_50_clients', 'p50_us', 0.5],
  ['read_signal_50_clients', 'p99_us', 0.5],
  ['read_signal_50_c_clients', 'p50_us', 0.5],
  ['read_signal_50_c_clients', 'p99_us', 0.5],
];

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/** The checks for the figures this run measured with GEOPM beside it (others are left out). */
export function doneWhen(figures: Figures, pssRatio: number | undefined): Check[] {
  const checks: Check[] = [];
  for (const [figure, key, limit] of LIMITS) {
    const ratio = field(field(figures[figure], 'ratio'), key);
    if (typeof ratio !== 'number') continue;
    const check: Check = { figure: `${figure}.${key}`, ratio, limit, met: ratio <= limit };
    const interval = field(field(figures[figure], 'ratio_interval_90'), key);
    if (interval !== undefined) check.ratio_interval_90 = interval;
    const floor = field(figures[figure], 'daemon_floor');
    const floorOverGeopm = field(floor, 'p99_over_geopm_p99');
    const floorP99 = field(floor, 'p99_us');
    const ownP99 = field(field(figures[figure], 'joulegate'), 'p99_us');
    if (key === 'p99_us' && typeof floorOverGeopm === 'number' && typeof floorP99 === 'number') {
      check.floor_p99_over_geopm_p99 = floorOverGeopm;
      if (typeof ownP99 === 'number') check.p99_over_floor_p99 = Number((ownP99 / floorP99).toFixed(2));
      const overFloor = field(floor, 'joulegate_p99_over_floor_p99_interval_90');
      if (overFloor !== undefined) check.p99_over_floor_p99_interval_90 = overFloor;
    }
    checks.push(check);
  }
  if (pssRatio !== undefined)
    checks.push({ figure: 'daemon_memory_after_use_mb.pss', ratio: pssRatio, limit: 1, met: pssRatio <= 1 });
  return checks;
}
