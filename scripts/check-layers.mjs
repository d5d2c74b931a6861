#!/usr/bin/env node
// Fails when a module under src/ imports against the grain of the layers (docs/architecture.md):
//   platform → ipc → backends → attribution → service | batch | monitor → report → cluster → cli → app
// A module may import its own folder and any lower layer; folders on one level (service, batch,
// monitor) may not import each other. Of monitor, report and cluster may import the report
// model (monitor/model/) only, and the model imports nothing else of monitor. It also fails on
// any cycle of imports between files, printing the cycle. Static imports (type-only ones too:
// a cycle of types is still a tangle to read), `export … from`, import() and importModule() are
// all checked. Usage: node scripts/check-layers.mjs [--root DIR]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lower index = lower layer. Folders in one inner array are peers. */
export const LAYERS = [
  ['platform'],
  ['ipc'],
  ['backends'],
  ['attribution'],
  ['service', 'batch', 'monitor'],
  ['report'],
  ['cluster'],
  ['cli'],
  ['app'],
];
/** Top-level files of src/ (the package's library entry) sit with the start-up wiring. */
const TOP_FILE_LAYER = 'app';
/** The part of monitor that report and cluster may import: the report model. */
const MONITOR_MODEL = `monitor${sep}model${sep}`;
/**
 * The layers that read what the monitor measured and never run it: monitor/model only. (cli and
 * app start the monitor, so they may import the rest.)
 */
const MODEL_READERS = new Set(['report', 'cluster']);

const rankOf = new Map(LAYERS.flatMap((peers, rank) => peers.map((name) => [name, rank])));

const SPECIFIER =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\bimportModule\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm;

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(m?ts|m?js)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The layer folder of a path relative to src/ ("backends/msr/x.ts" → "backends"). */
function layerOf(relPath) {
  const parts = relPath.split(sep);
  return parts.length === 1 ? TOP_FILE_LAYER : parts[0];
}

/** The source file an import names: `x.js` is written for `x.ts`. */
function sourceOf(target, srcDir) {
  const candidates = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts')];
  return candidates.find((c) => existsSync(join(srcDir, c))) ?? target;
}

/** Every relative import of every file under `srcDir`: [file, target] pairs, relative to it. */
function importsOf(srcDir) {
  const edges = [];
  for (const file of sourceFiles(srcDir)) {
    const from = relative(srcDir, file);
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const target = relative(srcDir, normalize(join(dirname(file), match[2])));
      edges.push({ from, target, specifier: match[2] });
    }
  }
  return edges;
}

/** Why importing `target` from `from` goes against the layers, or undefined. */
function layerProblem(from, target) {
  const fromLayer = layerOf(from);
  const toLayer = layerOf(target);
  if (fromLayer === 'monitor' && from.startsWith(MONITOR_MODEL) && toLayer === 'monitor')
    return target.startsWith(MONITOR_MODEL)
      ? undefined
      : `${from}: imports ${target} (monitor/model imports no other part of monitor)`;
  if (toLayer === fromLayer) return undefined;
  const fromRank = rankOf.get(fromLayer);
  const toRank = rankOf.get(toLayer);
  if (toRank === undefined) return `${from}: imports ${target}, in no layer`;
  if (toRank > fromRank) return `${from}: imports ${target} (${fromLayer} is below ${toLayer})`;
  if (toRank === fromRank) return `${from}: imports ${target} (${fromLayer} and ${toLayer} are peers)`;
  if (toLayer === 'monitor' && MODEL_READERS.has(fromLayer) && !target.startsWith(MONITOR_MODEL))
    return `${from}: imports ${target} (${fromLayer} may import monitor/model only)`;
  return undefined;
}

/** Every import against the grain under `srcDir`, as "file: imports target (why)" lines. */
export function findViolations(srcDir) {
  const problems = [];
  const unplaced = new Set();
  for (const file of sourceFiles(srcDir)) {
    const from = relative(srcDir, file);
    if (rankOf.get(layerOf(from)) === undefined) unplaced.add(layerOf(from));
  }
  for (const layer of unplaced)
    problems.push(
      `folder "${layer}" is in no layer (add it to scripts/check-layers.mjs and docs/architecture.md)`,
    );
  for (const { from, target, specifier } of importsOf(srcDir)) {
    if (unplaced.has(layerOf(from))) continue;
    if (target.startsWith('..')) {
      problems.push(`${from}: imports ${specifier}, outside src/`);
      continue;
    }
    const problem = layerProblem(from, target);
    if (problem) problems.push(problem);
  }
  return problems;
}

/**
 * Every cycle of imports between files under `srcDir`, one per strongly connected group of
 * files, each as the files in import order with the first repeated at the end.
 */
export function findCycles(srcDir) {
  const graph = new Map();
  for (const { from, target } of importsOf(srcDir)) {
    if (target.startsWith('..')) continue;
    const to = sourceOf(target, srcDir);
    if (!graph.has(from)) graph.set(from, new Set());
    graph.get(from).add(to);
  }
  // Tarjan's strongly connected components, iterative (deep import chains must not overflow).
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const groups = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work = [{ node: root, edges: [...(graph.get(root) ?? [])].sort(), at: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work.at(-1);
      if (frame.at < frame.edges.length) {
        const to = frame.edges[frame.at++];
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edges: [...(graph.get(to) ?? [])].sort(), at: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node), index.get(to)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work.at(-1).node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const group = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        group.push(member);
      } while (member !== frame.node);
      if (group.length > 1 || graph.get(frame.node)?.has(frame.node)) groups.push(new Set(group));
    }
  }
  return groups.map((group) => cycleIn(group, graph));
}

/** One cycle through the first file (by name) of a strongly connected group: a shortest one. */
function cycleIn(group, graph) {
  const start = [...group].sort()[0];
  const cameFrom = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const to of [...(graph.get(node) ?? [])].sort()) {
      if (!group.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--root');
  const root = at > 0 ? process.argv[at + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');
  const srcDir = join(root, 'src');
  const problems = findViolations(srcDir);
  const cycles = findCycles(srcDir);
  for (const p of problems) console.error(`check-layers: ${p}`);
  for (const c of cycles) console.error(`check-layers: import cycle: ${c.join(' → ')}`);
  if (problems.length > 0)
    console.error(`check-layers: ${problems.length} import(s) against the layers (see docs/architecture.md)`);
  if (cycles.length > 0) console.error(`check-layers: ${cycles.length} import cycle(s)`);
  if (problems.length > 0 || cycles.length > 0) process.exit(1);
  console.log(
    'check-layers: every import in src/ follows the layers, and no file imports itself round a cycle',
  );
}
