import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { reportTree } from '../../../src/report/hdf5.js';
import { lookup3 } from '../../../src/report/hdf5-file/lookup3.js';
import {
  float64,
  H5Group,
  type H5Node,
  int64,
  isText,
  rootGroup,
} from '../../../src/report/hdf5-file/tree.js';
import { writeHdf5File } from '../../../src/report/hdf5-file/write-file.js';
import { run, runCli } from '../../helpers/cli.js';
import { monitorJsonHdf5, onlyFile, python, readReport, regionsApp } from '../../helpers/hdf5-reports.js';
import { needsH5py, needsTool, requirements } from '../../helpers/requirements.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const skip = requirements(needsH5py(), needsTool('h5dump'));

/*
 * The HDF5 writer (src/report/hdf5-file/) checked by independent readers: h5py on libhdf5 lists
 * every group, dataset and attribute (order, dtype, shape, Python type, exact value) and must see
 * what it sees in the same tree written by h5wasm (libhdf5 itself); h5dump reads every object;
 * h5wasm, the reader `joulegate export` uses, reads the values back.
 */

/**
 * Every object in h5py's listing order (creation order where tracked), with its attributes and
 * data: dtype (and string kind), shape, Python type and value; floats as their IEEE bits, long
 * arrays as a hash of their elements.
 */
const DUMP = `
import hashlib, json, struct, sys
import h5py
import numpy as np

def enc(v):
    if isinstance(v, bytes): return "b:" + v.decode("utf-8")
    if isinstance(v, str): return "s:" + v
    if isinstance(v, (float, np.floating)): return "f:" + struct.pack("<d", float(v)).hex()
    if isinstance(v, (int, np.integer)): return "i:" + str(int(v))
    raise TypeError(type(v))

def value(v):
    if not isinstance(v, np.ndarray):
        return {"type": type(v).__name__, "value": enc(v)}
    items = [enc(x) for x in v.tolist()]
    kinds = sorted({type(x).__name__ for x in v.flat})
    if len(items) > 1000:
        digest = hashlib.sha256("\\n".join(items).encode()).hexdigest()
        return {"type": "ndarray", "elements": kinds, "n": len(items), "sha256": digest}
    return {"type": "ndarray", "elements": kinds, "value": items}

def dtype(d):
    s = h5py.check_string_dtype(d)
    return d.str + (f" str({s.encoding},{s.length})" if s else "")

def attrs(obj):
    return [dict(name=k, dtype=dtype(obj.attrs.get_id(k).dtype), shape=list(obj.attrs.get_id(k).shape), **value(obj.attrs[k]))
            for k in obj.attrs.keys()]

out = []
def walk(path, obj):
    if isinstance(obj, h5py.Group):
        cpl = obj.id.get_create_plist()
        out.append(dict(path=path, kind="group", links_order=cpl.get_link_creation_order(),
                        attrs_order=cpl.get_attr_creation_order(), members=list(obj.keys()), attrs=attrs(obj)))
        for k in obj.keys():
            walk(path.rstrip("/") + "/" + k, obj[k])
    else:
        out.append(dict(path=path, kind="dataset", dtype=dtype(obj.dtype), shape=list(obj.shape),
                        maxshape=list(obj.maxshape), attrs=attrs(obj), data=value(obj[()])))

with h5py.File(sys.argv[1], "r") as f:
    walk("/", f["/"])
print(json.dumps(out))
`;

interface DumpedValue {
  type: string;
  value?: string | string[];
  elements?: string[];
  n?: number;
  sha256?: string;
}
type Dumped = DumpedValue & { name: string; dtype: string; shape: number[] };
interface DumpedObject {
  path: string;
  kind: 'group' | 'dataset';
  members?: string[];
  links_order?: number;
  attrs_order?: number;
  dtype?: string;
  shape?: number[];
  attrs: Dumped[];
  data?: DumpedValue;
}

async function dump(file: string): Promise<DumpedObject[]> {
  return JSON.parse(await python(['-c', DUMP, file], `h5py on ${file}`)) as DumpedObject[];
}

