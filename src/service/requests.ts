import { type DomainType, domainName, isNestedDomain, isValidDomain } from '../platform/domains.js';
import { InvalidArgumentError, PermissionError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { shown } from './text.js';

/** Checks one (name, domain, index) request against the platform; returns the domain type. */
export function checkRequest(
  pio: PlatformIO,
  kind: 'signal' | 'control',
  name: string,
  domain: number,
  idx: number,
): DomainType {
  const valid = kind === 'signal' ? pio.isValidSignal(name) : pio.isValidControl(name);
  if (!valid) throw new InvalidArgumentError(`no support for ${kind} ${shown(name)}`);
  if (!isValidDomain(domain))
    throw new InvalidArgumentError(`invalid domain type ${domain} for ${shown(name)}`);
  pio.topology.checkIndex(domain, idx);
  const info = kind === 'signal' ? pio.signalInfo(name) : pio.controlInfo(name);
  if (!isNestedDomain(info.domain, domain)) {
    throw new InvalidArgumentError(
      `${shown(name)}: native domain ${domainName(info.domain)} is not within ${domainName(domain)}`,
    );
  }
  return domain;
}

/** Throws PermissionError naming (at most 10 of) the names missing from `allowed`. */
export function checkAllowed(
  kind: 'signals' | 'controls',
  names: readonly string[],
  allowed: ReadonlySet<string>,
  pid: number,
): void {
  const missing = [...new Set(names.filter((n) => !allowed.has(n)))];
  if (missing.length > 0) {
    throw new PermissionError(
      `Requested ${kind} that are not in the access list of PID ${pid}: ${missing.slice(0, 10).map(shown).join(', ')}${missing.length > 10 ? ', …' : ''}`,
    );
  }
}

/** Signal and control names used through the service since the daemon started (0.LOG_REQUEST). */
export class UsageLog {
  private readonly signals = new Set<string>();
  private readonly controls = new Set<string>();

  addSignals(names: Iterable<string>): void {
    for (const n of names) this.signals.add(n);
  }

  addControls(names: Iterable<string>): void {
    for (const n of names) this.controls.add(n);
  }

  /** (signals, controls), each sorted. */
  lists(): [string[], string[]] {
    return [[...this.signals].sort(), [...this.controls].sort()];
  }
}
