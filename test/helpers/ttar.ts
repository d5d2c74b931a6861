import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/**
 * Unpacks a ttar archive (the plain-text tree format Prometheus' projects keep their sysfs and
 * procfs captures in) under `dest`. Records: `Directory: P` or `Path: P`, then for a file
 * `Lines: N` and N lines of content, or `SymlinkTo: T`, then `Mode: M`; `#` lines separate them.
 * Bytes are kept as they are (read and written as latin1). In content, `NULLBYTE` stands for a zero byte and a trailing `EOF` marks a last line that had
 * no newline; a backslash in front of either keeps it literal.
 */
export function unpackTtar(archive: string, dest: string): void {
  const lines = readFileSync(archive, 'latin1').split('\n');
  let path: string | undefined;
  let i = 0;
  const inside = (p: string): string => {
    const rel = normalize(p);
    if (rel.startsWith('..') || rel.startsWith('/')) throw new Error(`${archive}: path ${p} leaves the tree`);
    return join(dest, rel);
  };
  while (i < lines.length) {
    const line = lines[i++]!;
    if (line === '' || line.startsWith('#')) continue;
    const [key, ...rest] = line.split(': ');
    const value = rest.join(': ');
    if (key === 'Directory') {
      path = inside(value);
      mkdirSync(path, { recursive: true });
    } else if (key === 'Path') {
      path = inside(value);
    } else if (key === 'Lines') {
      if (path === undefined) throw new Error(`${archive}:${i}: Lines before Path`);
      const count = Number(value);
      const body = lines.slice(i, i + count).map(decodeLine);
      i += count;
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body.map((l) => l.text + (l.newline ? '\n' : '')).join(''), 'latin1');
    } else if (key === 'SymlinkTo') {
      if (path === undefined) throw new Error(`${archive}:${i}: SymlinkTo before Path`);
      mkdirSync(dirname(path), { recursive: true });
      symlinkSync(value, path);
      path = undefined; // a link's Mode would apply to its target
    } else if (key === 'Mode') {
      if (path !== undefined) chmodSync(path, Number.parseInt(value, 8) | 0o200);
      path = undefined;
    } else {
      throw new Error(`${archive}:${i}: unexpected line ${JSON.stringify(line.slice(0, 60))}`);
    }
  }
}

function decodeLine(raw: string): { text: string; newline: boolean } {
  let newline = true;
  let text = raw;
  if (/(^|[^\\])EOF$/.test(text)) {
    newline = false;
    text = text.slice(0, -3);
  }
  text = text.replace(/(^|[^\\])NULLBYTE/g, '$1\0').replace(/(^|[^\\])NULLBYTE/g, '$1\0');
  text = text.replace(/\\NULLBYTE/g, 'NULLBYTE').replace(/\\EOF/g, 'EOF');
  return { text, newline };
}

const SEPARATOR = `# ttar ${'- '.repeat(36).trim()}`;

/**
 * Packs the tree `dir` (relative to `base`) into a ttar archive that unpackTtar reads back byte for
 * byte: directories and files with their modes, symlinks as their targets (never followed).
 * Used to vendor a capture whose links would form loops in a checkout (sysfs' `subsystem`).
 */
export function packTtar(base: string, dir: string, archive: string): void {
  const out: string[] = [`# Archive created by joulegate's packTtar (test/helpers/ttar.ts) of ${dir}`];
  const walk = (rel: string): void => {
    const full = join(base, rel);
    const st = lstatSync(full);
    if (st.isSymbolicLink()) {
      out.push(`Path: ${rel}`, `SymlinkTo: ${readlinkSync(full)}`, SEPARATOR);
    } else if (st.isDirectory()) {
      out.push(`Directory: ${rel}`, `Mode: ${(st.mode & 0o777).toString(8)}`, SEPARATOR);
      for (const e of readdirSync(full).sort()) walk(join(rel, e));
    } else if (st.isFile()) {
      const lines = encodeContent(readFileSync(full, 'latin1'));
      out.push(`Path: ${rel}`, `Lines: ${lines.length}`, ...lines, `Mode: ${(st.mode & 0o777).toString(8)}`);
      out.push(SEPARATOR);
    } else {
      throw new Error(`${full}: neither a file, a directory nor a symlink`);
    }
  };
  walk(dir);
  writeFileSync(archive, `${out.join('\n')}\n`, 'latin1');
}

/** A file's content as ttar lines: the inverse of decodeLine over all of them. */
function encodeContent(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  const lastHasNewline = lines[lines.length - 1] === '';
  if (lastHasNewline) lines.pop();
  return lines.map((line, i) => {
    let l = line
      .replace(/NULLBYTE/g, '\\NULLBYTE')
      .replace(/EOF$/, '\\EOF')
      .replace(/\0/g, 'NULLBYTE');
    if (i === lines.length - 1 && !lastHasNewline) l += 'EOF';
    return l;
  });
}