/** The same tree written by h5wasm (libhdf5), the writer hdf5.ts used before. */
async function writeWithH5wasm(root: H5Group, path: string): Promise<void> {
  const h5 = await import('h5wasm/node');
  await h5.ready;
  type Target = InstanceType<typeof h5.Group> | InstanceType<typeof h5.Dataset>;
  const attributes = (target: Target, node: H5Node) => {
    for (const [name, v] of node.attributes) {
      if (isText(v)) target.create_attribute(name, typeof v === 'string' ? v : [...v]);
      else if (v.type === 'float64') target.create_attribute(name, Float64Array.of(v.value), [], '<d');
      else target.create_attribute(name, BigInt64Array.of(v.value), [], '<q');
    }
  };
  const fill = (group: InstanceType<typeof h5.Group>, node: H5Group) => {
    attributes(group, node);
    for (const [name, member] of node.members) {
      if (member instanceof H5Group) fill(group.create_group(name, member.trackOrder), member);
      else attributes(group.create_dataset({ name, data: member.data as Float64Array }), member);
    }
  };
  const file = new h5.File(path, 'w', { track_order: true });
  try {
    fill(file, root);
  } finally {
    file.close();
  }
}

const H5DUMP = '/usr/bin/h5dump';

/** h5dump -p of the whole file, data addresses left out (the two writers place data differently). */
async function h5dump(file: string): Promise<string> {
  if (!existsSync(H5DUMP)) assert.fail(`${H5DUMP} is missing: install Debian's hdf5-tools (.ci/run does)`);
  const r = await run(H5DUMP, ['-p', file]);
  assert.equal(r.code, 0, `h5dump failed on ${file}:\n${r.stderr}`);
  return r.stdout.replace(/^HDF5 ".*" \{/, '').replace(/OFFSET \d+/g, 'OFFSET');
}

const bits = (x: number) => `f:${Buffer.from(Float64Array.of(x).buffer).toString('hex')}`;

/** One tree with every case the writer supports, and the values h5py must see. */
function edgeTree() {
  const root = rootGroup();
  root.setAttr('title', 'Grüße ⚡ 日本');
  root.group('empty', true);
  root.group('empty-unordered');
  let deep = root.group('deep', true);
  for (let i = 0; i < 40; i++) deep = deep.group(`level${i}`, true);
  deep.setAttr('depth', int64(40));
  // Members and attributes listed in creation order, not by name (z…, a…, m… repeated).
  const many = root.group('many', true);
  const names = Array.from({ length: 150 }, (_, i) => `${'zam'[i % 3]}${149 - i}`);
  for (const name of names) many.group(name, true).setAttr('n', name);
  for (const name of names.slice(0, 100)) many.setAttr(`attr_${name}`, float64(names.indexOf(name)));
  const unordered = root.group('unordered');
  for (const name of ['b', 'c', 'a']) unordered.group(name);
  unordered.setAttr('zz', 'last by name');
  unordered.setAttr('aa', 'first by name');
  const values = root.group('values', true);
  values.setAttr('température °C', float64(21.5));
  values.setAttr('nan', float64(Number.NaN));
  values.setAttr('inf', float64(Number.POSITIVE_INFINITY));
  values.setAttr('-inf', float64(Number.NEGATIVE_INFINITY));
  values.setAttr('-0', float64(-0));
  values.setAttr('max_safe', int64(Number.MAX_SAFE_INTEGER));
  values.setAttr('int64_min', int64(-(2n ** 63n)));
  values.setAttr('int64_max', int64(2n ** 63n - 1n));
  values.setAttr('empty', '');
  values.setAttr('list', ['CPU_ENERGY-package-0', 'ü', '']);
  const long = `${'x'.repeat(100_000)}é`;
  values.setAttr('long', long);
  const data = root.group('data', true);
  data.dataset(
    'floats',
    Float64Array.of(1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 5e-324),
  );
  data.dataset('int32', Int32Array.of(0, -1, 2 ** 31 - 1, -(2 ** 31)));
  data.dataset('int64', BigInt64Array.of(-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n));
  data.dataset('strings', ['', 'ascii', 'naïve ☃', 'x'.repeat(5000)]);
  data.dataset('empty_floats', new Float64Array(0));
  data.dataset('empty_ints', new Int32Array(0));
  const large = Float64Array.from({ length: 1_000_000 }, (_, i) => Math.sin(i) * 1e6);
  const described = data.dataset('large', large);
  described.setAttr('unit', 'J');
  described.setAttr('fill', float64(Number.NaN));
  described.setAttr('dtype', 'float64');
  // More strings than one global heap collection indexes (65535).
  const manyStrings = Array.from({ length: 70_000 }, (_, i) => `s${i}`);
  data.dataset('many_strings', manyStrings);
  return { root, names, long, large, manyStrings };
}

describe('the HDF5 writer (src/report/hdf5-file/)', { skip }, () => {
  it('computes lookup3 as libhdf5 does (the checksum of a superblock libhdf5 wrote)', async () => {
    // A file libhdf5 wrote (through h5wasm): its superblock's last 4 bytes are lookup3 of the rest.
    const file = join(tempDir(), 'libhdf5.h5');
    await writeWithH5wasm(rootGroup(), file);
    const superblock = readFileSync(file).subarray(0, 48);
    assert.equal(lookup3(superblock.subarray(0, 44)), superblock.readUInt32LE(44));
    assert.equal(lookup3(new Uint8Array(0)), 0xdeadbeef);
    // Every other length (each header this writer makes) is checked by libhdf5 in the tests below.
  });

  it('writes every case h5py reads back exactly, in creation order, as h5wasm (libhdf5) writes it', async () => {
    const { root, names, long, large, manyStrings } = edgeTree();
    const dir = tempDir();
    const ours = join(dir, 'ours.h5');
    const theirs = join(dir, 'h5wasm.h5');
    const started = performance.now();
    writeHdf5File(root, ours);
    const took = performance.now() - started;
    await writeWithH5wasm(root, theirs);
    const [mine, libhdf5] = [await dump(ours), await dump(theirs)];
    assert.deepEqual(mine, libhdf5);
    assert.equal(await h5dump(ours), await h5dump(theirs));

    const at = (path: string) => mine.find((o) => o.path === path)!;
    const attr = (path: string, name: string) => at(path).attrs.find((a) => a.name === name)!;
    assert.deepEqual(at('/').members, [
      'empty',
      'empty-unordered',
      'deep',
      'many',
      'unordered',
      'values',
      'data',
    ]);
    assert.deepEqual(at('/empty').members, []);
    assert.equal(at('/empty').links_order, 3, 'tracked and indexed, as h5py track_order');
    assert.equal(at('/empty-unordered').links_order, 0);
    assert.deepEqual(at(`/deep${Array.from({ length: 40 }, (_, i) => `/level${i}`).join('')}`).attrs, [
      { name: 'depth', dtype: '<i8', shape: [], type: 'int64', value: 'i:40' },
    ]);
    assert.deepEqual(at('/many').members, names);
    assert.deepEqual(
      at('/many').attrs.map((a) => a.name),
      names.slice(0, 100).map((n) => `attr_${n}`),
    );
    assert.deepEqual(at('/unordered').members, ['a', 'b', 'c'], 'an untracked group lists by name');
    assert.deepEqual(
      at('/unordered').attrs.map((a) => a.name),
      ['aa', 'zz'],
    );
    assert.deepEqual(attr('/', 'title'), {
      name: 'title',
      dtype: '|O str(utf-8,None)',
      shape: [],
      type: 'str',
      value: 's:Grüße ⚡ 日本',
    });
    assert.equal(attr('/values', 'température °C').value, bits(21.5));
    assert.equal(attr('/values', 'nan').value, bits(Number.NaN));
    assert.equal(attr('/values', 'inf').value, bits(Number.POSITIVE_INFINITY));
    assert.equal(attr('/values', '-inf').value, bits(Number.NEGATIVE_INFINITY));
    assert.equal(attr('/values', '-0').value, bits(-0));
    assert.equal(attr('/values', 'nan').type, 'float64');
    assert.equal(attr('/values', 'max_safe').value, `i:${Number.MAX_SAFE_INTEGER}`);
    assert.equal(attr('/values', 'int64_min').value, `i:${-(2n ** 63n)}`);
    assert.equal(attr('/values', 'int64_max').value, `i:${2n ** 63n - 1n}`);
    assert.equal(attr('/values', 'empty').value, 's:');
    assert.deepEqual(attr('/values', 'list'), {
      name: 'list',
      dtype: '|O str(utf-8,None)',
      shape: [3],
      type: 'ndarray',
      elements: ['str'],
      value: ['s:CPU_ENERGY-package-0', 's:ü', 's:'],
    });
    assert.equal(attr('/values', 'long').value, `s:${long}`, 'a 100 kB string attribute (global heap)');
    assert.deepEqual(
      at('/data/floats').data!.value,
      [1.5, Number.NaN, Infinity, -Infinity, -0, 5e-324].map(bits),
    );
    assert.deepEqual(at('/data/int32').dtype, '<i4');
    assert.deepEqual(at('/data/int32').data!.value, ['i:0', 'i:-1', `i:${2 ** 31 - 1}`, `i:${-(2 ** 31)}`]);
    assert.deepEqual(at('/data/int64').data!.value, [
      `i:${-(2n ** 63n)}`,
      `i:${2n ** 53n + 1n}`,
      `i:${2n ** 63n - 1n}`,
    ]);
    // h5py returns a string dataset's elements as bytes (h5py 3), as it did for h5wasm's files.
    assert.deepEqual(at('/data/strings').data, {
      type: 'ndarray',
      elements: ['bytes'],
      value: ['b:', 'b:ascii', 'b:naïve ☃', `b:${'x'.repeat(5000)}`],
    });
    for (const empty of ['/data/empty_floats', '/data/empty_ints']) {
      assert.deepEqual(at(empty).shape, [0]);
      assert.deepEqual(at(empty).data!.value, []);
    }
    const hash = (items: string[]) => createHash('sha256').update(items.join('\n')).digest('hex');
    assert.deepEqual(at('/data/large').data, {
      type: 'ndarray',
      elements: ['float64'],
      n: 1_000_000,
      sha256: hash(Array.from(large, bits)),
    });
    assert.deepEqual(
      at('/data/large').attrs.map((a) => a.name),
      ['dtype', 'fill', 'unit'],
      "a dataset's attributes are listed by name, as h5wasm's were",
    );
    assert.equal(at('/data/many_strings').data!.sha256, hash(manyStrings.map((s) => `b:${s}`)));
    const [size, before] = [statSync(ours).size, statSync(theirs).size];
    assert.ok(size <= before, `${size} bytes, h5wasm's ${before}`);
    assert.ok(took < 5000, `written in ${took.toFixed(0)} ms`);
  });

  it('is read by h5wasm, the reader of `joulegate export`', async () => {
    const { root, long, large } = edgeTree();
    const file = join(tempDir(), 'ours.h5');
    writeHdf5File(root, file);
    const h5 = await import('h5wasm/node');
    await h5.ready;
    const f = new h5.File(file, 'r');
    try {
      const values = f.get('values') as InstanceType<typeof h5.Group>;
      assert.equal(values.attrs['température °C']!.value, 21.5);
      assert.ok(Number.isNaN(values.attrs.nan!.value as number));
      assert.equal(values.attrs.int64_max!.value, 2n ** 63n - 1n);
      assert.equal(values.attrs.long!.value, long);
      assert.deepEqual(values.attrs.list!.value, ['CPU_ENERGY-package-0', 'ü', '']);
      assert.equal(f.attrs.title!.value, 'Grüße ⚡ 日本');
      const data = (name: string) => (f.get(`data/${name}`) as InstanceType<typeof h5.Dataset>).value;
      assert.deepEqual(data('large'), large);
      assert.deepEqual(data('strings'), ['', 'ascii', 'naïve ☃', 'x'.repeat(5000)]);
      assert.deepEqual(Array.from(data('int32') as Int32Array), [0, -1, 2 ** 31 - 1, -(2 ** 31)]);
      assert.deepEqual((f.get('many') as InstanceType<typeof h5.Group>).keys().slice(0, 3), [
        'z149',
        'a148',
        'm147',
      ]);
    } finally {
      f.close();
    }
  });

  it('refuses what it cannot write exactly, with one line naming it', () => {
    const g = rootGroup();
    assert.throws(
      () => int64(2 ** 53 + 2),
      /HDF5 int64 attribute: 9007199254740994 is not an integer a number holds exactly/,
    );
    assert.throws(() => int64(1.5), /not an integer/);
    assert.throws(() => int64(2n ** 63n), /out of range/);
    assert.throws(() => g.group('a/b'), /HDF5 member name "a\/b" under \/ is not a valid name/);
    assert.throws(() => g.group(''), /not a valid name/);
    g.group('twice');
    assert.throws(() => g.group('twice'), /HDF5 member twice of \/ is added twice/);
    g.setAttr('a', 'x');
    assert.throws(() => g.setAttr('a', 'y'), /HDF5 attribute a of \/ is set twice/);
    // Creation indexes of attributes are 2 bytes.
    const crowded = rootGroup();
    for (let i = 0; i < 0xffff; i++) crowded.setAttr(`a${i}`, 'v');
    assert.throws(
      () => crowded.setAttr('one more', 'v'),
      /^JoulegateError: HDF5 object \/: over 65535 attributes$/,
    );
    // An attribute message holds at most 65535 bytes: a name longer than that is refused.
    const huge = rootGroup();
    huge.group('g').setAttr('n'.repeat(70_000), 'v');
    assert.throws(
      () => writeHdf5File(huge, join(tempDir(), 'huge.h5')),
      /HDF5 object \/g: a message of \d+ bytes is over the 65535 an object header holds/,
    );
  });

  it('`monitor -f hdf5` never imports h5wasm (its 40 MB of wasm); `export` of the file does', async () => {
    const out = tempDir();
    // A module resolve hook that refuses h5wasm, in every node process of the CLI.
    const hooks = join(out, 'no-h5wasm-hooks.mjs');
    writeFileSync(
      hooks,
      "export async function resolve(s, c, next) { if (s.startsWith('h5wasm')) throw new Error('h5wasm imported'); return next(s, c); }\n",
    );
    const register = join(out, 'no-h5wasm.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(`file://${hooks}`)});\n`,
    );
    const env = { NODE_OPTIONS: `--import=${register}`, JOULEGATE_SYSROOT: copyFixture('energy/amd-epyc') };
    const r = await runCli(['monitor', '-f', 'hdf5', '--data-out', out, '--', 'sleep', '0.1'], {
      cwd: out,
      env,
    });
    assert.equal(r.code, 0, r.stderr);
    const file = onlyFile(out, /\.hdf5$/);
    assert.equal((await dump(file))[0]!.path, '/');
    const e = await runCli(['export', file, 'json'], { cwd: out, env });
    assert.notEqual(e.code, 0, 'the hook refuses h5wasm where it is imported');
    assert.match(e.stderr, /h5wasm imported/);
  });

  it("writes a report's tree as h5wasm did: same h5py listing and h5dump -p", async () => {
    const out = tempDir();
    const root = copyFixture('server-2s4c2t');
    await monitorJsonHdf5(
      root,
      out,
      ['--sampling-period', '0.02', '--rounds', '2', '--attribute', '--app-name', 'xp', '--run-id', 'w1'],
      [process.execPath, regionsApp(out)],
    );
    const report = readReport(onlyFile(out, /\.json$/));
    const theirs = join(out, 'h5wasm.h5');
    await writeWithH5wasm(reportTree(report), theirs);
    const ours = onlyFile(out, /\.hdf5$/);
    assert.deepEqual(await dump(ours), await dump(theirs));
    assert.equal(await h5dump(ours), await h5dump(theirs));
    assert.ok(statSync(ours).size < statSync(theirs).size, 'no larger than before');
  });
});
