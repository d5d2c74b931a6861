import { catalogueEntries } from '../../platform/sensors.js';
import { entryNamed } from '../../platform/signal-catalogue.js';
import { parseUnits, Units } from '../../platform/signal-info.js';

/** What the daemon's description says of a signal's links: the name an alias stands for, its row. */
export interface RemoteLinks {
  aliasFor?: string;
  feeds?: string;
}

export interface RemoteDescription {
  description: string;
  units: Units;
  links: RemoteLinks;
}

/**
 * The daemon sends GEOPM's multi-line description (`    description: …`, `    units: …`,
 * `    alias_for: …` for an alias, and our `    feeds: …`); units and links are not on the wire
 * otherwise. Text in another shape is kept whole, with no units and no links.
 */
export function parseRemoteDescription(text: string): RemoteDescription {
  const field = (key: string) =>
    new RegExp(`^\\s*${key}:[ \\t]*(.*?)\\s*$`, 'm').exec(text)?.[1] || undefined;
  let units = Units.None;
  try {
    const name = field('units');
    if (name) units = parseUnits(name);
  } catch {
    // a unit this version does not know: shown as none rather than failing the whole backend
  }
  const aliasFor = field('alias_for');
  const feeds = field('feeds');
  return {
    description: field('description') ?? text.trim(),
    units,
    links: { ...(aliasFor ? { aliasFor } : {}), ...(feeds ? { feeds } : {}) },
  };
}

/**
 * The catalogue row (its alias) each of the daemon's signals feeds, by the rule of the direct
 * backends (platform/sensors.ts) over the names the daemon offers and the links its descriptions
 * carry. A signal without a row, or named like its row (`CPU_ENERGY`), is left out: its name
 * says it, and `--info` shows `feeds` where a direct reader's would.
 */
export function remoteFeeds(links: ReadonlyMap<string, RemoteLinks>): Map<string, string> {
  const entryOf = catalogueEntries({
    signalNames: () => [...links.keys()],
    signalInfo: (name) => links.get(name) ?? {},
  });
  const out = new Map<string, string>();
  for (const name of links.keys()) {
    const row = entryOf(name)?.alias;
    if (row !== undefined && row !== entryNamed(name)?.alias) out.set(name, row);
  }
  return out;
}
