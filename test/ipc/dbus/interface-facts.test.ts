import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { INTERFACE_NAME, METHOD_NAMES, METHODS } from '../../../src/ipc/dbus/interface.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { ServiceHarness } from '../../service/harness.js';

const skip = needsDaemon();

// GEOPM 3.1's io.github.geopm interface as an independent fact list (test/fixtures/
// geopm-dbus-methods.txt): joulegate's method table, the daemon's live introspection and the
// installed introspection file must all name the same methods with the same arguments, in
// order, with the same names and types. A GEOPM client generated from either side sees no
// difference.

interface FactArg {
  direction: 'in' | 'out';
  name: string;
  type: string;
}

interface Interface {
  name: string;
  methods: Map<string, FactArg[]>;
}

/** Reads the fact list: `interface NAME`, `method NAME`, indented `in|out NAME TYPE` lines. */
function parseFacts(text: string): Interface {
  let name = '';
  const methods = new Map<string, FactArg[]>();
  let current: FactArg[] | undefined;
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trimEnd();
    if (line === '' || line.startsWith('#')) continue;
    const words = line.trim().split(/\s+/);
    if (words[0] === 'interface' && words.length === 2) name = words[1]!;
    else if (words[0] === 'method' && words.length === 2) {
      assert.ok(!methods.has(words[1]!), `line ${i + 1}: method ${words[1]} listed twice`);
      current = [];
      methods.set(words[1]!, current);
    } else if ((words[0] === 'in' || words[0] === 'out') && words.length === 3 && current) {
      current.push({ direction: words[0], name: words[1]!, type: words[2]! });
    } else assert.fail(`line ${i + 1} of the fact list is not understood: ${line}`);
  }
  return { name, methods };
}

/** XML attributes of one tag's text (`name="x" type="s"`), in any order. */
function attributes(tag: string): Record<string, string> {
  return Object.fromEntries([...tag.matchAll(/([\w:-]+)\s*=\s*"([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** One interface element of D-Bus introspection XML, read without joulegate's generator. */
function parseIntrospection(xml: string, interfaceName: string): Interface {
  const body = xml
    .split(/<interface\b/)
    .find((part) => attributes(part.slice(0, part.indexOf('>'))).name === interfaceName);
  assert.ok(body, `no interface ${interfaceName} in the introspection`);
  const element = body.slice(0, body.indexOf('</interface>'));
  const methods = new Map<string, FactArg[]>();
  // <method name="X"/> or <method name="X"> … </method>
  for (const m of element.matchAll(/<method\b([^>]*?)(\/>|>([\s\S]*?)<\/method>)/g)) {
    const name = attributes(m[1]!).name!;
    const args = [...(m[3] ?? '').matchAll(/<arg\b([^>]*?)\/?>/g)].map((a): FactArg => {
      const attrs = attributes(a[1]!);
      // The D-Bus specification: a method argument's direction defaults to "in".
      const direction = attrs.direction ?? 'in';
      assert.ok(direction === 'in' || direction === 'out', `${name}: direction ${direction}`);
      return { direction, name: attrs.name ?? '', type: attrs.type ?? '' };
    });
    assert.ok(!methods.has(name), `method ${name} introspected twice`);
    methods.set(name, args);
  }
  return { name: interfaceName, methods };
}

// Top level, not in a hook: the harness's after() hooks must attach to the file.
const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

const FACTS = parseFacts(
  readFileSync(new URL('../../fixtures/geopm-dbus-methods.txt', import.meta.url), 'utf8'),
);

/** Compares an interface with the facts method by method, then the method sets. */
function assertMatchesFacts(actual: Interface, what: string): void {
  for (const [method, args] of FACTS.methods) {
    assert.deepEqual(actual.methods.get(method), args, `${what}: ${method}`);
  }
  assert.deepEqual([...actual.methods.keys()].sort(), [...FACTS.methods.keys()].sort(), `${what}: methods`);
}

test('the fact list is what this test expects: io.github.geopm with 23 methods', { skip }, () => {
  assert.equal(FACTS.name, 'io.github.geopm');
  assert.equal(FACTS.methods.size, 23);
  assert.deepEqual(FACTS.methods.get('PlatformReadSignal'), [
    { direction: 'in', name: 'signal_name', type: 's' },
    { direction: 'in', name: 'domain', type: 'i' },
    { direction: 'in', name: 'domain_idx', type: 'i' },
    { direction: 'out', name: 'sample', type: 'd' },
  ]);
});

test("joulegate's method table has GEOPM's methods, argument names, order and types", { skip }, () => {
  assert.equal(INTERFACE_NAME, FACTS.name);
  const table: Interface = {
    name: INTERFACE_NAME,
    methods: new Map(
      METHOD_NAMES.map((name) => {
        const spec = METHODS[name];
        const args = (direction: 'in' | 'out') =>
          spec[direction].map(({ name, type }): FactArg => ({ direction, name, type }));
        return [name, [...args('in'), ...args('out')]];
      }),
    ),
  };
  assertMatchesFacts(table, 'METHODS');
});

test('the installed introspection file matches the facts', { skip }, () => {
  const xml = readFileSync(new URL('../../../packaging/io.github.geopm.xml', import.meta.url), 'utf8');
  assertMatchesFacts(parseIntrospection(xml, FACTS.name), 'packaging/io.github.geopm.xml');
});

test("a running daemon's introspection matches the facts", { skip }, async () => {
  const [r] = await h.client([{ call: 'introspect' }]);
  assert.equal(r!.ok, true, r!.message);
  assertMatchesFacts(parseIntrospection(r!.value as string, FACTS.name), 'live introspection');
});

test('the introspection reader notices a renamed, reordered or missing argument', { skip }, () => {
  const good = [
    `<node><interface name="${FACTS.name}">`,
    ...[...FACTS.methods].map(
      ([method, args]) =>
        `<method name="${method}">${args.map((a) => `<arg name="${a.name}" type="${a.type}" direction="${a.direction}"/>`).join('')}</method>`,
    ),
    '</interface></node>',
  ].join('\n');
  assertMatchesFacts(parseIntrospection(good, FACTS.name), 'well-formed');
  const broken = [
    good.replace('name="sample"', 'name="result"'),
    good.replace(
      '<arg name="domain" type="i" direction="in"/><arg name="domain_idx" type="i" direction="in"/>',
      '<arg name="domain_idx" type="i" direction="in"/><arg name="domain" type="i" direction="in"/>',
    ),
    good.replace('<arg name="setting" type="d" direction="in"/>', ''),
    good.replace('<method name="PlatformRestoreControl"></method>', ''),
  ];
  for (const xml of broken) {
    assert.notEqual(xml, good);
    assert.throws(() => assertMatchesFacts(parseIntrospection(xml, FACTS.name), 'broken'));
  }
});
