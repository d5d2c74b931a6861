import type { SeriesSpec } from '../../src/platform/signal-catalogue.js';

/** A board-domain series of the TEST backend for metric tests; `outside` marks it outside the platform. */
export function seriesSpec(
  id: string,
  group: SeriesSpec['group'],
  kind: SeriesSpec['kind'],
  outside = false,
): SeriesSpec {
  return {
    id,
    signal: id,
    domain: 'board',
    index: 0,
    group,
    kind,
    backend: 'TEST',
    ...(outside ? { outsidePlatform: true as const } : {}),
  };
}

/** No overhead, PUE 1, no CO2 or cost: the measured energy alone. */
export const PLAIN_POST = { powerOverhead: 0, pue: 1, emissionsFactor: 0, priceFactor: 0 };
