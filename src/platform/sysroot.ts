import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParseError, PermissionError } from './errors.js';

/**
 * Resolves hardware paths (/sys, hardware stats under /proc, /dev/cpu) under a prefix so tests
 * can run on fixture trees. Process liveness checks must NOT go through this: they always use
 * the real /proc.
 */
export class Sysroot {
  readonly prefix: string;

  constructor(prefix: string = process.env.JOULEGATE_SYSROOT ?? '') {
    this.prefix = prefix === '/' ? '' : prefix.replace(/\/+$/, '');
  }

  path(absolute: string): string {
    return this.prefix === '' ? absolute : join(this.prefix, absolute);
  }

  exists(absolute: string): boolean {
    return existsSync(this.path(absolute));
  }

  readable(absolute: string): boolean {
    try {
      accessSync(this.path(absolute), constants.R_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** Reads a whole file; a permission failure becomes a PermissionError naming the file. */
  readText(absolute: string): string {
    try {
      return readFileSync(this.path(absolute), 'utf8');
    } catch (err) {
      throw wrapIoError(err, absolute);
    }
  }

  /** Reads a file holding one number (sysfs style). Garbled content is a ParseError. */
  readNumber(absolute: string): number {
    const text = this.readText(absolute).trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) {
      throw new ParseError(`${absolute}: expected a number, found "${text.slice(0, 40)}"`);
    }
    return value;
  }

  /** Directory entries, sorted; an absent directory gives []. */
  list(absolute: string): string[] {
    try {
      return readdirSync(this.path(absolute)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw wrapIoError(err, absolute);
    }
  }
}

export function wrapIoError(err: unknown, what: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') {
    return new PermissionError(`${what}: permission denied`);
  }
  if (code === 'ENOENT') return new Error(`${what}: no such file`);
  return new Error(`${what}: ${(err as Error).message}`);
}

/** Parses the kernel's cpulist format ("0-3,8,10-11"). */
export function parseCpuList(text: string): number[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  const out: number[] = [];
  for (const part of trimmed.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new ParseError(`bad cpu list "${trimmed}"`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new ParseError(`bad cpu list "${trimmed}"`);
    for (let c = lo; c <= hi; c++) out.push(c);
  }
  return out;
}

/** Formats CPUs back into the kernel's cpulist format. */
export function formatCpuList(cpus: readonly number[]): string {
  const sorted = [...cpus].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}
