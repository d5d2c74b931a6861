import type { SignalInfo } from '../platform/signal-info.js';

/**
 * The `--info` text GEOPM 3.1's daemon gives for the names both daemons serve alike, so that a
 * client of either (`geopmread --info SERVICE::TIME`) prints the same. Checked against GEOPM's
 * own geopmd and geopmread (docs/geopm-side-by-side.md). A name is answered with GEOPM's text
 * only while joulegated serves it as GEOPM does: the same alias target, or the same backend.
 * GEOPM's high-level aliases carry description, iogroup and alias_for only; its TIME IOGroup's
 * own signal the usual five lines.
 */
interface GeopmText {
  /** GEOPM's text is used when this matches the signal's info. */
  when: (info: SignalInfo) => boolean;
  lines: string[];
}

const GEOPM_TEXTS: ReadonlyMap<string, GeopmText> = new Map([
  [
    'TIME',
    {
      when: (info: SignalInfo) => info.aliasFor === 'TIME::ELAPSED',
      lines: [
        'description: Time elapsed since the beginning of execution.',
        'iogroup: Time',
        'alias_for: TIME::ELAPSED',
      ],
    },
  ],
  [
    'TIME::ELAPSED',
    {
      when: (info: SignalInfo) => info.backend === 'TIME' && info.aliasFor === undefined,
      lines: [
        'description: Time since the start of application profiling.',
        'units: seconds',
        'aggregation: select_first',
        'domain: cpu',
        'iogroup: TimeIOGroup',
      ],
    },
  ],
]);

/** GEOPM's `--info` text of `name`, where it has one for the signal `info` describes. */
export function geopmText(name: string, info: SignalInfo): string | undefined {
  const text = GEOPM_TEXTS.get(name);
  if (!text?.when(info)) return undefined;
  return text.lines.map((line) => `    ${line}`).join('\n');
}
