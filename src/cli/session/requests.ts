import { type DomainType, domainName } from '../../platform/domains.js';
import { JoulegateError } from '../../platform/errors.js';
import { domainTypeOf, parseDomainIndex } from '../parse.js';

/** One column of a session: a signal at one domain index. */
export interface ReadRequest {
  name: string;
  domain: DomainType;
  idx: number;
}

/** What parsing needs from the platform: domain sizes and each signal's native domain. */
export interface RequestContext {
  numDomain(domain: DomainType): number;
  /** Throws for an unknown signal. */
  nativeDomain(name: string): DomainType;
  /** Why a signal has no value at one index (absent: every index has one). */
  whyUnavailable?(name: string, domain: DomainType, idx: number): string | undefined;
  /** Told of each index a `*` request leaves out, with the reason. */
  leftOut?(note: string): void;
}

/** A request stream the session cannot use; the message is geopmsession's wording. */
export class RequestError extends JoulegateError {}

/** geopmsession stops reading at the first empty (or all-blank) line, so stdin may stay open. */
export function endsRequests(line: string): boolean {
  return line.trim() === '';
}

/** The request lines of a whole text: stripped, up to the first empty line. */
export function requestLinesOf(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (endsRequests(line)) break;
    out.push(line.trim());
  }
  return out;
}

function parseLine(line: string, words: string[], ctx: RequestContext): ReadRequest[] {
  const [name, domainWord, idxWord] = words as [string, string, string];
  let domain: DomainType;
  try {
    // `*` as domain means the signal's native domain (newer geopmsession).
    domain = domainWord === '*' ? ctx.nativeDomain(name) : domainTypeOf(domainWord);
  } catch {
    throw new RequestError(`Unable to convert values into a read request: "${line}"`);
  }
  if (idxWord === '*') {
    // `*` asks for every index there is: one a source lacks is left out and named, not fatal.
    const every = Array.from({ length: ctx.numDomain(domain) }, (_, idx) => ({ name, domain, idx }));
    return every.filter(({ idx }) => {
      const why = ctx.whyUnavailable?.(name, domain, idx);
      if (why !== undefined) ctx.leftOut?.(`${name} ${domainName(domain)} ${idx}: ${why}`);
      return why === undefined;
    });
  }
  const idx = parseDomainIndex(idxWord);
  if (idx === undefined) throw new RequestError(`Unable to convert values into a read request: "${line}"`);
  return [{ name, domain, idx }];
}

/**
 * Parses `SIGNAL DOMAIN IDX` lines (`*` index = every index of the domain; `#` lines are
 * comments). Lines must already be stripped and cut at the first empty line.
 */
export function parseRequests(lines: readonly string[], ctx: RequestContext): ReadRequest[] {
  const requests: ReadRequest[] = [];
  for (const line of lines) {
    if (line.startsWith('#')) continue;
    const words = line.split(/\s+/);
    if (words.length !== 3) throw new RequestError(`Read request must be three words: "${line}"`);
    requests.push(...parseLine(line, words, ctx));
  }
  if (requests.length === 0) throw new RequestError('Empty request stream.');
  return requests;
}

/** Rejects out-of-range indices up front with the newer geopmsession's explicit message. */
export function checkRequestIndices(requests: readonly ReadRequest[], ctx: RequestContext): void {
  for (const { name, domain, idx } of requests) {
    const size = ctx.numDomain(domain);
    if (idx < 0 || idx >= size) {
      const dname = domainName(domain);
      throw new RequestError(
        `Request index in "${name} ${dname} ${idx}" is out of range. ` +
          `Acceptable ${dname} indices are non-negative integers up to and including ${size - 1}`,
      );
    }
  }
}
