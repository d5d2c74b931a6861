import type { Backend, BackendContext } from '../platform/backend.js';

/**
 * Backends register themselves by name (like node_exporter's collectors). `order` decides
 * precedence in PlatformIO: higher orders register later and win for names they share.
 */
export interface BackendRegistration {
  name: string;
  order: number;
  description: string;
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
