import type { Backend, BackendContext } from '../platform/backend.js';

/**
 * The high-level names (aliases, no `BACKEND::` prefix) a backend serves where its hardware is
 * present. Declared up front because a backend that cannot load defines nothing: these let
 * `read CPU_ENERGY` on a node without RAPL say why, not just "no support". A control is also
 * readable as a signal, so it need not be listed twice.
 */
export interface BackendOffers {
  signals?: readonly string[];
  controls?: readonly string[];
}

/**
 * Backends register themselves by name (like node_exporter's collectors). `order` decides
 * precedence in PlatformIO: higher orders register later and win for names they share.
 */
export interface BackendRegistration {
  name: string;
  order: number;
  description: string;
  /**
   * What it would serve where it can load; its own `NAME::…` names need no listing. A function
   * when working the list out costs something (MSR parses its tables): asked only on a miss.
   */
  offers?: BackendOffers | (() => BackendOffers);
  /**
   * Makes the backend. Throw BackendUnavailableError (or any error) when the hardware or
   * library is absent: the message is shown in listings as the reason.
   */
  create(ctx: BackendContext): Backend | Promise<Backend>;
}

/** The hardware or library a backend needs is not on this node. */
export class BackendUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackendUnavailableError';
  }
}

const registry = new Map<string, BackendRegistration>();

export function registerBackend(reg: BackendRegistration): void {
  if (registry.has(reg.name)) throw new Error(`backend ${reg.name} registered twice`);
  registry.set(reg.name, reg);
}

export function registeredBackends(): BackendRegistration[] {
  return [...registry.values()].sort((a, b) => a.order - b.order);
}

/** A registration's offers, worked out where it gives a function; none declared is none. */
export function offersOf(reg: BackendRegistration): BackendOffers {
  return (typeof reg.offers === 'function' ? reg.offers() : reg.offers) ?? {};
}

/** Whether a registration would serve `name` as a signal (or as a control) where it can load. */
export function offersName(reg: BackendRegistration, kind: 'signal' | 'control', name: string): boolean {
  const offers = offersOf(reg);
  if ((offers.controls ?? []).includes(name)) return true;
  return kind === 'signal' && (offers.signals ?? []).includes(name);
}
