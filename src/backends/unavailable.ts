import type { Backend } from '../platform/backend.js';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { isNamed, namesOf, SIGNAL_CATALOGUE } from '../platform/signal-catalogue.js';
import { type BackendRegistration, offersName, registeredBackends } from './registry.js';

/*
 * Why a signal or control that joulegate knows is not served on this node. GEOPM says only "no
 * support for signal X"; an admin on a VM or a node without the msr module needs the cause
 * (`CPU_ENERGY: not available: POWERCAP: no RAPL zones under /sys/class/powercap`). The causes
 * come from what the backends recorded when they loaded or left a signal out; a name nothing
 * explains keeps GEOPM's wording at the caller.
 */

/** Reasons stay one line however the backend worded them. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * One line saying why `name` is not served here, or undefined when joulegate knows nothing of
 * it (a typo, a plugin's name): the caller then keeps GEOPM's "no support for …". Every backend
 * that could have served it says why it did not: one that did not load gives its load failure
 * (its own `BACKEND::…` names included), one that loaded gives why it left that name out, or
 * that this node's hardware lacks it. A catalogue name served here only under a backend's own
 * name says which name to use.
 */
export function whyUnavailable(
  pio: PlatformIO,
  kind: 'signal' | 'control',
  name: string,
  registrations: readonly BackendRegistration[] = registeredBackends(),
): string | undefined {
  const loaded = new Map(pio.loadedBackends().map((b) => [b.name, b]));
  const loadFailure = new Map<string, string>();
  for (const d of pio.diagnostics())
    if (d.signal === undefined && !loaded.has(d.backend)) loadFailure.set(d.backend, d.reason);

  // What a backend left out is a signal (omitSignal): it explains no control request.
  const omittedBy = (b: Backend) => (kind === 'signal' ? b.whyNotServed?.(name) : undefined);
  const reasons: string[] = [];
  // Highest precedence first: the backend that would serve the name is named first.
  for (const reg of [...registrations].sort((a, b) => b.order - a.order)) {
    const backend = loaded.get(reg.name);
    const offered = offersName(reg, kind, name);
    if (backend === undefined) {
      const failure = loadFailure.get(reg.name);
      if (failure !== undefined && (offered || name.startsWith(`${reg.name}::`)))
        reasons.push(`${reg.name}: ${oneLine(failure)}`);
      continue;
    }
    const omitted = omittedBy(backend);
    if (omitted !== undefined) reasons.push(`${reg.name}: ${oneLine(omitted)}`);
    else if (offered) reasons.push(`${reg.name}: loaded, but this node's hardware does not provide it`);
  }
  // Plugins and the daemon client have no registration; a plugin may still say why it left a name out.
  const registered = new Set(registrations.map((r) => r.name));
  for (const b of loaded.values()) {
    const omitted = registered.has(b.name) ? undefined : omittedBy(b);
    if (omitted !== undefined) reasons.push(`${b.name}: ${oneLine(omitted)}`);
  }
  if (reasons.length > 0) return `${name}: not available: ${reasons.join('; ')}`;
  if (kind === 'signal') return otherName(pio, name);
  return undefined;
}

/** A catalogue quantity offered here only under a backend's own name (`PROCFS::MEMORY_USED`). */
function otherName(pio: PlatformIO, name: string): string | undefined {
  const entry = SIGNAL_CATALOGUE.find((e) => namesOf(e).includes(name));
  if (entry === undefined) return undefined;
  const names = namesOf(entry);
  const served = pio.signalNames().filter((s) => s !== name && names.some((n) => isNamed(s, n)));
  if (served.length === 0) return undefined;
  return `${name}: not available under this name here; read ${served.join(' or ')}`;
}

/**
 * The message for a request of `name` that failed with `err`: why this node does not serve the
 * name where that is known, else the failure's own message (GEOPM's "no support for …").
 */
export function requestFailure(
  pio: PlatformIO,
  kind: 'signal' | 'control',
  name: string,
  err: unknown,
): string {
  const served = kind === 'signal' ? pio.isValidSignal(name) : pio.isValidControl(name);
  return (served ? undefined : whyUnavailable(pio, kind, name)) ?? errorMessage(err);
}
